//! `approx-online` (Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS
//! 2000, §3.1, after Romer et al.): every candidate `P` has a counter `P.prefetch`. On
//! a TLB miss to base page `p`, the counter of each candidate that contains `p` and at
//! least one current TLB entry is incremented (its promotion would have prefetched the
//! translation, and saved the miss). Then the largest of those candidates whose counter
//! has reached its size's threshold is promoted, and the counters of the candidates
//! containing it are decremented by its count ("whenever `P0.prefetch` was incremented,
//! `P.prefetch` was, too").
//!
//! Candidates already superpages, or inside one, are not charged (Romer's
//! `tlbcount = -1`): a candidate is charged only if it is larger than the page that
//! maps `p` now. Which candidates contain a TLB entry is computed from the TLB's
//! entries at the miss (the paper's "simple but inefficient way"): the smallest
//! aligned block holding `p` and an entry `e` has log2 size
//! `max(e.size, bit length of (p xor e))`, and every candidate at least that large
//! contains both. With the `tlbcount` shortcut (the default) the policy instead keeps,
//! for every candidate, the number of the level's entries inside it, as the machine
//! reports each entry made, evicted or invalidated; tests check both ways charge alike.

use super::PromotionPolicy;
use super::{check_miss_cycles, BuildPolicy, Candidate, Context, Entry, Ladder, Miss};
use crate::addr::{Asid, PageSize};
use std::collections::{BTreeSet, HashMap};

/// Prefetch counters per candidate, with the charging and the decrement rule.
pub struct Counters {
    pub ladder: Ladder,
    /// (address space, ladder index, candidate index) → prefetch count.
    prefetch: HashMap<(Asid, u8, u64), u64>,
}

impl Counters {
    pub fn new(ladder: Ladder) -> Counters {
        Counters {
            ladder,
            prefetch: HashMap::new(),
        }
    }

    fn key(&self, c: &Candidate, i: usize) -> (Asid, u8, u64) {
        (c.asid, i as u8, c.va.0 >> self.ladder.sizes[i].shift())
    }

    /// The prefetch count of `c` (0 if never charged).
    pub fn prefetch(&self, c: &Candidate) -> u64 {
        match self.ladder.index(c.size) {
            Some(i) => self.prefetch.get(&self.key(c, i)).copied().unwrap_or(0),
            None => 0,
        }
    }

    /// Charge one miss to every candidate of at least `min_shift` (log2 bytes) that
    /// contains `c.va`'s page and is larger than `c.size` (the page mapping it now).
    /// Returns the largest charged candidate at its threshold.
    pub fn charge(&mut self, miss: &Candidate, min_shift: u32) -> Option<Candidate> {
        let mut best = None;
        for i in 0..self.ladder.sizes.len() {
            let size = self.ladder.sizes[i];
            if size.shift() < min_shift || size <= miss.size {
                continue;
            }
            let p = Candidate::containing(miss.asid, miss.va, size);
            if self.charge_one(&p, i) {
                best = Some(p);
            }
        }
        best
    }

    /// Charge one miss to `p`, of ladder size `i`: whether it reached its threshold.
    pub fn charge_one(&mut self, p: &Candidate, i: usize) -> bool {
        let key = self.key(p, i);
        let n = self.prefetch.entry(key).or_insert(0);
        *n += 1;
        *n >= self.ladder.thresholds[i]
    }

    /// `c` could not be promoted: its count starts again (it must earn the attempt
    /// anew, rather than retry at every miss).
    pub fn failed(&mut self, c: Candidate) {
        if let Some(i) = self.ladder.index(c.size) {
            let key = self.key(&c, i);
            self.prefetch.remove(&key);
        }
    }

    /// `c` was promoted: the candidates containing it lose its count; it and the
    /// candidates inside it are superpages now and keep no counter.
    pub fn promoted(&mut self, c: Candidate) {
        let Some(i) = self.ladder.index(c.size) else {
            return;
        };
        let v = self.prefetch.remove(&self.key(&c, i)).unwrap_or(0);
        for j in i + 1..self.ladder.sizes.len() {
            let outer = Candidate::containing(c.asid, c.va, self.ladder.sizes[j]);
            let key = self.key(&outer, j);
            if let Some(n) = self.prefetch.get_mut(&key) {
                *n = n.saturating_sub(v);
            }
        }
        for j in 0..i {
            let s = self.ladder.sizes[j];
            let first = c.va.0 >> s.shift();
            for k in first..first + (c.size.bytes() >> s.shift()) {
                self.prefetch.remove(&(c.asid, j as u8, k));
            }
        }
    }
}

