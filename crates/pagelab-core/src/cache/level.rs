//! One cache level: a set-associative array of lines whose victims a replacement
//! policy chooses (`crate::replacement`, the same policies as the TLBs'; LRU by
//! default). A line (a physical address divided by the line size) goes to set
//! `line mod sets`; sets need not be a power of two (a real part with an odd number of
//! sets, such as a sliced LLC, hashes the address instead: modulo is the simple
//! stand-in). A reference that misses fills the line at once, in an empty way if its
//! set has one, else in place of the policy's victim: write-allocate, and no dirty
//! state.
//!
//! LRU, the default, needs no policy beside the tags. A set of up to 16 ways keeps
//! its ways' recency order in one word, four bits per way, the most recent lowest: a
//! hit moves its way's nibble to the bottom, a miss fills the way in the last position
//! and moves that to the bottom, so a reference writes one word and at most one tag. Empty ways
//! sit above every filled one (a way moves down only when filled), so they are filled
//! first. A set of more ways keeps its tags themselves in recency order (most recent
//! first, empty ways last). The other policies keep tags in place and their own state
//! apart.

use super::recency;
use crate::replacement::AnyReplacement;

/// The tag of an empty way. Line numbers are physical addresses shifted right by at
/// least 3 (lines are 8 bytes or more), so no line has it.
const EMPTY: u64 = u64::MAX;

/// The lines are kept set by set, so that a set's tags are contiguous:
/// `tags[set * ways + way]` is the line a way holds.
#[derive(Clone, Debug)]
pub struct CacheLevel {
    sets: usize,
    ways: usize,
    /// `sets - 1` when sets is a power of two, for a mask instead of a division.
    mask: Option<u64>,
    tags: Vec<u64>,
    /// LRU of at most [`recency::MAX_WAYS`] ways: per set, its ways' recency order
    /// ([`recency`]). Empty otherwise.
    order: Vec<u64>,
    /// The policy choosing victims; `None`: LRU, in `order` or, with more ways, with
    /// each set's tags kept in recency order.
    policy: Option<AnyReplacement>,
    /// Empty ways in the whole level: once none is left (until an invalidation), a
    /// miss goes straight to the policy's victim (with a policy; an LRU level in
    /// recency order keeps the count, and its empty ways last).
    empty_ways: usize,
}

impl CacheLevel {
    /// An empty LRU level; `sets` and `ways` at least 1 (checked by the configuration).
    pub fn new(sets: usize, ways: usize) -> CacheLevel {
        CacheLevel::with_policy(sets, ways, "lru", 0).expect("lru is a policy")
    }

    /// An empty level whose victims the policy `replacement` chooses (`None` if no
    /// policy has that name); `seed` seeds a random policy.
    pub fn with_policy(
        sets: usize,
        ways: usize,
        replacement: &str,
        seed: u64,
    ) -> Option<CacheLevel> {
        assert!(sets > 0 && ways > 0, "a cache level needs sets and ways");
        let policy = match replacement {
            "lru" => None,
            _ => Some(AnyReplacement::named(replacement, sets, ways, seed)?),
        };
        let ordered = policy.is_none() && ways <= recency::MAX_WAYS;
        Some(CacheLevel {
            sets,
            ways,
            mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            tags: vec![EMPTY; sets * ways],
            order: if ordered {
                vec![recency::initial(ways); sets]
            } else {
                Vec::new()
            },
            policy,
            empty_ways: sets * ways,
        })
    }

    /// Whether each set keeps its tags in recency order (LRU of many ways).
    fn tags_in_order(&self) -> bool {
        self.policy.is_none() && self.order.is_empty()
    }

    /// (sets, ways).
    pub fn shape(&self) -> (usize, usize) {
        (self.sets, self.ways)
    }

    #[inline(always)]
    fn set_of(&self, line: u64) -> usize {
        match self.mask {
            Some(m) => (line & m) as usize,
            None => (line % self.sets as u64) as usize,
        }
    }

    /// Whether the level replaces the least recently used line (no other policy).
    pub fn is_lru(&self) -> bool {
        self.policy.is_none()
    }

    /// Reference `line`: true on a hit. The line is the most recently used of its set
    /// afterwards, either way (filled on a miss).
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> bool {
        // The usual associativities of LRU, the default, get loops of known length,
        // unrolled, in line; the rest is called.
        match (self.ways, self.policy.is_none() && !self.order.is_empty()) {
            (8, true) => self.access_lru::<8>(line),
            (16, true) => self.access_lru::<16>(line),
            (4, true) => self.access_lru::<4>(line),
            (_, true) => self.access_lru::<0>(line),
            (_, false) => self.access_other(line),
        }
    }

