//! A machine: a TLB, a page table, physical memory and a cost model, composed from a
//! [`MachineConfig`], run over a trace batch by batch. Demand paging: a walk that finds
//! no translation is a page fault; the fault handler takes a frame, maps the base page,
//! and the access is retried (walking again).
//!
//! **Components.** Each part is a component with its configuration section and its
//! build in its own module; `build.rs` hands each what it needs of the others, and the
//! file named after a concept here holds the machine's side of it, where it meets the
//! other parts:
//!
//! | part | component, built in | `[section]` | driven by |
//! |---|---|---|---|
//! | TLB | [`Hierarchy`] (`tlb/`) | `tlb` | `mod.rs`, `decoupled.rs` |
//! | walks and faults | `Walker` (page table, walk caches, frames, swap) | `page_table`, `walk_caches`, `frames` | `walker.rs` |
//! | superpages | [`crate::superpage::Promoter`] (policy, mechanism) | `promotion`, `mechanism` | `promote.rs` |
//! | memory pressure | [`crate::pressure::Pager`] | `paging` | `pressure.rs` |
//! | range translations | [`crate::range::Ranges`] | `ranges` | `ranges.rs` |
//! | data caches | [`crate::cache::CacheHierarchy`] (`cache::build`) | `cache` | `walker.rs`, `cached.rs`, `promote.rs` |
//! | virtualization | [`crate::virt::Nested`] (host table, frames, caches) | `virtualization` | `walker.rs`, `virtualized.rs` |
//! | fragmentation samples | [`crate::frames::sampling::Fragmentation`] | `frames` | `mod.rs` |
//! | cycles | [`CostModel`] (`cost::build`) | `cost` | `report.rs` |
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
use crate::config::MachineConfig;
use crate::cost::CostModel;
use crate::event::{count_kinds, AccessKind, Batch, Event, PlainBatch};
use crate::tlb::hierarchy::{DATA, INSTRUCTION};
use crate::tlb::Hierarchy;
use crate::trace::{Location, Part, TraceError, TraceReader};
use walker::Walker;

mod build;
mod cached;
pub mod decoupled;
pub mod estimate;
pub mod one_pass;
mod pressure;
mod promote;
mod ranges;
mod repeat_choice;
mod report;
mod report_table;
mod steady;
#[cfg(test)]
mod tests;
mod trace_run;
mod virtualized;
mod walker;
mod warmup;
pub use crate::counts::Counts;
pub use crate::pagetable::AnyPageTable;
pub use cached::set_second_core_default;
pub use repeat_choice::RepeatMode;
pub use report::{LevelReport, PagingReport, RangesReport, Report, WarmupReport};
use serde::Serialize;
use std::path::Path;

/// What went wrong in a run, with the index of the reference it happened at.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("reference {reference}: {message}")]
pub struct SimError {
    pub reference: u64,
    pub message: String,
}

pub struct Machine {
    config: MachineConfig,
    tlb: Hierarchy,
    walker: Walker,
    cost: Box<dyn CostModel>,
    /// Whether batches run decoupled (see [`decoupled`]): true while every
    /// translation is a base page.
    decoupled: bool,
    /// The largest reference, in bytes (`max_reference`).
    max_reference: u64,
    /// The decoupled run's TLB misses awaiting their walks.
    misses: Vec<decoupled::Miss>,
    /// A decoupled run with data caches: the walks noted for the caches' pass (see
    /// [`cached`]).
    cached: Option<Box<cached::Deferred>>,
    /// Whether a run of a trace gives those caches a thread of their own.
    cache_thread: bool,
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
    /// Free memory by block size over time (`frames.sample_every`).
    fragmentation: crate::frames::sampling::Fragmentation,
    /// The resident set, its daemon and dirty bits, under `[paging]` (see
    /// [`crate::pressure`]); the in-order loop tells it of writes.
    pager: Option<Box<crate::pressure::Pager>>,
    /// Range translations: every process's range table, eager paging (the OS side,
    /// which follows the trace's events), and whether a TLB level has a range unit.
    ranges: crate::range::Ranges,
    /// The most frames in use after any event or batch.
    peak_frames: u64,
    /// References the warm-up runs (see [`steady`]), and the report at its end.
    warmup_at: Option<u64>,
    warm: Option<Box<Report>>,
}

