//! Least-recently-used replacement: every touch stamps the way with a global counter;
//! the victim is the way with the oldest stamp. Sets of [`LIST_WAYS`] ways or more
//! keep the same order as a list instead ([`Recency`]), so that a victim does not
//! read every way's stamp.

use super::linked_lru::Recency;
use super::stamps::Stamps;
use super::Replacement;

/// Sets of at least this many ways keep their order as a list.
pub const LIST_WAYS: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lru {
    Stamps(Stamps),
    List(Recency),
}

impl Replacement for Lru {
    fn new(sets: usize, ways: usize, _seed: u64) -> Lru {
        if ways >= LIST_WAYS {
            Lru::List(Recency::new(sets, ways))
        } else {
            Lru::Stamps(Stamps::new(sets, ways))
        }
    }
    #[inline(always)]
    fn hit(&mut self, set: usize, way: usize) {
        match self {
            Lru::Stamps(s) => s.stamp(set, way),
            Lru::List(l) => l.touch(set, way),
        }
    }
    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        match self {
            Lru::Stamps(s) => s.oldest(set),
            Lru::List(l) => l.oldest(set),
        }
    }
    fn invalidate(&mut self, set: usize, way: usize) {
        match self {
            Lru::Stamps(s) => s.clear(set, way),
            Lru::List(l) => l.clear(set, way),
        }
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
