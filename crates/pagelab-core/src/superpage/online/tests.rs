//! The capacity charges replayed on small reference strings worked out by hand, on
//! a fully associative LRU TLB of four entries (as Romer's model has it), base pages
//! of 4K and candidates of 8K and 16K.

use super::*;
use crate::superpage::Ladder;

const N: usize = 4;

fn ladder(thresholds: [u64; 2]) -> Ladder {
    let sizes = vec![
        PageSize::from_shift(13).unwrap(),
        PageSize::from_shift(14).unwrap(),
    ];
    Ladder {
        sizes,
        thresholds: thresholds.to_vec(),
    }
}

/// `(page, n)`: the candidate of 2^n base pages from base page `page`.
fn cand(page: u64, n: u32) -> Candidate {
    Candidate {
        asid: Asid(0),
        va: VirtAddr(page << 12),
        size: PageSize::from_shift(12 + n).unwrap(),
    }
}

/// `online`, and approx-online told of the same misses: the difference of their
/// counters is what the capacity rule charged.
struct Replay {
    p: Online,
    approx: ApproxOnline,
    /// The LRU TLB, most recent first, and the pages touched.
    tlb: Vec<u64>,
    seen: Vec<u64>,
}

impl Replay {
    fn new(thresholds: [u64; 2]) -> Replay {
        Replay {
            p: Online::new(ApproxOnline::new(ladder(thresholds), 0.0), N, PageSize::K4),
            approx: ApproxOnline::new(ladder([u64::MAX; 2]), 0.0),
            tlb: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Reference the base pages in order through an LRU TLB of `N` entries, telling
    /// the policy of each hit and miss as the machine would. The promotions asked.
    fn run(&mut self, pages: &[u64]) -> Vec<Candidate> {
        let mut asked = Vec::new();
        for &page in pages {
            let va = VirtAddr(page << 12);
            if let Some(i) = self.tlb.iter().position(|&e| e == page) {
                self.tlb.remove(i);
                self.p.on_hit(Asid(0), va, PageSize::K4);
            } else {
                let entries: Vec<Entry> = self
                    .tlb
                    .iter()
                    .map(|&e| Entry {
                        va: VirtAddr(e << 12),
                        size: PageSize::K4,
                    })
                    .collect();
                let miss = Miss {
                    asid: Asid(0),
                    va,
                    size: PageSize::K4,
                    first_touch: !self.seen.contains(&page),
                    tlb: &entries,
                };
                asked.extend(self.p.on_miss(&miss));
                self.approx.on_miss(&miss);
                self.seen.push(page);
                self.tlb.truncate(N - 1);
            }
            self.tlb.insert(0, page);
        }
        asked
    }

    /// The capacity charges of each candidate.
    fn capacity(&self, cands: &[Candidate]) -> Vec<u64> {
        cands
            .iter()
            .map(|c| self.p.inner.counters.prefetch(c) - self.approx.counters.prefetch(c))
            .collect()
    }
}

/// 0x10, then 0x20 to 0x23 push it out; its miss is charged to every candidate of
/// those four holding two or more of them: (0x20, 1) and (0x22, 1) would each have
/// left three entries, (0x20, 2) one. A candidate holding one entry frees none.
#[test]
fn an_eviction_is_blamed_on_candidates_whose_promotion_would_have_kept_the_page() {
    let mut r = Replay::new([100, 100]);
    r.run(&[0x10, 0x20, 0x21, 0x22, 0x23]);
    let all = [
        cand(0x20, 1),
        cand(0x22, 1),
        cand(0x20, 2),
        cand(0x10, 1),
        cand(0x10, 2),
    ];
    assert_eq!(
        r.capacity(&all),
        [0, 0, 0, 0, 0],
        "first touches blame no one"
    );
    // approx-online's charges: 0x21 beside 0x20, 0x22 and 0x23 beside them.
    assert_eq!(r.approx.counters.prefetch(&cand(0x20, 2)), 3);
    r.run(&[0x10]);
    assert_eq!(r.capacity(&all), [1, 1, 1, 0, 0]);
    assert_eq!(r.p.capacity_charges, 3);
}

/// Six entries since 0x10: d = 6 and N = 4, so a candidate must hold 6 - 4 + 2 = 4
/// of them. Only (0x20, 2), with 0x20 to 0x23, does; (0x24, 2) holds two.
#[test]
fn the_farther_the_page_was_pushed_the_more_a_candidate_must_merge() {
    let mut r = Replay::new([100, 100]);
    r.run(&[0x10, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x10]);
    let all = [
        cand(0x20, 1),
        cand(0x22, 1),
        cand(0x24, 1),
        cand(0x20, 2),
        cand(0x24, 2),
    ];
    assert_eq!(r.capacity(&all), [0, 0, 0, 1, 0]);
}

/// A hit refreshes a page: 0x10 is referenced again after 0x22, so only what came
/// after that pushed it out. Then (0x24, 2) reaches its threshold and is asked
/// for; once promoted, its pages count as one entry.
#[test]
fn hits_refresh_recency_and_the_largest_candidate_at_threshold_is_promoted() {
    let mut r = Replay::new([100, 5]);
    assert!(r
        .run(&[0x10, 0x20, 0x21, 0x22, 0x10, 0x23, 0x24, 0x25, 0x26])
        .is_empty());
    assert_eq!(r.tlb, [0x26, 0x25, 0x24, 0x23], "0x10 was pushed out");
    // Above 0x10: 0x26, 0x25, 0x24, 0x23 (d = 4, so two entries suffice).
    assert!(r.run(&[0x10]).is_empty());
    let all = [
        cand(0x20, 1),
        cand(0x22, 1),
        cand(0x24, 1),
        cand(0x26, 1),
        cand(0x20, 2),
        cand(0x24, 2),
    ];
    assert_eq!(r.capacity(&all), [0, 0, 1, 0, 0, 1]);
    // approx-online charged (0x24, 2) at the misses of 0x25 and 0x26: it has 3.
    assert_eq!(r.p.inner.counters.prefetch(&cand(0x24, 2)), 3);
    // 0x24 to 0x26 hit and push 0x23 out, then 0x10 again: both misses charge
    // (0x24, 1) and (0x24, 2), which reaches 3 + 2 = 5 at the second.
    let asked = r.run(&[0x24, 0x25, 0x26, 0x23, 0x10]);
    assert_eq!(asked, [cand(0x24, 2)]);
    assert_eq!(r.capacity(&all), [0, 0, 3, 0, 0, 3]);
    r.p.promoted(cand(0x24, 2));
    let key = |page: u64| Key::of(Asid(0), VirtAddr(page << 12), PageSize::K4);
    let mut above = Vec::new();
    assert!(r.p.stack.above(&key(0x23), &mut above));
    assert_eq!(above, [key(0x10)], "the promoted pages are forgotten");
    assert!(!r.p.stack.above(&key(0x24), &mut above));
}

/// Prefetch charges are approx-online's: a miss to 0x21 with 0x20 in the TLB.
#[test]
fn prefetch_charges_are_kept() {
    let mut r = Replay::new([100, 100]);
    r.run(&[0x20, 0x21]);
    let both = [cand(0x20, 1), cand(0x20, 2)];
    assert_eq!(both.map(|c| r.p.inner.counters.prefetch(&c)), [1, 1]);
    assert_eq!(r.capacity(&both), [0, 0]);
    assert_eq!(r.p.capacity_charges, 0);
}
