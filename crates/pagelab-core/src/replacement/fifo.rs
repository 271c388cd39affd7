//! First-in, first-out replacement: the victim is the way filled longest ago,
//! whatever was hit since. A hit changes nothing (so a repeated hit trivially does
//! not); a fill, including the array's refill in place of an entry it already holds,
//! makes the way the newest of its set. Each fill stamps its way with a counter
//! shared by the whole array; the victim is the way with the smallest stamp.

use super::stamps::Stamps;
use super::Replacement;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fifo {
    /// When each way was last filled.
    filled: Stamps,
}

impl Replacement for Fifo {
    fn new(sets: usize, ways: usize, _seed: u64) -> Fifo {
        Fifo {
            filled: Stamps::new(sets, ways),
        }
    }

    #[inline]
    fn hit(&mut self, _set: usize, _way: usize) {}

    #[inline]
    fn fill(&mut self, set: usize, way: usize) {
        self.filled.stamp(set, way);
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        self.filled.oldest(set)
    }

    fn invalidate(&mut self, set: usize, way: usize) {
        self.filled.clear(set, way);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_do_not_save_the_oldest_fill() {
        let mut f = Fifo::new(1, 3, 0);
        for w in [2, 0, 1] {
            f.fill(0, w);
        }
        assert_eq!(f.victim(0), 2);
        f.hit(0, 2);
        assert_eq!(f.victim(0), 2, "a hit changes nothing");
        f.fill(0, 2);
        assert_eq!(f.victim(0), 0);
        f.fill(0, 0);
        assert_eq!(f.victim(0), 1);
    }

    #[test]
    fn sets_keep_their_own_order() {
        let mut f = Fifo::new(2, 2, 0);
        f.fill(0, 1);
        f.fill(1, 0);
        f.fill(0, 0);
        f.fill(1, 1);
        assert_eq!((f.victim(0), f.victim(1)), (1, 0));
    }

    #[test]
    fn a_hit_changes_nothing() {
        let mut f = Fifo::new(2, 4, 0);
        for (s, w) in [(0, 1), (1, 3), (0, 2)] {
            f.fill(s, w);
            let before = f.clone();
            f.hit(s, w);
            f.hit(s, 0);
            assert_eq!(f, before);
        }
    }
}
