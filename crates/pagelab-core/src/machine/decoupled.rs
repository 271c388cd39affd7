//! Decoupled runs: the TLBs over a whole batch first, then the walks of their misses.
//!
//! While every translation the page table can return is a base page (demand paging,
//! no superpage policy), what happens in the TLBs does not depend on what a walk
//! finds: a miss fills every level with a base-page entry whatever frame it maps, and
//! a page fault only decides which frame that is. So the TLB loop can run ahead,
//! filling with a placeholder frame and queueing each miss that reaches the page
//! table, and the walks run afterwards in the same order, with the same effects on
//! the page table, the walk caches, physical memory and every count.
//!
//! Why: a walk's last read (the leaf entry) usually misses the host's caches. In
//! order, every miss waits for it; queued, the walker knows the next misses and has
//! the page table bring their entries in ahead of time ([`Walker::prefetch`]), so the
//! host's memory latency overlaps.
//!
//! What is lost: the frames in the TLB entries are placeholders (the simulated TLBs
//! report counts, not frames), and after an error (out of memory) the batch's counts
//! include references after the failing one. The in-order path
//! ([`Machine::set_decoupled`]) remains, and the tests check that both give the
//! same report.
//!
//! [`Walker::prefetch`]: super::walker::Walker::prefetch

use super::{Machine, SimError};
use crate::addr::{Asid, Pfn, VirtAddr};
use crate::pagetable::{Perms, Translation};

/// How many queued misses ahead the walker prefetches.
const AHEAD: usize = 8;

/// A TLB miss waiting for its walk, or a flush of the walk caches between two.
#[derive(Clone, Copy, Debug)]
pub struct Miss {
    va: VirtAddr,
    reference: u64,
    asid: Asid,
    flush: bool,
}

impl Miss {
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
        let Machine { tlb, misses, .. } = self;
        let filled = tlb.miss(side, asid, va, || {
            misses.push(Miss {
                va,
                reference,
                asid,
                flush: false,
            });
            Ok::<_, std::convert::Infallible>(placeholder)
        });
        let Ok(filled) = filled;
        self.note_filled(side, asid, va, filled);
    }

    /// Walk the queued misses in order, prefetching [`AHEAD`] of them.
    pub(super) fn walk_deferred(&mut self) -> Result<(), SimError> {
        let Machine {
            walker,
            counts,
            misses,
            ..
        } = self;
        let mut result = Ok(());
        for j in 0..misses.len() {
            if let Some(next) = misses.get(j + AHEAD) {
                walker.prefetch(next.asid, next.va);
            }
            let m = misses[j];
            if m.flush {
                walker.walk_caches.flush_all();
                continue;
            }
            if let Err(e) = walker.resolve(counts, m.asid, m.va, m.reference) {
                result = Err(e);
                break;
            }
        }
        misses.clear();
        result
    }
}
