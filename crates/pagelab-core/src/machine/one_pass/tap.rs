//! Beside the front machine's walker: each walk into the stacks, and, with walk
//! caches, into each geometry's own walk caches when that geometry missed.

use crate::addr::{Asid, PageSize, PhysAddr, VirtAddr};
use crate::tlb::all_assoc::AllAssoc;
use crate::tlb::set_assoc::tag_meta;
use crate::tlb::walk_cache::WalkCaches;

/// A walk as the walker made it, before any walk cache: its entries (with those
/// beyond its record, and the references and lines the walker counted for it) or,
/// counted without them, how many it read.
pub(in crate::machine) enum Seen<'a> {
    Brief(usize),
    Walk(&'a [PhysAddr], usize, (u64, u64)),
}

impl Seen<'_> {
    /// The entries a walk cache looks at.
    fn len(&self) -> usize {
        match self {
            Seen::Brief(read) => *read,
            Seen::Walk(refs, _, _) => refs.len(),
        }
    }

    /// The references made and their distinct lines after the walk caches' `skip`,
    /// as the walker counts them.
    fn made(&self, skip: usize) -> (u64, u64) {
        match self {
            // Every entry on a line of its own.
            Seen::Brief(read) => ((read - skip) as u64, (read - skip) as u64),
            Seen::Walk(_, _, counted) if skip == 0 => *counted,
            Seen::Walk(refs, dropped, _) => (
                (refs.len() - skip + dropped) as u64,
                crate::pagetable::distinct_lines(&refs[skip..]) as u64,
            ),
        }
    }
}

/// A geometry's walks through its own walk caches.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Walks {
    pub walks: u64,
    pub refs: u64,
    pub skipped: u64,
    pub lines: u64,
    pub fault_refs: u64,
}

pub(in crate::machine) struct Tap {
    pub(super) stacks: AllAssoc,
    pub(super) base: PageSize,
    /// Walks whose translation was not a base page.
    pub(super) other_sizes: u64,
    /// The references at each mark of the stacks (before each fragmentation sample).
    pub(super) marks: Vec<u64>,
    /// With walk caches: each geometry's (its stacks' family and ways), its walk
    /// caches and what its walks counted. Empty without.
    pub(super) geometries: Vec<(usize, usize)>,
    pub(super) caches: Vec<WalkCaches>,
    pub(super) walks: Vec<Walks>,
}

impl Tap {
    /// A walk of `va` after a miss of the levels below, finding `size` (none: a page
    /// fault follows, which maps a base page and walks again).
    #[inline(never)]
    pub(in crate::machine) fn walked(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        seen: Seen,
        size: Option<PageSize>,
    ) {
        if size.is_some_and(|s| s != self.base) {
            self.other_sizes += 1;
        }
        let vpn = va.0 >> self.base.shift();
        let (refs, lines) = seen.made(0);
        self.stacks
            .access(vpn, tag_meta(asid, self.base), refs, lines);
        for (g, &(family, ways)) in self.geometries.iter().enumerate() {
            if self.stacks.missed(family, ways) {
                let skip = self.caches[g].filter(asid, va, seen.len());
                let (refs, lines) = seen.made(skip);
                let w = &mut self.walks[g];
                w.walks += 1;
                w.refs += refs;
                w.skipped += skip as u64;
                w.lines += lines;
            }
        }
    }

    /// The walk retried after the page fault of the last walk: through the walk
    /// caches of every geometry that missed (all do: a fault is a first touch).
    #[inline]
    pub(in crate::machine) fn retried(&mut self, asid: Asid, va: VirtAddr, seen: Seen) {
        for (g, &(family, ways)) in self.geometries.iter().enumerate() {
            if self.stacks.missed(family, ways) {
                let skip = self.caches[g].filter(asid, va, seen.len());
                self.walks[g].fault_refs += seen.made(skip).0;
            }
        }
    }

    /// A fragmentation sample is taken after `references`: it counts the walks so far.
    pub(in crate::machine) fn mark(&mut self, references: u64) {
        self.stacks.mark();
        self.marks.push(references);
    }
}
