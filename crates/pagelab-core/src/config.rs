//! Machine configuration: typed, tagged, with documented defaults, and unknown fields
//! rejected by name. People write it as TOML; Python hands over the same document.
//! A configuration is only data: [`crate::machine::Machine::build`] resolves it into
//! components, checking every value it cannot check by type.
//!
//! ```toml
//! name = "one-tlb"
//! [tlb]
//! kind = "set-associative"
//! sets = 16
//! ways = 4
//! replacement = "lru"
//! page_sizes = ["4K"]
//! [page_table]
//! kind = "radix"    # or linear, hashed, clustered, inverted, guarded, variable-radix
//! levels = 4
//! [frames]
//! kind = "simple"
//! memory = "64G"
//! [cost]
//! kind = "simple"
//! walk_ref_cycles = 8.0
//! ```

use crate::addr::{format_bytes, parse_bytes, PageSize};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// A short name shown in reports. Default "default".
    #[serde(default = "default_name")]
    pub name: String,
    /// Where the numbers come from.
    #[serde(default)]
    pub description: String,
    /// Seed of every random choice a component makes (deterministic runs).
    #[serde(default)]
    pub seed: u64,
    /// The page size demand paging maps. Default "4K" ("8K" for Alpha).
    #[serde(default = "default_base_page")]
    pub base_page: PageSize,
    #[serde(default)]
    pub tlb: TlbConfig,
    /// Paging-structure (page-walk) caches of a radix table. Default none.
    #[serde(default)]
    pub walk_caches: Vec<WalkCacheConfig>,
    #[serde(default)]
    pub page_table: PageTableConfig,
    #[serde(default)]
    pub frames: FramesConfig,
    #[serde(default)]
    pub cost: CostConfig,
    /// When and which pages become superpages. Default none (base pages only).
    #[serde(default)]
    pub promotion: PromotionConfig,
    /// How a promotion makes a superpage's frames contiguous. Default copy.
    #[serde(default)]
    pub mechanism: MechanismConfig,
    /// Data caches fed with the data references, the walks' references and the
    /// promotions' copies (`crate::cache`). Default none (off, for speed).
    #[serde(default, skip_serializing_if = "crate::cache::CacheConfig::is_off")]
    pub cache: crate::cache::CacheConfig,
    /// Memory pressure: a resident-set limit and the page daemon that keeps to it,
    /// speculative demotion, demotion on writes (`crate::paging`). Default off.
    #[serde(default, skip_serializing_if = "PagingConfig::is_default")]
    pub paging: PagingConfig,
}

fn default_name() -> String {
    "default".into()
}

fn default_base_page() -> PageSize {
    PageSize::K4
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            name: default_name(),
            description: String::new(),
            seed: 0,
            base_page: default_base_page(),
            tlb: TlbConfig::default(),
            walk_caches: Vec::new(),
            page_table: PageTableConfig::default(),
            frames: FramesConfig::default(),
            cost: CostConfig::default(),
            promotion: PromotionConfig::default(),
            mechanism: MechanismConfig::default(),
            cache: crate::cache::CacheConfig::default(),
            paging: PagingConfig::default(),
        }
    }
}

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
}

impl Default for LevelConfig {
    fn default() -> Self {
        LevelConfig {
            name: String::new(),
            serves: Serves::All,
            parent: None,
            hit_cycles: 0.0,
            arrays: Vec::new(),
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

/// The page table, by kind (papers/variable-radix-page-table.md compares them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PageTableConfig {
    /// x86-64 multi-level radix table.
    Radix(RadixConfig),
    /// Virtual linear array, its pages mapped by a radix table.
    Linear(LinearConfig),
    /// Hashed table with collision chaining (Huck and Hays).
    Hashed(HashedConfig),
    /// Clustered table: hashed, several adjacent PTEs per entry (Talluri, Hill, Khalidi).
    Clustered(ClusteredConfig),
    /// Inverted table (an entry per frame) with a hash anchor table.
    Inverted(InvertedConfig),
    /// Guarded page table: path compression, fixed radix (Liedtke, Elphinstone).
    Guarded(GuardedConfig),
    /// Variable radix page table: path and level compression (Szmajda and Heiser).
    VariableRadix(VariableRadixConfig),
}

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig::Radix(RadixConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// 4 (48-bit virtual addresses) or 5 (57-bit, LA57). Default 4.
    pub levels: u32,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig { levels: 4 }
    }
}

fn default_page_sizes() -> Vec<PageSize> {
    vec![PageSize::K4, PageSize::M2, PageSize::G1]
}

/// `page_sizes` of a table: some, each at least 4K and at most `max`.
fn check_page_sizes(sizes: &[PageSize], max: PageSize) -> Result<(), String> {
    if sizes.is_empty() {
        return Err("page_table.page_sizes: the table must map at least one page size".into());
    }
    match sizes.iter().find(|&&s| s < PageSize::K4 || s > max) {
        Some(s) => Err(format!(
            "page_table.page_sizes: {s} is outside the sizes this table maps (4K to {max})"
        )),
        None => Ok(()),
    }
}

/// `field` must be a power of two in `lo..=hi`.
fn check_power_of_two(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "page_table.{field}: {v} must be a power of two from {lo} to {hi}"
        ))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinearConfig {
    /// Page sizes mapped, each expanded into 4K PTEs. Default ["4K", "2M"] (up to
    /// "1G", which writes 262144 PTEs).
    pub page_sizes: Vec<PageSize>,
    /// Entries of the nested TLB that holds the translations of the table's own
    /// pages (0: every lookup walks the root table first). Default 16.
    pub nested_tlb: usize,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            page_sizes: vec![PageSize::K4, PageSize::M2],
            nested_tlb: 16,
        }
    }
}

