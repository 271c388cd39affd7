//! A machine: a TLB, a page table, physical memory and a cost model, composed from a
//! [`MachineConfig`], run over a trace batch by batch. Demand paging: a walk that finds
//! no translation is a page fault; the fault handler takes a frame, maps the base page,
//! and the access is retried (walking again).
//!
//! The per-reference loop ([`Machine::run_batch`]) allocates nothing and dispatches
//! statically to the TLB; walks, faults and their bookkeeping are out of line.
//!
//! **Repeated pages.** A reference to the page of the translation just before it on the
//! same side (data or instruction; same address space, same page of the first levels'
//! smallest size) hits without a lookup: that entry was the last touched in its set,
//! and a second hit on it changes no policy's state. The machine counts such hits by
//! side and entry size and credits them to the first level at the end of each batch.
//! Anything that invalidates TLB entries must [`Machine::forget_last_page`] first.

use crate::addr::{Asid, PageSize, VirtAddr};
use crate::config::{CostConfig, FramesConfig, MachineConfig, PageTableConfig};
use crate::cost::{CostModel, Cycles, SimpleCost};
use crate::event::{count_kinds, AccessKind, Batch, Event, PlainBatch};
use crate::frames::{BuddyAllocator, FrameAllocator, SimpleAllocator};
use crate::pagetable::{
    ClusteredPageTable, GuardedPageTable, HashedPageTable, InvertedPageTable, LinearPageTable,
    PageTable, RadixPageTable, Translation, VariableRadixPageTable, Walk, WalkHint,
};
use crate::tlb::hierarchy::{SizeCounts, DATA, INSTRUCTION};
use crate::tlb::walk_cache::WalkCacheReport;
use crate::tlb::{Hierarchy, WalkCaches};
use crate::trace::{Location, Part, TraceError, TraceReader};
use walker::Walker;

pub mod decoupled;
mod paging;
mod promote;
mod repeat_choice;
mod walker;
pub use repeat_choice::RepeatMode;
use serde::Serialize;
use std::fmt;
use std::path::Path;

/// What went wrong in a run, with the index of the reference it happened at.
#[derive(Debug, Clone, PartialEq)]
pub struct SimError {
    pub reference: u64,
    pub message: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reference {}: {}", self.reference, self.message)
    }
}

impl std::error::Error for SimError {}

/// Every page-table structure, as one type.
pub enum AnyPageTable {
    Radix(RadixPageTable),
    Linear(LinearPageTable),
    Hashed(HashedPageTable),
    Clustered(ClusteredPageTable),
    Inverted(InvertedPageTable),
    Guarded(GuardedPageTable),
    VariableRadix(VariableRadixPageTable),
}

/// `$e` with `$t` bound to the structure inside, whichever it is.
macro_rules! each_table {
    ($table:expr, $t:ident => $e:expr) => {
        match $table {
            AnyPageTable::Radix($t) => $e,
            AnyPageTable::Linear($t) => $e,
            AnyPageTable::Hashed($t) => $e,
            AnyPageTable::Clustered($t) => $e,
            AnyPageTable::Inverted($t) => $e,
            AnyPageTable::Guarded($t) => $e,
            AnyPageTable::VariableRadix($t) => $e,
        }
    };
}
pub(crate) use each_table;

impl AnyPageTable {
    #[inline(always)]
    fn walk_into(&self, asid: Asid, va: VirtAddr, walk: &mut Walk) {
        each_table!(self, t => t.walk_into(asid, va, walk))
    }
    #[inline(always)]
    fn prefetch(&self, asid: Asid, va: VirtAddr) -> WalkHint {
        each_table!(self, t => t.prefetch(asid, va))
    }
    #[inline(always)]
    fn prefetch_early(&self, asid: Asid, va: VirtAddr) {
        each_table!(self, t => t.prefetch_early(asid, va))
    }
    #[inline(always)]
    fn walk_brief(
        &self,
        asid: Asid,
        va: VirtAddr,
        hint: WalkHint,
    ) -> Option<(usize, Option<Translation>)> {
        each_table!(self, t => t.walk_brief(asid, va, hint))
    }
    fn as_dyn(&mut self) -> &mut dyn PageTable {
        each_table!(self, t => t)
    }
    fn as_ref(&self) -> &dyn PageTable {
        each_table!(self, t => t)
    }
    fn footprint_bytes(&self) -> u64 {
        each_table!(self, t => t.footprint_bytes())
    }
}

pub(crate) fn build_page_table(c: &PageTableConfig) -> Result<AnyPageTable, String> {
    let bits = |n: u64| n.trailing_zeros();
    match c {
        PageTableConfig::Radix(r) => match r.levels {
            4 | 5 => Ok(AnyPageTable::Radix(RadixPageTable::new(r.levels))),
            n => Err(format!(
                "page_table.levels: {n} is not supported (x86-64 radix tables have 4 or 5 levels)"
            )),
        },
        PageTableConfig::Linear(l) => l
            .check()
            .map(|()| AnyPageTable::Linear(LinearPageTable::new(&l.page_sizes, l.nested_tlb))),
        PageTableConfig::Hashed(h) => h
            .check()
            .map(|()| AnyPageTable::Hashed(HashedPageTable::new(bits(h.buckets), &h.page_sizes))),
        PageTableConfig::Clustered(c) => c.check().map(|()| {
            let (b, f) = (bits(c.buckets), bits(c.subblock_factor));
            AnyPageTable::Clustered(ClusteredPageTable::new(b, f, &c.page_sizes))
        }),
        PageTableConfig::Inverted(i) => i.check().map(|()| {
            let hat = bits(i.hat());
            AnyPageTable::Inverted(InvertedPageTable::new(i.frames(), hat, &i.page_sizes))
        }),
        PageTableConfig::Guarded(g) => g
            .check()
            .map(|()| AnyPageTable::Guarded(GuardedPageTable::new(g.radix as u32, &g.page_sizes))),
        PageTableConfig::VariableRadix(v) => v.check().map(|()| {
            let t = VariableRadixPageTable::new(v.node_bits, v.max_node_bits, &v.page_sizes);
            AnyPageTable::VariableRadix(t)
        }),
    }
}

