//! The `[cost]` section: how counts become cycles.

use super::*;

/// How counts become cycles, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CostConfig {
    Simple(SimpleCostConfig),
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig::Simple(SimpleCostConfig::default())
    }
}

/// A linear cost model: each event has a fixed cost in cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
            miss_cycles: 0.0,
            major_fault_cycles: 300_000.0,
            eager_page_cycles: 1000.0,
            range_walks_in_background: true,
        }
    }
}