impl LinearConfig {
    pub fn check(&self) -> Result<(), String> {
        check_page_sizes(&self.page_sizes, PageSize::G1)?;
        if self.nested_tlb > 4096 {
            return Err(format!(
                "page_table.nested_tlb: {} entries is more than 4096",
                self.nested_tlb
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HashedConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30), one 32-byte entry in
    /// place each. Default 65536 (2 MiB).
    pub buckets: u64,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for HashedConfig {
    fn default() -> Self {
        HashedConfig {
            buckets: 1 << 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl HashedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusteredConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30), one cluster in place
    /// each. Default 16384.
    pub buckets: u64,
    /// PTEs per cluster (a power of two, 1 to 512). Default 16, as in the paper.
    pub subblock_factor: u64,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for ClusteredConfig {
    fn default() -> Self {
        ClusteredConfig {
            buckets: 1 << 14,
            subblock_factor: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl ClusteredConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_power_of_two("subblock_factor", self.subblock_factor, 1, 512)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InvertedConfig {
    /// Physical memory the table has an entry per frame of; frames beyond it cannot
    /// be mapped, so it should be `frames.memory`. Default 64 GiB.
    pub memory: ByteSize,
    /// Hash anchor table entries (a power of two, 2 to 2^32). Default: the number of
    /// frames, rounded up to a power of two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hat_entries: Option<u64>,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for InvertedConfig {
    fn default() -> Self {
        InvertedConfig {
            memory: ByteSize(64 << 30),
            hat_entries: None,
            page_sizes: default_page_sizes(),
        }
    }
}

impl InvertedConfig {
    /// Frames covered.
    pub fn frames(&self) -> u64 {
        self.memory.0 >> crate::addr::BASE_SHIFT
    }
    /// HAT entries.
    pub fn hat(&self) -> u64 {
        self.hat_entries
            .unwrap_or_else(|| self.frames().max(2).next_power_of_two())
    }
    pub fn check(&self) -> Result<(), String> {
        let frames = self.frames();
        if frames == 0 || frames > 1 << 36 || self.memory.0 % 4096 != 0 {
            return Err(format!(
                "page_table.memory: {} must be a whole number of 4K frames, at most 256T",
                format_bytes(self.memory.0)
            ));
        }
        check_power_of_two("hat_entries", self.hat(), 2, 1 << 32)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardedConfig {
    /// Entries per node (a power of two, 2 to 65536). Default 16, the radix
    /// Elphinstone found best.
    pub radix: u64,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for GuardedConfig {
    fn default() -> Self {
        GuardedConfig {
            radix: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl GuardedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("radix", self.radix, 2, 1 << 16)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VariableRadixConfig {
    /// log2 of the entries of a new node (1 to 16). Default 4.
    pub node_bits: u32,
    /// log2 of the entries of the widest node level compression may build (at
    /// least `node_bits`, at most 20). Default 16 (2 MiB of 32-byte entries).
    pub max_node_bits: u32,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for VariableRadixConfig {
    fn default() -> Self {
        VariableRadixConfig {
            node_bits: 4,
            max_node_bits: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl VariableRadixConfig {
    pub fn check(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.node_bits) {
            return Err(format!(
                "page_table.node_bits: {} must be from 1 to 16",
                self.node_bits
            ));
        }
        if !(self.node_bits..=20).contains(&self.max_node_bits) {
            return Err(format!(
                "page_table.max_node_bits: {} must be from node_bits ({}) to 20",
                self.max_node_bits, self.node_bits
            ));
        }
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

/// Physical memory and its allocator, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FramesConfig {
    /// Bump allocation with reuse of freed blocks; no splitting or coalescing.
    Simple(SimpleFramesConfig),
    /// The binary buddy allocator: aligned blocks split on demand and coalesced on free.
    Buddy(BuddyFramesConfig),
}

impl Default for FramesConfig {
    fn default() -> Self {
        FramesConfig::Simple(SimpleFramesConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimpleFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
}

impl Default for SimpleFramesConfig {
    fn default() -> Self {
        SimpleFramesConfig {
            memory: ByteSize(64 << 30),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuddyFramesConfig {
    /// Physical memory size, e.g. "64G". Default 64 GiB.
    pub memory: ByteSize,
    /// The largest block, as a page size (it sets the largest superpage memory can
    /// give). Default "1G".
    pub max_block: PageSize,
    /// The share of memory wired before the run (kernel pages, pinned buffers): base
    /// frames that are never freed or moved. Scattered at random they break
    /// contiguity (papers/navarro-superpages-slides.md, "Issue 4: fragmentation"), the
    /// knob that makes large blocks scarce. Default 0.
    pub wired: f64,
    /// Cluster the wired frames at the top of memory, "a dedicated region of physical
    /// memory for wired pages", instead of scattering them. Default false.
    pub wired_clustered: bool,
    /// Sample the free memory by block size every this many references, for the
    /// report's fragmentation over time (0: never). Default 1,000,000.
    pub sample_every: u64,
}

impl Default for BuddyFramesConfig {
    fn default() -> Self {
        BuddyFramesConfig {
            memory: ByteSize(64 << 30),
            max_block: PageSize::G1,
            wired: 0.0,
            wired_clustered: false,
            sample_every: 1_000_000,
        }
    }
}

/// Memory pressure and the page daemon (`crate::paging`;
/// papers/navarro-superpages-slides.md, "Speculative demotions", "Demotions: dirty
/// superpages", "Fragmentation control").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PagingConfig {
    /// The most memory the program's pages may hold (its resident set: every base page
    /// mapped, those of superpages included), e.g. "64M"; rounded down to base pages.
    /// When a fault or a promotion takes the resident set past it, the page daemon
    /// reclaims pages until it is `free_target` below. 0: no limit. Default 0.
    pub resident_limit: ByteSize,
    /// The share of `resident_limit` the daemon frees below it each time it wakes
    /// (its hysteresis, as FreeBSD's free target above its minimum), from 0 to 0.5.
    /// Default 0.03.
    pub free_target: f64,
    /// How the daemon chooses victims: "clock" (second chance over the resident
    /// mappings) or "contiguity" (the same inactive pages, those that complete a free
    /// block of a superpage size first; needs `frames.kind = "buddy"`). Default "clock".
    pub daemon: DaemonKind,
    /// Inactive pages the contiguity daemon weighs at once. Default 64.
    pub contiguity_window: usize,
    /// A referenced superpage the daemon meets is demoted as its reference bit is
    /// cleared, so that the bits of its base pages tell which are still used; it is
    /// promoted again when they all are. Default true.
    pub speculative_demotion: bool,
    /// The first write to a clean superpage demotes it, so that dirty bits are kept per
    /// base page; it is promoted again when all its base pages are dirty. Default false
    /// (with a policy and without it, a run's report is what it was before this option).
    pub demote_on_write: bool,
}

impl Default for PagingConfig {
    fn default() -> Self {
        PagingConfig {
            resident_limit: ByteSize(0),
            free_target: 0.03,
            daemon: DaemonKind::Clock,
            contiguity_window: 64,
            speculative_demotion: true,
            demote_on_write: false,
        }
    }
}

impl PagingConfig {
    pub fn is_default(&self) -> bool {
        *self == PagingConfig::default()
    }
    /// Whether the machine keeps a pager at all (a limit, or dirty bits per page).
    pub fn is_on(&self) -> bool {
        self.resident_limit.0 > 0 || self.demote_on_write
    }
}

/// The page daemon's choice of victims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DaemonKind {
    /// Second chance (clock) over the resident mappings, in the order they were made.
    Clock,
    /// Clock's inactive pages, those whose frames complete a free block of a superpage
    /// size first ("contiguity-aware page daemon").
    Contiguity,
}

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
    /// costs about 30 cycles, "the typical cost of a TLB miss"
    /// (papers/variable-radix-page-table.md §1.1).
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
}

impl Default for SimpleCostConfig {
    fn default() -> Self {
        SimpleCostConfig {
            base_cycles_per_ref: 1.0,
            walk_ref_cycles: 8.0,
            page_fault_cycles: 5000.0,
            miss_cycles: 0.0,
            major_fault_cycles: 300_000.0,
        }
    }
}

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

/// A byte count written as "64G", "512MiB" or a plain integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(t) => parse_bytes(&t)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A configuration problem, naming the file (if any), the line or field, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl MachineConfig {
    /// Parse a TOML document; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<MachineConfig, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    format!(
                        " line {}:",
                        text[..s.start.min(text.len())].matches('\n').count() + 1
                    )
                })
                .unwrap_or_default();
            ConfigError(format!(
                "{origin}:{at} {}",
                e.message().trim().replace('\n', " ")
            ))
        })
    }

    pub fn load(path: &Path) -> Result<MachineConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))?;
        MachineConfig::from_toml(&text, &path.display().to_string())
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configurations serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_document_is_the_default_machine() {
        let c = MachineConfig::from_toml("", "t").unwrap();
        assert_eq!(c.tlb, TlbConfig::default());
        assert_eq!(
            c.page_table,
            PageTableConfig::Radix(RadixConfig { levels: 4 })
        );
    }

    #[test]
    fn fields_parse() {
        let c = MachineConfig::from_toml(
            "name = \"x\"\n[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 64\npage_sizes = [\"4K\", \"2M\"]\n\
             [frames]\nkind = \"simple\"\nmemory = \"1G\"\n",
            "t",
        )
        .unwrap();
        let TlbConfig::SetAssociative(t) = &c.tlb else {
            panic!("a set-associative TLB")
        };
        assert_eq!((t.sets, t.ways), (1, 64));
        assert_eq!(t.page_sizes, vec![PageSize::K4, PageSize::M2]);
        let FramesConfig::Simple(f) = &c.frames else {
            panic!("simple frames")
        };
        assert_eq!(f.memory, ByteSize(1 << 30));
        // And back.
        assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
    }

    #[test]
    fn every_page_table_kind_parses_with_defaults_and_checks_its_options() {
        for kind in [
            "linear",
            "hashed",
            "clustered",
            "inverted",
            "guarded",
            "variable-radix",
        ] {
            let c = MachineConfig::from_toml(&format!("[page_table]\nkind = \"{kind}\"\n"), "t")
                .unwrap();
            assert_eq!(MachineConfig::from_toml(&c.to_toml(), "t").unwrap(), c);
            let e = MachineConfig::from_toml(
                &format!("[page_table]\nkind = \"{kind}\"\nlevels = 4\n"),
                "t",
            )
            .unwrap_err();
            assert!(e.0.contains("levels"), "{kind}: {e}");
        }
        let c = MachineConfig::from_toml(
            "[page_table]\nkind = \"clustered\"\nsubblock_factor = 8\npage_sizes = [\"4K\"]\n",
            "t",
        )
        .unwrap();
        let PageTableConfig::Clustered(cl) = &c.page_table else {
            panic!("clustered")
        };
        assert_eq!((cl.subblock_factor, cl.buckets), (8, 1 << 14));
        let bad = ClusteredConfig {
            subblock_factor: 12,
            ..ClusteredConfig::default()
        };
        assert!(bad
            .check()
            .unwrap_err()
            .contains("page_table.subblock_factor"));
        let bad = HashedConfig {
            page_sizes: vec![],
            ..HashedConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("page_table.page_sizes"));
        let bad = LinearConfig {
            page_sizes: vec![PageSize::from_shift(31).unwrap()],
            ..LinearConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("2G"));
        let bad = VariableRadixConfig {
            max_node_bits: 2,
            ..VariableRadixConfig::default()
        };
        assert!(bad
            .check()
            .unwrap_err()
            .contains("page_table.max_node_bits"));
        let bad = InvertedConfig {
            memory: ByteSize(1000),
            ..InvertedConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("page_table.memory"));
        assert_eq!(InvertedConfig::default().hat(), 1 << 24);
        assert!(GuardedConfig {
            radix: 3,
            ..GuardedConfig::default()
        }
        .check()
        .is_err());
    }

    #[test]
    fn unknown_fields_are_named_with_their_line() {
        let e = MachineConfig::from_toml("[tlb]\nkind = \"set-associative\"\nsetz = 4\n", "m.toml")
            .unwrap_err();
        assert!(e.0.starts_with("m.toml: line "), "{e}");
        assert!(e.0.contains("setz"), "{e}");
        let e = MachineConfig::from_toml("[tlb]\nkind = \"magic\"\n", "m.toml").unwrap_err();
        assert!(e.0.contains("magic"), "{e}");
        let e = MachineConfig::from_toml("colour = 1\n", "m.toml").unwrap_err();
        assert!(e.0.contains("colour") && e.0.contains("line 1"), "{e}");
        let e = MachineConfig::from_toml(
            "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"3K\"]\n",
            "m.toml",
        )
        .unwrap_err();
        assert!(e.0.contains("3K"), "{e}");
    }
}