/// The candidate superpage sizes of the promotion policy, ascending: those configured
/// (each must be larger than the base page and mapped by the page table) or, by
/// default, every size above the base page that the page table maps and the TLB's
/// last data level holds.
fn candidate_sizes(
    config: &MachineConfig,
    table: &[PageSize],
    tlb: &Hierarchy,
) -> Result<Vec<PageSize>, String> {
    let Some(named) = crate::superpage::configured_sizes(&config.promotion) else {
        return Ok(Vec::new());
    };
    let list = |v: &[PageSize]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut sizes = named.to_vec();
    sizes.sort();
    sizes.dedup();
    for s in &sizes {
        if *s <= config.base_page {
            return Err(format!(
                "promotion.sizes: {s} is not larger than the base page ({})",
                config.base_page
            ));
        }
        if !table.contains(s) {
            return Err(format!(
                "promotion.sizes: the page table cannot map {s} pages (it maps {}; set page_table.page_sizes)",
                list(table)
            ));
        }
    }
    if sizes.is_empty() {
        let held = tlb.last_level_sizes(DATA);
        sizes = table
            .iter()
            .copied()
            .filter(|s| *s > config.base_page && held.contains(s))
            .collect();
        if sizes.is_empty() {
            return Err(format!(
                "promotion.sizes: no page size above the base page is both mapped by the page table ({}) and held by the TLB ({}); name the sizes",
                list(table),
                list(&held)
            ));
        }
    }
    Ok(sizes)
}

fn build_frames(c: &FramesConfig, seed: u64) -> Result<Box<dyn FrameAllocator>, String> {
    let frames_of = |memory: crate::config::ByteSize| {
        let frames = memory.0 >> crate::addr::BASE_SHIFT;
        if frames < 16 {
            return Err(format!(
                "frames.memory: {} bytes is too little memory to run anything",
                memory.0
            ));
        }
        Ok(frames)
    };
    match c {
        FramesConfig::Simple(s) => Ok(Box::new(SimpleAllocator::new(frames_of(s.memory)?))),
        FramesConfig::Buddy(b) => {
            let frames = frames_of(b.memory)?;
            let max_order = b.max_block.base_frames().trailing_zeros();
            if b.max_block < crate::addr::PageSize::K4 {
                return Err(format!(
                    "frames.max_block: {} is smaller than a base frame (4K)",
                    b.max_block
                ));
            }
            if !(0.0..=0.95).contains(&b.wired) {
                return Err(format!(
                    "frames.wired: {} must be a share of memory from 0 to 0.95",
                    b.wired
                ));
            }
            let mut a = BuddyAllocator::new(frames, max_order);
            wire(&mut a, frames, b.wired, b.wired_clustered, seed);
            Ok(Box::new(a))
        }
    }
}

/// Wire `share` of the frames: the top of memory if `clustered`, else each frame at
/// random with that probability (seeded).
fn wire(a: &mut BuddyAllocator, frames: u64, share: f64, clustered: bool, seed: u64) {
    if share <= 0.0 {
        return;
    }
    if clustered {
        let n = (frames as f64 * share) as u64;
        for pfn in frames - n..frames {
            a.take(pfn);
        }
        return;
    }
    let mut state = seed ^ 0x5749_5245_445f_5047;
    let threshold = (share * (1u64 << 53) as f64) as u64;
    for pfn in 1..frames {
        // SplitMix64 (Steele, Lea and Flood).
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        if z >> 11 < threshold {
            a.take(pfn);
        }
    }
}

fn build_cost(c: &CostConfig) -> Result<Box<dyn CostModel>, String> {
    match c {
        CostConfig::Simple(s) => {
            for (field, v) in [
                ("base_cycles_per_ref", s.base_cycles_per_ref),
                ("walk_ref_cycles", s.walk_ref_cycles),
                ("page_fault_cycles", s.page_fault_cycles),
                ("miss_cycles", s.miss_cycles),
                ("major_fault_cycles", s.major_fault_cycles),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!("cost.{field}: {v} must be a finite number ≥ 0"));
                }
            }
            Ok(Box::new(SimpleCost(s.clone())))
        }
    }
}

/// Everything a run counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub references: u64,
    /// References by kind: load, store, fetch, modify.
    pub by_kind: [u64; 4],
    /// TLB lookups: one per reference, two for a reference that spans two base pages.
    pub translations: u64,
    pub page_crossing: u64,
    /// Page walks after TLB misses.
    pub walks: u64,
    /// Memory references made by those walks (after the walk caches).
    pub walk_refs: u64,
    /// References the walk caches saved.
    pub walk_refs_skipped: u64,
    /// Distinct 64-byte cache lines per walk, summed over walks.
    pub walk_lines: u64,
    pub page_faults: u64,
    /// Memory references of the walks retried after page faults (charged to faults).
    pub fault_walk_refs: u64,
    /// References whose address space differs from the reference before.
    pub address_space_switches: u64,
    /// Page faults that mapped a page larger than the base page (static regions).
    pub large_faults: u64,
    /// TLB misses the promotion policy was told of (and charged bookkeeping for).
    pub policy_misses: u64,
    /// Superpages made by promotion, and promotions that found no memory for them.
    pub promotions: u64,
    pub promotion_failures: u64,
    /// Promotions whose frames were the aligned block already: a page-table update.
    pub promotions_in_place: u64,
    /// Base pages promotions copied, remapped, and gave a cleared frame (they had
    /// none: memory the superpage adds beyond the pages the program touched).
    pub pages_copied: u64,
    pub pages_remapped: u64,
    pub pages_zeroed: u64,
    /// Page-table references of promotions (unmapping the old pages, mapping the new).
    pub promotion_table_refs: u64,
    /// References to remapped (shadow) memory that reached memory, each translated
    /// by the memory controller (with a cache model only).
    pub controller_lookups: u64,
    /// Under a resident limit (`crate::paging`; absent from reports when zero): page
    /// faults that read a reclaimed page back from the swap store (part of
    /// `page_faults`), pages the daemon reclaimed and those of them that were dirty
    /// (written back), and free blocks of the smallest superpage size its frees
    /// completed.
    #[serde(skip_serializing_if = "is_zero")]
    pub major_faults: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pages_reclaimed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pages_written_back: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub contiguity_restored: u64,
    /// Superpages demoted by the page daemon (speculatively, or to take a victim from
    /// them) and by the first write to a clean superpage; demoted blocks promoted
    /// back; the page-table references of the demotions.
    #[serde(skip_serializing_if = "is_zero")]
    pub demotions_pressure: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub demotions_write: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub repromotions: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub demotion_table_refs: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub struct Machine {
    config: MachineConfig,
    tlb: Hierarchy,
    walker: Walker,
    cost: Box<dyn CostModel>,
    /// Whether batches run decoupled (see [`decoupled`]): true while every
    /// translation is a base page.
    decoupled: bool,
    /// The decoupled run's TLB misses awaiting their walks.
    misses: Vec<decoupled::Miss>,
    /// Whether decoupled runs use the specialized loop ([`decoupled::Kernel`]): the
    /// TLB's shape allows it.
    kernel: bool,
    counts: Counts,
    /// The address space of the last reference.
    current_asid: Asid,
    /// Per repeat filter: the page of the last translation (`u64::MAX`: none), in units
    /// of the first levels' smallest page, its address space, and the log2 size of the
    /// entry it hit or filled. Data and instruction sides have a filter each when they
    /// start at different levels, and share filter 0 when they share the first level.
    filter_of: [usize; 2],
    /// Per side: whether its misses reach the other side's first level (then a miss
    /// changes what the other side's filter stands for, and empties that filter).
    miss_crosses: [bool; 2],
    /// Whether the general loop credits repeats without a lookup (see
    /// [`Machine::set_repeat_filter`]).
    repeat_filter: bool,
    /// How the kernel loop treats repeats (see [`repeat_choice`]).
    repeat_choice: repeat_choice::RepeatChoice,
    last_page: [u64; 2],
    last_asid: [Asid; 2],
    last_shift: [u8; 2],
    repeat_shift: u32,
    /// Repeated-page hits by side and entry size (log2), not yet credited.
    repeats: [[u64; 64]; 2],
    /// Scratch for the promotion policy: the TLB's entries at a miss.
    entries: Vec<crate::superpage::Entry>,
    /// Totals of the promotions' work, for their cycles.
    gathered: crate::superpage::mechanism::Gathered,
    /// Cycles the memory controller's lookups added (see `Counts::controller_lookups`).
    controller_cycles: f64,
    /// Free memory by block size over time: sampled every `sample_every` references
    /// (0: never), for the sizes in `frag_sizes`.
    sample_every: u64,
    next_sample: u64,
    frag_sizes: Vec<PageSize>,
    samples: Vec<FragmentationSample>,
    /// The resident set, its daemon and dirty bits, under `[paging]` (see
    /// [`crate::paging`]); then `track_writes`: the in-order loop tells it of writes.
    pager: Option<Box<crate::paging::Pager>>,
    track_writes: bool,
}

