//! `copy`: a new aligned block of frames for the superpage; the data of every base
//! page mapped is copied into its place, pages not mapped get a cleared frame, and the
//! old frames go back to the allocator (Fang et al., "Online Superpage Promotion
//! Revisited", SIGMETRICS 2000 §3.1: "copying two base pages to a contiguous two-page
//! superpage costs 16,000 cycles"). With a cache model the copy reads every line of the
//! old page and writes every line of the new one through it (the pollution is
//! simulated), and that is its cost.

use super::{Contents, Gathered, Mechanism, Traffic};
use crate::addr::{PageSize, Pfn};
use crate::frames::FrameAllocator;
use crate::superpage::Candidate;

pub struct CopyMechanism {
    config: CopyConfig,
}

impl CopyMechanism {
    pub fn new(config: CopyConfig) -> CopyMechanism {
        CopyMechanism { config }
    }
}

impl Mechanism for CopyMechanism {
    fn gather(
        &mut self,
        c: &Candidate,
        base: PageSize,
        pages: &[Option<Pfn>],
        frames: &mut dyn FrameAllocator,
        contents: &mut Contents,
        mut cache: Option<&mut dyn Traffic>,
    ) -> Option<Gathered> {
        let block = frames.alloc(c.size)?;
        let bytes = base.bytes().max(1 << crate::addr::BASE_SHIFT);
        let per = base.base_frames();
        let mut g = Gathered {
            pfn: block,
            ..Gathered::default()
        };
        for (i, page) in pages.iter().enumerate() {
            let to = block.0 + i as u64 * per;
            match page {
                Some(from) => {
                    for j in 0..per {
                        contents.copy(Pfn(from.0 + j), Pfn(to + j));
                    }
                    if let Some(cache) = cache.as_deref_mut() {
                        cache.copy(*from, Pfn(to), bytes);
                    }
                    g.copied += 1;
                }
                None => {
                    let vfn = (c.va.0 >> crate::addr::BASE_SHIFT) + i as u64 * per;
                    contents.fill(Pfn(to), per, c.asid, vfn);
                    if let Some(cache) = cache.as_deref_mut() {
                        cache.clear(Pfn(to), bytes);
                    }
                    g.zeroed += 1;
                }
            }
        }
        Some(g)
    }

    fn release(
        &mut self,
        pfn: Pfn,
        size: PageSize,
        frames: &mut dyn FrameAllocator,
        contents: &mut Contents,
    ) {
        contents.clear(pfn, size.base_frames());
        frames.free(pfn, size);
    }

    fn resolve(&self, pfn: Pfn) -> Pfn {
        pfn
    }

    fn cycles(&self, g: &Gathered, cached: bool) -> f64 {
        // With a cache model the copies' and clears' references are its cycles; the
        // loops' own instructions are added here.
        if cached {
            let per = self.config.loop_cycles_per_page;
            return g.copied as f64 * per + g.zeroed as f64 * per / 2.0;
        }
        g.copied as f64 * self.config.cycles_per_page
            + g.zeroed as f64 * self.config.zero_cycles_per_page
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CopyConfig {
    /// Cycles to copy one base page. Default 8000: "copying two base pages to a
    /// contiguous two-page superpage costs 16,000 cycles" (§3.1).
    pub cycles_per_page: f64,
    /// Cycles to clear a base page of the superpage that was never touched. Default
    /// 4000: half a copy (a clear writes every line, a copy reads and writes them).
    pub zero_cycles_per_page: f64,
    /// With a cache model, which prices the copy's memory references (every line of
    /// the old page read, of the new one written) and replaces the two fields above:
    /// the copy loop's own cycles for one base page beside them. A cleared page
    /// takes half. Default 0.
    pub loop_cycles_per_page: f64,
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig {
            cycles_per_page: 8000.0,
            zero_cycles_per_page: 4000.0,
            loop_cycles_per_page: 0.0,
        }
    }
}
