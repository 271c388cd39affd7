//! Decoupled runs: the TLBs over a whole batch first, then the walks of their misses.
//!
//! While every translation the page table can return is a base page (demand paging,
//! no superpage policy), what happens in the TLBs does not depend on what a walk
//! finds: a miss fills every level with a base-page entry whatever frame it maps, and
//! a page fault only decides which frame that is. So the TLB loop can run ahead,
//! filling with a placeholder frame (or none) and queueing each miss that reaches the
//! page table, and the walks run afterwards in the same order, with the same effects on
//! the page table, the walk caches, physical memory and every count.
//!
//! Why: a walk's last read (the leaf entry) usually misses the host's caches. In
//! order, every miss waits for it; queued, the walker knows the next misses and has
//! the page table bring their entries in ahead of time ([`Walker::prefetch`]), so the
//! host's memory latency overlaps.
//!
//! What is lost: the frames in the TLB entries are placeholders (the simulated TLBs
//! report counts, not frames). Where the [`Kernel`] borrows an array apart it does not
//! even write them ([`Scan::fill_key`]): such an entry keeps the frame and permissions
//! of the way's previous entry. Nothing that reads frames while the TLBs run (a
//! promotion policy, a pager) runs decoupled; data caches read them after the walks
//! (see [`super::cached`]). And after an error (out of memory) the batch's
//! counts include references after the failing one. The in-order path
//! ([`Machine::set_decoupled`]) remains, and the tests check that both give the
//! same report.
//!
//! [`Walker::prefetch`]: super::walker::Walker::prefetch

use super::{Machine, SimError};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::event::{AccessKind, MemRef};
use crate::pagetable::{Perms, Translation, WalkHint};
use crate::replacement::{Replacement, SetPolicy, TreePlru};
use crate::tlb::hierarchy::{Above, VisitArray, DATA, INSTRUCTION};
use crate::tlb::set_assoc::{tag_meta, Scan};
use crate::tlb::SetAssocTlb;

/// How many queued misses ahead the walker prefetches.
const AHEAD: usize = 8;

/// The most misses queued at once: a reference that spans many pages has its queue
/// walked when it is full (the walks go in the same order, whenever they run).
/// Otherwise a batch queues at most one miss per reference.
pub const MAX_QUEUED: usize = 1 << 16;

/// A TLB miss waiting for its walk, or a flush of the walk caches between two.
#[derive(Clone, Copy, Debug)]
pub struct Miss {
    va: VirtAddr,
    reference: u64,
    asid: Asid,
    flush: bool,
}

impl Miss {
    /// The walk of `va` in `asid`, for the reference numbered `reference`.
    fn walk(va: VirtAddr, reference: u64, asid: Asid) -> Miss {
        Miss {
            va,
            reference,
            asid,
            flush: false,
        }
    }

    /// The walk caches are flushed here (an untagged context switch).
    pub fn flush(reference: u64) -> Miss {
        Miss {
            va: VirtAddr(0),
            reference,
            asid: Asid(0),
            flush: true,
        }
    }
}

impl Machine {
    /// Run references from the start of `refs` (the first numbered `first`) through
    /// the [`Kernel`] while they are its kind; how many it ran.
    pub(super) fn run_kernel<I: KernelInput>(&mut self, refs: I, first: u64) -> usize {
        let base = self.walker.base_page;
        let split = self.tlb.split();
        let asid = self.current_asid;
        // In a decoupled run the filter's entry is a base page whenever it holds one.
        let last_page = if self.last_asid[0] == asid && self.last_shift[0] == base.shift() as u8 {
            self.last_page[0]
        } else {
            u64::MAX
        };
        let repeat_shift = self.repeat_shift;
        // Only plain batches are timed: the kernel takes them whole. (Elsewhere a run may
        // end after a few references, at an instruction fetch say; timing it would cost
        // more than it can tell.)
        let timed_refs = if I::PLAIN { refs.len() } else { 0 };
        let (branch_repeats, timed) = self.repeat_choice.pick(timed_refs);
        let start = timed.then(std::time::Instant::now);
        let tables = self.ranges.for_lookup();
        let Some((array, above)) = self.tlb.base_parts_ranged(DATA, base, tables) else {
            return 0;
        };
        let end = array.visit(Kernel {
            above,
            misses: &mut self.misses,
            refs,
            first,
            asid,
            split,
            base,
            last_page,
            repeat_shift,
            branch_repeats,
        });
        if let Some(start) = start {
            self.repeat_choice
                .record(branch_repeats, end.done, start.elapsed());
        }
        self.repeats[0][base.shift() as usize] += end.repeats;
        self.last_page[0] = end.last_page;
        self.last_asid[0] = asid;
        self.last_shift[0] = base.shift() as u8;
        // The misses went on to the levels above, as `note_filled` says.
        if end.missed > 0 && self.miss_crosses[DATA] {
            self.last_page[self.filter_of[INSTRUCTION]] = u64::MAX;
        }
        end.done
    }

