//! What a TLB miss goes to: the page table, its walk caches and physical memory. A
//! walk is counted (references after the walk caches, distinct cache lines); a walk
//! that finds no translation is a page fault, which maps a fresh base frame and walks
//! again (that walk is the fault's cost and is counted apart). The walk caches serve
//! every walk, the one that faults and the retry included, as the hardware walker's
//! would.

use super::one_pass::{Seen, Tap};
use super::{AnyPageTable, Counts, SimError};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr};
use crate::cache::{CacheAccess, CacheHierarchy};
use crate::frames::FrameAllocator;
use crate::pagetable::{MapError, Perms, Translation, Walk, WalkHint};
use crate::superpage::mechanism::Contents;
use crate::superpage::Promoter;
use crate::tlb::WalkCaches;

pub struct Walker {
    pub page_table: AnyPageTable,
    pub walk_caches: WalkCaches,
    pub frames: Box<dyn FrameAllocator>,
    /// The page size demand paging maps.
    pub base_page: PageSize,
    /// The last walk (kept, not made afresh: a walk is large).
    pub walk: Walk,
    /// The promotion policy and mechanism (see [`Promoter`]); a fault asks the policy
    /// for the size it maps.
    pub promoter: Promoter,
    /// What each frame holds, kept while a policy can move data or a pager reclaims.
    pub contents: Option<Contents>,
    /// The data of pages the page daemon reclaimed (under a resident limit): a fault
    /// on one of them reads it back (a major fault).
    pub swap: Option<crate::pressure::Swap>,
    /// The data caches, if modelled: every walk's references go through them. Away
    /// on a thread of their own during a run of a trace that gives them one
    /// (`cached.rs`): the walks are written down in `walk_log` then.
    pub cache: Option<CacheHierarchy>,
    /// In a decoupled run with data caches: the entries of the walks, written down in
    /// the order read, for the caches to read when their references' turn comes
    /// (`cached.rs`). `None`: walks read through the caches at once.
    pub walk_log: Option<Vec<PhysAddr>>,
    /// Under `[virtualization]`: the host side, which makes every walk
    /// two-dimensional (`crate::virt`).
    pub nested: Option<Box<crate::virt::Nested>>,
    /// Under `[virtualization]`: what the TLB holds for the last walk (host frame,
    /// the smaller of guest and host page); the walk's translation is the guest's.
    pub entry: Option<Translation>,
    /// Under `[coalescing]`: how a base page's entry widens to a run of contiguous
    /// frames (`crate::tlb::coalesce`).
    pub coalesce: Option<crate::tlb::Coalescing>,
    /// In a one-pass run of many geometries (`one_pass/`): told of every walk.
    pub tap: Option<Box<Tap>>,
}

impl Walker {
    /// A data reference after its translation (`first`: what the first TLB level
    /// holds for it, else the page table is read): through the cache model, at the
    /// physical address it translates to; a reference that reaches memory may add the
    /// mechanism's controller lookup.
    #[cold]
    pub fn cache_data(
        &mut self,
        counts: &mut Counts,
        first: Option<Translation>,
        asid: Asid,
        va: VirtAddr,
    ) {
        let Some(t) = first.or_else(|| self.entry_of(asid, va)) else {
            return;
        };
        self.cache_phys(counts, t.phys(va));
    }

    /// What a TLB entry holds for `va`, from the tables without counting: the guest
    /// translation, or under `[virtualization]` its host-physical entry.
    pub fn entry_of(&self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        let guest = crate::virt::translate(&self.page_table, asid, va)?;
        match &self.nested {
            Some(n) => n.entry_of(guest, va),
            None => Some(guest),
        }
    }

    /// What the TLB holds for the last walk: its translation, host-physical under
    /// `[virtualization]`.
    #[inline(always)]
    pub fn walked_entry(&self) -> Option<Translation> {
        match self.nested {
            Some(_) => self.entry,
            None => self.walk.translation,
        }
    }

