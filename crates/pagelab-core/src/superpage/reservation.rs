//! `reservation` (Navarro, Iyer, Druschel and Cox, OSDI 2002, as Gopalan's slides
//! present it, "III Design"):
//! - **Preemptible reservations.** On the first touch of a page that no reservation
//!   covers, reserve the largest aligned block of a candidate size around it that
//!   holds no mapped page, overlaps no reservation and lies within the page's memory
//!   object ("go for biggest size that is no larger than the memory object"; objects
//!   come from the trace's memory map and mmap/munmap/brk events, see
//!   [`super::objects`]; a page outside every known object, or in a trace without
//!   events, is bounded by nothing but the untouched blocks), from the frame
//!   allocator. The page gets its own frame in the block; later first touches in the
//!   block take theirs.
//! - **Preemption.** When no free block of that size exists, preempt reservations of
//!   at least that size before resigning to a smaller size: first the one "whose most
//!   recently populated frame was populated the least recently". A preempted reservation gives back its
//!   unpopulated frames, as the largest aligned free blocks they form, and keeps its
//!   populated pages (and any superpages made of them).
//! - **Incremental promotion.** A population map per reservation; when a first touch
//!   completes an aligned block of a candidate size, that block (the largest so
//!   completed) is promoted. Its frames are contiguous and aligned already, so the
//!   promotion is a page-table update in place, no copy.
//!
//! - **Under memory pressure** (`crate::pressure`): a page the daemon reclaims from a
//!   live reservation leaves its frame reserved for it (unpopulated again), so that
//!   when it faults back it returns to its place and the block can still be promoted
//!   in place; a page of a fully populated (no longer live) block gives its frame back.
//!   Speculative demotion and demotion on writes are the machine's (`crate::pressure`).

use super::objects::Objects;
use super::{check_miss_cycles, BuildPolicy, Candidate, Context, Miss, PromotionPolicy};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::event::Event;
use crate::frames::FrameAllocator;
use crate::pagetable::Translation;
use std::collections::{BTreeMap, HashMap};

/// One reservation: a block of frames set aside for an aligned block of pages.
struct Resv {
    size: PageSize,
    pfn: Pfn,
    /// Populated base pages, one bit each.
    populated: Vec<u64>,
    count: u64,
    /// When its last page was populated (the policy's population clock).
    last: u64,
}

pub struct Reservation {
    /// Candidate sizes, ascending.
    sizes: Vec<PageSize>,
    base: PageSize,
    /// Live reservations by (address space, first address).
    live: BTreeMap<(Asid, u64), Resv>,
    /// Mapped base pages per candidate block: (address space, size's log2, index).
    mapped: HashMap<(Asid, u8, u64), u64>,
    clock: u64,
    /// The memory objects of each address space, from the trace's events.
    objects: Objects,
    /// Reservations made and preempted, and frames reserved but not populated now.
    pub made: u64,
    pub preempted: u64,
    reserved_idle: u64,
    miss_cycles: f64,
}

impl Reservation {
    /// `sizes` ascending, each larger than `base`.
    pub fn new(sizes: Vec<PageSize>, base: PageSize, miss_cycles: f64) -> Reservation {
        Reservation {
            sizes,
            base,
            live: BTreeMap::new(),
            mapped: HashMap::new(),
            clock: 0,
            objects: Objects::default(),
            made: 0,
            preempted: 0,
            reserved_idle: 0,
            miss_cycles,
        }
    }

    fn pages_in(&self, size: PageSize) -> u64 {
        size.bytes() >> self.base.shift()
    }

    /// Base pages mapped in the block of `size` holding `va`.
    pub fn mapped_in(&self, asid: Asid, va: VirtAddr, size: PageSize) -> u64 {
        let key = (asid, size.shift() as u8, va.0 >> size.shift());
        self.mapped.get(&key).copied().unwrap_or(0)
    }

    /// The reservation holding `va`: its first address.
    fn holder(&self, asid: Asid, va: u64) -> Option<u64> {
        let (&(a, start), r) = self.live.range(..=(asid, va)).next_back()?;
        (a == asid && va < start + r.size.bytes()).then_some(start)
    }

    /// Whether `[start, start + bytes)` overlaps a reservation of `asid`.
    fn overlaps(&self, asid: Asid, start: u64, bytes: u64) -> bool {
        if self.holder(asid, start).is_some() {
            return true;
        }
        self.live
            .range((asid, start)..(asid, start + bytes))
            .next()
            .is_some()
    }

