//! Decoupled runs with data caches: the TLBs over a batch, then the walks of their
//! misses (as in [`super::decoupled`]), then the caches over the same references.
//!
//! The cache model needs each data reference's physical address and each walk's
//! entries, in the order the references make them. Run decoupled, the walker writes
//! down the entries of every walk instead of reading them through the caches
//! ([`Walker::walk_log`]), and the machine notes which reference each walk was for.
//! Then, reference by reference, the caches read the entries of the walks that
//! reference made before its data (the walk of its first page, and the retry after a
//! fault), its data, and the walks of the further pages it spans: the order in which
//! the in-order loop reads them.
//!
//! Why this is the same run: in a decoupled run every translation is a base page and
//! none changes once made (no policy promotes, no pager reclaims, no eager paging
//! unmaps; see [`Machine::in_order_only`]), and every page a batch references is mapped
//! once its walks are done. So the page table after the walks gives each reference
//! the frame it had in order, and a memo of recent translations
//! ([`Translations`]) serves most lookups. `tests/decoupled_equals_in_order.rs` checks
//! that the reports are identical.
//!
//! The caches read a batch's references as one stream ([`CacheHierarchy::access_stream`]),
//! made once the batch's walks are done. With a core to spare, a run of a trace hands
//! the streams to a thread that owns the caches ([`CacheWorker`]): the next batch's
//! TLB lookups and walks go on while the caches read this one's
//! ([`Machine::start_cache_thread`]).
//!
//! A data reference that reaches memory adds no controller lookup here: only a
//! remapped (shadow) frame costs one, and without a promotion policy none exists.
//!
//! [`Walker::walk_log`]: super::walker::Walker::walk_log
//! [`CacheHierarchy::access_stream`]: crate::cache::CacheHierarchy::access_stream

use super::Machine;
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::cache::{CacheAccess, CacheHierarchy, CacheWorker};
use crate::event::{AccessKind, MemRef};
use crate::pagetable::WalkHint;

/// Entries in the memo of translations (a power of two).
const MEMO: usize = 1 << 16;

/// The memo's size.
pub(super) const MEMO_BYTES: u64 = (MEMO * std::mem::size_of::<(u64, Asid, Pfn)>()) as u64;

/// The walks of a batch, noted as they are made, for the caches' pass.
#[derive(Debug)]
pub(super) struct Deferred {
    /// Per walk, in the order made: the reference it was for, the base page it
    /// translated, and where its entries end in the walker's log.
    walks: Vec<LoggedWalk>,
    memo: Translations,
    /// The first reference of the batch not passed yet, and whether its data was read
    /// (by a pass that stopped within it, see [`Machine::cache_partly`]).
    pos: usize,
    data_done: bool,
    /// The references of the pass, in order ([`CacheHierarchy::tagged`]).
    stream: Vec<u64>,
    /// The thread that owns the caches during a run of a trace, if one does.
    worker: Option<CacheWorker>,
}

#[derive(Clone, Copy, Debug)]
struct LoggedWalk {
    reference: u64,
    page: u64,
    end: usize,
}

impl Deferred {
    pub(super) fn new() -> Deferred {
        Deferred {
            walks: Vec::new(),
            memo: Translations::new(),
            pos: 0,
            data_done: false,
            stream: Vec::new(),
            worker: None,
        }
    }

    /// Whether the caches are on their thread.
    pub(super) fn threaded(&self) -> bool {
        self.worker.is_some()
    }

    /// The translation of `va` a walk just found, for the caches' pass.
    #[inline]
    pub(super) fn remember(&mut self, asid: Asid, va: VirtAddr, base: PageSize, pfn: Pfn) {
        let page = va.0 >> base.shift();
        self.memo.pages[Translations::slot(page, asid)] = (page, asid, pfn);
    }

    /// Forget the walks noted (after an error, which ends the run's meaning).
    pub(super) fn reset(&mut self) {
        self.walks.clear();
        (self.pos, self.data_done) = (0, false);
    }

    /// The walk just made for reference `reference` at `va`: its entries are the
    /// log's up to `log_len`.
    #[inline]
    pub(super) fn note(&mut self, reference: u64, va: VirtAddr, base: PageSize, log_len: usize) {
        self.walks.push(LoggedWalk {
            reference,
            page: va.0 >> base.shift(),
            end: log_len,
        });
    }
}

/// Recent translations by address space and base page, direct-mapped: a memo of the
/// page table, filled by the walks (so that a TLB hit's page is usually there) and by
/// the lookups that miss it; exact because a decoupled run's translations never
/// change.
#[derive(Debug)]
struct Translations {
    /// Per slot: the page (`u64::MAX`: none), its address space and its frame.
    pages: Vec<(u64, Asid, Pfn)>,
}