    /// [`CacheLevel::access`] with a policy, or LRU of more ways than a word orders.
    #[inline(never)]
    fn access_other(&mut self, line: u64) -> bool {
        match (self.ways, self.policy.is_none()) {
            (_, true) => self.access_ordered(line),
            (8, false) => self.access_in::<8>(line),
            (16, false) => self.access_in::<16>(line),
            (4, false) => self.access_in::<4>(line),
            (_, false) => self.access_in::<0>(line),
        }
    }

    /// [`CacheLevel::access`] for LRU sets of `W` ways (0: any number up to 16)
    /// ordered by a word each. A hit moves its way to the front; a miss fills the last
    /// way (the least recently used line, or an empty way) and moves it there.
    #[inline(always)]
    fn access_lru<const W: usize>(&mut self, line: u64) -> bool {
        let ways = if W == 0 { self.ways } else { W };
        let set = self.set_of(line);
        let base = set * ways;
        let tags = &mut self.tags[base..base + ways];
        let order = self.order[set];
        match find(tags, line) {
            Some(way) => {
                let at = recency::position(order, way);
                self.order[set] = recency::to_front(order, way, at);
                true
            }
            None => {
                let way = recency::last(order, ways);
                self.order[set] = recency::last_to_front(order, ways);
                self.empty_ways -= (tags[way] == EMPTY) as usize;
                tags[way] = line;
                false
            }
        }
    }

    /// [`CacheLevel::access`] for LRU sets of more ways than a word orders, their
    /// tags kept in recency order.
    fn access_ordered(&mut self, line: u64) -> bool {
        let ways = self.ways;
        let base = self.set_of(line) * ways;
        let tags = &mut self.tags[base..base + ways];
        let found = find(tags, line);
        // A miss drops the last tag: the least recently used line, or an empty way.
        let moved = found.unwrap_or(ways - 1);
        self.empty_ways -= (found.is_none() & (tags[ways - 1] == EMPTY)) as usize;
        tags.copy_within(0..moved, 1);
        tags[0] = line;
        found.is_some()
    }

    /// Bring the set of `line` into the host's cache ahead of an access to it. Changes
    /// nothing simulated.
    #[inline(always)]
    pub fn prefetch(&self, line: u64) {
        let set = self.set_of(line);
        let base = set * self.ways;
        crate::hugemem::prefetch(&self.tags[base]);
        if self.ways > 8 {
            crate::hugemem::prefetch(&self.tags[base + 8]);
        }
        if let Some(order) = self.order.get(set) {
            crate::hugemem::prefetch(order);
        }
    }

    /// [`CacheLevel::access`] for sets of `W` ways (0: any number).
    #[inline(always)]
    fn access_in<const W: usize>(&mut self, line: u64) -> bool {
        let ways = if W == 0 { self.ways } else { W };
        let set = self.set_of(line);
        let Some(policy) = self.policy.as_mut() else {
            unreachable!("LRU levels keep their sets in order")
        };
        let base = set * ways;
        let tags = &self.tags[base..base + ways];
        if let Some(way) = find(tags, line) {
            policy.hit(set, way);
            return true;
        }
        let free = if self.empty_ways > 0 {
            tags.iter().position(|&t| t == EMPTY)
        } else {
            None
        };
        let way = match free {
            Some(free) => {
                self.empty_ways -= 1;
                free
            }
            None => policy.victim(set),
        };
        self.tags[base + way] = line;
        policy.fill(set, way);
        false
    }

    /// Whether `line` is held, without touching it.
    pub fn holds(&self, line: u64) -> bool {
        let base = self.set_of(line) * self.ways;
        find(&self.tags[base..base + self.ways], line).is_some()
    }

    /// Drop every line numbered `first..end`: how many were held. A range of more
    /// lines than there are sets is cheaper to find by scanning the whole array.
    pub fn invalidate_range(&mut self, first: u64, end: u64) -> u64 {
        let mut dropped = 0;
        if end.saturating_sub(first) <= self.sets as u64 {
            for line in first..end {
                let base = self.set_of(line) * self.ways;
                if let Some(way) = find(&self.tags[base..base + self.ways], line) {
                    self.empty(base + way);
                    dropped += 1;
                }
            }
        } else {
            let mut i = 0;
            while i < self.tags.len() {
                let tag = self.tags[i];
                if tag != EMPTY && (first..end).contains(&tag) {
                    self.empty(i);
                    dropped += 1;
                    if self.tags_in_order() {
                        continue; // the set's next tag moved up into way i
                    }
                }
                i += 1;
            }
        }
        dropped
    }