pub use crate::frames::sampling::FragmentationSample;

impl Machine {
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
        self.cache_deferred((&plain.addrs[..], plain.asid), first);
        self.after_refs()
    }

    /// Simulate the references of a batch. Events are not acted on yet.
    ///
    /// While every translation is a base page the batch runs decoupled: the TLBs
    /// first, then the walks of their misses (see [`decoupled`]); the counts are the
    /// same as in order. After an error the counts are not meaningful.
    pub fn run_batch(&mut self, batch: &Batch) -> Result<(), SimError> {
        if self.decoupled && self.ranges.eager.is_some() && !batch.events.is_empty() {
            self.run_split(batch)?;
        } else if self.decoupled {
            let first = self.counts.references;
            self.run_refs::<true>(&batch.refs, &[])?;
            self.walk_deferred()?;
            self.cache_deferred(&batch.refs[..], first);
        } else {
            self.run_refs::<false>(&batch.refs, &batch.events)?;
        }
        self.after_refs()
    }

    /// What follows a batch's references: promotions in the background, samples.
    fn after_refs(&mut self) -> Result<(), SimError> {
        self.peak_frames = self.peak_frames.max(self.walker.frames.used_frames());
        if self.walker.promoter.policy.is_some() {
            self.background_promotions()?;
        }
        let at = self.progress();
        if let Some(tap) = self.walker.tap.as_mut() {
            if self.fragmentation.due(at.references) {
                tap.mark(at.references);
            }
        }
        self.fragmentation.after(self.walker.frames.as_ref(), at);
        Ok(())
    }

    /// What a fragmentation sample counts besides free memory.
    fn progress(&self) -> crate::frames::sampling::Progress {
        crate::frames::sampling::Progress {
            references: self.counts.references,
            promotions: self.counts.promotions,
            walks: self.counts.walks,
        }
    }

    /// Whether the run acts on the trace's events (a policy's memory objects, eager
    /// paging's allocations).
    fn follows_events(&self) -> bool {
        self.walker.promoter.policy.is_some() || self.ranges.eager.is_some()
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

    /// Act on the events placed before reference `at` of the batch, from the start of
    /// `events`, in order (`asid`: the address space they are in, kept from one call
    /// to the next): tell the policy, let eager paging allocate. How many there were.
    #[cold]
    #[inline(never)]
    fn follow_events(
        &mut self,
        events: &[(usize, Event)],
        at: usize,
        asid: &mut Asid,
    ) -> Result<usize, SimError> {
        let mut n = 0;
        for (_, e) in events.iter().take_while(|(i, _)| *i <= at) {
            match e {
                Event::SwitchAddressSpace { asid: next } => *asid = *next,
                e => {
                    if let Some(policy) = self.walker.promoter.policy.as_mut() {
                        policy.on_event(*asid, e);
                    }
                    self.eager_event(*asid, e)?;
                }
            }
            n += 1;
        }
        Ok(n)
    }

    /// The loop over a batch's references; with `DECOUPLED`, a miss that reaches the
    /// page table is queued for [`Machine::walk_deferred`] instead of walked.
    ///
    /// The loop keeps its counts in locals, so that they live in registers rather than
    /// in memory chains from one reference to the next; they are added up at the end.
    fn run_refs<const DECOUPLED: bool>(
        &mut self,
        refs: &[crate::event::MemRef],
        events: &[(usize, Event)],
    ) -> Result<(), SimError> {
        let mut crossing = 0u64;
        let mut extra = 0u64;
        let mut result = Ok(());
        let mut done = 0usize;
        let first = self.counts.references;
        // A policy follows the trace's events (memory objects) in order, as eager
        // paging does (allocations); other runs need none of them.
        let events = if !DECOUPLED && self.follows_events() {
            events
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
                match self.follow_events(&events[next_event..], done, &mut event_asid) {
                    Ok(n) => next_event += n,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
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
                let first = self.tlb.peek(side, r.asid, r.addr);
                self.walker
                    .cache_data(&mut self.counts, first, r.asid, r.addr);
            }
            if r.spans_pages() {
                crossing += 1;
                match self.translate_rest::<DECOUPLED>(side, (refs, done), reference) {
                    Ok(n) => extra += n,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            if !DECOUPLED && self.pager.is_some() && r.kind.is_write() {
                if let Err(e) = self.note_write(r, reference) {
                    result = Err(e);
                    break;
                }
            }
            done += 1;
        }
        if result.is_ok() && next_event < events.len() {
            if let Err(e) = self.follow_events(&events[next_event..], done, &mut event_asid) {
                result = Err(e);
            }
        }
        let c = &mut self.counts;
        for (total, n) in c.by_kind.iter_mut().zip(count_kinds(&refs[..done])) {
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
            if let Some(p) = self.walker.promoter.policy.as_mut() {
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
    /// Returns how many further translations that made. A reference larger than
    /// `max_reference`, or one that runs past the top of the address space, is an
    /// error. However many pages a reference spans, the queue of a decoupled run
    /// stays under [`decoupled::MAX_QUEUED`] misses: it is walked (and what it walked
    /// read through the data caches) when full. `at`: the reference's place in `refs`.
    #[cold]
    fn translate_rest<const DECOUPLED: bool>(
        &mut self,
        side: usize,
        (refs, at): (&[crate::event::MemRef], usize),
        reference: u64,
    ) -> Result<u64, SimError> {
        let r = &refs[at];
        let error = |message: String| SimError { reference, message };
        if r.size as u64 > self.max_reference {
            return Err(error(format!(
                "a reference of {} bytes at {:#x} is larger than max_reference ({}): raise it to simulate the {} translations it makes",
                r.size,
                r.addr.0,
                crate::addr::format_bytes(self.max_reference),
                (r.size as u64).div_ceil(4096)
            )));
        }
        if r.addr.0.checked_add(r.size.max(1) as u64 - 1).is_none() {
            return Err(error(format!(
                "a reference of {} bytes at {:#x} runs past the top of the address space",
                r.size, r.addr.0
            )));
        }
        let first = r.addr.vpn(PageSize::K4).0;
        let last = r.last_byte().vpn(PageSize::K4).0;
        for page in first + 1..=last {
            if DECOUPLED && self.misses.len() >= decoupled::MAX_QUEUED {
                self.walk_deferred()?;
                // The caches read what was walked, so that their log stays as short.
                self.cache_partly(refs, reference - at as u64, at);
            }
            let va = crate::addr::Vpn(page).base(PageSize::K4);
            self.translate::<DECOUPLED>(side, r.asid, va, reference)?;
        }
        Ok(last - first)
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
                if self.walker.promoter.follows_hits {
                    self.tell_policy_hit(asid, va, size);
                }
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
    fn tell_policy_hit(&mut self, asid: Asid, va: VirtAddr, size: PageSize) {
        if let Some(p) = self.walker.promoter.policy.as_mut() {
            p.on_hit(asid, va, size);
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
        let watch = self.walker.promoter.policy.is_some();
        let paging = self.pager.is_some();
        if watch {
            self.before_policy_miss(side, asid);
        }
        let (walks, faults) = (self.counts.walks, self.counts.page_faults);
        let Machine {
            tlb,
            walker,
            counts,
            ranges,
            ..
        } = self;
        let walk = || walker.resolve(counts, asid, va, reference);
        let filled = match ranges.for_lookup() {
            Some(tables) => tlb.miss_ranged(side, asid, va, tables, walk)?,
            None => tlb.miss(side, asid, va, walk)?,
        };
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
}