    /// Preempt, of the reservations of at least `size` (those that can give back a
    /// block of it), the one whose last population is the oldest: its unpopulated
    /// frames go back to `frames`. False if there is none.
    fn preempt_one(&mut self, size: PageSize, frames: &mut dyn FrameAllocator) -> bool {
        let Some(key) = self
            .live
            .iter()
            .filter(|(_, r)| r.size >= size)
            .min_by_key(|(k, r)| (r.last, **k))
            .map(|(k, _)| *k)
        else {
            return false;
        };
        let r = self.live.remove(&key).expect("found above");
        self.preempted += 1;
        let pages = self.pages_in(r.size);
        self.reserved_idle -= (pages - r.count) * self.base.base_frames();
        self.release(&r, 0, pages, frames);
        true
    }

    /// Free the unpopulated pages `[first, first + n)` of `r` (n a power of two,
    /// aligned) as the largest aligned blocks they form.
    fn release(&self, r: &Resv, first: u64, n: u64, frames: &mut dyn FrameAllocator) {
        let populated =
            (first..first + n).any(|i| r.populated[(i / 64) as usize] >> (i % 64) & 1 == 1);
        if !populated {
            let size = PageSize::from_shift(self.base.shift() + n.trailing_zeros())
                .expect("within the reservation's size");
            frames.free(Pfn(r.pfn.0 + first * self.base.base_frames()), size);
        } else if n > 1 {
            self.release(r, first, n / 2, frames);
            self.release(r, first + n / 2, n / 2, frames);
        }
    }
}

impl PromotionPolicy for Reservation {
    fn fault_frame(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        frames: &mut dyn FrameAllocator,
    ) -> Option<Pfn> {
        let page = va.0 >> self.base.shift() << self.base.shift();
        if let Some(start) = self.holder(asid, page) {
            let r = &self.live[&(asid, start)];
            let i = (page - start) >> self.base.shift();
            return Some(Pfn(r.pfn.0 + i * self.base.base_frames()));
        }
        let object = self.objects.extent(asid, va.0);
        for k in (0..self.sizes.len()).rev() {
            let size = self.sizes[k];
            let start = va.0 >> size.shift() << size.shift();
            let outside = object.is_some_and(|(lo, hi)| start < lo || start + size.bytes() > hi);
            if outside
                || self.mapped_in(asid, va, size) > 0
                || self.overlaps(asid, start, size.bytes())
            {
                continue;
            }
            let block = loop {
                if let Some(b) = frames.alloc(size) {
                    break Some(b);
                }
                if !self.preempt_one(size, frames) {
                    break None;
                }
            };
            let Some(pfn) = block else { continue };
            let pages = self.pages_in(size);
            self.live.insert(
                (asid, start),
                Resv {
                    size,
                    pfn,
                    populated: vec![0; pages.div_ceil(64) as usize],
                    count: 0,
                    last: self.clock,
                },
            );
            self.made += 1;
            self.reserved_idle += pages * self.base.base_frames();
            let i = (page - start) >> self.base.shift();
            return Some(Pfn(pfn.0 + i * self.base.base_frames()));
        }
        None
    }

    fn give_back(&mut self, frames: &mut dyn FrameAllocator) -> bool {
        // Any reservation will do (each is at least a base page): the one populated
        // least recently goes, as when a reservation of its size is wanted.
        self.preempt_one(self.base, frames)
    }

