//! `remap`: Impulse shadow memory (Fang et al., "Online Superpage Promotion Revisited",
//! SIGMETRICS 2000, §3.2, Fig. 1). The superpage is mapped to an aligned block of shadow
//! frames, physical addresses no memory backs, and the memory controller's own table
//! maps each shadow base frame to the real frame that holds the page: no data moves.
//! Pages of the superpage that were not mapped get a fresh cleared frame each. The
//! shadow blocks come from a buddy allocator of their own over
//! `mechanism.shadow_memory`. With a cache model, each remapped page's lines are
//! flushed (they would alias the shadow addresses), and a reference to shadow memory
//! that reaches memory pays the controller's lookup (`lookup_cycles`).

use super::{Contents, Gathered, Mechanism, Traffic};
use crate::addr::ByteSize;
use crate::addr::{PageSize, Pfn};
use crate::frames::{BuddyAllocator, FrameAllocator};
use crate::superpage::Candidate;
use std::collections::HashMap;

/// Shadow frame numbers start here (physical addresses from 2^48 bytes on).
pub const SHADOW_BASE: u64 = 1 << 36;

pub struct RemapMechanism {
    config: RemapConfig,
    shadow: BuddyAllocator,
    /// The controller's table: shadow frame → real frame.
    controller: HashMap<u64, u64>,
}

impl RemapMechanism {
    pub fn new(config: RemapConfig, shadow_frames: u64) -> RemapMechanism {
        RemapMechanism {
            config,
            // Blocks up to 2^30 base frames (4 TiB superpages with 4K frames).
            shadow: BuddyAllocator::new(shadow_frames, 30),
            controller: HashMap::new(),
        }
    }

    /// Shadow frames the controller maps now.
    pub fn controller_entries(&self) -> usize {
        self.controller.len()
    }
}

impl Mechanism for RemapMechanism {
    fn gather(
        &mut self,
        c: &Candidate,
        base: PageSize,
        pages: &[Option<Pfn>],
        frames: &mut dyn FrameAllocator,
        contents: &mut Contents,
        mut cache: Option<&mut dyn Traffic>,
    ) -> Option<Gathered> {
        let block = Pfn(SHADOW_BASE + self.shadow.alloc(c.size)?.0);
        let bytes = base.bytes().max(1 << crate::addr::BASE_SHIFT);
        let per = base.base_frames();
        // Fresh frames for the pages not mapped, all or none.
        let mut fresh = Vec::new();
        for _ in pages.iter().filter(|p| p.is_none()) {
            match frames.alloc(base) {
                Some(f) => fresh.push(f),
                None => {
                    for f in fresh {
                        frames.free(f, base);
                    }
                    self.shadow.free(Pfn(block.0 - SHADOW_BASE), c.size);
                    return None;
                }
            }
        }
        let mut fresh = fresh.into_iter();
        let mut g = Gathered {
            pfn: block,
            ..Gathered::default()
        };
        for (i, page) in pages.iter().enumerate() {
            let real = match page {
                Some(real) => {
                    // Lines cached under the real address would alias the shadow
                    // ones: the page is flushed.
                    if let Some(cache) = cache.as_deref_mut() {
                        cache.flush(*real, bytes);
                    }
                    g.remapped += 1;
                    *real
                }
                None => {
                    let f = fresh.next().expect("one fresh frame per page not mapped");
                    let vfn = (c.va.0 >> crate::addr::BASE_SHIFT) + i as u64 * per;
                    contents.fill(f, per, c.asid, vfn);
                    if let Some(cache) = cache.as_deref_mut() {
                        let shadow = Pfn(block.0 + i as u64 * per);
                        cache.clear(shadow, bytes);
                    }
                    g.zeroed += 1;
                    f
                }
            };
            for j in 0..per {
                self.controller
                    .insert(block.0 + i as u64 * per + j, real.0 + j);
            }
        }
        Some(g)
    }

    fn release(
        &mut self,
        pfn: Pfn,
        size: PageSize,
        _frames: &mut dyn FrameAllocator,
        _contents: &mut Contents,
    ) {
        // A real mapping's frames now belong to the new shadow block; an old shadow
        // block's entries go, its real frames stay behind the new block.
        if pfn.0 >= SHADOW_BASE {
            for j in 0..size.base_frames() {
                self.controller.remove(&(pfn.0 + j));
            }
            self.shadow.free(Pfn(pfn.0 - SHADOW_BASE), size);
        }
    }

    fn resolve(&self, pfn: Pfn) -> Pfn {
        if pfn.0 >= SHADOW_BASE {
            Pfn(self.controller.get(&pfn.0).copied().unwrap_or(u64::MAX))
        } else {
            pfn
        }
    }

    fn cycles(&self, g: &Gathered, cached: bool) -> f64 {
        let zero = if cached {
            self.config.loop_cycles_per_page / 2.0
        } else {
            self.config.zero_cycles_per_page
        };
        g.remapped as f64 * self.config.cycles_per_page + g.zeroed as f64 * zero
    }

    fn memory_cycles(&self, pfn: Pfn) -> f64 {
        if pfn.0 >= SHADOW_BASE {
            self.config.lookup_cycles
        } else {
            0.0
        }
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemapConfig {
    /// Cycles to remap one base page: the controller's shadow entry written and the
    /// page's lines flushed. Default 188, from the machine of Fang et al. §4 (the one
    /// the remapping controller was simulated on): one uncached store of the entry
    /// to the controller at its 60-cycle memory latency, and one flush instruction a
    /// 32-byte L1 line of the 4 KiB page, 128, on the single-issue core. (The cache
    /// model, when there is one, drops the flushed lines; it does not price them.)
    pub cycles_per_page: f64,
    /// With a cache model: a copy loop's own cycles for one base page, beside its
    /// memory references, which the cache model prices. A page cleared for the
    /// superpage takes half (a clear stores each word, a copy loads and stores it).
    /// Default 0. (The same field as copying's, so a sweep can set it for both.)
    pub loop_cycles_per_page: f64,
    /// Cycles to clear a base page of the superpage that was never touched. Default 4000.
    pub zero_cycles_per_page: f64,
    /// Shadow memory: bytes of unused physical address space the controller can remap.
    /// Default 64G.
    pub shadow_memory: ByteSize,
    /// Cycles the controller adds to a reference to shadow memory that reaches
    /// memory (its own table lookup), charged when a cache model says which do.
    /// Default 0: Fang et al. (SIGMETRICS 2000, §4) state "a total memory latency of
    /// 60 cycles" for the system with the remapping controller and no lookup of its
    /// own; set it to study one.
    pub lookup_cycles: f64,
}

impl Default for RemapConfig {
    fn default() -> Self {
        RemapConfig {
            cycles_per_page: 188.0,
            loop_cycles_per_page: 0.0,
            zero_cycles_per_page: 4000.0,
            shadow_memory: ByteSize(64 << 30),
            lookup_cycles: 0.0,
        }
    }
}
