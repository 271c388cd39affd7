//! `online` (papers/online-superpage-promotion-revisited.md §3.1, Romer et al.'s full
//! policy): charges a miss as `approx-online` does, and "also blames the eviction of
//! `p` on the fact that unrelated pages were not coalesced into superpages". The paper
//! gives that rule in one sentence; pagelab reads it so: a miss to a page referenced
//! before (its translation was in the TLB and was pushed out) is also charged to
//! every candidate that does not contain `p` and holds two or more TLB entries, each
//! smaller than itself, since promoting it would have freed an entry that could have
//! kept `p`. The largest candidate charged that reaches its threshold is promoted.

use super::{check_miss_cycles, ApproxOnline, BuildPolicy, Candidate, Context, Ladder, Miss};
use super::{OnlineConfig, PromotionPolicy};
use crate::addr::{PageSize, VirtAddr};

/// approx-online, and the charges for evictions.
pub struct Online {
    pub inner: ApproxOnline,
    /// Scratch: (ladder index, candidate index) of every entry, per size.
    holders: Vec<(usize, u64)>,
}

impl Online {
    pub fn new(ladder: Ladder, miss_cycles: f64) -> Online {
        Online {
            inner: ApproxOnline::new(ladder, miss_cycles),
            holders: Vec::new(),
        }
    }
}

impl PromotionPolicy for Online {
    fn reads_tlb(&self) -> bool {
        true
    }

    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        let mut best = self.inner.on_miss(m);
        if m.first_touch {
            return best;
        }
        let counters = &mut self.inner.counters;
        let sizes = &counters.ladder.sizes;
        self.holders.clear();
        for e in m.tlb {
            for (i, s) in sizes.iter().enumerate() {
                if e.size < *s && e.va.0 >> s.shift() != m.va.0 >> s.shift() {
                    self.holders.push((i, e.va.0 >> s.shift()));
                }
            }
        }
        self.holders.sort_unstable();
        let mut k = 0;
        while k < self.holders.len() {
            let run = self.holders[k..]
                .iter()
                .take_while(|&&h| h == self.holders[k])
                .count();
            if run >= 2 {
                let (i, index) = self.holders[k];
                let size = counters.ladder.sizes[i];
                let c = Candidate {
                    asid: m.asid,
                    va: VirtAddr(index << size.shift()),
                    size,
                };
                if counters.charge_one(&c, i) && best.map_or(true, |b| size > b.size) {
                    best = Some(c);
                }
            }
            k += run;
        }
        best
    }

    fn promoted(&mut self, c: Candidate) {
        self.inner.promoted(c);
    }

    fn promotion_failed(&mut self, c: Candidate) {
        self.inner.promotion_failed(c);
    }

    fn miss_cycles(&self) -> f64 {
        self.inner.miss_cycles()
    }
}

impl BuildPolicy for Online {
    type Options = OnlineConfig;
    fn build(o: &OnlineConfig, cx: &Context<'_>) -> Result<Online, String> {
        check_miss_cycles(o.miss_cycles)?;
        Ok(Online::new(
            Ladder::new(cx.sizes, o.threshold, &o.thresholds)?,
            o.miss_cycles,
        ))
    }
    fn configured_sizes(o: &OnlineConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Entry;
    use super::*;
    use crate::addr::{Asid, PageSize};

    #[test]
    fn a_re_miss_also_charges_unrelated_candidates_holding_two_entries() {
        let sizes: Vec<_> = (13..=14)
            .map(|s| PageSize::from_shift(s).unwrap())
            .collect();
        let mut p = Online::new(
            Ladder {
                sizes,
                thresholds: vec![100, 100],
            },
            0.0,
        );
        let e = |vpn: u64| Entry {
            va: VirtAddr(vpn << 12),
            size: PageSize::K4,
        };
        // Pages 0x40 and 0x41 share an 8K candidate; 0x42 is alone in its 8K one but
        // shares the 16K candidate 0x40 with them.
        let tlb = [e(0x40), e(0x41), e(0x42)];
        let m = |first_touch| Miss {
            asid: Asid(0),
            va: VirtAddr(0x900 << 12),
            size: PageSize::K4,
            first_touch,
            tlb: &tlb,
        };
        let cand = |vpn: u64, shift: u32| Candidate {
            asid: Asid(0),
            va: VirtAddr(vpn << 12),
            size: PageSize::from_shift(shift).unwrap(),
        };
        p.on_miss(&m(true));
        assert_eq!(
            p.inner.counters.prefetch(&cand(0x40, 13)),
            0,
            "a first touch blames no one"
        );
        p.on_miss(&m(false));
        assert_eq!(p.inner.counters.prefetch(&cand(0x40, 13)), 1);
        assert_eq!(p.inner.counters.prefetch(&cand(0x40, 14)), 1);
        assert_eq!(
            p.inner.counters.prefetch(&cand(0x42, 13)),
            0,
            "one entry only"
        );
    }
}