/// The log2 size of the smallest aligned block holding `miss`'s address and one of
/// the TLB entries (`u32::MAX` without entries).
pub fn smallest_join(miss: &Miss<'_>) -> u32 {
    let p = miss.va.0;
    miss.tlb
        .iter()
        .map(|e| e.size.shift().max(64 - (p ^ e.va.0).leading_zeros()))
        .min()
        .unwrap_or(u32::MAX)
}

/// Romer's `tlbcount` shortcut, generalized: for every candidate, how many entries
/// of the walking TLB level lie inside it (its `tlbcount` is at least 1 exactly when
/// this is), kept as entries are made, evicted and invalidated; and the entries, to
/// know which an invalidated range held.
#[derive(Default)]
pub struct TlbCount {
    entries: BTreeSet<(Asid, u64, PageSize)>,
    inside: HashMap<(Asid, u8, u64), u32>,
}

impl TlbCount {
    fn update(&mut self, ladder: &Ladder, asid: Asid, e: Entry, add: bool) {
        let key = (asid, e.va.0, e.size);
        let changed = if add {
            self.entries.insert(key)
        } else {
            self.entries.remove(&key)
        };
        if !changed {
            return;
        }
        for (i, s) in ladder.sizes.iter().enumerate() {
            if *s < e.size {
                continue;
            }
            let k = (asid, i as u8, e.va.0 >> s.shift());
            let n = self.inside.entry(k).or_insert(0);
            if add {
                *n += 1;
            } else {
                *n -= 1;
                if *n == 0 {
                    self.inside.remove(&k);
                }
            }
        }
    }

    fn holds(&self, c: &Candidate, i: usize) -> bool {
        self.inside
            .contains_key(&(c.asid, i as u8, c.va.0 >> c.size.shift()))
    }
}

pub struct ApproxOnline {
    pub counters: Counters,
    miss_cycles: f64,
    tlbcount: Option<TlbCount>,
}

impl ApproxOnline {
    /// Reading the TLB's entries at each miss.
    pub fn new(ladder: Ladder, miss_cycles: f64) -> ApproxOnline {
        ApproxOnline {
            counters: Counters::new(ladder),
            miss_cycles,
            tlbcount: None,
        }
    }

    /// With the `tlbcount` shortcut instead.
    pub fn with_tlbcount(mut self) -> ApproxOnline {
        self.tlbcount = Some(TlbCount::default());
        self
    }
}

impl PromotionPolicy for ApproxOnline {
    fn reads_tlb(&self) -> bool {
        self.tlbcount.is_none()
    }

    fn tracks_tlb(&self) -> bool {
        self.tlbcount.is_some()
    }

    fn tlb_filled(&mut self, asid: Asid, e: Entry) {
        if let Some(t) = &mut self.tlbcount {
            t.update(&self.counters.ladder, asid, e, true);
        }
    }

    fn tlb_evicted(&mut self, asid: Asid, e: Entry) {
        if let Some(t) = &mut self.tlbcount {
            t.update(&self.counters.ladder, asid, e, false);
        }
    }

