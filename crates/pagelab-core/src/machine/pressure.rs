//! The machine's side of memory pressure (`crate::pressure` holds the design and the
//! state): it tells the pager of every walk and write, runs the page daemon when the
//! resident set passes its limit, and carries out what the daemon decides — demotions
//! (a superpage becomes base pages on the same frames; under remapping they go back
//! to their real frames and the shadow block is given up), reclaims (unmap, drop every
//! TLB and walk-cache entry of the page at every level, data to the swap store, frame
//! freed) and re-promotions of demoted blocks.

use super::{Machine, SimError};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr, BASE_SHIFT};
use crate::event::MemRef;
use crate::pagetable::Translation;
use crate::pressure::victims::Frames;
use crate::pressure::{Demotion, Key, Victim};
use crate::superpage::Candidate;

impl Machine {
    /// A miss walked to `va` (and faulted, if `faulted`): the mapping is resident and
    /// referenced.
    pub(super) fn paging_walked(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        faulted: bool,
        reference: u64,
    ) {
        let Some(t) = self.walker.walk.translation else {
            return;
        };
        let Some(pager) = self.pager.as_mut() else {
            return;
        };
        let key = (asid, va.vpn(t.size).base(t.size).0);
        if faulted {
            pager.insert(key, t.size, true, false, reference);
        } else {
            pager.set_referenced(key, true);
        }
    }

    /// After a miss that walked (and the promotion it may have made): promote back a
    /// demoted block its page completes, and run the daemon if the resident set is past
    /// the limit, sparing the mapping of `va`.
    pub(super) fn paging_after_miss(
        &mut self,
        asid: Asid,
        va: VirtAddr,
        reference: u64,
    ) -> Result<(), SimError> {
        self.repromote(asid, va, reference)?;
        let protect = self
            .pager
            .as_ref()
            .and_then(|p| p.containing(asid, va.0))
            .map(|(k, _)| k);
        self.run_daemon(protect, reference)
    }

    /// A store or modify: the pages it wrote are dirty; the first write to a clean
    /// superpage demotes it (with `demote_on_write`).
    #[inline(never)]
    pub(super) fn note_write(&mut self, r: &MemRef, reference: u64) -> Result<(), SimError> {
        let first = r.addr.0 >> BASE_SHIFT;
        let last = r.last_byte().0 >> BASE_SHIFT;
        for page in first..=last {
            let va = VirtAddr(if page == first {
                r.addr.0
            } else {
                page << BASE_SHIFT
            });
            self.write_page(r.asid, va, reference)?;
        }
        Ok(())
    }

    fn write_page(&mut self, asid: Asid, va: VirtAddr, reference: u64) -> Result<(), SimError> {
        let Some(pager) = self.pager.as_mut() else {
            return Ok(());
        };
        if pager.known_dirty(asid, va.0) {
            return Ok(());
        }
        // Not resident: the daemon took it back within this very reference (a page
        // that it spans); nothing to mark.
        let Some((key, pte)) = pager.containing(asid, va.0) else {
            return Ok(());
        };
        if pte.dirty {
            pager.set_dirty(key);
            return Ok(());
        }
        let demote = pte.size > pager.base && pager.demote_on_write && pte.made != reference;
        if !demote {
            // A page of a demoted block may complete it.
            pager.set_dirty(key);
            return self.repromote(asid, va, reference);
        }
        self.demote(key, Demotion::Write, false, reference)?;
        let pager = self.pager.as_mut().expect("a pager");
        let base = pager.base;
        let page = (asid, va.vpn(base).base(base).0);
        pager.set_dirty(page);
        self.repromote(asid, va, reference)
    }

    /// If `va` lies in a demoted block: promote the largest candidate around it that
    /// is whole again (resident, referenced, one dirty state), smallest sizes first.
    fn repromote(&mut self, asid: Asid, va: VirtAddr, reference: u64) -> Result<(), SimError> {
        let Some(pager) = self.pager.as_ref() else {
            return Ok(());
        };
        let Some((_, block)) = pager.demoted_block(asid, va.0) else {
            return Ok(());
        };
        let mut sizes: Vec<PageSize> = pager.sizes.iter().copied().filter(|&s| s < block).collect();
        sizes.push(block);
        let mut best = None;
        for s in sizes {
            let c = Candidate::containing(asid, va, s);
            if pager
                .containing(asid, va.0)
                .is_some_and(|(_, p)| p.size >= s)
            {
                continue;
            }
            if !pager.complete(asid, c.va.0, s) {
                break;
            }
            best = Some(c);
        }
        let Some(c) = best else {
            return Ok(());
        };
        if self.promote_as(c, reference, true)? {
            self.counts.repromotions += 1;
            if let Some(p) = self.walker.promoter.policy.as_mut() {
                p.promoted(c);
            }
        }
        Ok(())
    }

