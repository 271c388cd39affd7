//! Promotion mechanisms: how a superpage's base pages come to sit in one aligned
//! block of (apparently) contiguous frames. `copy` moves the data into a new block;
//! `remap` (Impulse) maps the superpage to a block of shadow addresses that the memory
//! controller translates back to the pages' own frames
//! (Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000, §3.2, Fig. 1).
//!
//! Every mechanism keeps [`Contents`] right: which virtual page's data each real frame
//! holds. That is what lets the tests check that no promotion changes the data an
//! address reaches.
//!
//! Adding a mechanism: a file here implementing [`Mechanism`] with its options, a
//! variant of [`MechanismConfig`], one arm in [`build`].

mod copy;
mod remap;

pub use copy::{CopyConfig, CopyMechanism};
pub use remap::{RemapConfig, RemapMechanism};

use super::Candidate;
use crate::addr::{Asid, PageSize, Pfn};
use crate::cache::{CacheAccess, CacheHierarchy};
use crate::frames::FrameAllocator;
use std::collections::HashMap;

/// The data each real base frame holds: the address space and virtual base frame
/// (4 KiB page number) whose bytes are there.
#[derive(Default)]
pub struct Contents {
    held: HashMap<u64, (Asid, u64)>,
}

impl Contents {
    /// Frames from `pfn` on (`frames` of them) now hold the pages from virtual frame
    /// `vfn` on: a page was mapped there fresh.
    pub fn fill(&mut self, pfn: Pfn, frames: u64, asid: Asid, vfn: u64) {
        for i in 0..frames {
            self.held.insert(pfn.0 + i, (asid, vfn + i));
        }
    }
    /// Copy what `from` holds into `to`.
    pub fn copy(&mut self, from: Pfn, to: Pfn) {
        if let Some(&v) = self.held.get(&from.0) {
            self.held.insert(to.0, v);
        }
    }
    /// The frames from `pfn` on were freed.
    pub fn clear(&mut self, pfn: Pfn, frames: u64) {
        for i in 0..frames {
            self.held.remove(&(pfn.0 + i));
        }
    }
    /// Frame `pfn` holds `data` again (a page read back from the swap store).
    pub fn set(&mut self, pfn: Pfn, data: (Asid, u64)) {
        self.held.insert(pfn.0, data);
    }
    /// What frame `pfn` holds.
    pub fn of(&self, pfn: Pfn) -> Option<(Asid, u64)> {
        self.held.get(&pfn.0).copied()
    }
}

/// Where a mechanism's memory traffic goes: the data caches, at the addresses of the
/// frames it names. Under virtualization those frames are guest-physical, and the
/// traffic reaches the caches at their host frames (`crate::virt::HostTraffic`).
pub trait Traffic {
    /// Copy `bytes` from frame `from` to frame `to`, as
    /// [`CacheHierarchy::copy_range`] does.
    fn copy(&mut self, from: Pfn, to: Pfn, bytes: u64);
    /// Write every line of `bytes` from frame `to` on (a page cleared).
    fn clear(&mut self, to: Pfn, bytes: u64);
    /// Drop every line of `bytes` from frame `frame` on from every level.
    fn flush(&mut self, frame: Pfn, bytes: u64);
}

impl Traffic for CacheHierarchy {
    fn copy(&mut self, from: Pfn, to: Pfn, bytes: u64) {
        self.copy_range(from.addr(), to.addr(), bytes);
    }
    fn clear(&mut self, to: Pfn, bytes: u64) {
        self.touch_lines(to.addr(), bytes, CacheAccess::Copy);
    }
    fn flush(&mut self, frame: Pfn, bytes: u64) {
        self.flush_range(frame.addr(), bytes);
    }
}

/// What gathering a superpage did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gathered {
    /// The frame to map the superpage at (a shadow frame for remap).
    pub pfn: Pfn,
    /// Base pages whose data was copied.
    pub copied: u64,
    /// Base pages remapped without a copy.
    pub remapped: u64,
    /// Base pages that were not mapped, given a fresh cleared frame.
    pub zeroed: u64,
}