    /// A first-level miss of the TLB loop: the parent levels are looked up and every
    /// level that missed is filled as the walk would fill it; if no level held the
    /// page, its walk is queued.
    #[inline(never)]
    pub(super) fn miss_deferred(&mut self, side: usize, asid: Asid, va: VirtAddr, reference: u64) {
        let placeholder = Translation {
            pfn: Pfn(0),
            size: self.walker.base_page,
            perms: Perms::RW,
        };
        let Machine {
            tlb,
            misses,
            ranges,
            ..
        } = self;
        let walk = || {
            misses.push(Miss::walk(va, reference, asid));
            Ok::<_, std::convert::Infallible>(placeholder)
        };
        let filled = match ranges.for_lookup() {
            Some(tables) => tlb.miss_ranged(side, asid, va, tables, walk),
            None => tlb.miss(side, asid, va, walk),
        };
        let Ok(filled) = filled;
        self.note_filled(side, asid, va, filled);
    }

    /// Walk the queued misses in order, prefetching [`AHEAD`] of them.
    pub(super) fn walk_deferred(&mut self) -> Result<(), SimError> {
        let Machine {
            walker,
            counts,
            misses,
            cached,
            ..
        } = self;
        let mut result = Ok(());
        // What the prefetch found for each of the next walks, by position modulo
        // AHEAD (kept here, not in the queue, so that the TLB loop writes less).
        let mut hints = [WalkHint::NONE; AHEAD];
        for m in misses.iter().skip(AHEAD).take(AHEAD) {
            walker.prefetch_early(m.asid, m.va);
        }
        for (j, m) in misses.iter().take(AHEAD).enumerate() {
            hints[j] = walker.prefetch(m.asid, m.va);
        }
        let nested = walker.nested.is_some();
        for j in 0..misses.len() {
            let m = misses[j];
            let hint = hints[j % AHEAD];
            // Under virtualization, the host entries of a walk's data: its guest
            // entry was brought in half the way ahead.
            if let Some(near) = misses.get(j + AHEAD / 2).filter(|_| nested) {
                walker.prefetch_host(near.asid, near.va, hints[(j + AHEAD / 2) % AHEAD]);
            }
            if let Some(next) = misses.get(j + AHEAD) {
                hints[j % AHEAD] = walker.prefetch(next.asid, next.va);
            }
            if let Some(far) = misses.get(j + 2 * AHEAD) {
                walker.prefetch_early(far.asid, far.va);
            }
            if m.flush {
                walker.walk_caches.flush_all();
                continue;
            }
            if let Err(e) = walker.resolve_counted(counts, m.asid, m.va, m.reference, hint) {
                result = Err(e);
                break;
            }
            if let (Some(c), Some(log)) = (cached.as_mut(), &walker.walk_log) {
                c.note(m.reference, m.va, walker.base_page, log.len());
                // With data caches every walk is made whole: its translation is there.
                if let Some(t) = walker.walked_entry() {
                    c.remember(m.asid, m.va, walker.base_page, t.pfn);
                }
            }
        }
        misses.clear();
        if result.is_err() {
            // The run ends here: no caches' pass reads these walks.
            if let Some(c) = cached.as_mut() {
                c.reset();
            }
            if let Some(log) = walker.walk_log.as_mut() {
                log.clear();
            }
        }
        result
    }
}

