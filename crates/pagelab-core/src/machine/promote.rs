//! The machine's side of superpages: it tells the promotion policy of every TLB miss
//! that walked and carries out the promotions it asks for. A promotion walks every
//! base page of the candidate to find what maps it now (base pages, smaller
//! superpages, nothing), has the mechanism gather the frames (unless they form the
//! aligned block already, as in a reservation: then nothing moves), replaces the old
//! mappings with one of the candidate's size, and drops every TLB and walk-cache entry
//! of the range, at every level, so no stale translation survives.

use super::{Machine, SimError};
use crate::addr::{Asid, Pfn, VirtAddr, BASE_SHIFT};
use crate::pagetable::Perms;
use crate::superpage::mechanism::{Gathered, Traffic};
use crate::superpage::{Candidate, Entry, Miss};
use crate::tlb::hierarchy::DATA;
use crate::tlb::TlbKey;

impl Machine {
    /// Before a first-level miss is resolved: what the walking level holds, if the
    /// policy reads it.
    pub(super) fn before_policy_miss(&mut self, side: usize, asid: Asid) {
        self.walker.promoter.entries.clear();
        if !self
            .walker
            .promoter
            .policy
            .as_ref()
            .is_some_and(|p| p.reads_tlb())
        {
            return;
        }
        let entries = &mut self.walker.promoter.entries;
        self.tlb.for_each_last_entry(side, &mut |k: TlbKey, _| {
            if k.asid == asid {
                entries.push(Entry {
                    va: k.vpn.base(k.size),
                    size: k.size,
                });
            }
        });
    }

    /// After a miss walked: tell the policy, and promote what it asks for.
    pub(super) fn after_policy_miss(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        first_touch: bool,
        reference: u64,
    ) -> Result<(), SimError> {
        let Some(t) = self.walker.walk.translation else {
            return Ok(());
        };
        let entry = self.walker.walked_entry().unwrap_or(t);
        self.counts.policy_misses += 1;
        let miss = Miss {
            asid,
            va,
            size: t.size,
            first_touch,
            tlb: &self.walker.promoter.entries,
        };
        let policy = self
            .walker
            .promoter
            .policy
            .as_mut()
            .expect("called with a policy");
        let promote = policy.on_miss(&miss);
        // A policy that follows the walking level learns what the miss changed there
        // (after charging it: it charges what the TLB held before the miss): the
        // entry the walk made, which under virtualization may be smaller than the
        // guest's page.
        if policy.tracks_tlb() {
            let (filled, victim) = self.tlb.walking_level_fill(side, va, entry);
            if let Some(k) = victim {
                let e = Entry {
                    va: k.vpn.base(k.size),
                    size: k.size,
                };
                policy.tlb_evicted(k.asid, e);
            }
            if let Some((va, size)) = filled {
                policy.tlb_filled(asid, Entry { va, size });
            }
        }
        if let Some(c) = promote {
            self.promote_for_policy(c, reference)?;
            while let Some(c) = self
                .walker
                .promoter
                .policy
                .as_mut()
                .and_then(|p| p.then_promote())
            {
                self.promote_for_policy(c, reference)?;
            }
        }
        Ok(())
    }

    /// After a batch: what the policy's background pass asks to promote.
    pub(super) fn background_promotions(&mut self) -> Result<(), SimError> {
        let mut asked = Vec::new();
        let references = self.counts.references;
        if let Some(p) = self.walker.promoter.policy.as_mut() {
            p.background(references, &mut asked);
        }
        let any = !asked.is_empty();
        for c in asked {
            self.promote_for_policy(c, references)?;
        }
        if any && self.pager.is_some() {
            self.paging_after_promotions(references)?;
        }
        Ok(())
    }

    /// Promote `c` and tell the policy how it went.
    fn promote_for_policy(&mut self, c: Candidate, reference: u64) -> Result<(), SimError> {
        let failures = self.counts.promotion_failures;
        let refused = self.refused_swapped();
        let done = self.promote(c, reference)?;
        let refused = self.refused_swapped() != refused;
        let policy = self.walker.promoter.policy.as_mut().expect("a policy");
        if done {
            policy.promoted(c);
        } else if self.counts.promotion_failures != failures || refused {
            policy.promotion_failed(c);
        }
        Ok(())
    }

    fn refused_swapped(&self) -> u64 {
        self.pager
            .as_ref()
            .map_or(0, |p| p.stats.promotions_refused_swapped)
    }

    /// Make `c` one superpage. `Ok(false)`: it is one already (or inside one), or
    /// memory has no block for it (counted as a failure), or a page of it is in the
    /// swap store (a promotion would clear it: refused, counted by the pager).
    pub fn promote(&mut self, c: Candidate, reference: u64) -> Result<bool, SimError> {
        self.promote_as(c, reference, false)
    }

