//! Cost models turn the counts of a run into cycles. They read counts after the run,
//! never sit in the per-reference loop, so a different model needs no re-simulation.
//!
//! Adding a model: a file here implementing [`CostModel`], with its parameters and
//! their `build` (every number checked); one variant of [`CostConfig`], its name in
//! `NAMES` and its arm in [`build`] (docs/EXTENDING.md).

mod simple;

pub use simple::{SimpleCost, SimpleCostConfig};

/// How counts become cycles, by kind: the `[cost]` section of a machine's
/// configuration (re-exported by `config`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CostConfig {
    /// A linear model: fixed cycles per event.
    Simple(SimpleCostConfig),
}

impl CostConfig {
    /// The models' names (`kind` in `[cost]`), in the variants' order (a unit test
    /// checks them against serde's).
    pub const NAMES: &'static [&'static str] = &["simple"];

    /// The cycles the model charges a page walk's memory reference (what a cache
    /// model's latencies replace).
    pub fn walk_ref_cycles(&self) -> f64 {
        match self {
            CostConfig::Simple(s) => s.walk_ref_cycles,
        }
    }

    /// The linear model's parameters, if the model is the linear one (the page-size
    /// benefit analysis is defined on them).
    pub fn as_simple(&self) -> Option<&SimpleCostConfig> {
        #[allow(unreachable_patterns)]
        match self {
            CostConfig::Simple(s) => Some(s),
            _ => None,
        }
    }

    /// [`CostConfig::as_simple`], to change.
    pub fn as_simple_mut(&mut self) -> Option<&mut SimpleCostConfig> {
        #[allow(unreachable_patterns)]
        match self {
            CostConfig::Simple(s) => Some(s),
            _ => None,
        }
    }
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig::Simple(SimpleCostConfig::default())
    }
}

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

/// The cost model the configuration names, its numbers checked.
pub fn build(c: &CostConfig) -> Result<Box<dyn CostModel>, String> {
    match c {
        CostConfig::Simple(o) => o.build(),
    }
}

#[cfg(test)]
mod build_tests {
    use super::CostConfig;

    /// `NAMES` is every variant, in order: serde's error for an unknown kind lists
    /// them (one name is listed alone: "expected `simple`").
    #[test]
    fn the_names_are_the_kinds() {
        assert_eq!(
            crate::config::serde_kinds::<CostConfig>(),
            CostConfig::NAMES
        );
    }

    /// Every number of every cost model is checked: each field of its configuration
    /// (found by serde, so a new one is covered) set to NaN, infinity or a negative
    /// value is refused, naming it.
    #[test]
    fn every_cost_field_is_checked() {
        for name in CostConfig::NAMES {
            let default: CostConfig = toml::from_str(&format!("kind = {name:?}")).unwrap();
            let fields = toml::Table::try_from(&default).unwrap();
            let numbers: Vec<&String> = fields
                .iter()
                .filter(|(_, v)| v.is_float())
                .map(|(k, _)| k)
                .collect();
            assert!(!numbers.is_empty(), "{name}: {numbers:?}");
            for field in numbers {
                for bad in [f64::NAN, f64::INFINITY, -1.0] {
                    let mut t = fields.clone();
                    t.insert(field.clone(), toml::Value::Float(bad));
                    let c: CostConfig = t.try_into().unwrap();
                    let e = super::build(&c).err();
                    assert!(
                        e.as_ref()
                            .is_some_and(|e| e.contains(&format!("cost.{field}"))),
                        "{name}: cost.{field} = {bad}: {e:?}"
                    );
                }
            }
        }
    }
}