/// The references a [`Kernel`] runs over, as far as they are its kind.
pub(super) trait KernelInput: Copy {
    /// Whether every reference is the kernel's (then a run takes them all, and is
    /// worth compiling for the levels above the first too).
    const PLAIN: bool;
    fn len(&self) -> usize;
    /// The address of reference `i` (`i < len`) if the kernel can take it: in address
    /// space `asid`, no instruction fetch when `split`, within one base page.
    fn plain(&self, i: usize, asid: Asid, split: bool) -> Option<VirtAddr>;
}

impl KernelInput for &[MemRef] {
    const PLAIN: bool = false;
    #[inline(always)]
    fn len(&self) -> usize {
        <[MemRef]>::len(self)
    }
    #[inline(always)]
    fn plain(&self, i: usize, asid: Asid, split: bool) -> Option<VirtAddr> {
        let r = &self[i];
        let other = r.asid != asid || (split & (r.kind == AccessKind::Fetch)) || r.spans_pages();
        (!other).then_some(r.addr)
    }
}

/// The addresses of a [`crate::event::PlainBatch`], known to be plain.
impl KernelInput for &[u64] {
    const PLAIN: bool = true;
    #[inline(always)]
    fn len(&self) -> usize {
        <[u64]>::len(self)
    }
    #[inline(always)]
    fn plain(&self, i: usize, _: Asid, _: bool) -> Option<VirtAddr> {
        Some(VirtAddr(self[i]))
    }
}

/// The loop over a run of references that need nothing but the data side's first
/// level and what lies above it, compiled for the first level's replacement policy:
/// references in the current address space, data references (or any, when both
/// sides share the first level), each within one base page. It stops at the first
/// reference that is not so, for the general loop to take it.
///
/// It does what the general loop does, in fewer steps: the first level's other arrays
/// (of larger pages) stay empty in a decoupled run, so only the base-page array is
/// looked up; counts are kept in locals and added at the end.
pub(super) struct Kernel<'a, 'h, I: KernelInput> {
    pub above: Above<'h>,
    pub misses: &'a mut Vec<Miss>,
    pub refs: I,
    /// The number of `refs[0]` in the trace.
    pub first: u64,
    pub asid: Asid,
    /// Whether instruction fetches start at another level (and end the run).
    pub split: bool,
    pub base: PageSize,
    /// The repeat filter's page (in units of `1 << repeat_shift` bytes; `u64::MAX`:
    /// none); its entry is a base page.
    pub last_page: u64,
    pub repeat_shift: u32,
    /// Whether a reference to `last_page` is credited without a lookup (else it is
    /// looked up as any other; the counts are the same, see [`super::repeat_choice`]).
    pub branch_repeats: bool,
}

/// Where a kernel run stopped, and the filter and counts it leaves.
pub(super) struct KernelEnd {
    pub done: usize,
    pub last_page: u64,
    pub repeats: u64,
    /// References that missed the first level.
    pub missed: u64,
}

impl<I: KernelInput> VisitArray for Kernel<'_, '_, I> {
    type Out = KernelEnd;

    fn visit<R: Replacement>(self, array: &mut SetAssocTlb<R>) -> KernelEnd {
        match array.ways() {
            4 => self.with_ways::<R, 4>(array),
            8 => self.with_ways::<R, 8>(array),
            _ => self.run(&mut Whole::<R, 0>(array), &mut Levels),
        }
    }
}

/// The first level's base-page array as the kernel uses it: borrowed apart when it
/// can be ([`SetAssocTlb::scan`]), whole otherwise.
trait FirstArray {
    fn touch(&mut self, vpn: u64, meta: u32) -> bool;
    fn fill(&mut self, vpn: u64, meta: u32);
    fn count(&mut self, hits: u64, misses: u64);
}

struct Whole<'a, R: Replacement, const W: usize>(&'a mut SetAssocTlb<R>);

impl<R: Replacement, const W: usize> FirstArray for Whole<'_, R, W> {
    #[inline(always)]
    fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        self.0.touch_in::<W>(vpn, meta)
    }
    #[inline(always)]
    fn fill(&mut self, vpn: u64, meta: u32) {
        self.0.fill_absent(vpn, meta, Pfn(0), Perms::RW);
    }
    fn count(&mut self, hits: u64, misses: u64) {
        self.0.count(hits, misses);
    }
}