    /// After promotions outside a miss (a background pass): the daemon, if needed.
    pub(super) fn paging_after_promotions(&mut self, reference: u64) -> Result<(), SimError> {
        self.run_daemon(None, reference)
    }

    /// The page daemon: if the resident set is past the limit, reclaim until it is at
    /// the target (see `crate::pressure`), never taking `protect`.
    fn run_daemon(&mut self, protect: Option<Key>, reference: u64) -> Result<(), SimError> {
        if !self.pager.as_ref().is_some_and(|p| p.over_limit()) {
            return Ok(());
        }
        // Mappings some TLB level holds count as referenced.
        let mut held = Vec::new();
        self.tlb
            .for_each_entry(&mut |_, k, _| held.push((k.asid, k.vpn.base(k.size).0)));
        let pager = self.pager.as_mut().expect("a pager");
        pager.stats.wakes += 1;
        for (asid, va) in held {
            if let Some((key, _)) = pager.containing(asid, va) {
                pager.set_referenced(key, true);
            }
        }
        let weighs = pager.daemon.weighs() && !pager.sizes.is_empty();
        let window = pager.window;
        let mut victims: Vec<Victim> = Vec::new();
        // Pages the hand may pass before it gives up (every bit is cleared within one
        // turn, so two turns and the pages demotions add are enough).
        let mut stall = 0usize;
        loop {
            let pager = self.pager.as_mut().expect("a pager");
            let need = pager.resident().saturating_sub(pager.target) as usize;
            if need == 0 {
                break;
            }
            let exhausted = stall > 2 * (pager.queued() + victims.len()) + 2;
            let gathered = exhausted || victims.len() >= window.max(need);
            let Some(key) = (if gathered { None } else { pager.next() }) else {
                // A full window, or the hand found no more: reclaim the best of them.
                if victims.is_empty() {
                    break;
                }
                self.reclaim_chosen(&mut victims, need, reference)?;
                stall = 0;
                continue;
            };
            stall += 1;
            if Some(key) == protect {
                pager.requeue(key, false);
                continue;
            }
            let pte = pager.get(key).expect("queued mappings are resident");
            if pte.referenced {
                pager.set_referenced(key, false);
                if pte.size > pager.base && pager.speculative {
                    self.demote(key, Demotion::Pressure, false, reference)?;
                } else {
                    pager.requeue(key, false);
                }
                continue;
            }
            if pte.size > pager.base {
                self.demote(key, Demotion::Pressure, true, reference)?;
                continue;
            }
            if weighs {
                victims.push(self.victim(key, pte.dirty));
            } else {
                self.reclaim(key, reference)?;
                stall = 0;
            }
        }
        // Inactive pages weighed and not taken are the hand's next.
        let pager = self.pager.as_mut().expect("a pager");
        for v in victims.iter().rev() {
            pager.requeue(v.key, true);
        }
        pager.stats.max_after_daemon = pager.stats.max_after_daemon.max(pager.resident());
        Ok(())
    }

    /// An inactive base page as a weighing daemon sees it.
    fn victim(&self, key: Key, dirty: bool) -> Victim {
        let va = VirtAddr(key.1);
        let t = self.walker.page_table.as_ref().walk(key.0, va).translation;
        let frame = t.map_or(Pfn(0), |t| self.walker.promoter.mechanism.resolve(t.pfn));
        let frees = !self
            .walker
            .promoter
            .policy
            .as_ref()
            .is_some_and(|p| p.holds_frame(key.0, va));
        Victim {
            key,
            frame,
            frees,
            dirty,
        }
    }

