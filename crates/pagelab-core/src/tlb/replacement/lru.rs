//! Least-recently-used replacement: every touch stamps the way with a global counter;
//! the victim is the way with the oldest stamp.

use super::stamps::Stamps;
use super::Replacement;

pub struct Lru {
    stamps: Stamps,
}

impl Replacement for Lru {
    fn new(sets: usize, ways: usize, _seed: u64) -> Lru {
        Lru {
            stamps: Stamps::new(sets, ways),
        }
    }
    #[inline]
    fn hit(&mut self, set: usize, way: usize) {
        self.stamps.stamp(set, way);
    }
    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        self.stamps.oldest(set)
    }
    fn invalidate(&mut self, set: usize, way: usize) {
        self.stamps.clear(set, way);
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
