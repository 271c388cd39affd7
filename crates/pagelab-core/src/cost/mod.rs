//! Cost models turn the counts of a run into cycles. They read counts after the run,
//! never sit in the per-reference loop, so a different model needs no re-simulation.
//!
//! Adding a model: a file here implementing [`CostModel`], one variant in
//! `config::CostConfig`, one arm in `machine::build_cost` (docs/EXTENDING.md).

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