    /// Empty the way at `i` (of `tags`): it becomes the least recently used of its
    /// set. In a set whose tags are kept in recency order, the tags after it move up
    /// one and the empty way goes last.
    fn empty(&mut self, i: usize) {
        self.empty_ways += 1;
        let (set, way) = (i / self.ways, i % self.ways);
        match &mut self.policy {
            Some(policy) => {
                self.tags[i] = EMPTY;
                policy.invalidate(set, way);
            }
            None if !self.order.is_empty() => {
                self.tags[i] = EMPTY;
                let order = self.order[set];
                let at = recency::position(order, way);
                self.order[set] = recency::to_back(order, way, at, self.ways);
            }
            None => {
                let end = i - i % self.ways + self.ways;
                self.tags.copy_within(i + 1..end, i);
                self.tags[end - 1] = EMPTY;
            }
        }
    }

    /// Lines held now.
    pub fn occupancy(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }
}

/// The way of a set holding `line`, without a branch on the data: which way hits is
/// unpredictable. A line is held at most once per level.
#[inline(always)]
fn find(tags: &[u64], line: u64) -> Option<usize> {
    let mut hit = usize::MAX;
    for (way, &tag) in tags.iter().enumerate() {
        hit = if tag == line { way } else { hit };
    }
    (hit != usize::MAX).then_some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_empty_ways_before_evicting() {
        let mut l = CacheLevel::new(1, 3);
        assert!(!l.access(10) && !l.access(11) && !l.access(12));
        assert_eq!(l.occupancy(), 3);
        assert!(l.access(10) && l.access(11) && l.access(12));
        // 10 is the least recently used: 13 replaces it.
        assert!(!l.access(13));
        assert!(!l.holds(10) && l.holds(11) && l.holds(12) && l.holds(13));
    }

    #[test]
    fn a_hit_protects_the_line() {
        let mut l = CacheLevel::new(1, 2);
        l.access(1);
        l.access(2);
        assert!(l.access(1)); // 2 is now the oldest
        assert!(!l.access(3));
        assert!(l.holds(1) && !l.holds(2));
    }

    #[test]
    fn holds_does_not_touch() {
        let mut l = CacheLevel::new(1, 2);
        l.access(1);
        l.access(2);
        assert!(l.holds(1)); // a probe, not a reference: 1 stays the oldest
        l.access(3);
        assert!(!l.holds(1) && l.holds(2));
    }

    #[test]
    fn sets_are_independent_and_need_not_be_powers_of_two() {
        let mut l = CacheLevel::new(3, 1);
        for line in 0..3 {
            assert!(!l.access(line));
        }
        assert!(!l.access(3)); // set 0: replaces line 0 only
        assert!(!l.holds(0) && l.holds(1) && l.holds(2) && l.holds(3));
        let mut p = CacheLevel::new(4, 1);
        p.access(1);
        p.access(5); // set 1 as well
        assert!(!p.holds(1) && p.holds(5));
    }

    #[test]
    fn specialized_and_generic_searches_agree() {
        // 16 ways takes the unrolled search, 15 and 17 the generic one.
        for ways in [4, 8, 15, 16, 17] {
            let mut l = CacheLevel::new(2, ways);
            let lines: Vec<u64> = (0..ways as u64 + 1).map(|i| i * 2).collect();
            for &line in &lines {
                assert!(!l.access(line), "{ways} ways");
            }
            // One line too many for set 0: the first went.
            assert!(!l.holds(0), "{ways} ways");
            assert!(lines[1..].iter().all(|&x| l.holds(x)), "{ways} ways");
            assert!(l.access(lines[ways]), "{ways} ways");
        }
    }

    #[test]
    fn invalidate_range_by_line_and_by_scan_agree() {
        // 4 sets × 2 ways holding lines 0..8; drop 2..5 (3 lines ≤ 4 sets: looked up
        // one by one) and, on a copy, 1..7 (6 lines: the whole array scanned).
        let mut a = CacheLevel::new(4, 2);
        for line in 0..8 {
            a.access(line);
        }
        let mut b = a.clone();
        assert_eq!(a.invalidate_range(2, 5), 3);
        assert_eq!(b.invalidate_range(1, 7), 6);
        for line in 0..8 {
            assert_eq!(a.holds(line), !(2..5).contains(&line), "line {line}");
            assert_eq!(b.holds(line), !(1..7).contains(&line), "line {line}");
        }
        // An emptied way is refilled before any line is evicted.
        assert!(!a.access(10)); // set 2 had line 2 dropped
        assert!(a.holds(6) && a.holds(10));
        assert_eq!(a.invalidate_range(100, 100), 0);
        assert_eq!(a.invalidate_range(0, u64::MAX), 6);
        assert_eq!(a.occupancy(), 0);
    }
}