impl Translations {
    #[inline(always)]
    fn slot(page: u64, asid: Asid) -> usize {
        (page as usize ^ (asid.0 as usize) << 7) & (MEMO - 1)
    }

    fn new() -> Translations {
        Translations {
            pages: vec![(u64::MAX, Asid(0), Pfn(0)); MEMO],
        }
    }
}

/// The references of a batch as the caches' pass reads them.
pub(super) trait CachedInput {
    fn len(&self) -> usize;
    /// Reference `i`: its address space, address, and whether it reads or writes
    /// data (an instruction fetch does not reach the data caches).
    fn get(&self, i: usize) -> (Asid, VirtAddr, bool);
}

impl CachedInput for &[MemRef] {
    fn len(&self) -> usize {
        <[MemRef]>::len(self)
    }
    #[inline(always)]
    fn get(&self, i: usize) -> (Asid, VirtAddr, bool) {
        let r = &self[i];
        (r.asid, r.addr, r.kind != AccessKind::Fetch)
    }
}

/// A plain batch's addresses: data references of one address space.
impl CachedInput for (&[u64], Asid) {
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn get(&self, i: usize) -> (Asid, VirtAddr, bool) {
        (self.1, VirtAddr(self.0[i]), true)
    }
}

impl Machine {
    /// Run every reference of a batch in order, each walk as its miss happens, even
    /// when the batch could run decoupled (for tests and measurements). Before the
    /// first batch: a decoupled run's TLB entries hold placeholder frames, which an
    /// in-order run with data caches would read.
    pub fn set_decoupled(&mut self, on: bool) {
        self.decoupled = on && self.in_order_only();
        let cached = self.decoupled && self.walker.cache.is_some();
        self.cached = cached.then(|| Box::new(Deferred::new()));
        self.walker.walk_log = cached.then(Vec::new);
    }

    /// Whether nothing keeps batches from running decoupled: no policy, no pager, no
    /// data caches under eager paging (whose unmaps change translations the caches'
    /// pass would read after them), no coalescing (whose entries are larger than a
    /// base page), no host page smaller than the base page (whose TLB entries would
    /// be smaller), and no data caches over a host table whose lookups change it.
    pub(super) fn in_order_only(&self) -> bool {
        self.walker.promoter.policy.is_none()
            && self.pager.is_none()
            && (self.walker.cache.is_none() || self.ranges.eager.is_none())
            && self.walker.coalesce.is_none()
            && self.walker.nested.as_ref().is_none_or(|n| {
                n.host_base() >= self.walker.base_page
                    && !(self.walker.cache.is_some() && n.stateful_lookups())
            })
    }

    /// The caches' pass over a batch whose TLB lookups and walks are done (its first
    /// reference numbered `first`): each walk's entries and each data reference
    /// through the caches, in the order of an in-order run. Empties the log.
    pub(super) fn cache_deferred<I: CachedInput>(&mut self, refs: I, first: u64) {
        if self.cached.is_some() {
            self.cache_pass(&refs, first, refs.len(), false);
            if let Some(d) = self.cached.as_mut() {
                (d.pos, d.data_done) = (0, false);
            }
        }
    }

    /// The caches' pass as far as reference `at` of the batch `refs`, when the queue of
    /// misses was walked before that reference's last page (one that spans many
    /// pages): the references before it whole, and of it what its walks so far and its
    /// data read, so that the log stays as short as the queue.
    pub(super) fn cache_partly(&mut self, refs: &[MemRef], first: u64, at: usize) {
        if self.cached.is_some() {
            self.cache_pass(&refs, first, at, true);
        }
    }