    fn on_event(&mut self, asid: Asid, event: &Event) {
        self.objects.apply(asid, event);
    }

    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        if !m.first_touch {
            return None;
        }
        for &s in &self.sizes {
            *self
                .mapped
                .entry((m.asid, s.shift() as u8, m.va.0 >> s.shift()))
                .or_insert(0) += 1;
        }
        let page = m.va.0 >> self.base.shift() << self.base.shift();
        let start = self.holder(m.asid, page)?;
        self.clock += 1;
        let base = self.base;
        let r = self.live.get_mut(&(m.asid, start)).expect("held");
        let i = (page - start) >> base.shift();
        r.populated[(i / 64) as usize] |= 1 << (i % 64);
        r.count += 1;
        r.last = self.clock;
        let (size, full) = (r.size, r.count == r.size.bytes() >> base.shift());
        self.reserved_idle -= base.base_frames();
        if full {
            // Nothing left to reserve: it can no longer be preempted.
            self.live.remove(&(m.asid, start));
        }
        // The largest candidate within the reservation that this page completed.
        self.sizes
            .iter()
            .rev()
            .copied()
            .filter(|&s| s <= size && s > m.size)
            .find(|&s| self.mapped_in(m.asid, m.va, s) == s.bytes() >> base.shift())
            .map(|s| Candidate::containing(m.asid, m.va, s))
    }

    fn unmapped(&mut self, asid: Asid, va: VirtAddr) -> bool {
        for &s in &self.sizes {
            let key = (asid, s.shift() as u8, va.0 >> s.shift());
            if let Some(n) = self.mapped.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.mapped.remove(&key);
                }
            }
        }
        let page = va.0 >> self.base.shift() << self.base.shift();
        let Some(start) = self.holder(asid, page) else {
            return false;
        };
        let base = self.base;
        let r = self.live.get_mut(&(asid, start)).expect("held");
        let i = (page - start) >> base.shift();
        r.populated[(i / 64) as usize] &= !(1 << (i % 64));
        r.count -= 1;
        self.reserved_idle += base.base_frames();
        true
    }

    fn holds_frame(&self, asid: Asid, va: VirtAddr) -> bool {
        self.holder(asid, va.0).is_some()
    }

    fn miss_cycles(&self) -> f64 {
        self.miss_cycles
    }

    fn in_place(&self) -> bool {
        true
    }

    fn idle_frames(&self) -> u64 {
        self.reserved_idle
    }

    fn check(
        &self,
        lookup: &dyn Fn(Asid, VirtAddr) -> Option<Translation>,
        _tlb: &[(Asid, super::Entry)],
    ) -> Result<(), String> {
        let base = self.base;
        for (&(asid, shift, index), &n) in &self.mapped {
            let size = PageSize::from_shift(shift as u32).expect("a candidate size");
            let start = index << shift;
            let mapped = (0..self.pages_in(size))
                .filter(|i| lookup(asid, VirtAddr(start + (i << base.shift()))).is_some())
                .count() as u64;
            if mapped != n {
                return Err(format!(
                    "the {size} block at {start:#x} counts {n} pages populated, the page table maps {mapped}"
                ));
            }
        }
        for (&(asid, start), r) in &self.live {
            for i in 0..self.pages_in(r.size) {
                let va = VirtAddr(start + (i << base.shift()));
                let populated = r.populated[(i / 64) as usize] >> (i % 64) & 1 == 1;
                let frame = lookup(asid, va)
                    .map(|t| t.pfn.0 + (va.offset_in(t.size) >> crate::addr::BASE_SHIFT));
                let want = populated.then_some(r.pfn.0 + i * base.base_frames());
                if frame != want {
                    return Err(format!(
                        "reservation at {start:#x}: page {i} populated {populated}, but the page table maps it to {frame:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("reservations made", self.made),
            ("reservations preempted", self.preempted),
            ("reservations live", self.live.len() as u64),
        ]
    }
    fn stat_is_state(&self, name: &str) -> bool {
        name == "reservations live"
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReservationConfig {
    /// Candidate sizes (default as for asap): reservations are blocks of these sizes.
    pub sizes: Vec<PageSize>,
    /// Cycles the TLB miss handler spends on the policy per miss. Default 0: the
    /// design keeps its population maps in the page-fault handler (a map is updated
    /// when a fault populates a frame of a reservation, the slides' "Incremental
    /// promotions"), whose cost is the machine's `page_fault_cycles`; the TLB miss
    /// handler (the Alpha's PALcode, FreeBSD's x86 walker) knows nothing of
    /// reservations.
    pub miss_cycles: f64,
}

impl Default for ReservationConfig {
    fn default() -> Self {
        ReservationConfig {
            sizes: Vec::new(),
            miss_cycles: 0.0,
        }
    }
}

impl BuildPolicy for Reservation {
    type Options = ReservationConfig;
    fn build(o: &ReservationConfig, cx: &Context<'_>) -> Result<Reservation, String> {
        check_miss_cycles(o.miss_cycles)?;
        Ok(Reservation::new(cx.sizes.to_vec(), cx.base, o.miss_cycles))
    }
    fn configured_sizes(o: &ReservationConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
}