    fn tlb_invalidated(&mut self, asid: Option<Asid>, start: u64, len: u64) {
        let Some(t) = &mut self.tlbcount else {
            return;
        };
        let end = start.saturating_add(len);
        let gone: Vec<_> = t
            .entries
            .iter()
            .filter(|&&(a, va, size)| {
                asid.map_or(true, |x| x == a) && va < end && va.saturating_add(size.bytes()) > start
            })
            .copied()
            .collect();
        for (a, va, size) in gone {
            let e = Entry {
                va: crate::addr::VirtAddr(va),
                size,
            };
            t.update(&self.counters.ladder, a, e, false);
        }
    }

    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        let here = Candidate {
            asid: m.asid,
            va: m.va,
            size: m.size,
        };
        let Some(t) = &self.tlbcount else {
            return self.counters.charge(&here, smallest_join(m));
        };
        let mut best = None;
        for i in 0..self.counters.ladder.sizes.len() {
            let size = self.counters.ladder.sizes[i];
            let p = Candidate::containing(m.asid, m.va, size);
            if size > m.size && t.holds(&p, i) && self.counters.charge_one(&p, i) {
                best = Some(p);
            }
        }
        best
    }

    fn promoted(&mut self, c: Candidate) {
        self.counters.promoted(c);
    }

    fn promotion_failed(&mut self, c: Candidate) {
        self.counters.failed(c);
    }

    fn check(
        &self,
        _lookup: &dyn Fn(Asid, crate::addr::VirtAddr) -> Option<crate::pagetable::Translation>,
        tlb: &[(Asid, Entry)],
    ) -> Result<(), String> {
        let Some(t) = &self.tlbcount else {
            return Ok(());
        };
        let real: BTreeSet<_> = tlb.iter().map(|&(a, e)| (a, e.va.0, e.size)).collect();
        if real != t.entries {
            return Err(format!(
                "tlbcount follows {} entries, the TLB holds {} (first difference: {:?})",
                t.entries.len(),
                real.len(),
                real.symmetric_difference(&t.entries).next()
            ));
        }
        Ok(())
    }

    fn miss_cycles(&self) -> f64 {
        self.miss_cycles
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnlineConfig {
    /// Candidate superpage sizes (default as for asap).
    pub sizes: Vec<PageSize>,
    /// Prefetch charges that promote a candidate of the smallest size; the threshold
    /// doubles with each size step, as the cost of a copy does. Default 16.
    pub threshold: u64,
    /// Thresholds per size, smallest size first, instead of `threshold` doubling.
    pub thresholds: Vec<u64>,
    /// Cycles the miss handler spends on the policy per TLB miss. Default: 5 a
    /// candidate size, the instructions of §3.1's charge for one size on a
    /// single-issue core (read the size's `tlbcount`, load, increment and store its
    /// `prefetch` counter, compare it with the size's threshold): 50 with
    /// PA-RISC's ten sizes above the base page (Fang et al. §4), 10 with x86's two.
    /// The paper states no figure; cache misses on the counters are not priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_cycles: Option<f64>,
    /// approx-online: find the candidates holding TLB entries with Romer's `tlbcount`
    /// shortcut (counts kept as entries come and go) rather than by reading the TLB
    /// at each miss; both charge the same. Default true. (`online` reads the TLB, and
    /// so does approx-online on a TLB whose last levels differ for data and
    /// instructions, as Alpha's.)
    pub tlbcount: bool,
}

impl Default for OnlineConfig {
    fn default() -> Self {
        OnlineConfig {
            sizes: Vec::new(),
            threshold: 16,
            thresholds: Vec::new(),
            miss_cycles: None,
            tlbcount: true,
        }
    }
}

/// Instructions of §3.1's charge for one candidate size (see
/// [`OnlineConfig::miss_cycles`]), a cycle each on a single-issue core.
pub const CYCLES_PER_SIZE: f64 = 5.0;

impl OnlineConfig {
    /// The miss handler's cycles per miss: as configured, else
    /// [`CYCLES_PER_SIZE`] a candidate size of `ladder`.
    pub fn bookkeeping(&self, ladder: &Ladder) -> Result<f64, String> {
        let cycles = self
            .miss_cycles
            .unwrap_or(CYCLES_PER_SIZE * ladder.sizes.len() as f64);
        check_miss_cycles(cycles)?;
        Ok(cycles)
    }
}

impl BuildPolicy for ApproxOnline {
    type Options = OnlineConfig;
    /// The `tlbcount` shortcut follows one walking level: with separate last levels
    /// for data and instructions, approx-online reads the TLB instead.
    fn build(o: &OnlineConfig, cx: &Context<'_>) -> Result<ApproxOnline, String> {
        let ladder = Ladder::new(cx.sizes, o.threshold, &o.thresholds)?;
        let p = ApproxOnline::new(ladder.clone(), o.bookkeeping(&ladder)?);
        Ok(if o.tlbcount && cx.one_walking_level {
            p.with_tlbcount()
        } else {
            p
        })
    }
    fn configured_sizes(o: &OnlineConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::VirtAddr;

    /// Base pages of 4096 bytes, superpages of 2 to 64 base pages.
    fn policy(threshold: u64) -> ApproxOnline {
        let sizes: Vec<_> = (13..=18)
            .map(|s| PageSize::from_shift(s).unwrap())
            .collect();
        let n = sizes.len();
        ApproxOnline::new(
            Ladder {
                sizes,
                thresholds: vec![threshold; n],
            },
            0.0,
        )
    }

    /// `(va, n)`: the candidate of 2^n base pages from virtual page `va`.
    fn cand(vpn: u64, n: u32) -> Candidate {
        Candidate {
            asid: Asid(0),
            va: VirtAddr(vpn << 12),
            size: PageSize::from_shift(12 + n).unwrap(),
        }
    }

    fn entry(vpn: u64) -> Entry {
        Entry {
            va: VirtAddr(vpn << 12),
            size: PageSize::K4,
        }
    }

    fn miss<'a>(va: u64, tlb: &'a [Entry]) -> Miss<'a> {
        Miss {
            asid: Asid(0),
            va: VirtAddr(va),
            size: PageSize::K4,
            first_touch: false,
            tlb,
        }
    }

    /// The worked example of §3.1, counter by counter: a miss at 0x60005023 with the
    /// TLB holding base page 0x60006 (and not 0x60004) charges (0x60004, 2) and
    /// (0x60000, 3) to (0x60000, 6), and nothing else.
    #[test]
    fn romers_worked_example() {
        let mut p = policy(1000);
        let tlb = [entry(0x60006), entry(0x12345)];
        assert_eq!(p.on_miss(&miss(0x6000_5023, &tlb)), None);
        let c = &p.counters;
        assert_eq!(
            c.prefetch(&cand(0x60004, 1)),
            0,
            "(0x60004, 1) holds no entry"
        );
        assert_eq!(c.prefetch(&cand(0x60004, 2)), 1);
        for n in 3..=6 {
            assert_eq!(c.prefetch(&cand(0x60000, n)), 1, "(0x60000, {n})");
        }
        // Candidates of other pages are untouched.
        assert_eq!(c.prefetch(&cand(0x60006, 1)), 0);
        assert_eq!(c.prefetch(&cand(0x12344, 2)), 0);

        // "If (0x60004, 2).prefetch has reached the threshold for superpages of size
        // four, the operating system promotes the superpage and decrements the
        // prefetch counters for the containing superpages by (0x60004, 2).prefetch."
        let mut p = policy(3);
        p.counters.ladder.thresholds = vec![3, 3, 100, 100, 100, 100];
        // Charge (0x60000, 3..6) twice more through a miss that (0x60004, 2) does not see.
        let far = [entry(0x60000)];
        for _ in 0..2 {
            assert_eq!(p.on_miss(&miss(0x6000_7000, &far)), None);
        }
        assert_eq!(p.counters.prefetch(&cand(0x60000, 3)), 2);
        assert_eq!(p.counters.prefetch(&cand(0x60004, 2)), 0);
        for _ in 0..2 {
            assert_eq!(p.on_miss(&miss(0x6000_5023, &tlb)), None);
        }
        let promote = p.on_miss(&miss(0x6000_5023, &tlb));
        assert_eq!(promote, Some(cand(0x60004, 2)));
        assert_eq!(p.counters.prefetch(&cand(0x60004, 2)), 3);
        assert_eq!(p.counters.prefetch(&cand(0x60000, 3)), 5);
        p.promoted(cand(0x60004, 2));
        assert_eq!(p.counters.prefetch(&cand(0x60004, 2)), 0);
        for n in 3..=6 {
            assert_eq!(p.counters.prefetch(&cand(0x60000, n)), 2, "(0x60000, {n})");
        }
    }

    /// The largest candidate at its threshold wins; superpages are not charged again.
    #[test]
    fn the_largest_candidate_at_threshold_is_promoted() {
        let mut p = policy(1);
        let tlb = [entry(0x100)];
        // A miss at 0x101: (0x100, 1) to (0x100, 6) all reach 1: the largest wins.
        assert_eq!(p.on_miss(&miss(0x101 << 12, &tlb)), Some(cand(0x100, 6)));
        p.promoted(cand(0x100, 6));
        // Now the page is mapped by a 64-page superpage: nothing smaller is charged.
        let m = Miss {
            size: PageSize::from_shift(18).unwrap(),
            ..miss(0x101 << 12, &tlb)
        };
        assert_eq!(p.on_miss(&m), None);
        assert_eq!(p.counters.prefetch(&cand(0x100, 1)), 0);
        // No entry at all: nothing is charged.
        assert_eq!(p.on_miss(&miss(0x5000 << 12, &[])), None);
        assert_eq!(p.counters.prefetch(&cand(0x5000, 1)), 0);
    }
}