    /// Reclaim the victims the daemon's choice prefers (`need` pages, or all), leaving
    /// the others in `victims`.
    fn reclaim_chosen(
        &mut self,
        victims: &mut Vec<Victim>,
        need: usize,
        reference: u64,
    ) -> Result<(), SimError> {
        let pager = self.pager.as_ref().expect("a pager");
        let base = pager.base;
        let order = pager.sizes[0].base_frames().trailing_zeros();
        let frames = &self.walker.frames;
        let free_in = |pfn: Pfn, order: u32| frames.free_frames_in(pfn, order).unwrap_or(0);
        let chosen = pager.daemon.choose(
            victims,
            need,
            &Frames {
                order,
                per_page: base.base_frames(),
                free_in: &free_in,
            },
        );
        let mut taken = vec![false; victims.len()];
        for &i in &chosen {
            taken[i] = true;
        }
        let keys: Vec<Key> = chosen.iter().map(|&i| victims[i].key).collect();
        let mut i = 0;
        victims.retain(|_| {
            i += 1;
            !taken[i - 1]
        });
        for key in keys {
            self.reclaim(key, reference)?;
        }
        Ok(())
    }

    /// What `va` is mapped to now, for an operation (`what`) that needs it mapped.
    fn mapping(
        &self,
        asid: Asid,
        va: VirtAddr,
        what: &str,
        reference: u64,
    ) -> Result<Translation, SimError> {
        self.walker
            .page_table
            .as_ref()
            .walk(asid, va)
            .translation
            .ok_or_else(|| SimError {
                reference,
                message: format!("{what} of {:#x}: not mapped", va.0),
            })
    }

    /// Reclaim the base page `key`: unmap it, drop its translations everywhere, put
    /// its data in the swap store and free its frame (unless the policy keeps it).
    fn reclaim(&mut self, key: Key, reference: u64) -> Result<(), SimError> {
        let (asid, va) = (key.0, VirtAddr(key.1));
        let error = |message: String| SimError { reference, message };
        let t = self.mapping(asid, va, "reclaim", reference)?;
        let w = &mut self.walker;
        let base = w.base_page;
        let real = w.promoter.mechanism.resolve(t.pfn);
        w.page_table
            .as_dyn()
            .unmap(asid, va, base, w.frames.as_mut())
            .map_err(|e| error(format!("reclaim of {:#x}: unmap: {e}", va.0)))?;
        let per = base.base_frames();
        let contents = w.contents.as_mut().expect("kept with a pager");
        let swap = w.swap.as_mut().expect("kept with a limit");
        for j in 0..per {
            if let Some(data) = contents.of(Pfn(real.0 + j)) {
                swap.put(asid, (va.0 >> BASE_SHIFT) + j, data);
            }
        }
        contents.clear(real, per);
        let kept = w
            .promoter
            .policy
            .as_mut()
            .is_some_and(|p| p.unmapped(asid, va));
        self.drop_translations(asid, va, base.bytes());
        let pager = self.pager.as_mut().expect("a pager");
        let pte = pager.remove(key);
        self.counts.pages_reclaimed += 1;
        self.counts.pages_written_back += pte.is_some_and(|p| p.dirty) as u64;
        if !kept {
            self.walker.frames.free(real, base);
            // The blocks of superpage sizes this free completed.
            let pager = self.pager.as_mut().expect("a pager");
            for (i, s) in pager.sizes.iter().enumerate() {
                let order = s.base_frames().trailing_zeros();
                if self.walker.frames.free_frames_in(real, order) != Some(1 << order) {
                    break;
                }
                pager.stats.blocks_restored[i] += 1;
                if i == 0 {
                    self.counts.contiguity_restored += 1;
                }
            }
        }
        Ok(())
    }

