//! Least-recently-used replacement: every touch stamps the way with a global counter;
//! the victim is the way with the oldest stamp.

use super::Replacement;

pub struct Lru {
    ways: usize,
    stamps: Vec<u64>,
    clock: u64,
}

impl Replacement for Lru {
    fn new(sets: usize, ways: usize, _seed: u64) -> Lru {
        Lru {
            ways,
            stamps: vec![0; sets * ways],
            clock: 0,
        }
    }
    #[inline]
    fn hit(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamps[set * self.ways + way] = self.clock;
    }
    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        // Select with conditional moves: which way is oldest is data, not control.
        let stamps = &self.stamps[set * self.ways..(set + 1) * self.ways];
        let (mut best, mut oldest) = (0, stamps[0]);
        for (way, &s) in stamps.iter().enumerate().skip(1) {
            let older = s < oldest;
            best = if older { way } else { best };
            oldest = if older { s } else { oldest };
        }
        best
    }
    fn invalidate(&mut self, set: usize, way: usize) {
        self.stamps[set * self.ways + way] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_touched() {
        let mut lru = Lru::new(1, 3, 0);
        lru.hit(0, 0);
        lru.hit(0, 1);
        lru.hit(0, 2);
        assert_eq!(lru.victim(0), 0);
        lru.hit(0, 0);
        assert_eq!(lru.victim(0), 1);
    }
}
