//! The `[promotion]` and `[mechanism]` sections: superpage promotion policies and the
//! mechanisms that carry promotions out.

use super::*;

/// A superpage promotion policy, by name (`policy = "..."`); see `crate::superpage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum PromotionConfig {
    /// Base pages only.
    #[default]
    None,
    /// Chosen regions mapped with one fixed large size, as hugetlbfs would: a fault in
    /// a region maps the whole aligned page of that size around it.
    Static(StaticPromotionConfig),
    /// Promote an aligned candidate as soon as every base page of it has been
    /// referenced (papers/online-superpage-promotion-revisited.md §3.1).
    Asap(AsapConfig),
    /// Romer's competitive approximation: prefetch counters charged on TLB misses,
    /// promotion at a per-size threshold (§3.1).
    ApproxOnline(OnlineConfig),
    /// Romer's full online policy: approx-online, and misses of pages that were
    /// evicted also charged to unrelated candidates whose promotion would have freed
    /// TLB entries (§3.1, last paragraphs).
    Online(OnlineConfig),
    /// Linux transparent huge pages: huge pages at faults where a free aligned block
    /// exists, and a background pass collapsing ranges with few unmapped pages.
    Thp(ThpConfig),
    /// Navarro's preemptible reservations with incremental promotion
    /// (papers/navarro-superpages-slides.md, "III Design").
    Reservation(ReservationConfig),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpConfig {
    /// Candidate sizes (default as for asap); the huge page is the smallest of them.
    pub sizes: Vec<PageSize>,
    /// Map a huge page at a fault when possible ("always"; false: "madvise" without
    /// the advice, only the background pass makes huge pages). Default true.
    pub fault: bool,
    /// A range is collapsed when at most this many of its base pages are unmapped
    /// (khugepaged's max_ptes_none). Default 511.
    pub max_ptes_none: u64,
    /// References between background passes (0: none). Default 1,000,000.
    pub scan_every: u64,
    /// Ranges a pass visits (khugepaged's pages_to_scan / 512). Default 8.
    pub ranges_per_scan: usize,
    /// Cycles the fault and miss handlers spend on the policy per miss. Default 0.
    pub miss_cycles: f64,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig {
            sizes: Vec::new(),
            fault: true,
            max_ptes_none: 511,
            scan_every: 1_000_000,
            ranges_per_scan: 8,
            miss_cycles: 0.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReservationConfig {
    /// Candidate sizes (default as for asap): reservations are blocks of these sizes.
    pub sizes: Vec<PageSize>,
    /// Cycles the fault and miss handlers spend on the population maps per miss
    /// they are told of. Default 20, an estimate.
    pub miss_cycles: f64,
}

impl Default for ReservationConfig {
    fn default() -> Self {
        ReservationConfig {
            sizes: Vec::new(),
            miss_cycles: 20.0,
        }
    }
}

/// One region of a static policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticRegion {
    /// First virtual address (aligned to `page_size`).
    pub start: u64,
    /// Length in bytes (a multiple of `page_size`).
    pub bytes: ByteSize,
    pub page_size: PageSize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StaticPromotionConfig {
    pub regions: Vec<StaticRegion>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AsapConfig {
    /// Candidate superpage sizes. Default: every size above the base page, up to the
    /// largest, that both the page table and the last TLB level hold.
    pub sizes: Vec<PageSize>,
    /// Cycles the miss handler spends on the policy per TLB miss (population counts).
    /// Default 20, an estimate: a few counter updates in the handler.
    pub miss_cycles: f64,
}

impl Default for AsapConfig {
    fn default() -> Self {
        AsapConfig {
            sizes: Vec::new(),
            miss_cycles: 20.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnlineConfig {
    /// Candidate superpage sizes (default as for asap).
    pub sizes: Vec<PageSize>,
    /// Prefetch charges that promote a candidate of the smallest size; the threshold
    /// doubles with each size step, as the cost of a copy does. Default 16.
    pub threshold: u64,
    /// Thresholds per size, smallest size first, instead of `threshold` doubling.
    pub thresholds: Vec<u64>,
    /// Cycles the miss handler spends on the policy per TLB miss (charging the
    /// counters of every candidate size). Default 100, an estimate.
    pub miss_cycles: f64,
    /// approx-online: find the candidates holding TLB entries with Romer's `tlbcount`
    /// shortcut (counts kept as entries come and go) rather than by reading the TLB
    /// at each miss; both charge the same. Default true. (`online` reads the TLB, and
    /// so does approx-online on a TLB whose last levels differ for data and
    /// instructions, as Alpha's.)
    pub tlbcount: bool,
}

impl Default for OnlineConfig {
    fn default() -> Self {
        OnlineConfig {
            sizes: Vec::new(),
            threshold: 16,
            thresholds: Vec::new(),
            miss_cycles: 100.0,
            tlbcount: true,
        }
    }
}

/// A promotion mechanism, by kind; see `crate::superpage::mechanism`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MechanismConfig {
    /// Copy the pages into a new aligned block of frames.
    Copy(CopyConfig),
    /// Impulse shadow memory: map the superpage to an aligned block of unused
    /// physical ("shadow") addresses that the memory controller remaps to the pages'
    /// frames (papers/online-superpage-promotion-revisited.md §3.2).
    Remap(RemapConfig),
}

impl Default for MechanismConfig {
    fn default() -> Self {
        MechanismConfig::Copy(CopyConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CopyConfig {
    /// Cycles to copy one base page. Default 8000: "copying two base pages to a
    /// contiguous two-page superpage costs 16,000 cycles" (§3.1).
    pub cycles_per_page: f64,
    /// Cycles to clear a base page of the superpage that was never touched. Default 4000.
    pub zero_cycles_per_page: f64,
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig {
            cycles_per_page: 8000.0,
            zero_cycles_per_page: 4000.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemapConfig {
    /// Cycles to remap one base page (the controller's shadow entry and the page's
    /// lines flushed). Default 64: with asap on the 4096-page microbenchmark a TLB miss
    /// costs about 700 cycles against 88,000 with copying (§5.1), and each page is
    /// promoted at about ten sizes, so 8000 cycles a page copy gives 64 a page remap.
    pub cycles_per_page: f64,
    /// Cycles to clear a base page of the superpage that was never touched. Default 4000.
    pub zero_cycles_per_page: f64,
    /// Shadow memory: bytes of unused physical address space the controller can remap.
    /// Default 64G.
    pub shadow_memory: ByteSize,
    /// Cycles the controller adds to a reference to shadow memory that reaches
    /// memory (its own table lookup), charged when a cache model says which do.
    /// Default 10, an estimate.
    pub lookup_cycles: f64,
}

impl Default for RemapConfig {
    fn default() -> Self {
        RemapConfig {
            cycles_per_page: 64.0,
            zero_cycles_per_page: 4000.0,
            shadow_memory: ByteSize(64 << 30),
            lookup_cycles: 10.0,
        }
    }
}