impl<R: Replacement, const W: usize, P: SetPolicy> FirstArray for Scan<'_, R, W, P> {
    #[inline(always)]
    fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        Scan::touch(self, vpn, meta)
    }
    #[inline(always)]
    fn fill(&mut self, vpn: u64, meta: u32) {
        self.fill_key(vpn, meta);
    }
    fn count(&mut self, hits: u64, misses: u64) {
        Scan::count(self, hits, misses);
    }
}

impl<I: KernelInput> Kernel<'_, '_, I> {
    #[inline(always)]
    fn with_ways<R: Replacement, const W: usize>(self, array: &mut SetAssocTlb<R>) -> KernelEnd {
        // Tree PLRU of 4 ways in few sets (the 64-entry DTLBs): its bits in a register,
        // for a run over a whole plain batch. (Packing and unpacking them costs a pass
        // over the sets: a run of the general loop's, which may end after a reference
        // or two at an instruction fetch, would pay it for nothing.)
        if W == 4 && I::PLAIN {
            let any: &mut dyn std::any::Any = array;
            if let Some(plru) = any.downcast_mut::<SetAssocTlb<TreePlru>>() {
                if plru.scans_packed::<4>() {
                    return self.with_packed_plru(plru);
                }
            }
        }
        let Some(mut scan) = array.scan::<W>() else {
            return self.run(&mut Whole::<R, W>(array), &mut Levels);
        };
        self.with_first::<R, _>(&mut scan)
    }

    /// [`Kernel::with_ways`] for 4-way tree PLRU whose bits fit a register (not
    /// generic: compiled once).
    #[inline(never)]
    fn with_packed_plru(self, array: &mut SetAssocTlb<TreePlru>) -> KernelEnd {
        let mut scan = array.scan_packed::<4>().expect("checked");
        self.with_first::<TreePlru, _>(&mut scan)
    }

    /// The loop over the first level's array `first`, of policy `R`, and the levels
    /// above it.
    #[inline(always)]
    fn with_first<R: Replacement, A: FirstArray>(mut self, scan: &mut A) -> KernelEnd {
        // One level above, of the same policy and a usual associativity: it is
        // borrowed apart too, and looked up in the loop.
        let ways = match self.above.single() {
            Some(p) if I::PLAIN && p.is_policy::<R>() => {
                [4, 12].into_iter().find(|&w| p.scans_as(w))
            }
            _ => None,
        };
        let shift = self.base.shift() as usize;
        let parent = match ways {
            Some(_) => self.above.take_single(),
            None => None,
        };
        if let Some((array, hits, misses)) = parent {
            let array = array.as_policy::<R>().expect("checked");
            if let Some(p) = array.scan::<4>() {
                return self.run(scan, &mut One::new(p, hits, misses, shift));
            }
            let p = array.scan::<12>().expect("checked");
            return self.run(scan, &mut One::new(p, hits, misses, shift));
        }
        self.run(scan, &mut Levels)
    }

    /// The loop.
    #[inline(always)]
    fn run<A: FirstArray, P: Parent>(self, array: &mut A, parent: &mut P) -> KernelEnd {
        match (
            self.base.shift() == 12 && self.repeat_shift == 12,
            self.branch_repeats,
        ) {
            (true, true) => self.run_shifted::<A, P, 12, true>(array, parent),
            (true, false) => self.run_shifted::<A, P, 12, false>(array, parent),
            (false, _) => self.run_shifted::<A, P, 0, true>(array, parent),
        }
    }