    /// [`Machine::promote`]; with `reuse_block`, frames that form the aligned block
    /// already are promoted in place whatever the policy (a demoted block promoted
    /// back: its frames never moved).
    pub(super) fn promote_as(
        &mut self,
        c: Candidate,
        reference: u64,
        reuse_block: bool,
    ) -> Result<bool, SimError> {
        let base = self.walker.base_page;
        let error = |message: String| SimError { reference, message };
        // What maps each base page of the candidate now.
        let mut pages: Vec<Option<Pfn>> =
            Vec::with_capacity((c.size.bytes() >> base.shift()) as usize);
        let mut old = Vec::new();
        let mut perms = Perms::RW;
        // Whether the mapped frames already form the aligned block: then the
        // promotion is a page-table update in place (reservations make it so).
        let mut first_frame = None;
        let mut in_place = true;
        let end = c.va.0 + c.size.bytes();
        let mut at = c.va.0;
        while at < end {
            let walk = self.walker.page_table.as_ref().walk(c.asid, VirtAddr(at));
            match walk.translation {
                None => {
                    if let Some(swap) = &self.walker.swap {
                        if swap.holds_any(c.asid, VirtAddr(at), base.bytes()) {
                            let pager = self.pager.as_mut().expect("a swap has a pager");
                            pager.stats.promotions_refused_swapped += 1;
                            return Ok(false);
                        }
                    }
                    pages.push(None);
                    in_place = false;
                    at += base.bytes();
                }
                Some(t) if t.size >= c.size => return Ok(false),
                Some(t) => {
                    let start = VirtAddr(at).vpn(t.size).base(t.size);
                    old.push((start, t));
                    perms = t.perms;
                    let offset = (start.0 - c.va.0) >> crate::addr::BASE_SHIFT;
                    let first = *first_frame.get_or_insert(t.pfn.0.wrapping_sub(offset));
                    in_place &= t.pfn.0 == first.wrapping_add(offset);
                    for i in 0..t.size.bytes() >> base.shift() {
                        let pfn = Pfn(t.pfn.0 + i * base.base_frames());
                        pages.push(Some(self.walker.promoter.mechanism.resolve(pfn)));
                    }
                    at = start.0 + t.size.bytes();
                }
            }
        }
        let w = &mut self.walker;
        let contents = w.contents.as_mut().expect("kept while a policy runs");
        let in_place =
            in_place && (reuse_block || w.promoter.policy.as_ref().is_some_and(|p| p.in_place()));
        let block = first_frame.filter(|f| in_place && f % c.size.base_frames() == 0);
        let g = match block {
            Some(first) => Gathered {
                pfn: Pfn(first),
                ..Gathered::default()
            },
            None => {
                let (mechanism, frames) = (&mut w.promoter.mechanism, w.frames.as_mut());
                let mut gather = |traffic: Option<&mut dyn Traffic>| {
                    mechanism.gather(&c, base, &pages, frames, contents, traffic)
                };
                // Under virtualization the copy reaches the host's frames (mapped as it
                // writes them), and the caches there.
                let gathered = match (w.cache.as_mut(), w.nested.as_deref_mut()) {
                    (cache, Some(nested)) => {
                        let mut host = crate::virt::HostTraffic::new(cache, nested);
                        let g = gather(Some(&mut host));
                        if let Some(e) = host.error {
                            return Err(error(format!("promotion of {:#x}: {e}", c.va.0)));
                        }
                        g
                    }
                    (cache, None) => gather(cache.map(|c| c as &mut dyn Traffic)),
                };
                match gathered {
                    Some(g) => g,
                    None => {
                        self.counts.promotion_failures += 1;
                        return Ok(false);
                    }
                }
            }
        };
        let table = w.page_table.as_dyn();
        let mut refs = 0;
        for &(start, t) in &old {
            let cost = table
                .unmap(c.asid, start, t.size, w.frames.as_mut())
                .map_err(|e| error(format!("promotion of {:#x}: unmap: {e}", start.0)))?;
            refs += cost.refs();
            if block.is_none() {
                // Lines cached under an old shadow block would alias its next use.
                if let Some(cache) = w.cache.as_mut() {
                    if w.promoter.mechanism.resolve(t.pfn) != t.pfn {
                        cache.flush_range(t.pfn.addr(), t.size.bytes());
                    }
                }
                w.promoter
                    .mechanism
                    .release(t.pfn, t.size, w.frames.as_mut(), contents);
            }
        }
        let cost = table
            .map(c.asid, c.va, c.size, g.pfn, perms, w.frames.as_mut())
            .map_err(|e| error(format!("promotion of {:#x} to {}: {e}", c.va.0, c.size)))?;
        refs += cost.refs();
        // No level may keep a translation of the old pages.
        self.forget_last_page();
        self.tlb.invalidate_range(c.asid, c.va, c.size.bytes());
        if let Some(p) = self.walker.promoter.policy.as_mut() {
            p.tlb_invalidated(Some(c.asid), c.va.0, c.size.bytes());
        }
        self.walker
            .walk_caches
            .invalidate_range(c.asid, c.va, c.size.bytes());
        if let Some(p) = self.pager.as_mut() {
            p.promoted(c.asid, c.va, c.size, reference);
        }
        let n = &mut self.counts;
        n.promotions += 1;
        n.promotions_in_place += block.is_some() as u64;
        n.promotion_table_refs += refs;
        n.pages_copied += g.copied;
        n.pages_remapped += g.remapped;
        n.pages_zeroed += g.zeroed;
        self.walker.promoter.gathered.copied += g.copied;
        self.walker.promoter.gathered.remapped += g.remapped;
        self.walker.promoter.gathered.zeroed += g.zeroed;
        Ok(true)
    }

