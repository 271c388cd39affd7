//! What a TLB miss goes to: the page table, its walk caches and physical memory. A
//! walk is counted (references after the walk caches, distinct cache lines); a walk
//! that finds no translation is a page fault, which maps a fresh base frame and walks
//! again (that walk is the fault's cost and is counted apart). The walk caches serve
//! every walk, the one that faults and the retry included, as the hardware walker's
//! would.

use super::{AnyPageTable, Counts, SimError};
use crate::addr::{Asid, PageSize, VirtAddr};
use crate::frames::FrameAllocator;
use crate::pagetable::{MapError, Perms, Translation, Walk};
use crate::tlb::WalkCaches;

pub struct Walker {
    pub page_table: AnyPageTable,
    pub walk_caches: WalkCaches,
    pub frames: Box<dyn FrameAllocator>,
    /// The page size demand paging maps.
    pub base_page: PageSize,
    /// The last walk (kept, not made afresh: a walk is large).
    pub walk: Walk,
}

impl Walker {
    /// The translation of `va` after a TLB miss at reference number `reference`:
    /// walk, and on a page fault map the page and walk again.
    #[inline]
    pub fn resolve(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<Translation, SimError> {
        let skip = self.walk(asid, va);
        counts.walks += 1;
        let walk = &self.walk;
        counts.walk_refs += (walk.refs().len() - skip) as u64;
        counts.walk_refs_skipped += skip as u64;
        counts.walk_lines += walk.distinct_lines_from(skip) as u64;
        match walk.translation {
            Some(t) => Ok(t),
            None => self.fault(counts, asid, va, reference),
        }
    }

    /// Walk `va` into the scratch walk: how many of its leading references the walk
    /// caches make unnecessary. The caches serve every walk, one that ends at an
    /// absent entry too, and take the pointer entries it read.
    #[inline]
    fn walk(&mut self, asid: Asid, va: VirtAddr) -> usize {
        self.page_table.walk_into(asid, va, &mut self.walk);
        if self.walk_caches.is_empty() {
            0
        } else {
            self.walk_caches.filter(asid, va, self.walk.refs().len())
        }
    }

    /// A hint that `va` will be resolved soon: the page table may bring the entries
    /// its walk will read into the host's cache. Changes nothing simulated.
    #[inline(always)]
    pub fn prefetch(&self, asid: Asid, va: VirtAddr) {
        self.page_table.prefetch(asid, va);
    }

    /// Demand paging: map a fresh base frame at `va`'s page and retry the walk.
    #[cold]
    #[inline(never)]
    fn fault(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<Translation, SimError> {
        counts.page_faults += 1;
        let error = |message: String| SimError { reference, message };
        let base = self.base_page;
        let page = va.vpn(base).base(base);
        let Some(pfn) = self.frames.alloc(base) else {
            return Err(error(format!(
                "out of physical memory after {} page faults (frames.memory is {} base frames; raise it)",
                counts.page_faults,
                self.frames.total_frames()
            )));
        };
        let mapped =
            self.page_table
                .as_dyn()
                .map(asid, page, base, pfn, Perms::RW, self.frames.as_mut());
        if let Err(e) = mapped {
            self.frames.free(pfn, base);
            return Err(error(match e {
                MapError::OutOfRange(bits) if bits < 57 => {
                    format!(
                        "address {:#x}: {e} (page_table.levels = 5 gives 57 bits)",
                        va.0
                    )
                }
                MapError::OutOfMemory => format!("{e} (raise frames.memory)"),
                _ => format!("address {:#x}: the fault handler cannot map it: {e}", va.0),
            }));
        }
        // The faulting access is retried: it walks again. That walk is the fault's cost,
        // not the TLB's, and is counted apart.
        let skip = self.walk(asid, va);
        counts.fault_walk_refs += (self.walk.refs().len() - skip) as u64;
        self.walk.translation.ok_or_else(|| {
            error(format!(
                "address {:#x}: still unmapped after the fault was handled",
                va.0
            ))
        })
    }
}
