//! Cost models turn the counts of a run into cycles. They read counts after the run,
//! never sit in the per-reference loop, so a different model needs no re-simulation.
//!
//! Adding a model: a file here implementing [`CostModel`], one variant in
//! `config::CostConfig`, one arm in `machine::build_cost` (docs/EXTENDING.md).

mod simple;

pub use simple::SimpleCost;

use crate::machine::Counts;
use serde::Serialize;

/// Cycles by cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cycles {
    /// The references themselves, without translation.
    pub base: f64,
    pub tlb_hits: f64,
    pub walks: f64,
    /// Page faults, with the walks retried after them.
    pub page_faults: f64,
}

impl Cycles {
    /// Everything translation adds to the base.
    pub fn translation(&self) -> f64 {
        self.tlb_hits + self.walks + self.page_faults
    }
    pub fn total(&self) -> f64 {
        self.base + self.translation()
    }
    /// TLB hits and walks as a share of the cycles of a run without page faults
    /// (base + hits + walks), in percent.
    pub fn tlb_percent(&self) -> f64 {
        let total = self.base + self.tlb_hits + self.walks;
        if total > 0.0 {
            100.0 * (self.tlb_hits + self.walks) / total
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

pub trait CostModel {
    /// `tlb_hit_cycles`: what the TLB hits cost, summed over the levels (each level
    /// has its own hit latency, part of the TLB's description).
    fn cycles(&self, counts: &Counts, tlb_hit_cycles: f64) -> Cycles;
}
