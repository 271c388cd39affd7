//! The `[tlb]` and `[[walk_caches]]` sections: TLB arrays, hierarchies of levels and
//! paging-structure caches.

use super::*;

/// The TLB, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TlbConfig {
    /// One TLB for every reference: a hierarchy of one level named "tlb".
    SetAssociative(SetAssocConfig),
    /// Named levels, each of one or more arrays, linked child to parent.
    Hierarchy(HierarchyConfig),
}

impl Default for TlbConfig {
    fn default() -> Self {
        TlbConfig::SetAssociative(SetAssocConfig::default())
    }
}

/// A TLB hierarchy: levels listed child first; a level's `parent` is named later.
/// Data references start at the first level that serves data, instruction fetches at
/// the first that serves instructions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HierarchyConfig {
    /// Entries carry no address-space tag: a switch of address space flushes every
    /// level (and the walk caches). Default false (tagged, like ASIDs or PCIDs).
    pub flush_on_switch: bool,
    pub levels: Vec<LevelConfig>,
}

/// One level of a TLB hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LevelConfig {
    /// Shown in reports; unique within the hierarchy.
    pub name: String,
    /// Which references the level translates. Default "all".
    pub serves: Serves,
    /// The level a miss goes to next; none: a miss walks the page table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Cycles a hit at this level adds to the access. Default 0 (overlapped with the
    /// cache lookup, as for an L1 TLB).
    pub hit_cycles: f64,
    /// Arrays probed in parallel (x86 parts have one per page size).
    pub arrays: Vec<SetAssocConfig>,
    /// A range TLB (or a direct segment) looked up beside this level's arrays when
    /// they miss (Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE
    /// Micro 2016, put one beside the L2 TLB).
    /// Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<RangeTlbConfig>,
}

impl Default for LevelConfig {
    fn default() -> Self {
        LevelConfig {
            name: String::new(),
            serves: Serves::All,
            parent: None,
            hit_cycles: 0.0,
            arrays: Vec::new(),
            range: None,
        }
    }
}

/// Which references a TLB level translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Serves {
    /// Loads, stores and modifies.
    Data,
    /// Instruction fetches.
    Instruction,
    /// Both (a unified TLB).
    All,
}

impl Serves {
    /// The name the configuration gives it.
    pub fn name(self) -> &'static str {
        match self {
            Serves::Data => "data",
            Serves::Instruction => "instruction",
            Serves::All => "all",
        }
    }
    /// Whether the level translates side `side` (0 data, 1 instruction).
    pub fn covers(self, side: usize) -> bool {
        match self {
            Serves::All => true,
            Serves::Data => side == 0,
            Serves::Instruction => side == 1,
        }
    }
}

/// A paging-structure cache: it holds entries of one level of a radix table, so a
/// walk that hits it skips the references to that level and the levels above.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalkCacheConfig {
    /// Which table level's entries it holds: 4 = PML4 entries, 3 = PDPT entries,
    /// 2 = page-directory entries (5 = PML5 entries with a 5-level table). Default 2.
    pub level: u32,
    /// Default 1 (fully associative).
    pub sets: usize,
    /// Default 32.
    pub ways: usize,
    /// Default "lru".
    pub replacement: String,
}

impl Default for WalkCacheConfig {
    fn default() -> Self {
        WalkCacheConfig {
            level: 2,
            sets: 1,
            ways: 32,
            replacement: "lru".into(),
        }
    }
}

/// A set-associative TLB array (`sets = 1` is fully associative).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SetAssocConfig {
    /// Number of sets; need not be a power of two. Default 16.
    pub sets: usize,
    /// Entries per set. Default 4 (with 16 sets: a 64-entry 4-way TLB, the size of
    /// the L1 DTLB of Intel cores from Sandy Bridge to Skylake).
    pub ways: usize,
    /// Replacement policy by name. Default "lru".
    pub replacement: String,
    /// Page sizes the TLB holds, probed in turn. Default ["4K"].
    pub page_sizes: Vec<PageSize>,
    /// Cycles a hit adds (only for a single TLB; a hierarchy gives each level its
    /// own `hit_cycles`). Default 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub hit_cycles: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Default for SetAssocConfig {
    fn default() -> Self {
        SetAssocConfig {
            sets: 16,
            ways: 4,
            replacement: "lru".into(),
            page_sizes: vec![PageSize::K4],
            hit_cycles: 0.0,
        }
    }
}
