//! The ways of each set in order of their last touch, as a doubly linked list: the
//! state of LRU for wide sets, where finding the oldest of many stamps would read
//! every way. A touch moves the way to the front, the victim is the back, in a few
//! steps whatever the number of ways.
//!
//! It orders ways exactly as [`super::stamps::Stamps`] does by their last stamps, so
//! the victim of a full set (every way touched since it was filled) is the same.

/// No way: the end of a list.
const NONE: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recency {
    ways: usize,
    /// Per way: the way touched next after it (towards the front), and before it.
    newer: Vec<u32>,
    older: Vec<u32>,
    /// Per set: the way touched last, and the one touched longest ago.
    front: Vec<u32>,
    back: Vec<u32>,
}

impl Recency {
    /// Each set starts ordered by way, way 0 at the back.
    pub fn new(sets: usize, ways: usize) -> Recency {
        assert!(ways >= 1 && ways < NONE as usize);
        let n = sets * ways;
        let w = ways as u32;
        Recency {
            ways,
            newer: (0..n as u32)
                .map(|i| if i % w == w - 1 { NONE } else { i % w + 1 })
                .collect(),
            older: (0..n as u32)
                .map(|i| if i % w == 0 { NONE } else { i % w - 1 })
                .collect(),
            front: vec![w - 1; sets],
            back: vec![0; sets],
        }
    }

    /// Take `way` out of the list of `set`.
    #[inline(always)]
    fn unlink(&mut self, set: usize, way: u32) {
        let base = set * self.ways;
        let i = base + way as usize;
        let (newer, older) = (self.newer[i], self.older[i]);
        match newer {
            NONE => self.front[set] = older,
            n => self.older[base + n as usize] = older,
        }
        match older {
            NONE => self.back[set] = newer,
            o => self.newer[base + o as usize] = newer,
        }
    }

    /// Make `way` the newest of `set`.
    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        let w = way as u32;
        let front = self.front[set];
        if front == w {
            return;
        }
        self.unlink(set, w);
        let base = set * self.ways;
        self.older[base + way] = front;
        self.newer[base + way] = NONE;
        // The list has at least two ways here, so `front` is one (not `way`).
        self.newer[base + front as usize] = w;
        self.front[set] = w;
    }

    /// `way` of `set` holds nothing: it becomes the oldest.
    pub fn clear(&mut self, set: usize, way: usize) {
        let w = way as u32;
        let back = self.back[set];
        if back == w {
            return;
        }
        self.unlink(set, w);
        let base = set * self.ways;
        self.newer[base + way] = back;
        self.older[base + way] = NONE;
        self.older[base + back as usize] = w;
        self.back[set] = w;
    }

    /// The way of `set` touched longest ago.
    #[inline]
    pub fn oldest(&self, set: usize) -> usize {
        self.back[set] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replacement::stamps::Stamps;

    /// Any sequence of touches and clears orders a full set as stamps do: after
    /// every step, the oldest way equals the stamps' oldest once every way is
    /// stamped (and the list stays a permutation of the ways).
    #[test]
    fn orders_ways_as_stamps_do() {
        for ways in [1usize, 2, 3, 16, 33] {
            let sets = 3;
            let (mut list, mut stamps) = (Recency::new(sets, ways), Stamps::new(sets, ways));
            let mut stamped = vec![vec![false; ways]; sets];
            let mut x = 0x9e37_79b9_u64;
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (set, way) = ((x % sets as u64) as usize, (x >> 8) as usize % ways);
                if x >> 40 & 15 == 0 {
                    list.clear(set, way);
                    stamps.clear(set, way);
                    stamped[set][way] = false;
                } else {
                    list.touch(set, way);
                    stamps.stamp(set, way);
                    stamped[set][way] = true;
                }
                if stamped[set].iter().all(|&s| s) {
                    assert_eq!(
                        list.oldest(set),
                        stamps.oldest(set),
                        "{ways} ways, step {step}"
                    );
                }
                // Walking from the front visits every way once.
                let (mut seen, mut at) = (vec![false; ways], list.front[set]);
                while at != NONE {
                    assert!(!std::mem::replace(&mut seen[at as usize], true));
                    at = list.older[set * ways + at as usize];
                }
                assert!(seen.iter().all(|&s| s), "{ways} ways, step {step}");
            }
        }
    }
}
