//! A linear cost model: fixed cycles per reference, per TLB hit, per walk memory
//! reference and per page fault (the parameters of [`SimpleCostConfig`]).

use super::{CostModel, Cycles};
use crate::counts::Counts;

/// A linear cost model: each event has a fixed cost in cycles.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimpleCostConfig {
    /// Cycles of a reference apart from translation (the baseline the overhead is
    /// relative to). Default 1.0.
    pub base_cycles_per_ref: f64,
    /// Cycles per memory reference of a page walk. Default 8, so that a 4-level walk
    /// costs about 30 cycles, "the typical cost of a TLB miss" (Szmajda and Heiser,
    /// "Variable Radix Page Table", ACSAC 2003, §1.1).
    pub walk_ref_cycles: f64,
    /// Cycles per page fault (trap, allocate and zero a frame, map). Default 5000,
    /// about 1.7 µs at 3 GHz, the order of a Linux minor fault.
    pub page_fault_cycles: f64,
    /// Fixed cycles per page walk besides its memory references: the trap and
    /// instructions of a software-refilled TLB's miss handler. Default 0.
    pub miss_cycles: f64,
    /// Cycles a fault of a large page adds for each base page of it beyond the first:
    /// the kernel clears the whole large page at its fault. A large page's fault costs
    /// `page_fault_cycles` + (its base pages - 1) x this in the benefit analysis (and
    /// `advise`); the simulator charges `page_fault_cycles` a fault. Default 0, every
    /// fault the same whatever its size, as in Cascaval et al.'s model (PACT 2005
    /// §3.2); `pagelab calibrate` sets it to a 4 KiB page cleared in memory.
    pub large_fault_cycles_per_page: f64,
    /// Cycles per major fault: a fault that reads a reclaimed page back from the swap
    /// store (with a `paging.resident_limit`), instead of `page_fault_cycles`.
    /// Default 300,000, about 100 µs at 3 GHz: a read from a fast SSD.
    pub major_fault_cycles: f64,
    /// Cycles eager paging spends on each page it allocates ahead of use (clearing
    /// it and writing its PTE), instead of a page fault at first touch. Default 1,000:
    /// clearing 4 KiB from the caches, a fifth of a default page fault.
    pub eager_page_cycles: f64,
    /// The range walker fetches ranges "in the background" after the page walk
    /// (Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE Micro 2016,
    /// "Range Table"), so its references add no
    /// cycles; false charges them as a page walk's (a walker that stalls). Default true.
    pub range_walks_in_background: bool,
}

impl Default for SimpleCostConfig {
    fn default() -> Self {
        SimpleCostConfig {
            base_cycles_per_ref: 1.0,
            walk_ref_cycles: 8.0,
            page_fault_cycles: 5000.0,
            large_fault_cycles_per_page: 0.0,
            miss_cycles: 0.0,
            major_fault_cycles: 300_000.0,
            eager_page_cycles: 1000.0,
            range_walks_in_background: true,
        }
    }
}

impl SimpleCostConfig {
    /// The model these parameters describe, every number of cycles checked (finite,
    /// from 0 to 1e12) and named when it is not.
    pub fn build(&self) -> Result<Box<dyn CostModel>, String> {
        for (field, v) in [
            ("base_cycles_per_ref", self.base_cycles_per_ref),
            ("walk_ref_cycles", self.walk_ref_cycles),
            ("page_fault_cycles", self.page_fault_cycles),
            (
                "large_fault_cycles_per_page",
                self.large_fault_cycles_per_page,
            ),
            ("miss_cycles", self.miss_cycles),
            ("major_fault_cycles", self.major_fault_cycles),
            ("eager_page_cycles", self.eager_page_cycles),
        ] {
            crate::limits::check_cycles(&format!("cost.{field}"), v)?;
        }
        Ok(Box::new(SimpleCost(self.clone())))
    }
}

pub struct SimpleCost(pub SimpleCostConfig);

impl CostModel for SimpleCost {
    fn cycles(&self, c: &Counts, tlb_hit_cycles: f64) -> Cycles {
        let p = &self.0;
        Cycles {
            base: c.references as f64 * p.base_cycles_per_ref,
            tlb_hits: tlb_hit_cycles,
            walks: c.walk_refs as f64 * p.walk_ref_cycles + c.walks as f64 * p.miss_cycles,
            page_faults: (c.page_faults - c.major_faults) as f64 * p.page_fault_cycles
                + c.fault_walk_refs as f64 * p.walk_ref_cycles,
            major_faults: c.major_faults as f64 * p.major_fault_cycles,
            promotions: (c.promotion_table_refs + c.demotion_table_refs) as f64 * p.walk_ref_cycles,
            policy: 0.0,
            range_walks: if p.range_walks_in_background {
                0.0
            } else {
                c.range_walk_refs as f64 * p.walk_ref_cycles
            },
            eager_paging: c.eager_pages as f64 * p.eager_page_cycles,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_in_each_count() {
        let model = SimpleCost(SimpleCostConfig {
            base_cycles_per_ref: 1.0,
            walk_ref_cycles: 10.0,
            page_fault_cycles: 1000.0,
            large_fault_cycles_per_page: 0.0,
            miss_cycles: 0.0,
            major_fault_cycles: 100_000.0,
            eager_page_cycles: 500.0,
            range_walks_in_background: true,
        });
        let counts = Counts {
            references: 100,
            walk_refs: 40,
            page_faults: 2,
            ..Counts::default()
        };
        let c = model.cycles(&counts, 45.0);
        assert_eq!(c.base, 100.0);
        assert_eq!(c.translation(), 45.0 + 400.0 + 2000.0);
        assert!((c.overhead_percent() - 100.0 * 2445.0 / 2545.0).abs() < 1e-9);
        // A major fault costs its own cycles instead of a zero-filling fault's.
        let c = model.cycles(
            &Counts {
                major_faults: 1,
                ..counts
            },
            45.0,
        );
        assert_eq!((c.page_faults, c.major_faults), (1000.0, 100_000.0));
        assert_eq!(c.translation(), 45.0 + 400.0 + 1000.0 + 100_000.0);
    }
}
