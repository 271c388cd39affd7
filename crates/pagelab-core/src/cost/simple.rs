//! A linear cost model: fixed cycles per reference, per TLB hit, per walk memory
//! reference and per page fault (the parameters of `config::SimpleCostConfig`).

use super::{CostModel, Cycles};
use crate::config::SimpleCostConfig;
use crate::counts::Counts;

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
