//! Not-recently-used replacement, the policy of the PA-RISC TLB simulated in
//! Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000, §4 ("It is
//! fully associative, employs a not-recently-used replacement policy, and returns a
//! translation in one cycle").
//!
//! The paper names the policy but not its bit-clearing rule, so this is the exact
//! variant modelled, one reference bit per entry:
//! - a hit or a fill sets the bit of the way touched; if that leaves every bit of the
//!   set set, every *other* bit of the set is cleared, so the set starts a new epoch in
//!   which only the entry just touched counts as recently used;
//! - the victim is the lowest-index way whose bit is clear (with one way, way 0);
//! - an invalidation clears the entry's bit (the entry is gone, so it is not recently
//!   used; the array refills free ways before it asks for a victim).
//!
//! Why clear all but the way touched, rather than all bits: the entry just filled or
//! hit is then never the next victim (clearing every bit would make a just-filled way 0
//! evictable by the very next miss), and a repeated hit changes nothing, as the
//! [`Replacement`] contract requires: after the first hit the way's bit is set and, with
//! more than one way, some other bit is clear, so the second hit finds its bit set and
//! returns. Between two ways with clear bits the lowest index goes first, as a
//! priority encoder over the bits would choose in hardware.

use super::Replacement;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nru {
    ways: usize,
    /// The reference bit of every entry, set by set.
    referenced: Vec<bool>,
    /// How many bits of each set are set (to notice the last one cheaply).
    count: Vec<u32>,
}

impl Replacement for Nru {
    fn new(sets: usize, ways: usize, _seed: u64) -> Nru {
        Nru {
            ways,
            referenced: vec![false; sets * ways],
            count: vec![0; sets],
        }
    }

    #[inline]
    fn hit(&mut self, set: usize, way: usize) {
        let base = set * self.ways;
        if self.referenced[base + way] {
            return;
        }
        self.referenced[base + way] = true;
        self.count[set] += 1;
        if self.count[set] as usize == self.ways {
            self.referenced[base..base + self.ways].fill(false);
            self.referenced[base + way] = true;
            self.count[set] = 1;
        }
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        let base = set * self.ways;
        self.referenced[base..base + self.ways]
            .iter()
            .position(|&r| !r)
            .unwrap_or(0)
    }

    fn invalidate(&mut self, set: usize, way: usize) {
        let i = set * self.ways + way;
        if self.referenced[i] {
            self.referenced[i] = false;
            self.count[set] -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(n: &Nru, set: usize) -> Vec<bool> {
        n.referenced[set * n.ways..(set + 1) * n.ways].to_vec()
    }

    #[test]
    fn victim_is_the_first_way_not_recently_used() {
        let mut n = Nru::new(1, 4, 0);
        assert_eq!(n.victim(0), 0, "nothing referenced yet");
        n.fill(0, 0);
        n.fill(0, 1);
        assert_eq!(n.victim(0), 2);
        n.hit(0, 3);
        assert_eq!(n.victim(0), 2);
        assert_eq!(bits(&n, 0), [true, true, false, true]);
        // The last clear bit is set: every other bit is cleared.
        n.fill(0, 2);
        assert_eq!(bits(&n, 0), [false, false, true, false]);
        assert_eq!(n.victim(0), 0);
    }

    #[test]
    fn sets_are_independent() {
        let mut n = Nru::new(2, 2, 0);
        n.hit(1, 0);
        assert_eq!((n.victim(0), n.victim(1)), (0, 1));
        n.hit(1, 1);
        assert_eq!(bits(&n, 1), [false, true]);
        assert_eq!(bits(&n, 0), [false, false]);
    }

    #[test]
    fn invalidation_clears_the_bit() {
        let mut n = Nru::new(1, 3, 0);
        n.fill(0, 0);
        n.fill(0, 1);
        n.invalidate(0, 0);
        assert_eq!(n.victim(0), 0);
        // Two bits set of three again after the refill, so no epoch starts yet.
        n.fill(0, 0);
        assert_eq!(bits(&n, 0), [true, true, false]);
        n.invalidate(0, 2); // already clear: nothing changes
        assert_eq!(n.count[0], 2);
    }

    #[test]
    fn one_way_is_always_the_victim() {
        let mut n = Nru::new(3, 1, 0);
        n.fill(2, 0);
        n.hit(2, 0);
        assert_eq!(n.victim(2), 0);
    }

    #[test]
    fn a_repeated_hit_changes_nothing() {
        for ways in 1..=9 {
            let mut n = Nru::new(2, ways, 0);
            // A pseudo-random walk over the ways, each touch repeated.
            let mut x = 7usize;
            for step in 0..200 {
                x = (x * 31 + 11) % 97;
                let (set, way) = (x % 2, x % ways);
                if step % 5 == 0 {
                    n.fill(set, way);
                } else {
                    n.hit(set, way);
                }
                let before = n.clone();
                n.hit(set, way);
                assert_eq!(n, before, "{ways} ways, step {step}");
            }
        }
    }
}
