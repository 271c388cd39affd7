//! Memory objects: the extents of an address space's mappings, followed from a
//! trace's events, so that a policy can size what it does to the object an address
//! lies in. Navarro's reservations "go for biggest size that is no larger than the
//! memory object" (Navarro et al., OSDI 2002, as Gopalan's slides present it,
//! "Allocation: reservation size").
//!
//! An object is a virtual range that the operating system maps as one: a segment of
//! the memory map at start-up (text, data, bss, heap, stack of the program and of
//! each library), an `mmap`, the heap as `brk` moves its end. Allocations of `malloc`
//! and friends live inside those and are not objects. The events change them so:
//! - `Segment`: the range becomes one object (replacing whatever overlapped it);
//! - `Mmap`: `[addr, addr + size)`, rounded up to whole 4 KiB pages, likewise;
//! - `Munmap`: `[old_addr, old_addr + size)` is taken out (an object it cuts keeps
//!   what lies on either side);
//! - `Mremap`: the object holding `old_addr` goes, `[addr, addr + size)` comes;
//! - `Brk`: the heap ends at the new break `addr` (the heap is the object that ended
//!   at the old break, or the heap segment; with neither, `[old_addr, addr)`).
//!
//! Traces without events (lackey, ChampSim, address lists) have no objects; then, and
//! for an address outside every object (a stack grown below its start-up segment),
//! [`Objects::extent`] says `None` and the policy does what it does without them.

use crate::addr::{Asid, BASE_SHIFT};
use crate::event::{Alloc, AllocOp, Event, SegmentKind};
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub struct Objects {
    /// Objects by (address space, first address): their end (exclusive). Disjoint.
    map: BTreeMap<(Asid, u64), u64>,
    /// The start of each address space's heap segment, if the memory map named one.
    heap: HashMap<Asid, u64>,
}

impl Objects {
    /// Follow one event of address space `asid`.
    pub fn apply(&mut self, asid: Asid, event: &Event) {
        match event {
            Event::Segment(s) => {
                if s.kind == SegmentKind::Heap {
                    self.heap.insert(asid, s.start);
                }
                self.insert(asid, s.start, s.end);
            }
            Event::Alloc(a) => self.alloc(asid, a),
            _ => {}
        }
    }

    fn alloc(&mut self, asid: Asid, a: &Alloc) {
        let page = 1u64 << BASE_SHIFT;
        let round = |size: u64| size.saturating_add(page - 1) & !(page - 1);
        match a.op {
            AllocOp::Mmap => self.insert(asid, a.addr, a.addr.saturating_add(round(a.size))),
            AllocOp::Munmap => {
                self.remove(asid, a.old_addr, a.old_addr.saturating_add(round(a.size)))
            }
            AllocOp::Mremap => {
                if let Some((start, end)) = self.extent(asid, a.old_addr) {
                    self.remove(asid, start, end);
                }
                self.insert(asid, a.addr, a.addr.saturating_add(round(a.size)));
            }
            AllocOp::Brk => {
                let (old, new) = (a.old_addr, a.addr);
                // The heap: the object ending at the old break, else the heap segment.
                let start = self
                    .map
                    .range(..(asid, old))
                    .next_back()
                    .filter(|(&(s, _), &end)| s == asid && end == old)
                    .map(|(&(_, start), _)| start)
                    .or_else(|| self.heap.get(&asid).copied().filter(|&h| h <= old))
                    .unwrap_or(old);
                self.remove(asid, start, old.max(new));
                self.insert(asid, start, new);
            }
            _ => {}
        }
    }

    /// Make `[start, end)` one object, cutting back whatever overlapped it.
    fn insert(&mut self, asid: Asid, start: u64, end: u64) {
        if start >= end {
            return;
        }
        self.remove(asid, start, end);
        self.map.insert((asid, start), end);
    }

    /// Take `[start, end)` out of every object of `asid`.
    fn remove(&mut self, asid: Asid, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // Objects starting before `end` and ending after `start` overlap.
        let overlapping: Vec<(u64, u64)> = self
            .map
            .range((asid, 0)..(asid, end))
            .filter(|(_, &e)| e > start)
            .map(|(&(_, s), &e)| (s, e))
            .collect();
        for (s, e) in overlapping {
            self.map.remove(&(asid, s));
            if s < start {
                self.map.insert((asid, s), start);
            }
            if e > end {
                self.map.insert((asid, end), e);
            }
        }
    }

    /// The object holding address `va` of `asid`: `(start, end)`.
    pub fn extent(&self, asid: Asid, va: u64) -> Option<(u64, u64)> {
        let (&(a, start), &end) = self.map.range(..=(asid, va)).next_back()?;
        (a == asid && va < end).then_some((start, end))
    }