    /// References `pos..end` of the batch whole, and with `partly` what reference `end`
    /// has walked so far and its data. In two steps: the stream of the walks' entries
    /// and the data's physical addresses in order, then the caches over the stream
    /// (here, or on their thread).
    fn cache_pass<I: CachedInput>(&mut self, refs: &I, first: u64, end: usize, partly: bool) {
        let Some(deferred) = self.cached.as_mut() else {
            return;
        };
        let Deferred {
            walks,
            memo,
            pos,
            data_done,
            stream,
            worker,
        } = &mut **deferred;
        let walker = &mut self.walker;
        let shift = walker.base_page.shift();
        let offset_mask = walker.base_page.bytes() - 1;
        let mut log = walker.walk_log.take().unwrap_or_default();
        let walked = |entries: &[PhysAddr], stream: &mut Vec<u64>| {
            let tagged = entries
                .iter()
                .map(|&e| CacheHierarchy::tagged(e, CacheAccess::Walk));
            stream.extend(tagged);
        };
        let mut next = 0; // the next walk to read
        let mut from = 0; // where its entries start in the log
        for i in *pos..end + partly as usize {
            let (asid, va, data) = refs.get(i);
            let reference = first + i as u64;
            let page = va.0 >> shift;
            // The walks of the reference's first page (and of its fault's retry) come
            // before its data; those of the further pages it spans, after.
            while let Some(w) = walks.get(next) {
                if w.reference != reference || w.page != page {
                    break;
                }
                walked(&log[from..w.end], stream);
                from = w.end;
                next += 1;
            }
            // A reference passed partly before has had its data read.
            if data && !(i == *pos && *data_done) {
                let slot = Translations::slot(page, asid);
                let (p, a, pfn) = memo.pages[slot];
                let pfn = if p == page && a == asid {
                    pfn
                } else {
                    let pfn = walker.base_frame(asid, va);
                    memo.pages[slot] = (page, asid, pfn);
                    pfn
                };
                let pa = PhysAddr(pfn.addr().0 + (va.0 & offset_mask));
                stream.push(CacheHierarchy::tagged(pa, CacheAccess::Data));
            }
            while let Some(w) = walks.get(next) {
                if w.reference != reference {
                    break;
                }
                walked(&log[from..w.end], stream);
                from = w.end;
                next += 1;
            }
        }
        debug_assert_eq!(next, walks.len(), "every walk belongs to a reference");
        walks.clear();
        log.clear();
        walker.walk_log = Some(log);
        (*pos, *data_done) = (end, partly);
        match worker {
            Some(worker) => worker.submit(stream),
            None => {
                let cache = walker.cache.as_mut().expect("a cache pass has caches");
                cache.access_stream(stream);
                stream.clear();
            }
        }
    }

    /// For a run of a trace with data caches, decoupled: when the host has a core to
    /// spare, the caches move to a thread of their own (see the module's notes) until
    /// [`Machine::stop_cache_thread`]. Changes no count.
    pub(super) fn start_cache_thread(&mut self) {
        let Some(deferred) = self.cached.as_mut() else {
            return;
        };
        if !self.cache_thread || deferred.worker.is_some() || !spare_core() {
            return;
        }
        if let Some(cache) = self.walker.cache.take() {
            match CacheWorker::start(cache) {
                Ok(worker) => deferred.worker = Some(worker),
                Err(cache) => self.walker.cache = Some(cache),
            }
        }
    }

    /// The caches back from their thread, every reference handed over counted.
    pub(super) fn stop_cache_thread(&mut self) {
        if let Some(worker) = self.cached.as_mut().and_then(|d| d.worker.take()) {
            self.walker.cache = Some(worker.finish());
        }
    }

    /// Whether runs of a trace may use a second core, when the host has one (on by
    /// default): a thread of their own for the data caches, or else for reading the
    /// trace ahead. Off for a caller that runs machines on every core already.
    /// Changes no count.
    pub fn set_cache_thread(&mut self, on: bool) {
        self.cache_thread = on;
    }

    /// Whether the data caches are on a thread of their own now.
    pub(super) fn caches_threaded(&self) -> bool {
        self.cached.as_ref().is_some_and(|d| d.threaded())
    }
}

pub(super) use crate::trace::ahead::spare_core;

/// Whether machines built from now on may use a second core ([`Machine::set_cache_thread`]'s
/// default): false while a caller runs machines side by side on every core (a local
/// sweep), so that none adds a thread of its own.
static SECOND_CORE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Set what machines built from now on take for [`Machine::set_cache_thread`]: off
/// while a caller runs machines on every core, for the analyses that build machines
/// of their own. Returns the setting before. Changes no count.
pub fn set_second_core_default(on: bool) -> bool {
    SECOND_CORE.swap(on, std::sync::atomic::Ordering::Relaxed)
}

pub(super) fn second_core_default() -> bool {
    SECOND_CORE.load(std::sync::atomic::Ordering::Relaxed)
}

impl super::walker::Walker {
    /// The base frame `va` is mapped to in a decoupled run, where every page the
    /// batch references is mapped to one by the time the caches read it.
    #[cold]
    fn base_frame(&mut self, asid: Asid, va: VirtAddr) -> Pfn {
        let t = if self.nested.is_some() {
            self.entry_of(asid, va)
        } else if let Some((_, t)) = self.page_table.walk_brief(asid, va, WalkHint::NONE) {
            t
        } else {
            self.page_table.walk_into(asid, va, &mut self.walk);
            self.walk.translation
        };
        let t = t.expect("a decoupled run maps every page before its caches' pass");
        debug_assert_eq!(t.size, self.base_page);
        t.pfn
    }
}
