//! Random replacement, seeded and deterministic: the same seed gives the same victims,
//! run after run. Hits, fills and invalidations change nothing, so a repeated hit
//! trivially does not.
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014), one per array, shared by its sets, its state
//! starting at the seed. Each victim advances it once, in wrapping u64 arithmetic:
//!
//! ```text
//! state += 0x9e3779b97f4a7c15
//! z = state
//! z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
//! z = (z ^ (z >> 27)) * 0x94d049bb133111eb
//! z = z ^ (z >> 31)
//! victim = (z * ways) >> 64          (the 128-bit product's high half)
//! ```
//!
//! The last line maps z onto `0..ways` by its high bits, uniform to within 2^-64 ×
//! ways. The sequence of victims depends on the order of evictions across sets, as a
//! hardware LFSR shared by the array would.

use super::Replacement;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Random {
    ways: usize,
    state: u64,
}

impl Replacement for Random {
    fn new(_sets: usize, ways: usize, seed: u64) -> Random {
        Random { ways, state: seed }
    }

    #[inline]
    fn hit(&mut self, _set: usize, _way: usize) {}

    #[inline]
    fn fill(&mut self, _set: usize, _way: usize) {}

    #[inline]
    fn victim(&mut self, _set: usize) -> usize {
        let z = crate::rng::splitmix64(&mut self.state);
        ((z as u128 * self.ways as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_victims_other_seed_other_victims() {
        let run = |seed| {
            let mut r = Random::new(4, 8, seed);
            (0..64).map(|i| r.victim(i % 4)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().all(|&w| w < 8));
    }

    #[test]
    fn victims_cover_every_way_evenly() {
        let ways = 12;
        let mut r = Random::new(1, ways, 42);
        let mut counts = vec![0u32; ways];
        for _ in 0..120_000 {
            counts[r.victim(0)] += 1;
        }
        // Expected 10 000 each; a fair generator stays well within ±5 %.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn touches_do_not_move_the_generator() {
        let mut a = Random::new(2, 4, 3);
        let b = a.clone();
        a.hit(1, 2);
        a.fill(0, 3);
        a.invalidate(1, 1);
        assert_eq!(a, b);
    }
}