    /// Whether address space `asid` has any object (its trace carried a memory map).
    pub fn knows(&self, asid: Asid) -> bool {
        self.map
            .range((asid, 0)..=(asid, u64::MAX))
            .next()
            .is_some()
    }

    /// Objects of every address space, in order (for tests and reports).
    pub fn iter(&self) -> impl Iterator<Item = (Asid, u64, u64)> + '_ {
        self.map.iter().map(|(&(a, s), &e)| (a, s, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Segment;

    const A: Asid = Asid(0);

    fn alloc(op: AllocOp, addr: u64, size: u64, old_addr: u64) -> Event {
        Event::Alloc(Alloc {
            op,
            addr,
            size,
            old_addr,
            flags: 0,
            callsite: 0,
        })
    }

    fn segment(start: u64, end: u64, kind: SegmentKind) -> Event {
        Event::Segment(Segment {
            start,
            end,
            perms: 3,
            kind,
            name: String::new(),
        })
    }

    fn all(o: &Objects) -> Vec<(u64, u64)> {
        o.iter().map(|(_, s, e)| (s, e)).collect()
    }

    /// The events of the bundled bunzip2 trace, in miniature: a heap segment that brk
    /// grows, an mmap rounded to pages, a munmap that takes it back, a mapping cut in
    /// two by a munmap in its middle, an mremap that moves one.
    #[test]
    fn events_make_and_change_objects() {
        let mut o = Objects::default();
        assert!(!o.knows(A));
        o.apply(A, &segment(0x40_0000, 0x40_1000, SegmentKind::Heap));
        o.apply(A, &alloc(AllocOp::Brk, 0x42_1000, 0, 0x40_1000));
        assert_eq!(o.extent(A, 0x41_0000), Some((0x40_0000, 0x42_1000)));
        assert_eq!(o.extent(A, 0x42_1000), None);
        o.apply(A, &alloc(AllocOp::Mmap, 0x1000_0000, 3_600_000, 0));
        assert_eq!(
            o.extent(A, 0x1000_0000),
            Some((0x1000_0000, 0x1000_0000 + 3_600_384))
        );
        o.apply(A, &alloc(AllocOp::Munmap, 0, 3_600_000, 0x1000_0000));
        assert_eq!(o.extent(A, 0x1000_0000), None);
        o.apply(A, &alloc(AllocOp::Mmap, 0x2000_0000, 0x10_0000, 0));
        o.apply(A, &alloc(AllocOp::Munmap, 0, 0x1000, 0x2008_0000));
        assert_eq!(o.extent(A, 0x2007_f000), Some((0x2000_0000, 0x2008_0000)));
        assert_eq!(o.extent(A, 0x2008_0000), None);
        assert_eq!(o.extent(A, 0x2008_1000), Some((0x2008_1000, 0x2010_0000)));
        o.apply(
            A,
            &alloc(AllocOp::Mremap, 0x3000_0000, 0x20_0000, 0x2008_1000),
        );
        assert_eq!(o.extent(A, 0x2008_1000), None);
        assert_eq!(o.extent(A, 0x301f_ffff), Some((0x3000_0000, 0x3020_0000)));
        // The heap shrinks back.
        o.apply(A, &alloc(AllocOp::Brk, 0x40_8000, 0, 0x42_1000));
        assert_eq!(o.extent(A, 0x40_7fff), Some((0x40_0000, 0x40_8000)));
        assert_eq!(o.extent(A, 0x40_8000), None);
        // Another address space sees none of it.
        assert_eq!(o.extent(Asid(1), 0x40_0000), None);
        assert!(o.knows(A) && !o.knows(Asid(1)));
    }

    /// Objects stay disjoint whatever overlaps: a random sequence of mappings and
    /// unmappings is checked against a page-by-page model.
    #[test]
    fn objects_stay_disjoint_and_match_a_page_model() {
        let mut o = Objects::default();
        // Page -> the object's start, in a model where each insertion claims its pages.
        let mut model: BTreeMap<u64, u64> = BTreeMap::new();
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        for _ in 0..2000 {
            let start = (next() % 64) << 12;
            let pages = next() % 16 + 1;
            let end = start + (pages << 12);
            if next() % 3 == 0 {
                o.apply(A, &alloc(AllocOp::Munmap, 0, pages << 12, start));
                for p in start >> 12..end >> 12 {
                    model.remove(&p);
                }
            } else {
                o.apply(A, &alloc(AllocOp::Mmap, start, pages << 12, 0));
                for p in start >> 12..end >> 12 {
                    model.insert(p, start);
                }
            }
            let objects = all(&o);
            for w in objects.windows(2) {
                assert!(w[0].1 <= w[1].0, "overlap: {objects:x?}");
            }
            for p in 0..80u64 {
                let got = o.extent(A, p << 12);
                assert_eq!(got.is_some(), model.contains_key(&p), "page {p}: {got:x?}");
            }
        }
    }
}