pub trait Mechanism {
    /// Frames for the superpage `c`, whose base pages (of `base`) map now to the real
    /// frames `pages[i]` (`None`: not mapped yet). Moves or remaps the data, keeping
    /// `contents` right. `None` when memory (or shadow memory) has no block for it;
    /// then nothing changed.
    /// With a cache model, the mechanism's memory traffic goes through `cache`.
    fn gather(
        &mut self,
        c: &Candidate,
        base: PageSize,
        pages: &[Option<Pfn>],
        frames: &mut dyn FrameAllocator,
        contents: &mut Contents,
        cache: Option<&mut dyn Traffic>,
    ) -> Option<Gathered>;
    /// A mapping of `size` at `pfn` (as the page table held it) was replaced by the
    /// superpage just gathered: release what the mechanism no longer needs.
    fn release(
        &mut self,
        pfn: Pfn,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
        contents: &mut Contents,
    );
    /// The real frame that frame `pfn`, as a page table maps it, reaches.
    fn resolve(&self, pfn: Pfn) -> Pfn;
    /// Cycles of the work counted in `g` (with a cache model, `cached`, without the
    /// memory traffic the cache model charges).
    fn cycles(&self, g: &Gathered, cached: bool) -> f64;
    /// Extra cycles of a reference to frame `pfn` that reached memory (a shadow
    /// frame's controller lookup).
    fn memory_cycles(&self, _pfn: Pfn) -> f64 {
        0.0
    }
}

/// The mechanism a configuration names, or an error naming the field.
pub fn build(c: &MechanismConfig) -> Result<Box<dyn Mechanism>, String> {
    let check = |field: &str, v: f64| crate::limits::check_cycles(&format!("mechanism.{field}"), v);
    Ok(match c {
        MechanismConfig::Copy(k) => {
            check("cycles_per_page", k.cycles_per_page)?;
            check("zero_cycles_per_page", k.zero_cycles_per_page)?;
            check("loop_cycles_per_page", k.loop_cycles_per_page)?;
            Box::new(CopyMechanism::new(k.clone()))
        }
        MechanismConfig::Remap(k) => {
            check("cycles_per_page", k.cycles_per_page)?;
            check("zero_cycles_per_page", k.zero_cycles_per_page)?;
            check("loop_cycles_per_page", k.loop_cycles_per_page)?;
            check("lookup_cycles", k.lookup_cycles)?;
            let frames = k.shadow_memory.0 >> crate::addr::BASE_SHIFT;
            if frames == 0 || frames > remap::SHADOW_BASE {
                return Err(format!(
                    "mechanism.shadow_memory: {} bytes is outside 4K..{}",
                    k.shadow_memory.0,
                    crate::addr::format_bytes(remap::SHADOW_BASE << crate::addr::BASE_SHIFT)
                ));
            }
            Box::new(RemapMechanism::new(k.clone(), frames))
        }
    })
}

/// A promotion mechanism, by kind; see `crate::superpage::mechanism`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MechanismConfig {
    /// Copy the pages into a new aligned block of frames.
    Copy(CopyConfig),
    /// Impulse shadow memory: map the superpage to an aligned block of unused
    /// physical ("shadow") addresses that the memory controller remaps to the pages'
    /// frames (Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000, §3.2).
    Remap(RemapConfig),
}

impl MechanismConfig {
    /// The mechanisms' names (`kind` in `[mechanism]`), as serde reads them (a test
    /// checks them against the variants).
    pub const NAMES: &'static [&'static str] = &["copy", "remap"];
}

impl Default for MechanismConfig {
    fn default() -> Self {
        MechanismConfig::Copy(CopyConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAMES` is every variant: serde's error for an unknown kind lists them all.
    #[test]
    fn the_names_are_the_kinds() {
        assert_eq!(
            crate::config::serde_kinds::<MechanismConfig>(),
            MechanismConfig::NAMES
        );
        for name in MechanismConfig::NAMES {
            toml::from_str::<MechanismConfig>(&format!("kind = {name:?}")).unwrap();
        }
    }
}