    /// Whose data `va` reaches now: the address space and virtual 4 KiB frame whose
    /// bytes sit in the real frame it translates to (through the memory controller's
    /// table under remapping). `None` if `va` is not mapped, or while no policy runs
    /// (frames' contents are kept only then). Looks the page table up without
    /// counting anything: for checks.
    pub fn data_at(&self, asid: Asid, va: VirtAddr) -> Option<(Asid, u64)> {
        let t = self.walker.page_table.as_ref().walk(asid, va).translation?;
        let frame = Pfn(t.pfn.0 + (va.offset_in(t.size) >> BASE_SHIFT));
        let real = self.walker.promoter.mechanism.resolve(frame);
        self.walker.contents.as_ref()?.of(real)
    }
}

impl Machine {
    /// The promotion policy's check of its bookkeeping against the page table (see
    /// `PromotionPolicy::check`). For tests.
    pub fn check_policy(&self) -> Result<(), String> {
        let Some(p) = &self.walker.promoter.policy else {
            return Ok(());
        };
        let table = self.walker.page_table.as_ref();
        let mut tlb = Vec::new();
        self.tlb.for_each_last_entry(DATA, &mut |k, _| {
            tlb.push((
                k.asid,
                Entry {
                    va: k.vpn.base(k.size),
                    size: k.size,
                },
            ))
        });
        p.check(&|asid, va| table.walk(asid, va).translation, &tlb)
    }

    /// Every TLB entry whose frames do not hold the data of the pages it translates
    /// (a stale translation), described; empty when all are right. Only while a
    /// policy runs (frames' contents are kept only then). Under virtualization an
    /// entry holds host frames: each must be the one the guest and host tables
    /// compose to, and the guest frame it stands for must hold the page's data. For
    /// checks.
    pub fn stale_tlb_entries(&self) -> Vec<String> {
        let Some(contents) = self.walker.contents.as_ref() else {
            return Vec::new();
        };
        let mut stale = Vec::new();
        // The frame whose contents a TLB entry's `frame` for `va` stands for (the
        // guest's under virtualization, when the tables compose to `frame`).
        let held = |asid: Asid, va: VirtAddr, frame: Pfn| -> Option<Pfn> {
            if self.walker.nested.is_none() {
                return Some(self.walker.promoter.mechanism.resolve(frame));
            }
            let composed = self.walker.entry_of(asid, va)?.phys(va);
            if composed.0 >> BASE_SHIFT != frame.0 {
                return None;
            }
            let guest = self.guest_translation(asid, va)?.phys(va);
            Some(Pfn(guest.0 >> BASE_SHIFT))
        };
        self.tlb.for_each_entry(&mut |level, k, pfn| {
            let va = k.vpn.base(k.size);
            for i in 0..k.size.base_frames() {
                let at = VirtAddr(va.0 + (i << BASE_SHIFT));
                let Some(real) = held(k.asid, at, Pfn(pfn.0 + i)) else {
                    stale.push(format!(
                        "{level}: {} page {:#x} of asid {} holds host frame {:#x}, not what the tables compose to",
                        k.size, va.0, k.asid.0, pfn.0 + i
                    ));
                    break;
                };
                let want = (k.asid, (va.0 >> BASE_SHIFT) + i);
                if contents.of(real) != Some(want) {
                    stale.push(format!(
                        "{level}: {} page {:#x} of asid {} reaches frame {:#x} holding {:?}",
                        k.size,
                        va.0,
                        k.asid.0,
                        real.0,
                        contents.of(real)
                    ));
                    break;
                }
            }
        });
        stale
    }
}