    /// A data reference to `pa` through the cache model; one that reaches memory may
    /// add the mechanism's controller lookup.
    #[inline]
    pub fn cache_phys(&mut self, counts: &mut Counts, pa: PhysAddr) {
        let Some(cache) = &mut self.cache else {
            return;
        };
        if cache.access(pa, CacheAccess::Data).reached_memory() {
            let frame = Pfn(pa.0 >> crate::addr::BASE_SHIFT);
            let extra = self.promoter.mechanism.memory_cycles(frame);
            if extra > 0.0 {
                counts.controller_lookups += 1;
                self.promoter.controller_cycles += extra;
            }
        }
    }

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
        let skip = self.walk(asid, va, reference, false)?;
        counts.walks += 1;
        let (made, lines) = self.made(skip);
        counts.walk_refs += made as u64;
        counts.walk_refs_skipped += skip as u64;
        counts.walk_lines += lines as u64;
        let entry = self.walked_entry();
        if let Some(tap) = self.tap.as_mut() {
            let counted = (made as u64, lines as u64);
            let seen = Seen::Walk(self.walk.refs(), self.walk.dropped(), counted);
            tap.walked(asid, va, seen, entry.map(|t| t.size));
        }
        let t = match entry {
            Some(t) => t,
            None => self.fault(counts, asid, va, reference)?,
        };
        Ok(match &self.coalesce {
            Some(c) => c.widen(self.page_table.as_ref(), asid, va, t),
            None => t,
        })
    }

    /// [`Walker::resolve`] for a run that needs the walk's counts, not its entries or
    /// its translation (a decoupled run without data caches: no policy looks at the
    /// translation): a page table that can count a walk without writing it down does
    /// so (see [`PageTable::walk_brief`]). With data caches the walk is written down
    /// (into the log of `cached.rs`).
    ///
    /// [`PageTable::walk_brief`]: crate::pagetable::PageTable::walk_brief
    #[inline]
    pub fn resolve_counted(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
        hint: WalkHint,
    ) -> Result<(), SimError> {
        // With data caches (here, or on their thread with the log), every entry.
        let brief = match (&self.cache, &self.walk_log, &self.nested) {
            (None, None, None) => self.page_table.walk_brief(asid, va, hint),
            _ => None,
        };
        let Some((read, translation)) = brief else {
            return self.resolve(counts, asid, va, reference).map(|_| ());
        };
        let skip = if self.walk_caches.is_empty() {
            0
        } else {
            self.walk_caches.filter(asid, va, read)
        };
        counts.walks += 1;
        counts.walk_refs += (read - skip) as u64;
        counts.walk_refs_skipped += skip as u64;
        // Every entry on a line of its own.
        counts.walk_lines += (read - skip) as u64;
        if let Some(tap) = self.tap.as_mut() {
            tap.walked(asid, va, Seen::Brief(read), translation.map(|t| t.size));
        }
        if translation.is_none() {
            self.map_faulted(counts, asid, va, reference)?;
            self.retry_counted(counts, asid, va, reference)?;
        }
        Ok(())
    }

    /// Walk `va` into the scratch walk: how many of its leading references the walk
    /// caches make unnecessary. The caches serve every walk, one that ends at an
    /// absent entry too, and take the pointer entries it read. Under
    /// `[virtualization]` the walk is then made two-dimensional (its references in
    /// the host side's record, [`crate::virt::Nested::refs`]). `retry`: the walk
    /// after a fault was handled.
    #[inline]
    fn walk(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
        retry: bool,
    ) -> Result<usize, SimError> {
        self.page_table.walk_into(asid, va, &mut self.walk);
        let skip = if self.walk_caches.is_empty() {
            0
        } else {
            self.walk_caches.filter(asid, va, self.walk.refs().len())
        };
        if let Some(n) = &mut self.nested {
            self.entry = n
                .expand(&self.walk, skip, va, retry)
                .map_err(|message| SimError { reference, message })?;
        }
        if self.cache.is_some() || self.walk_log.is_some() {
            self.walk_through_cache(skip);
        }
        Ok(skip)
    }

    /// The entries the last walk read after the walk caches' `skip`, in order.
    #[inline]
    fn read(&self, skip: usize) -> &[PhysAddr] {
        match &self.nested {
            Some(n) => n.refs(),
            None => &self.walk.refs()[skip..],
        }
    }

    /// The references the last walk made after the walk caches' `skip` (every one,
    /// those beyond a walk's record included), and their distinct cache lines.
    #[inline]
    fn made(&self, skip: usize) -> (usize, usize) {
        let dropped = match &self.nested {
            Some(n) => n.dropped(),
            None => self.walk.dropped(),
        };
        let read = self.read(skip);
        (read.len() + dropped, crate::pagetable::distinct_lines(read))
    }

    /// The references of the last walk after the walk caches' `skip`, through the
    /// caches (out of line: most machines model none, and the walk stays small).
    #[cold]
    #[inline(never)]
    fn walk_through_cache(&mut self, skip: usize) {
        let read = match &self.nested {
            Some(n) => n.refs(),
            None => &self.walk.refs()[skip..],
        };
        if let Some(log) = &mut self.walk_log {
            log.extend_from_slice(read);
        } else if let Some(cache) = &mut self.cache {
            for &entry in read {
                cache.access(entry, CacheAccess::Walk);
            }
        }
    }

    /// A hint that `va` will be resolved soon: the page table may bring the entries
    /// its walk will read into the host's cache, and say where that walk will end (for
    /// [`Walker::resolve_counted`]). Changes nothing simulated.
    #[inline(always)]
    pub fn prefetch(&self, asid: Asid, va: VirtAddr) -> WalkHint {
        self.page_table.prefetch(asid, va)
    }

    /// Under `[virtualization]`, a hint that `va`'s walk is near: once the guest's
    /// entry is in the host's cache (a [`Walker::prefetch`] ago, which gave `hint`),
    /// the host table brings in its entries for the data's guest-physical address.
    /// Changes nothing simulated.
    #[inline]
    pub fn prefetch_host(&self, asid: Asid, va: VirtAddr, hint: WalkHint) {
        if let (Some(n), Some((_, Some(t)))) =
            (&self.nested, self.page_table.walk_brief(asid, va, hint))
        {
            n.prefetch(t.phys(va));
        }
    }

    /// An earlier hint than [`Walker::prefetch`] that `va` will be resolved (see
    /// [`PageTable::prefetch_early`]). Changes nothing simulated.
    ///
    /// [`PageTable::prefetch_early`]: crate::pagetable::PageTable::prefetch_early
    #[inline(always)]
    pub fn prefetch_early(&self, asid: Asid, va: VirtAddr) {
        self.page_table.prefetch_early(asid, va)
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
        self.map_faulted(counts, asid, va, reference)?;
        self.retry(counts, asid, va, reference)
    }

    /// Handle a page fault: map the page of `va` (a large page if the policy asks for
    /// one and it can be had, else a base page).
    #[cold]
    #[inline(never)]
    fn map_faulted(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<(), SimError> {
        counts.page_faults += 1;
        let error = |message: String| SimError { reference, message };
        if let Some(size) = self
            .promoter
            .policy
            .as_mut()
            .and_then(|p| p.fault_size(asid, va))
        {
            if size > self.base_page {
                if let Ok(swapped_in) = self.map_fresh(asid, va, size, None) {
                    counts.large_faults += 1;
                    counts.major_faults += swapped_in as u64;
                    return Ok(());
                }
            }
        }
        if self.map_folio(asid, va) {
            return Ok(());
        }
        let base = self.base_page;
        let frames = self.frames.as_mut();
        let set_aside = self
            .promoter
            .policy
            .as_mut()
            .and_then(|p| p.fault_frame(asid, va, frames));
        let mut mapped = self.map_fresh(asid, va, base, set_aside);
        // Out of memory (for the frame, or for a page-table node) while the policy
        // holds frames idle (reservations' unpopulated frames) or the page table does
        // (levels kept after they emptied): they give them back, one reservation at a
        // time, and the fault tries again. Only when the frame is not one the policy
        // set aside: that one stays its own.
        while matches!(mapped, Err(None) | Err(Some(MapError::OutOfMemory))) && set_aside.is_none()
        {
            let frames = self.frames.as_mut();
            if !(self
                .promoter
                .policy
                .as_mut()
                .is_some_and(|p| p.give_back(frames))
                || self.page_table.as_dyn().give_back(frames))
            {
                break;
            }
            mapped = self.map_fresh(asid, va, base, None);
        }
        match mapped {
            Ok(swapped_in) => counts.major_faults += swapped_in as u64,
            Err(e) => return Err(error(match e {
                None => format!(
                    "out of physical memory after {} page faults (frames.memory is {} base frames; raise it)",
                    counts.page_faults,
                    self.frames.total_frames()
                ),
                Some(MapError::OutOfRange(bits)) => {
                    // Radix and linear tables reach as far as their levels; the others
                    // map any 64-bit address.
                    let hint = match &self.page_table {
                        crate::pagetable::AnyPageTable::Radix(_) if bits < 57 => {
                            "page_table.levels = 5 gives 57 bits"
                        }
                        _ => "the hashed, clustered, inverted, guarded and variable-radix tables map any 64-bit address",
                    };
                    format!(
                        "address {:#x}: {} ({hint})",
                        va.0,
                        MapError::OutOfRange(bits)
                    )
                }
                Some(MapError::OutOfMemory) => format!("{} (raise frames.memory)", MapError::OutOfMemory),
                Some(e) => format!("address {:#x}: the fault handler cannot map it: {e}", va.0),
            })),
        }
        Ok(())
    }

    /// A fault that mapped no large page: a folio of the largest size the policy
    /// enables whose aligned range around `va` has no page mapped (nor swapped out)
    /// and whose block the allocator has, each base page of it mapped on its own
    /// (see [`PromotionPolicy::fault_folios`]). Whether one was mapped.
    ///
    /// [`PromotionPolicy::fault_folios`]: crate::superpage::PromotionPolicy::fault_folios
    fn map_folio(&mut self, asid: Asid, va: VirtAddr) -> bool {
        let Some(policy) = self.promoter.policy.as_mut() else {
            return false;
        };
        let mut sizes = [PageSize::K4; 16];
        let n = policy.fault_folios().len().min(sizes.len());
        sizes[..n].copy_from_slice(&policy.fault_folios()[..n]);
        for &size in &sizes[..n] {
            let mapped = self.try_folio(asid, va, size);
            if let Some(p) = self.promoter.policy.as_mut() {
                p.folio_fault(asid, va, mapped.then_some(size));
            }
            if mapped {
                return true;
            }
        }
        false
    }

    /// [`Walker::map_folio`] of one size.
    fn try_folio(&mut self, asid: Asid, va: VirtAddr, size: PageSize) -> bool {
        let (base, start) = (self.base_page, va.0 & !(size.bytes() - 1));
        let pages = size.bytes() / base.bytes();
        let page = |i: u64| VirtAddr(start + i * base.bytes());
        let table = self.page_table.as_ref();
        if (0..pages).any(|i| table.walk(asid, page(i)).translation.is_some())
            || self
                .swap
                .as_ref()
                .is_some_and(|s| s.holds_any(asid, VirtAddr(start), size.bytes()))
        {
            return false;
        }
        let Some(pfn) = self.frames.alloc(size) else {
            return false;
        };
        let step = base.base_frames();
        for i in 0..pages {
            let frame = Pfn(pfn.0 + i * step);
            let table = self.page_table.as_dyn();
            if table
                .map(asid, page(i), base, frame, Perms::RW, self.frames.as_mut())
                .is_err()
            {
                for j in 0..i {
                    let _ = table.unmap(asid, page(j), base, self.frames.as_mut());
                }
                self.frames.free(pfn, size);
                return false;
            }
        }
        if let Some(c) = &mut self.contents {
            c.fill(
                pfn,
                size.base_frames(),
                asid,
                start >> crate::addr::BASE_SHIFT,
            );
        }
        true
    }

    /// Map the page of `size` holding `va` to a fresh block of `size` from the
    /// allocator, or to `set_aside`, a block the policy holds for it. `Err(None)`: no
    /// free block. `Ok(true)`: some of it was read back from the swap store.
    fn map_fresh(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        size: PageSize,
        set_aside: Option<Pfn>,
    ) -> Result<bool, Option<MapError>> {
        let page = va.vpn(size).base(size);
        let pfn = match set_aside {
            Some(pfn) => pfn,
            None => self.frames.alloc(size).ok_or(None)?,
        };
        let mapped =
            self.page_table
                .as_dyn()
                .map(asid, page, size, pfn, Perms::RW, self.frames.as_mut());
        if let Err(e) = mapped {
            if set_aside.is_none() {
                self.frames.free(pfn, size);
            }
            return Err(Some(e));
        }
        let first = page.0 >> crate::addr::BASE_SHIFT;
        let mut swapped_in = false;
        match (&mut self.contents, &mut self.swap) {
            (Some(c), Some(swap)) => {
                for i in 0..size.base_frames() {
                    match swap.take(asid, first + i) {
                        Some(data) => {
                            c.set(Pfn(pfn.0 + i), data);
                            swapped_in = true;
                        }
                        None => c.fill(Pfn(pfn.0 + i), 1, asid, first + i),
                    }
                }
            }
            (Some(c), None) => c.fill(pfn, size.base_frames(), asid, first),
            _ => {}
        }
        Ok(swapped_in)
    }

    /// [`Walker::retry`] for [`Walker::resolve_counted`]: the walk is counted, not
    /// written down, where the page table can.
    fn retry_counted(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<(), SimError> {
        let Some((read, translation)) = self.page_table.walk_brief(asid, va, WalkHint::NONE) else {
            return self.retry(counts, asid, va, reference).map(|_| ());
        };
        let skip = if self.walk_caches.is_empty() {
            0
        } else {
            self.walk_caches.filter(asid, va, read)
        };
        counts.fault_walk_refs += (read - skip) as u64;
        if let Some(tap) = self.tap.as_mut() {
            tap.retried(asid, va, Seen::Brief(read));
        }
        match translation {
            Some(_) => Ok(()),
            None => Err(Self::still_unmapped(va, reference)),
        }
    }

    fn still_unmapped(va: VirtAddr, reference: u64) -> SimError {
        SimError {
            reference,
            message: format!(
                "address {:#x}: still unmapped after the fault was handled",
                va.0
            ),
        }
    }

    /// After a fault was handled.
    fn retry(
        &mut self,
        counts: &mut Counts,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<Translation, SimError> {
        // The faulting access is retried: it walks again. That walk is the fault's cost,
        // not the TLB's, and is counted apart.
        let skip = self.walk(asid, va, reference, true)?;
        let (made, lines) = self.made(skip);
        counts.fault_walk_refs += made as u64;
        if let Some(tap) = self.tap.as_mut() {
            let counted = (made as u64, lines as u64);
            tap.retried(
                asid,
                va,
                Seen::Walk(self.walk.refs(), self.walk.dropped(), counted),
            );
        }
        self.walked_entry()
            .ok_or_else(|| Self::still_unmapped(va, reference))
    }
}