    /// The loop, for pages of `1 << SHIFT` bytes looked up and filtered at that size
    /// (0: the sizes the kernel names), so that the usual 4 KiB case shifts by a
    /// constant and keeps a register free; branching on repeats (`REPEATS`) or looking
    /// them up.
    #[inline(always)]
    fn run_shifted<A: FirstArray, P: Parent, const SHIFT: u32, const REPEATS: bool>(
        self,
        array: &mut A,
        parent: &mut P,
    ) -> KernelEnd {
        let Kernel {
            mut above,
            misses,
            refs,
            first,
            asid,
            split,
            base,
            mut last_page,
            repeat_shift,
            branch_repeats: _,
        } = self;
        let meta = tag_meta(asid, base);
        let (size_shift, repeat_shift) = if SHIFT != 0 {
            (SHIFT, SHIFT)
        } else {
            (base.shift(), repeat_shift)
        };
        let mut done = refs.len();
        let (mut missed, mut repeats) = (0u64, 0u64);
        for i in 0..refs.len() {
            let Some(va) = refs.plain(i, asid, split) else {
                done = i;
                break;
            };
            let page = va.0 >> repeat_shift;
            if REPEATS && page == last_page {
                repeats += 1;
                continue;
            }
            last_page = page;
            let vpn = va.0 >> size_shift;
            if array.touch(vpn, meta) {
                continue;
            }
            missed += 1;
            let reference = first + i as u64;
            parent.miss(&mut above, misses, asid, va, vpn, meta, reference);
            array.fill(vpn, meta);
        }
        let hits = done as u64 - repeats - missed;
        array.count(hits, missed);
        let size_shift = base.shift() as usize;
        above.hits[size_shift] += hits;
        // Every level above held the page or was filled with it; the first level missed.
        above.misses[size_shift] += missed;
        KernelEnd {
            done,
            last_page,
            repeats,
            missed,
        }
    }
}

/// The levels above the first, as the kernel looks them up after a first-level
/// miss: they fill those that missed, and queue the walk if none held the page.
trait Parent {
    #[allow(clippy::too_many_arguments)]
    fn miss(
        &mut self,
        above: &mut Above<'_>,
        misses: &mut Vec<Miss>,
        asid: Asid,
        va: VirtAddr,
        vpn: u64,
        meta: u32,
        reference: u64,
    );
}

/// Any levels, looked up through [`Above`].
struct Levels;

impl Parent for Levels {
    #[inline(always)]
    fn miss(
        &mut self,
        above: &mut Above<'_>,
        misses: &mut Vec<Miss>,
        asid: Asid,
        va: VirtAddr,
        _: u64,
        _: u32,
        reference: u64,
    ) {
        if above.is_empty() {
            misses.push(Miss::walk(va, reference, asid));
        } else {
            miss_above(above, misses, asid, va, reference);
        }
    }
}

/// The one level above, its base-page array borrowed apart; hits and misses are
/// counted here and added to the level's when the run ends.
struct One<'a, R: Replacement, const W: usize> {
    array: Scan<'a, R, W>,
    hits: &'a mut [u64; 64],
    misses: &'a mut [u64; 64],
    /// The size (log2) the counts are added under.
    shift: usize,
    held: u64,
    missed: u64,
}

impl<'a, R: Replacement, const W: usize> One<'a, R, W> {
    fn new(
        array: Scan<'a, R, W>,
        hits: &'a mut [u64; 64],
        misses: &'a mut [u64; 64],
        shift: usize,
    ) -> Self {
        One {
            array,
            hits,
            misses,
            shift,
            held: 0,
            missed: 0,
        }
    }
}

impl<R: Replacement, const W: usize> Parent for One<'_, R, W> {
    #[inline(always)]
    fn miss(
        &mut self,
        _: &mut Above<'_>,
        misses: &mut Vec<Miss>,
        asid: Asid,
        va: VirtAddr,
        vpn: u64,
        meta: u32,
        reference: u64,
    ) {
        if self.array.touch(vpn, meta) {
            self.held += 1;
            return;
        }
        self.missed += 1;
        misses.push(Miss::walk(va, reference, asid));
        self.array.fill_key(vpn, meta);
    }
}

impl<R: Replacement, const W: usize> Drop for One<'_, R, W> {
    fn drop(&mut self) {
        self.hits[self.shift] += self.held;
        self.misses[self.shift] += self.missed;
    }
}

/// A first-level miss with levels above: look them up (and fill those that missed);
/// queue the walk if none held the page.
#[inline(never)]
fn miss_above(
    above: &mut Above<'_>,
    misses: &mut Vec<Miss>,
    asid: Asid,
    va: VirtAddr,
    reference: u64,
) {
    above.miss(asid, va, || misses.push(Miss::walk(va, reference, asid)));
}
