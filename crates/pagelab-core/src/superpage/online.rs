//! `online` (Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000,
//! §3.1; Romer et al., ISCA 1995): the competitive rent-or-buy policy that
//! approx-online simplifies. A candidate superpage `P` is charged every TLB miss its
//! promotion would have saved, and is promoted once its charges reach its threshold
//! (the cost of promoting it in misses: "promoted as soon as it has suffered enough TLB
//! misses to pay for the cost of the promotion"). A miss to page `p` could have been
//! saved in two ways:
//!
//! - *prefetch*: `P` contains `p` and an entry the TLB holds, so one entry would have
//!   mapped both (approx-online's charge, kept as it is);
//! - *capacity*: `P` does not contain `p`, but its entries referenced since `p` was
//!   are so many that, merged into one, they would have left `p` in the TLB ("blames
//!   the eviction of `p` on the fact that unrelated pages were not coalesced").
//!
//! Capacity is counted in Romer's model of the TLB: fully associative, LRU, of `N`
//! entries (the walking level's). If `d` distinct entries were referenced since `p`
//! was, `p` is still held when `d < N`. Promoting `P`, which holds `m` of them,
//! leaves `d - m + 1`, so `P` alone would have saved the miss when
//! `m >= d - N + 2`; and since a promotion frees entries only by merging two or more,
//! `m >= 2` (the real TLB may miss with `d < N`, its replacement not being LRU). The
//! recency of entries comes from every TLB hit and miss ([`RecencyStack`]), kept
//! `N + S` deep, `S` the largest candidate's base pages (at most [`MAX_EXTRA`]):
//! deeper, no candidate could hold enough of the entries.
//!
//! Of the candidates charged at a miss, the largest at its threshold is promoted.

use super::approx_online::ApproxOnline;
use super::lru_stack::{Key, RecencyStack};
use super::{BuildPolicy, Candidate, Context, Entry, Miss};
use super::{OnlineConfig, PromotionPolicy};
use crate::addr::{Asid, PageSize, VirtAddr};
use crate::pagetable::Translation;

/// How many entries beyond the TLB's the recency stack keeps at most: capacity
/// charges to candidates of more base pages than this are not counted (1G pages on a
/// 4K base).
pub const MAX_EXTRA: usize = 4096;

/// approx-online's prefetch charges, and the capacity charges.
pub struct Online {
    pub inner: ApproxOnline,
    /// Romer's TLB size.
    entries: usize,
    base: PageSize,
    stack: RecencyStack,
    /// Scratch: the entries above the one that missed; candidate numbers per size.
    above: Vec<Key>,
    inside: Vec<u64>,
    capacity_charges: u64,
}

impl Online {
    /// Over approx-online `inner`, a TLB of `entries`, base pages of `base`.
    pub fn new(inner: ApproxOnline, entries: usize, base: PageSize) -> Online {
        let largest = inner
            .counters
            .ladder
            .sizes
            .last()
            .map_or(1, |s| (s.bytes() / base.bytes()) as usize);
        Online {
            inner,
            entries: entries.max(1),
            base,
            stack: RecencyStack::new(entries.max(1) + largest.min(MAX_EXTRA)),
            above: Vec::new(),
            inside: Vec::new(),
            capacity_charges: 0,
        }
    }

    /// Charge the capacity misses of `m` (which is no first touch): the largest
    /// candidate charged at its threshold, if any.
    fn charge_capacity(&mut self, m: &Miss<'_>, key: &Key) -> Option<Candidate> {
        self.above.clear();
        if !self.stack.above(key, &mut self.above) {
            return None;
        }
        let d = self.above.len();
        let need = (d + 2).saturating_sub(self.entries).max(2) as u64;
        let mut best = None;
        let counters = &mut self.inner.counters;
        for i in 0..counters.ladder.sizes.len() {
            let size = counters.ladder.sizes[i];
            let shift = size.shift();
            if size.bytes() / self.base.bytes() < need {
                continue;
            }
            let mine = m.va.0 >> shift;
            self.inside.clear();
            self.inside.extend(
                self.above
                    .iter()
                    .filter(|e| e.asid == m.asid && u32::from(e.shift) < shift)
                    .map(|e| e.va() >> shift)
                    .filter(|&c| c != mine),
            );
            self.inside.sort_unstable();
            let mut k = 0;
            while k < self.inside.len() {
                let c = self.inside[k];
                let run = self.inside[k..].iter().take_while(|&&x| x == c).count();
                k += run;
                if (run as u64) < need {
                    continue;
                }
                let p = Candidate {
                    asid: m.asid,
                    va: VirtAddr(c << shift),
                    size,
                };
                self.capacity_charges += 1;
                if counters.charge_one(&p, i) && best.map_or(true, |b: Candidate| size > b.size) {
                    best = Some(p);
                }
            }
        }
        best
    }

    /// Entries inside `c` (smaller than it) map nothing any more, or map `c` now.
    fn forget_inside(&mut self, c: Candidate) {
        let shift = c.size.shift();
        self.stack.forget(|e| {
            e.asid == c.asid && u32::from(e.shift) <= shift && e.va() >> shift == c.va.0 >> shift
        });
    }
}

impl PromotionPolicy for Online {
    fn follows_hits(&self) -> bool {
        true
    }

    fn on_hit(&mut self, asid: Asid, va: VirtAddr, size: PageSize) {
        self.stack.touch(Key::of(asid, va, size));
    }

    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        let mut best = self.inner.on_miss(m);
        let key = Key::of(m.asid, m.va, m.size);
        if !m.first_touch {
            if let Some(c) = self.charge_capacity(m, &key) {
                if best.map_or(true, |b| c.size > b.size) {
                    best = Some(c);
                }
            }
        }
        self.stack.touch(key);
        best
    }

    fn reads_tlb(&self) -> bool {
        self.inner.reads_tlb()
    }
    fn tracks_tlb(&self) -> bool {
        self.inner.tracks_tlb()
    }
    fn tlb_filled(&mut self, asid: Asid, e: Entry) {
        self.inner.tlb_filled(asid, e);
    }
    fn tlb_evicted(&mut self, asid: Asid, e: Entry) {
        self.inner.tlb_evicted(asid, e);
    }
    fn tlb_invalidated(&mut self, asid: Option<Asid>, start: u64, len: u64) {
        self.inner.tlb_invalidated(asid, start, len);
    }

    fn promoted(&mut self, c: Candidate) {
        self.inner.promoted(c);
        self.forget_inside(c);
    }

    fn promotion_failed(&mut self, c: Candidate) {
        self.inner.promotion_failed(c);
    }

    fn demoted(&mut self, c: Candidate) {
        self.forget_inside(c);
    }

    fn miss_cycles(&self) -> f64 {
        self.inner.miss_cycles()
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![("capacity_charges", self.capacity_charges)]
    }

    fn check(
        &self,
        lookup: &dyn Fn(Asid, VirtAddr) -> Option<Translation>,
        tlb: &[(Asid, Entry)],
    ) -> Result<(), String> {
        self.inner.check(lookup, tlb)
    }
}

impl BuildPolicy for Online {
    type Options = OnlineConfig;
    fn build(o: &OnlineConfig, cx: &Context<'_>) -> Result<Online, String> {
        Ok(Online::new(
            ApproxOnline::build(o, cx)?,
            cx.walking_entries,
            cx.base,
        ))
    }
    fn configured_sizes(o: &OnlineConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
}

#[cfg(test)]
mod tests;