    /// Make the superpage `key` base pages on the same frames (real frames under
    /// remapping), with its bits; drop every translation of it. `front`: the base
    /// pages are the daemon's next (it takes victims from them).
    pub(super) fn demote(
        &mut self,
        key: Key,
        cause: Demotion,
        front: bool,
        reference: u64,
    ) -> Result<(), SimError> {
        let (asid, start) = (key.0, VirtAddr(key.1));
        let error = |message: String| SimError { reference, message };
        let t = self.mapping(asid, start, "demotion", reference)?;
        let w = &mut self.walker;
        let base = w.base_page;
        let per = base.base_frames();
        let pages = t.size.bytes() >> base.shift();
        let real: Vec<Pfn> = (0..pages)
            .map(|i| w.promoter.mechanism.resolve(Pfn(t.pfn.0 + i * per)))
            .collect();
        let table = w.page_table.as_dyn();
        let mut refs = table
            .unmap(asid, start, t.size, w.frames.as_mut())
            .map_err(|e| error(format!("demotion of {:#x}: unmap: {e}", start.0)))?
            .refs();
        for (i, &pfn) in real.iter().enumerate() {
            let va = VirtAddr(start.0 + i as u64 * base.bytes());
            refs += table
                .map(asid, va, base, pfn, t.perms, w.frames.as_mut())
                .map_err(|e| error(format!("demotion of {:#x}: map: {e}", va.0)))?
                .refs();
        }
        if real[0] != t.pfn {
            // A shadow block: its lines would alias its next use; the controller's
            // entries and the block go.
            if let Some(cache) = w.cache.as_mut() {
                cache.flush_range(t.pfn.addr(), t.size.bytes());
            }
            let contents = w.contents.as_mut().expect("kept with a pager");
            w.promoter
                .mechanism
                .release(t.pfn, t.size, w.frames.as_mut(), contents);
        }
        if let Some(p) = w.promoter.policy.as_mut() {
            p.demoted(Candidate {
                asid,
                va: start,
                size: t.size,
            });
        }
        self.drop_translations(asid, start, t.size.bytes());
        let n = &mut self.counts;
        n.demotion_table_refs += refs;
        match cause {
            Demotion::Pressure => n.demotions_pressure += 1,
            Demotion::Write => n.demotions_write += 1,
        }
        self.pager.as_mut().expect("a pager").demoted(key, front);
        Ok(())
    }

    /// No TLB level, walk cache or followed TLB keeps a translation of the range.
    pub(super) fn drop_translations(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        self.forget_last_page();
        self.tlb.invalidate_range(asid, start, len);
        if let Some(p) = self.walker.promoter.policy.as_mut() {
            p.tlb_invalidated(Some(asid), start.0, len);
        }
        self.walker.walk_caches.invalidate_range(asid, start, len);
    }

    /// The data of `va`'s page in the swap store, if it was reclaimed. For checks.
    pub fn swapped_data(&self, asid: Asid, va: VirtAddr) -> Option<(Asid, u64)> {
        self.walker.swap.as_ref()?.get(asid, va.0 >> BASE_SHIFT)
    }

    /// The pager's state against the page table: every resident mapping is mapped at
    /// its size, the resident count is theirs, no page in the swap store is mapped, the
    /// resident set is within the limit, and each of `touched` that is mapped is in the
    /// resident set. For tests; a description of the first disagreement.
    pub fn check_paging(
        &self,
        touched: &mut dyn Iterator<Item = (Asid, VirtAddr)>,
    ) -> Result<(), String> {
        let Some(pager) = &self.pager else {
            return Ok(());
        };
        let table = self.walker.page_table.as_ref();
        let mut pages = 0;
        for ((asid, start), p) in pager.mappings() {
            let t = table.walk(asid, VirtAddr(start)).translation;
            if t.map(|t| t.size) != Some(p.size) {
                return Err(format!(
                    "the pager has a {} mapping at {start:#x}, the page table {t:?}",
                    p.size
                ));
            }
            pages += p.size.bytes() >> pager.base.shift();
        }
        if pages != pager.resident() {
            return Err(format!(
                "the pager counts {} pages resident, its mappings hold {pages}",
                pager.resident()
            ));
        }
        if pager.limit > 0 && pager.resident() > pager.limit {
            return Err(format!(
                "{} pages resident, above the limit of {}",
                pager.resident(),
                pager.limit
            ));
        }
        if let Some(swap) = &self.walker.swap {
            for (asid, vfn) in swap.iter() {
                if table
                    .walk(asid, VirtAddr(vfn << BASE_SHIFT))
                    .translation
                    .is_some()
                {
                    return Err(format!(
                        "page {:#x} is both mapped and in the swap store",
                        vfn << BASE_SHIFT
                    ));
                }
            }
        }
        for (asid, va) in touched {
            if table.walk(asid, va).translation.is_some() && pager.containing(asid, va.0).is_none()
            {
                return Err(format!("{:#x} is mapped but not in the resident set", va.0));
            }
        }
        Ok(())
    }
}
