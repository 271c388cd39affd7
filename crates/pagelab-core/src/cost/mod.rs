//! Cost models turn the counts of a run into cycles. They read counts after the run,
//! never sit in the per-reference loop, so a different model needs no re-simulation.
//!
//! Adding a model: a file here implementing [`CostModel`], one variant in
//! `config::CostConfig`, one arm in [`build`] with its fields' checks
//! (docs/EXTENDING.md).

mod simple;

pub use simple::SimpleCost;

use crate::counts::Counts;
use serde::Serialize;

/// Cycles by cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cycles {
    /// The references themselves, without translation.
    pub base: f64,
    pub tlb_hits: f64,
    pub walks: f64,
    /// Page faults that zero-filled (minor), with the walks retried after all faults.
    pub page_faults: f64,
    /// Major faults: pages read back from the swap store (only under a resident limit).
    #[serde(skip_serializing_if = "is_zero")]
    pub major_faults: f64,
    /// Promotions: the mechanism's work (copies, remaps, cleared pages) and the
    /// page-table updates (of demotions too).
    pub promotions: f64,
    /// The promotion policy's bookkeeping in the miss handler.
    pub policy: f64,
    /// The range walker's references (after page walks of pages in ranges); none
    /// while they run in the background (`cost.range_walks_in_background`).
    #[serde(skip_serializing_if = "is_zero")]
    pub range_walks: f64,
    /// Eager paging: clearing and mapping pages ahead of use.
    #[serde(skip_serializing_if = "is_zero")]
    pub eager_paging: f64,
}

impl Cycles {
    /// Everything translation adds to the base.
    pub fn translation(&self) -> f64 {
        self.tlb() + self.page_faults + self.major_faults + self.eager_paging
    }
    /// What TLB misses cost and what superpages spend to avoid them: hits, walks,
    /// promotions, the policy's bookkeeping and range walks.
    pub fn tlb(&self) -> f64 {
        self.tlb_hits + self.walks + self.promotions + self.policy + self.range_walks
    }
    pub fn total(&self) -> f64 {
        self.base + self.translation()
    }
    /// [`Cycles::tlb`] as a share of the cycles of a run without page faults, in
    /// percent (the papers' "time in TLB misses", with what promotion costs).
    pub fn tlb_percent(&self) -> f64 {
        let total = self.base + self.tlb();
        if total > 0.0 {
            100.0 * self.tlb() / total
        } else {
            0.0
        }
    }
    /// Translation's share of all cycles, in percent.
    pub fn overhead_percent(&self) -> f64 {
        let total = self.total();
        if total > 0.0 {
            100.0 * self.translation() / total
        } else {
            0.0
        }
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

pub trait CostModel {
    /// `tlb_hit_cycles`: what the TLB hits cost, summed over the levels (each level
    /// has its own hit latency, part of the TLB's description).
    fn cycles(&self, counts: &Counts, tlb_hit_cycles: f64) -> Cycles;
}

/// The cost model the configuration names, every number of cycles checked (finite,
/// from 0 to 1e12) and named when it is not.
pub fn build(c: &crate::config::CostConfig) -> Result<Box<dyn CostModel>, String> {
    match c {
        crate::config::CostConfig::Simple(s) => {
            for (field, v) in [
                ("base_cycles_per_ref", s.base_cycles_per_ref),
                ("walk_ref_cycles", s.walk_ref_cycles),
                ("page_fault_cycles", s.page_fault_cycles),
                ("miss_cycles", s.miss_cycles),
                ("major_fault_cycles", s.major_fault_cycles),
                ("eager_page_cycles", s.eager_page_cycles),
            ] {
                crate::limits::check_cycles(&format!("cost.{field}"), v)?;
            }
            Ok(Box::new(SimpleCost(s.clone())))
        }
    }
}

#[cfg(test)]
mod build_tests {
    use crate::config::{CostConfig, SimpleCostConfig};

    /// Every number of the cost model is checked: each field of the configuration
    /// (found by serde, so a new one is covered) set to NaN, infinity or a negative
    /// value is refused, naming it.
    #[test]
    fn every_cost_field_is_checked() {
        let fields = toml::Table::try_from(SimpleCostConfig::default()).unwrap();
        let numbers: Vec<&String> = fields
            .iter()
            .filter(|(_, v)| v.is_float())
            .map(|(k, _)| k)
            .collect();
        assert!(numbers.len() >= 6, "{numbers:?}");
        for field in numbers {
            for bad in [f64::NAN, f64::INFINITY, -1.0] {
                let mut t = fields.clone();
                t.insert(field.clone(), toml::Value::Float(bad));
                let c: SimpleCostConfig = t.try_into().unwrap();
                let e = super::build(&CostConfig::Simple(c)).err();
                assert!(
                    e.as_ref()
                        .is_some_and(|e| e.contains(&format!("cost.{field}"))),
                    "cost.{field} = {bad}: {e:?}"
                );
            }
        }
    }
}