/// Free memory at one point of a run: how much, and the share of it in blocks large
/// enough for each superpage size (what a request of that size could still get).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FragmentationSample {
    pub references: u64,
    pub free_frames: u64,
    /// By size, as `Report::fragmentation_sizes` lists them.
    pub usable_share: Vec<f64>,
}

impl Machine {
    /// Resolve a configuration into components; errors name the field.
    pub fn build(config: &MachineConfig) -> Result<Machine, crate::config::ConfigError> {
        let err = crate::config::ConfigError;
        let tlb = Hierarchy::build(&config.tlb, config.base_page, config.seed).map_err(err)?;
        let page_table = build_page_table(&config.page_table).map_err(err)?;
        if !page_table.as_ref().page_sizes().contains(&config.base_page) {
            return Err(err(format!(
                "base_page: the page table cannot map {} pages (it maps {})",
                config.base_page,
                page_table
                    .as_ref()
                    .page_sizes()
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let table_levels = match &config.page_table {
            PageTableConfig::Radix(r) => Some(r.levels),
            _ => None,
        };
        let tlb_split = tlb.path_names(DATA)[0] != tlb.path_names(INSTRUCTION)[0];
        let miss_crosses = [DATA, INSTRUCTION].map(|side| tlb.miss_reaches_other_first(side));
        let sizes = candidate_sizes(config, page_table.as_ref().page_sizes(), &tlb).map_err(err)?;
        if let crate::config::PromotionConfig::Static(s) = &config.promotion {
            crate::superpage::fixed_check(&s.regions, page_table.as_ref().page_sizes())
                .map_err(err)?;
        }
        if let FramesConfig::Buddy(b) = &config.frames {
            if let Some(s) = sizes.iter().find(|&&s| s > b.max_block) {
                return Err(err(format!(
                    "promotion.sizes: {s} is larger than frames.max_block ({}), so memory can never give a block for it",
                    b.max_block
                )));
            }
        }
        let remap = matches!(config.mechanism, crate::config::MechanismConfig::Remap(_));
        if remap
            && matches!(config.page_table, PageTableConfig::Inverted(_))
            && !matches!(config.promotion, crate::config::PromotionConfig::None)
        {
            return Err(err(
                "mechanism.kind: remap maps superpages to shadow frames, which an inverted page table (one entry per real frame) cannot hold".into(),
            ));
        }
        // The tlbcount shortcut follows one walking level: with separate last levels
        // for data and instructions, approx-online reads the TLB instead.
        let mut promotion = config.promotion.clone();
        if let crate::config::PromotionConfig::ApproxOnline(o) = &mut promotion {
            let shared = tlb.path_names(DATA).last() == tlb.path_names(INSTRUCTION).last();
            o.tlbcount &= shared;
        }
        let policy = crate::superpage::build(&promotion, &sizes, config.base_page).map_err(err)?;
        let frag_sizes = if sizes.is_empty() {
            let held = tlb.last_level_sizes(DATA);
            held.into_iter().filter(|s| *s > config.base_page).collect()
        } else {
            sizes.clone()
        };
        let mechanism = crate::superpage::mechanism::build(&config.mechanism).map_err(err)?;
        let pager = if config.paging.is_on() {
            // The largest page a fault or a promotion maps (THP: its huge page).
            let mut largest = match &config.promotion {
                crate::config::PromotionConfig::Thp(_) => sizes.first(),
                _ => sizes.last(),
            }
            .copied()
            .unwrap_or(config.base_page);
            if let crate::config::PromotionConfig::Static(s) = &config.promotion {
                largest = s
                    .regions
                    .iter()
                    .map(|r| r.page_size)
                    .fold(largest, PageSize::max);
            }
            let buddy = matches!(config.frames, FramesConfig::Buddy(_));
            let p = crate::paging::Pager::build(
                &config.paging,
                config.base_page,
                frag_sizes.clone(),
                largest,
                buddy,
            )
            .map_err(err)?;
            Some(Box::new(p))
        } else {
            None
        };
        let swap = pager
            .as_ref()
            .filter(|p| p.limit > 0)
            .map(|_| Default::default());
        let contents = (policy.is_some() || pager.is_some()).then(Default::default);
        let cache = if config.cache.is_off() {
            None
        } else {
            Some(crate::cache::CacheHierarchy::new(&config.cache).map_err(err)?)
        };
        let mut machine = Machine {
            config: config.clone(),
            repeat_shift: tlb.min_first_page_bytes().trailing_zeros(),
            walker: Walker {
                walk_caches: WalkCaches::build(&config.walk_caches, table_levels, config.seed)
                    .map_err(err)?,
                page_table,
                frames: build_frames(&config.frames, config.seed).map_err(err)?,
                base_page: config.base_page,
                walk: Walk::new(),
                policy,
                mechanism,
                contents,
                swap,
                cache,
            },
            tlb,
            cost: build_cost(&config.cost).map_err(err)?,
            decoupled: true,
            misses: Vec::new(),
            kernel: false,
            counts: Counts::default(),
            current_asid: Asid(0),
            filter_of: [0, if tlb_split { 1 } else { 0 }],
            miss_crosses,
            repeat_filter: true,
            repeat_choice: Default::default(),
            last_page: [u64::MAX; 2],
            last_asid: [Asid(0); 2],
            last_shift: [0; 2],
            repeats: [[0; 64]; 2],
            entries: Vec::new(),
            gathered: Default::default(),
            sample_every: match &config.frames {
                FramesConfig::Buddy(b) => b.sample_every,
                FramesConfig::Simple(_) => 0,
            },
            next_sample: 0,
            frag_sizes,
            samples: Vec::new(),
            controller_cycles: 0.0,
            track_writes: pager.is_some(),
            pager,
        };
        machine.next_sample = machine.sample_every;
        machine.kernel = machine.tlb.base_parts(DATA, config.base_page).is_some();
        if machine
            .walker
            .policy
            .as_ref()
            .is_some_and(|p| p.tracks_tlb())
        {
            machine.tlb.track_walking_victims();
        }
        // Superpages make walks return larger pages, the cache model needs every
        // reference's frame, and the pager every walk and write: runs go in order.
        machine.decoupled = machine.in_order_only();
        Ok(machine)
    }

    /// The next reference looks its page up even if it repeats the last one's.
    pub fn forget_last_page(&mut self) {
        self.last_page = [u64::MAX; 2];
    }

    /// The TLB hierarchy (its levels and their counts).
    pub fn tlb(&self) -> &Hierarchy {
        &self.tlb
    }

    pub fn config(&self) -> &MachineConfig {
        &self.config
    }
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Simulate a whole trace, batch by batch; `after_batch` is told the references of
    /// each batch and the reader's input position (for progress). A simulation error
    /// names the trace file.
    pub fn run_trace(
        &mut self,
        reader: &mut dyn TraceReader,
        path: &Path,
        mut after_batch: impl FnMut(u64, u64),
    ) -> Result<(), TraceError> {
        let mut batch = Batch::default();
        let mut plain = PlainBatch::default();
        let stopped = |e: SimError| {
            TraceError::new(path, Location::File, format!("simulation stopped at {e}"))
        };
        loop {
            // Plain parts of the trace go straight to the kernel, as columns.
            let part = if self.decoupled && self.kernel {
                reader.next_plain(!self.tlb.split(), &mut plain, &mut batch)?
            } else if reader.next_batch(&mut batch)? {
                Part::Full
            } else {
                Part::End
            };
            let refs = match part {
                Part::End => return Ok(()),
                Part::Plain => {
                    self.run_plain(&plain).map_err(stopped)?;
                    plain.addrs.len()
                }
                Part::Full => {
                    self.run_batch(&batch).map_err(stopped)?;
                    batch.refs.len()
                }
            };
            after_batch(refs as u64, reader.position());
        }
    }

    /// Simulate a plain batch (see [`PlainBatch`]): as [`Machine::run_batch`] does
    /// the same references, through the kernel only. For a decoupled run with its
    /// kernel on; fetches only when the sides share their first level.
    fn run_plain(&mut self, plain: &PlainBatch) -> Result<(), SimError> {
        debug_assert!(self.decoupled && self.kernel);
        let first = self.counts.references;
        let n = plain.addrs.len();
        if n > 0 && plain.asid != self.current_asid {
            self.switch_address_space::<true>(plain.asid, first);
        }
        let done = self.run_kernel(&plain.addrs[..], first);
        assert_eq!(done, n, "the kernel takes every plain reference");
        let c = &mut self.counts;
        for (total, n) in c.by_kind.iter_mut().zip(plain.by_kind) {
            *total += n;
        }
        c.translations += n as u64;
        c.references += n as u64;
        self.credit_repeats();
        self.walk_deferred()?;
        self.after_refs()
    }

    /// Simulate the references of a batch. Events are not acted on yet.
    ///
    /// While every translation is a base page the batch runs decoupled: the TLBs
    /// first, then the walks of their misses (see [`decoupled`]); the counts are the
    /// same as in order. After an error the counts are not meaningful.
    pub fn run_batch(&mut self, batch: &Batch) -> Result<(), SimError> {
        if self.decoupled {
            self.run_refs::<true>(batch)?;
            self.walk_deferred()?;
        } else {
            self.run_refs::<false>(batch)?;
        }
        self.after_refs()
    }

    /// What follows a batch's references: promotions in the background, samples.
    fn after_refs(&mut self) -> Result<(), SimError> {
        if self.walker.policy.is_some() {
            self.background_promotions()?;
        }
        if self.sample_every > 0 && self.counts.references >= self.next_sample {
            if let Some(s) = self.fragmentation_now() {
                self.samples.push(s);
            }
            self.next_sample = (self.counts.references / self.sample_every + 1) * self.sample_every;
        }
        Ok(())
    }

    /// The free memory now, if the allocator keeps it in blocks.
    fn fragmentation_now(&self) -> Option<FragmentationSample> {
        let by_order = self.walker.frames.free_frames_by_order()?;
        let free: u64 = by_order.iter().sum();
        let usable_share = self
            .frag_sizes
            .iter()
            .map(|s| {
                let order = s.base_frames().trailing_zeros() as usize;
                let usable: u64 = by_order.iter().skip(order).sum();
                if free > 0 {
                    usable as f64 / free as f64
                } else {
                    0.0
                }
            })
            .collect();
        Some(FragmentationSample {
            references: self.counts.references,
            free_frames: free,
            usable_share,
        })
    }

    /// Run every reference of a batch in order, each walk as its miss happens, even
    /// when the batch could run decoupled (for tests and measurements).
    pub fn set_decoupled(&mut self, on: bool) {
        self.decoupled = on && self.in_order_only();
    }

    /// Whether nothing keeps batches from running decoupled (a policy, the cache
    /// model, the pager).
    fn in_order_only(&self) -> bool {
        self.walker.policy.is_none() && self.walker.cache.is_none() && self.pager.is_none()
    }

    /// Whether a reference to the page of the reference before it on its side is
    /// credited as a hit of the entry without a lookup, in the general loop (on by
    /// default; the specialized loop of decoupled runs keeps its own). The lookup
    /// would hit that entry and change nothing, so turning it off changes no count:
    /// for tests that check so, in order.
    pub fn set_repeat_filter(&mut self, on: bool) {
        self.repeat_filter = on;
    }

    /// How the specialized loop of decoupled runs treats a reference to the page of the
    /// one before it: chosen by timing (the default), or fixed (for tests and
    /// measurements). No count depends on it.
    pub fn set_repeat_mode(&mut self, mode: RepeatMode) {
        self.repeat_choice.set_mode(mode);
    }

    /// Run decoupled batches without the specialized loop (for tests and measurements).
    pub fn set_kernel(&mut self, on: bool) {
        self.kernel = on && self.tlb.base_parts(DATA, self.walker.base_page).is_some();
    }

    /// Tell the policy of the events placed before reference `at` of the batch, from
    /// the start of `events`, in order (`asid`: the address space they are in, kept
    /// from one call to the next); how many there were.
    #[cold]
    #[inline(never)]
    fn policy_events(&mut self, events: &[(usize, Event)], at: usize, asid: &mut Asid) -> usize {
        let Some(policy) = self.walker.policy.as_mut() else {
            return 0;
        };
        let mut n = 0;
        for (_, e) in events.iter().take_while(|(i, _)| *i <= at) {
            match e {
                Event::SwitchAddressSpace { asid: next } => *asid = *next,
                e => policy.on_event(*asid, e),
            }
            n += 1;
        }
        n
    }

    /// The loop over a batch's references; with `DECOUPLED`, a miss that reaches the
    /// page table is queued for [`Machine::walk_deferred`] instead of walked.
    ///
    /// The loop keeps its counts in locals, so that they live in registers rather than
    /// in memory chains from one reference to the next; they are added up at the end.
    fn run_refs<const DECOUPLED: bool>(&mut self, batch: &Batch) -> Result<(), SimError> {
        let mut crossing = 0u64;
        let mut extra = 0u64;
        let mut result = Ok(());
        let mut done = 0usize;
        let first = self.counts.references;
        let refs = &batch.refs[..];
        // A policy follows the trace's events (memory objects) in order; other runs
        // need none of them.
        let events = if !DECOUPLED && self.walker.policy.is_some() {
            &batch.events[..]
        } else {
            &[]
        };
        let (mut next_event, mut event_asid) = (0, self.current_asid);
        while done < refs.len() {
            if DECOUPLED && self.kernel {
                done += self.run_kernel(&refs[done..], first + done as u64);
                if done == refs.len() {
                    break;
                }
            }
            if !DECOUPLED && next_event < events.len() && events[next_event].0 <= done {
                next_event += self.policy_events(&events[next_event..], done, &mut event_asid);
            }
            // The general way, one reference.
            let r = &refs[done];
            let reference = first + done as u64;
            if r.asid != self.current_asid {
                self.switch_address_space::<DECOUPLED>(r.asid, reference);
            }
            let side = (r.kind == AccessKind::Fetch) as usize;
            if let Err(e) = self.translate::<DECOUPLED>(side, r.asid, r.addr, reference) {
                result = Err(e);
                break;
            }
            if !DECOUPLED && side == DATA && self.walker.cache.is_some() {
                self.cache_data(side, r.asid, r.addr);
            }
            if r.spans_pages() {
                crossing += 1;
                match self.translate_rest::<DECOUPLED>(side, r, reference) {
                    Ok(n) => extra += n,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            if !DECOUPLED && self.track_writes && r.kind.is_write() {
                if let Err(e) = self.note_write(r, reference) {
                    result = Err(e);
                    break;
                }
            }
            done += 1;
        }
        if result.is_ok() && next_event < events.len() {
            self.policy_events(&events[next_event..], done, &mut event_asid);
        }
        let c = &mut self.counts;
        for (total, n) in c.by_kind.iter_mut().zip(count_kinds(&batch.refs[..done])) {
            *total += n;
        }
        c.page_crossing += crossing;
        c.translations += done as u64 + extra;
        c.references += done as u64;
        self.credit_repeats();
        result
    }

    /// Filter f's hits go to the first level of the side it serves (filter 0 serves
    /// data, and instructions too when the sides share their first level).
    fn credit_repeats(&mut self) {
        for (f, side) in [(0, DATA), (1, INSTRUCTION)] {
            for shift in 0..64 {
                let n = std::mem::take(&mut self.repeats[f][shift]);
                if n > 0 {
                    self.tlb.credit(side, shift, n);
                }
            }
        }
    }

    /// A context switch: an untagged TLB (and the walk caches) lose everything.
    #[cold]
    fn switch_address_space<const DECOUPLED: bool>(&mut self, asid: Asid, reference: u64) {
        self.current_asid = asid;
        self.counts.address_space_switches += 1;
        if self.tlb.flush_on_switch {
            self.credit_repeats();
            self.forget_last_page();
            self.tlb.flush_all();
            if let Some(p) = self.walker.policy.as_mut() {
                p.tlb_invalidated(None, 0, u64::MAX);
            }
            if DECOUPLED {
                // The walk caches empty between the walks before and after the switch.
                self.misses.push(decoupled::Miss::flush(reference));
            } else {
                self.walker.walk_caches.flush_all();
            }
        }
    }

    /// A reference that spans pages translates each page after its first too.
    /// Returns how many further translations that made.
    #[cold]
    fn translate_rest<const DECOUPLED: bool>(
        &mut self,
        side: usize,
        r: &crate::event::MemRef,
        reference: u64,
    ) -> Result<u64, SimError> {
        let first = r.addr.vpn(PageSize::K4).0;
        let last = r.last_byte().vpn(PageSize::K4).0;
        for page in first.wrapping_add(1)..=last {
            let va = crate::addr::Vpn(page).base(PageSize::K4);
            self.translate::<DECOUPLED>(side, r.asid, va, reference)?;
        }
        Ok(last.wrapping_sub(first))
    }

    #[inline(always)]
    fn translate<const DECOUPLED: bool>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<(), SimError> {
        let page = va.0 >> self.repeat_shift;
        let f = self.filter_of[side];
        if page == self.last_page[f] && asid == self.last_asid[f] && self.repeat_filter {
            self.repeats[f][self.last_shift[f] as usize & 63] += 1;
            return Ok(());
        }
        match self.tlb.access(side, asid, va) {
            Some(size) => {
                self.last_page[f] = page;
                self.last_asid[f] = asid;
                self.last_shift[f] = size.shift() as u8;
                Ok(())
            }
            None if DECOUPLED => {
                self.miss_deferred(side, asid, va, reference);
                Ok(())
            }
            None => self.miss(side, asid, va, reference),
        }
    }

    #[inline(never)]
    fn miss(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<(), SimError> {
        let watch = self.walker.policy.is_some();
        let paging = self.pager.is_some();
        if watch {
            self.before_policy_miss(side, asid);
        }
        let (walks, faults) = (self.counts.walks, self.counts.page_faults);
        let Machine {
            tlb,
            walker,
            counts,
            ..
        } = self;
        let filled = tlb.miss(side, asid, va, || {
            walker.resolve(counts, asid, va, reference)
        })?;
        self.note_filled(side, asid, va, filled);
        if (watch || paging) && self.counts.walks != walks {
            let first_touch = self.counts.page_faults != faults;
            if paging {
                self.paging_walked(asid, va, first_touch, reference);
            }
            if watch {
                self.after_policy_miss(side, asid, va, first_touch, reference)?;
            }
            if paging {
                self.paging_after_miss(asid, va, reference)?;
            }
        }
        Ok(())
    }

    /// After a miss: the repeat filter of `side` holds the entry the first level made
    /// (none: the next reference looks up). A miss that went through the other side's
    /// first level touched or filled it there: the other side's next reference looks
    /// up, for its page may be evicted or no longer the last one touched.
    #[inline(always)]
    fn note_filled(&mut self, side: usize, asid: Asid, va: VirtAddr, filled: Option<PageSize>) {
        if self.miss_crosses[side] {
            self.last_page[self.filter_of[side ^ 1]] = u64::MAX;
        }
        let f = self.filter_of[side];
        match filled {
            Some(size) => {
                self.last_page[f] = va.0 >> self.repeat_shift;
                self.last_asid[f] = asid;
                self.last_shift[f] = size.shift() as u8;
            }
            None => self.last_page[f] = u64::MAX,
        }
    }

    /// The results so far.
    pub fn report(&self) -> Report {
        let c = &self.counts;
        let levels = self.tlb.levels();
        let hit_cycles: f64 = levels.iter().map(|l| l.hits() as f64 * l.hit_cycles).sum();
        let mut cycles = self.cost.cycles(c, hit_cycles);
        let cache = self.walker.cache.as_ref().map(|k| k.report());
        cycles.promotions += self
            .walker
            .mechanism
            .cycles(&self.gathered, cache.is_some());
        if let Some(k) = &cache {
            // The cache model's latencies replace the fixed cost of a walk reference;
            // the data references' memory time adds to the base, the copies' to the
            // promotions (the walks retried after faults count as walks here).
            let CostConfig::Simple(s) = &self.config.cost;
            cycles.walks += k.cycles.walk - c.walk_refs as f64 * s.walk_ref_cycles;
            cycles.page_faults -= c.fault_walk_refs as f64 * s.walk_ref_cycles;
            cycles.base += k.cycles.data;
            cycles.promotions += k.cycles.copy + self.controller_cycles;
        }
        if let Some(p) = &self.walker.policy {
            cycles.policy = c.policy_misses as f64 * p.miss_cycles();
        }
        let per_k = |n: u64| {
            if c.references > 0 {
                1000.0 * n as f64 / c.references as f64
            } else {
                0.0
            }
        };
        let ratio = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
        let mut fragmentation = self.samples.clone();
        if self.sample_every > 0 {
            if let Some(now) = self.fragmentation_now() {
                if fragmentation.last().map(|s| s.references) != Some(now.references) {
                    fragmentation.push(now);
                }
            }
        }
        let policy = self.walker.policy.as_ref();
        let paging = self.pager.as_ref().map(|p| PagingReport {
            resident_limit_pages: p.limit,
            resident_pages: p.resident(),
            max_resident_after_daemon: p.stats.max_after_daemon,
            daemon_wakes: p.stats.wakes,
            swapped_pages: self
                .walker
                .swap
                .as_ref()
                .map_or(0, |s| s.frames() / self.config.base_page.base_frames()),
            promotions_refused_swapped: p.stats.promotions_refused_swapped,
            blocks_restored: p
                .sizes
                .iter()
                .zip(&p.stats.blocks_restored)
                .map(|(s, &n)| (s.to_string(), n))
                .collect(),
        });
        Report {
            paging,
            cache,
            fragmentation_sizes: self.frag_sizes.iter().map(|s| s.to_string()).collect(),
            fragmentation,
            policy_stats: policy
                .map(|p| p.stats())
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            reserved_idle_frames: policy.map_or(0, |p| p.idle_frames()),
            machine: self.config.name.clone(),
            counts: c.clone(),
            levels: levels
                .iter()
                .map(|l| {
                    let (hits, misses) = (l.hits(), l.misses());
                    LevelReport {
                        name: l.name.clone(),
                        entries: l.entries() as u64,
                        hits,
                        misses,
                        evictions: l.evictions(),
                        miss_ratio: ratio(misses, hits + misses),
                        mpki: per_k(misses),
                        hit_cycles: hits as f64 * l.hit_cycles,
                        by_size: l.by_size(),
                    }
                })
                .collect(),
            walk_caches: self.walker.walk_caches.report(),
            walk_refs_per_walk: ratio(c.walk_refs, c.walks),
            walk_lines_per_walk: ratio(c.walk_lines, c.walks),
            page_table_bytes: self.walker.page_table.footprint_bytes(),
            frames_used: self.walker.frames.used_frames(),
            translation_overhead_percent: cycles.overhead_percent(),
            tlb_overhead_percent: cycles.tlb_percent(),
            cycles,
        }
    }
}

/// One TLB level's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelReport {
    pub name: String,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Misses per lookup of this level.
    pub miss_ratio: f64,
    /// Misses per thousand references.
    pub mpki: f64,
    /// Cycles its hits cost (hits × the level's hit_cycles).
    pub hit_cycles: f64,
    /// Hits by the size of the entry hit, misses by the size of the translation that
    /// served them.
    pub by_size: Vec<SizeCounts>,
}

/// The results of a run, for a table or JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub machine: String,
    pub counts: Counts,
    pub levels: Vec<LevelReport>,
    pub walk_caches: Vec<WalkCacheReport>,
    pub walk_refs_per_walk: f64,
    pub walk_lines_per_walk: f64,
    pub page_table_bytes: u64,
    pub frames_used: u64,
    pub cycles: Cycles,
    /// TLB hits, walks and page faults as a share of all cycles.
    pub translation_overhead_percent: f64,
    /// TLB hits and walks as a share of the cycles of the run without page faults.
    pub tlb_overhead_percent: f64,
    /// The superpage sizes `fragmentation` gives usable shares for.
    pub fragmentation_sizes: Vec<String>,
    /// Free memory over time (buddy allocator only), the last sample at the end.
    pub fragmentation: Vec<FragmentationSample>,
    /// The promotion policy's own counts.
    pub policy_stats: std::collections::BTreeMap<String, u64>,
    /// Frames a policy set aside and has not mapped (reservations) at the end.
    pub reserved_idle_frames: u64,
    /// The data caches' counts, if modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::cache::CacheReport>,
    /// The resident set and its daemon, under `[paging]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paging: Option<PagingReport>,
}

/// The resident set and the page daemon's work (`crate::paging`; the counts of
/// reclaims, major faults and demotions are in `Counts`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PagingReport {
    /// The limit in base pages (0: none), the resident set at the end, and the largest
    /// the daemon ever left (never above the limit).
    pub resident_limit_pages: u64,
    pub resident_pages: u64,
    pub max_resident_after_daemon: u64,
    pub daemon_wakes: u64,
    /// Base pages in the swap store at the end.
    pub swapped_pages: u64,
    /// Promotions refused because a page of the candidate was in the swap store.
    pub promotions_refused_swapped: u64,
    /// Free blocks of each superpage size the daemon's frees completed, smallest size
    /// first (a JSON object by size).
    #[serde(serialize_with = "as_map")]
    pub blocks_restored: Vec<(String, u64)>,
}

/// Pairs as a map, in their order.
fn as_map<S: serde::Serializer>(pairs: &[(String, u64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        let row = |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "  {k:<34} {v:>16}");
        writeln!(f, "machine {}", self.machine)?;
        row(f, "references", c.references.to_string())?;
        for (i, kind) in crate::event::AccessKind::ALL.iter().enumerate() {
            if c.by_kind[i] > 0 {
                row(f, &format!("  {}", kind.name()), c.by_kind[i].to_string())?;
            }
        }
        row(
            f,
            "translations (page-crossing)",
            format!("{} ({})", c.translations, c.page_crossing),
        )?;
        for l in &self.levels {
            row(
                f,
                &format!("{} ({} entries) hits", l.name, l.entries),
                l.hits.to_string(),
            )?;
            row(f, &format!("{} misses", l.name), l.misses.to_string())?;
            row(
                f,
                &format!("{} miss ratio", l.name),
                format!("{:.6}", l.miss_ratio),
            )?;
            row(
                f,
                &format!("{} misses / 1000 refs", l.name),
                format!("{:.3}", l.mpki),
            )?;
            row(f, &format!("{} evictions", l.name), l.evictions.to_string())?;
            if l.by_size.len() > 1 || l.by_size.first().is_some_and(|s| s.size != "4K") {
                for s in &l.by_size {
                    row(
                        f,
                        &format!("{} {} hits / misses", l.name, s.size),
                        format!("{} / {}", s.hits, s.misses),
                    )?;
                }
            }
        }
        for w in &self.walk_caches {
            row(
                f,
                &format!("walk cache L{} ({} entries) hits", w.level, w.entries),
                format!("{} ({:.1}%)", w.hits, 100.0 * w.hit_ratio),
            )?;
        }
        row(f, "walks", c.walks.to_string())?;
        row(
            f,
            "walk memory references",
            format!("{} ({:.2}/walk)", c.walk_refs, self.walk_refs_per_walk),
        )?;
        if !self.walk_caches.is_empty() {
            row(
                f,
                "walk references saved by caches",
                c.walk_refs_skipped.to_string(),
            )?;
        }
        row(
            f,
            "walk cache lines",
            format!("{} ({:.2}/walk)", c.walk_lines, self.walk_lines_per_walk),
        )?;
        row(f, "page faults", c.page_faults.to_string())?;
        if c.large_faults > 0 {
            row(f, "  mapping a large page", c.large_faults.to_string())?;
        }
        if c.policy_misses > 0 || c.promotions + c.promotion_failures > 0 {
            row(f, "misses seen by the policy", c.policy_misses.to_string())?;
            row(
                f,
                "promotions (failed)",
                format!("{} ({})", c.promotions, c.promotion_failures),
            )?;
            row(
                f,
                "pages copied / remapped / zeroed",
                format!(
                    "{} / {} / {}",
                    c.pages_copied, c.pages_remapped, c.pages_zeroed
                ),
            )?;
            row(
                f,
                "promotion page-table refs",
                c.promotion_table_refs.to_string(),
            )?;
        }
        for (k, v) in &self.policy_stats {
            row(f, k, v.to_string())?;
        }
        if let Some(p) = &self.paging {
            if p.resident_limit_pages > 0 {
                row(
                    f,
                    "resident limit (base pages)",
                    p.resident_limit_pages.to_string(),
                )?;
                row(
                    f,
                    "resident at end (most after daemon)",
                    format!("{} ({})", p.resident_pages, p.max_resident_after_daemon),
                )?;
                row(f, "page daemon wakes", p.daemon_wakes.to_string())?;
                row(f, "pages reclaimed", c.pages_reclaimed.to_string())?;
                row(
                    f,
                    "  dirty (written back)",
                    c.pages_written_back.to_string(),
                )?;
                row(f, "major faults (swap-ins)", c.major_faults.to_string())?;
                row(f, "pages in swap at end", p.swapped_pages.to_string())?;
            }
            row(
                f,
                "demotions: pressure / write",
                format!("{} / {}", c.demotions_pressure, c.demotions_write),
            )?;
            row(f, "re-promotions", c.repromotions.to_string())?;
            if p.promotions_refused_swapped > 0 {
                row(
                    f,
                    "promotions refused (swapped pages)",
                    p.promotions_refused_swapped.to_string(),
                )?;
            }
            for (size, n) in &p.blocks_restored {
                row(f, &format!("free {size} blocks restored"), n.to_string())?;
            }
        }
        if self.reserved_idle_frames > 0 {
            row(
                f,
                "frames reserved, not populated",
                self.reserved_idle_frames.to_string(),
            )?;
        }
        row(f, "page-table bytes", self.page_table_bytes.to_string())?;
        row(f, "frames used", self.frames_used.to_string())?;
        row(f, "cycles: references", format!("{:.0}", self.cycles.base))?;
        row(
            f,
            "cycles: TLB hits",
            format!("{:.0}", self.cycles.tlb_hits),
        )?;
        for l in self.levels.iter().filter(|l| l.hit_cycles > 0.0) {
            row(
                f,
                &format!("  {} hits", l.name),
                format!("{:.0}", l.hit_cycles),
            )?;
        }
        row(f, "cycles: walks", format!("{:.0}", self.cycles.walks))?;
        if self.cycles.promotions + self.cycles.policy > 0.0 {
            row(
                f,
                "cycles: promotions",
                format!("{:.0}", self.cycles.promotions),
            )?;
            row(
                f,
                "cycles: policy bookkeeping",
                format!("{:.0}", self.cycles.policy),
            )?;
        }
        row(
            f,
            "cycles: page faults",
            format!("{:.0}", self.cycles.page_faults),
        )?;
        if self.cycles.major_faults > 0.0 {
            row(
                f,
                "cycles: major faults",
                format!("{:.0}", self.cycles.major_faults),
            )?;
        }
        row(
            f,
            "TLB overhead (hits, walks, promotion)",
            format!("{:.2}%", self.tlb_overhead_percent),
        )?;
        row(
            f,
            "translation overhead (+ faults)",
            format!("{:.2}%", self.translation_overhead_percent),
        )?;
        if let Some(k) = &self.cache {
            write!(f, "{k}")?;
        }
        if !self.fragmentation.is_empty() {
            writeln!(
                f,
                "free memory over time (share usable for a page of each size):"
            )?;
            write!(f, "  {:>14} {:>12}", "references", "free frames")?;
            for s in &self.fragmentation_sizes {
                write!(f, " {s:>7}")?;
            }
            writeln!(f)?;
            for s in &self.fragmentation {
                write!(f, "  {:>14} {:>12}", s.references, s.free_frames)?;
                for u in &s.usable_share {
                    write!(f, " {u:>7.3}")?;
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SetAssocConfig, TlbConfig};
    use crate::event::MemRef;

    fn run(config: &MachineConfig, refs: &[MemRef]) -> Report {
        let mut m = Machine::build(config).unwrap();
        m.run_batch(&Batch {
            refs: refs.to_vec(),
            events: vec![],
        })
        .unwrap();
        m.report()
    }

    #[test]
    fn demand_paging_faults_once_per_page() {
        let refs: Vec<_> = [0x1000u64, 0x1008, 0x2000, 0x1010, 0x3000]
            .iter()
            .map(|&a| MemRef::new(a, 8, AccessKind::Load))
            .collect();
        let r = run(&MachineConfig::default(), &refs);
        let c = &r.counts;
        assert_eq!(c.page_faults, 3);
        assert_eq!((r.levels[0].hits, r.levels[0].misses), (2, 3));
        // Each miss walks (4 reads; but the very first walk finds no root at all and
        // reads nothing), faults, and walks again (4 reads, charged to the fault).
        assert_eq!((c.walks, c.walk_refs, c.fault_walk_refs), (3, 8, 12));
        assert_eq!(r.levels[0].mpki, 600.0);
        // Three 4K pages near 0 share every upper-level node: 4 nodes of 4 KiB.
        assert_eq!(r.page_table_bytes, 4 * 4096);
    }

    /// The walk caches serve walks that fault and their retries: the second page of a
    /// 2 MiB region finds its page-directory entry cached both times.
    #[test]
    fn walk_caches_serve_faulting_walks_and_their_retries() {
        let refs: Vec<_> = [0x1000u64, 0x2000]
            .iter()
            .map(|&a| MemRef::new(a, 8, AccessKind::Load))
            .collect();
        let config = MachineConfig {
            walk_caches: vec![crate::config::WalkCacheConfig::default()],
            ..MachineConfig::default()
        };
        for decoupled in [false, true] {
            let mut m = Machine::build(&config).unwrap();
            m.set_decoupled(decoupled);
            m.run_batch(&Batch {
                refs: refs.clone(),
                events: vec![],
            })
            .unwrap();
            let c = m.report().counts;
            // First page: no root yet (no reads), then a retry of 4 reads that fills
            // the cache. Second page: the cached entry skips 3 reads of the walk that
            // faults (1 read left) and 3 of its retry.
            assert_eq!(
                (c.walks, c.walk_refs, c.walk_refs_skipped, c.fault_walk_refs),
                (2, 1, 3, 5),
                "decoupled: {decoupled}"
            );
        }
    }

    #[test]
    fn a_reference_spanning_many_pages_translates_each() {
        let refs = [MemRef::new(0x1000, 65536, AccessKind::Load)];
        let r = run(&MachineConfig::default(), &refs);
        assert_eq!(
            (
                r.counts.translations,
                r.counts.page_crossing,
                r.counts.page_faults
            ),
            (16, 1, 16)
        );
    }

    #[test]
    fn page_crossing_references_translate_both_pages() {
        let refs = [MemRef::new(0x1ffc, 8, AccessKind::Store)];
        let r = run(&MachineConfig::default(), &refs);
        assert_eq!(
            (
                r.counts.translations,
                r.counts.page_crossing,
                r.counts.page_faults
            ),
            (2, 1, 2)
        );
    }

    #[test]
    fn out_of_memory_is_an_error_not_a_panic() {
        let mut config = MachineConfig::default();
        config.frames = FramesConfig::Simple(crate::config::SimpleFramesConfig {
            memory: crate::config::ByteSize(64 * 4096),
        });
        let refs: Vec<_> = (0..100u64)
            .map(|p| MemRef::new(p << 12, 1, AccessKind::Load))
            .collect();
        let mut m = Machine::build(&config).unwrap();
        let e = m
            .run_batch(&Batch {
                refs,
                events: vec![],
            })
            .unwrap_err();
        assert!(
            e.message.contains("out of physical memory") || e.message.contains("no physical frame"),
            "{e}"
        );
        // 63 frames: the 4 table nodes leave 59 pages, so reference 59 is the one that fails.
        assert_eq!(e.reference, 59, "{e}");
    }

    #[test]
    fn bad_values_name_their_field() {
        let mut config = MachineConfig::default();
        let TlbConfig::SetAssociative(s) = &mut config.tlb else {
            unreachable!("the default is one TLB")
        };
        s.replacement = "clairvoyant".into();
        let e = Machine::build(&config).err().unwrap();
        assert!(
            e.0.contains("tlb.replacement") && e.0.contains("lru"),
            "{e}"
        );
        let mut config = MachineConfig::default();
        config.page_table = PageTableConfig::Radix(crate::config::RadixConfig { levels: 3 });
        assert!(Machine::build(&config)
            .err()
            .unwrap()
            .0
            .contains("page_table.levels"));
        for (sets, ways, sizes, field) in [
            (
                1usize << 62,
                4usize,
                vec![PageSize::K4],
                "tlb.sets × tlb.ways",
            ),
            (1 << 20, 1 << 20, vec![PageSize::K4], "tlb.sets × tlb.ways"),
            (16, 4, vec![PageSize::M2], "tlb.page_sizes"),
        ] {
            let mut config = MachineConfig::default();
            config.tlb = TlbConfig::SetAssociative(SetAssocConfig {
                sets,
                ways,
                page_sizes: sizes,
                ..SetAssocConfig::default()
            });
            let e = Machine::build(&config).err().unwrap();
            assert!(e.0.contains(field), "{e}");
        }
    }
}
