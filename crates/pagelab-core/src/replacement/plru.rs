//! Tree pseudo-LRU: each set keeps a binary tree of one-bit nodes over its ways. A
//! touched way (hit or fill) turns every node on its path to point away from it; the
//! victim is the way reached by following the pointers from the root. This is the
//! approximation of LRU that set-associative TLBs and caches use when true LRU state
//! (log2(ways!) bits) is too costly; it needs ways − 1 bits per set.
//!
//! Exact definition, for any number of ways `n ≥ 1`: the node covering ways
//! `[lo, hi)` (the root covers `[0, n)`) splits them at `mid = lo + ⌈(hi − lo) / 2⌉`
//! into a left part `[lo, mid)` and a right part `[mid, hi)`; a part of one way is a
//! leaf. A node's bit is 0 when the victim search goes left, 1 when it goes right.
//! Touching way `w` sets, on its path, each node's bit to 1 if `w` is in the left part
//! and to 0 if it is in the right part. Every bit starts at 0, so an untouched set
//! gives way 0 first.
//!
//! For a power-of-two number of ways this is the usual balanced tree PLRU. For other
//! counts (the 12-way and 6-way TLBs of x86 parts, for example) the same rule builds a
//! nearly balanced tree whose left subtree is the larger by at most one way: every way
//! is a leaf, every victim is a real way, and the policy stays deterministic. Hardware
//! for such counts is not documented; this is pagelab's generalisation.
//!
//! A repeated touch of the same way writes the same bits again, so it changes nothing.
//! Invalidation changes no bit: the array refills invalid ways before it asks for a
//! victim, and that fill points the path away from the refilled way.

use super::{Replacement, SetPolicy};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreePlru {
    ways: usize,
    /// 64-bit words of node bits per set.
    words: usize,
    /// The node bits, `words` per set. Nodes are numbered in preorder: the node
    /// covering `[lo, hi)` is `k`, its left child `k + 1`, its right child
    /// `k + (mid − lo)`; node `k` is bit `k % 64` of the set's word `k / 64`.
    bits: Vec<u64>,
    /// What touching a way writes, as (word, mask of the path's nodes in it, their
    /// new values): the entries of way `w` are `touch[starts[w]..starts[w + 1]]`
    /// (one entry when the tree has at most 64 nodes, as for every real TLB).
    touch: Vec<(usize, u64, u64)>,
    starts: Vec<usize>,
    /// When a set's nodes fit one word: what touching way `w` writes, (mask, values)
    /// at `single[w]` (empty otherwise), for a hit without the indirection.
    single: Vec<(u64, u64)>,
    /// When a set has at most [`TABLE_NODES`] nodes: the victim of every state of
    /// its word (empty otherwise), so that a victim is one load, not a descent.
    victims: Vec<u8>,
}

impl TreePlru {
    /// A hit in a set whose nodes take several words.
    #[inline(never)]
    fn hit_words(&mut self, set: usize, way: usize) {
        let base = set * self.words;
        for &(word, mask, value) in &self.touch[self.starts[way]..self.starts[way + 1]] {
            let b = &mut self.bits[base + word];
            *b = *b & !mask | value;
        }
    }

    /// The victim of a set whose tree is too large for the table.
    #[inline(never)]
    fn descend_victim(&self, set: usize) -> usize {
        descend(self.ways, |k| self.bit(set, k))
    }

    /// The bit of node `k` of `set`.
    #[inline(always)]
    fn bit(&self, set: usize, k: usize) -> bool {
        self.bits[set * self.words + k / 64] >> (k % 64) & 1 != 0
    }
}

/// Sets of at most this many nodes (16 ways) find their victim in a table.
const TABLE_NODES: usize = 15;

/// The victim of a tree over `ways` ways whose node `k` holds `bit(k)`.
#[inline(always)]
fn descend(ways: usize, bit: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi, mut k) = (0, ways, 0);
    while hi - lo > 1 {
        let mid = lo + (hi - lo).div_ceil(2);
        if bit(k) {
            k += mid - lo;
            lo = mid;
        } else {
            k += 1;
            hi = mid;
        }
    }
    lo
}

impl Replacement for TreePlru {
    fn new(sets: usize, ways: usize, _seed: u64) -> TreePlru {
        let nodes = ways.saturating_sub(1);
        let words = nodes.div_ceil(64);
        let mut touch = Vec::new();
        let mut starts = vec![0];
        for way in 0..ways {
            // The path of `way`, and the bit each node on it takes.
            let mut path: Vec<(usize, bool)> = Vec::new();
            let (mut lo, mut hi, mut k) = (0, ways, 0);
            while hi - lo > 1 {
                let mid = lo + (hi - lo).div_ceil(2);
                if way < mid {
                    path.push((k, true));
                    k += 1;
                    hi = mid;
                } else {
                    path.push((k, false));
                    k += mid - lo;
                    lo = mid;
                }
            }
            for word in 0..words {
                let (mut mask, mut value) = (0u64, 0u64);
                for &(node, bit) in path.iter().filter(|(node, _)| node / 64 == word) {
                    mask |= 1 << (node % 64);
                    value |= (bit as u64) << (node % 64);
                }
                if mask != 0 {
                    touch.push((word, mask, value));
                }
            }
            starts.push(touch.len());
        }
        let single = if words == 1 {
            touch
                .iter()
                .map(|&(_, mask, value)| (mask, value))
                .collect()
        } else {
            Vec::new()
        };
        let victims = if (1..=TABLE_NODES).contains(&nodes) {
            (0..1u64 << nodes)
                .map(|state| descend(ways, |k| state >> k & 1 != 0) as u8)
                .collect()
        } else {
            Vec::new()
        };
        TreePlru {
            ways,
            words,
            bits: vec![0; sets * words],
            touch,
            starts,
            single,
            victims,
        }
    }

    #[inline(always)]
    fn hit(&mut self, set: usize, way: usize) {
        if let Some(&(mask, value)) = self.single.get(way) {
            let b = &mut self.bits[set];
            *b = *b & !mask | value;
            return;
        }
        self.hit_words(set, way);
    }

    #[inline(always)]
    fn fill(&mut self, set: usize, way: usize) {
        self.hit(set, way)
    }

    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        if !self.victims.is_empty() {
            // Only node bits are ever set, so the word indexes the table.
            let state = self.bits[set] as usize & (self.victims.len() - 1);
            return self.victims[state] as usize;
        }
        self.descend_victim(set)
    }
}

/// A [`TreePlru`] of `WAYS` ways (2 to 4) whose sets' node bits fit one word together,
/// lent to a loop over references: the bits live in a register instead of in memory
/// (where every hit would store to a word the next lookup of the set loads), and go
/// back to the policy when the lease is dropped. Its choices are the policy's.
pub struct PackedPlru<'a, const WAYS: usize> {
    owner: &'a mut TreePlru,
    /// The node bits of set `s` at bits `s * (WAYS - 1)` and up.
    state: u64,
    /// What touching each way writes in its set's bits: (mask, values).
    touch: [(u64, u64); WAYS],
    /// The victim of each state of a set's bits.
    victims: [u8; 8],
}

impl TreePlru {
    /// The policy lent to a loop as a [`PackedPlru`], if it has `WAYS` ways (2 to 4)
    /// and its sets' bits fit one word.
    pub fn packed<const WAYS: usize>(&mut self) -> Option<PackedPlru<'_, WAYS>> {
        if !self.packs::<WAYS>() {
            return None;
        }
        let nodes = WAYS - 1;
        let mut state = 0;
        for (set, &bits) in self.bits.iter().enumerate() {
            state |= bits << (set * nodes);
        }
        let touch = std::array::from_fn(|w| self.single[w]);
        let mut victims = [0; 8];
        for (state, v) in victims.iter_mut().enumerate().take(1 << nodes) {
            *v = descend(WAYS, |k| state >> k & 1 != 0) as u8;
        }
        Some(PackedPlru {
            owner: self,
            state,
            touch,
            victims,
        })
    }
}

impl TreePlru {
    /// Whether [`TreePlru::packed`] lends the policy as `WAYS` ways.
    pub fn packs<const WAYS: usize>(&self) -> bool {
        let fits = (2..=4).contains(&WAYS) && self.ways == WAYS && self.words == 1;
        fits && self.bits.len() * (WAYS - 1) <= 64 && self.single.len() == WAYS
    }
}

impl<const WAYS: usize> PackedPlru<'_, WAYS> {
    const NODES: usize = WAYS - 1;
    const SET_MASK: u64 = (1 << Self::NODES) - 1;
}

impl<const WAYS: usize> SetPolicy for PackedPlru<'_, WAYS> {
    #[inline(always)]
    fn hit(&mut self, set: usize, way: usize) {
        let shift = set * Self::NODES % 64;
        let (mask, value) = self.touch[way % WAYS];
        self.state = self.state & !(mask << shift) | value << shift;
    }
    #[inline(always)]
    fn fill(&mut self, set: usize, way: usize) {
        self.hit(set, way)
    }
    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        let shift = set * Self::NODES % 64;
        self.victims[(self.state >> shift & Self::SET_MASK) as usize] as usize
    }
}

impl<const WAYS: usize> Drop for PackedPlru<'_, WAYS> {
    fn drop(&mut self) {
        for (set, bits) in self.owner.bits.iter_mut().enumerate() {
            *bits = self.state >> (set * Self::NODES) & Self::SET_MASK;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_ways_by_hand() {
        // Nodes: root (ways 0-1 | 2-3), then 0|1, then 2|3.
        let mut p = TreePlru::new(1, 4, 0);
        for w in 0..4 {
            p.fill(0, w);
        }
        // Last touches 2 then 3: root points left; 1 was touched after 0.
        assert_eq!(p.victim(0), 0);
        p.hit(0, 0);
        // The root now points right, where 3 was touched last: 2, where true LRU
        // would evict 1.
        assert_eq!([p.bit(0, 0), p.bit(0, 1), p.bit(0, 2)], [true, true, false]);
        assert_eq!(p.victim(0), 2);
    }

    #[test]
    fn three_ways_make_an_uneven_tree() {
        // Root (ways 0-1 | 2), then 0|1.
        let mut p = TreePlru::new(1, 3, 0);
        for w in 0..3 {
            p.fill(0, w);
        }
        assert_eq!(p.victim(0), 0);
        p.hit(0, 0);
        assert_eq!(p.victim(0), 2);
        p.hit(0, 2);
        assert_eq!(p.victim(0), 1);
    }

    #[test]
    fn any_way_count_gives_real_ways_and_never_the_last_touched() {
        for ways in (1..=20).chain([64, 65, 66, 130]) {
            let mut p = TreePlru::new(3, ways, 0);
            for set in 0..3 {
                // Touching every way in order leaves way 0 the victim.
                for w in 0..ways {
                    p.hit(set, w);
                }
                assert_eq!(p.victim(set), 0, "{ways} ways");
            }
            let mut x = 5usize;
            for _ in 0..300 {
                x = (x * 37 + 3) % 1009;
                let (set, way) = (x % 3, x % ways);
                p.hit(set, way);
                let v = p.victim(set);
                assert!(v < ways);
                if ways > 1 {
                    assert_ne!(
                        v, way,
                        "{ways} ways: the way just touched is never the victim"
                    );
                }
            }
        }
    }

    #[test]
    fn a_repeated_hit_changes_nothing() {
        for ways in (1..=13).chain([65, 66, 130]) {
            let mut p = TreePlru::new(2, ways, 0);
            let mut x = 1usize;
            for step in 0..200 {
                x = (x * 29 + 7) % 101;
                let (set, way) = (x % 2, x % ways);
                p.hit(set, way);
                let before = p.clone();
                p.hit(set, way);
                assert_eq!(p, before, "{ways} ways, step {step}");
            }
        }
    }

    /// The policy lent as packed bits chooses as the policy does, and gives its state
    /// back: random hits and victims, in shapes that pack (up to 64 node bits) and
    /// one that does not.
    fn packed_agrees<const WAYS: usize>(sets: usize, seed: u64) {
        let mut plain = TreePlru::new(sets, WAYS, 0);
        let mut lent = TreePlru::new(sets, WAYS, 0);
        let mut x = seed | 1;
        for _round in 0..4 {
            let Some(mut packed) = lent.packed::<WAYS>() else {
                assert!(
                    sets * (WAYS - 1) > 64,
                    "{sets} sets of {WAYS} ways must pack"
                );
                return;
            };
            for step in 0..500 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (set, way) = ((x >> 33) as usize % sets, (x >> 20) as usize % WAYS);
                match x >> 62 {
                    0 => assert_eq!(
                        SetPolicy::victim(&mut packed, set),
                        Replacement::victim(&mut plain, set),
                        "{sets}x{WAYS}, step {step}"
                    ),
                    1 => {
                        SetPolicy::fill(&mut packed, set, way);
                        Replacement::fill(&mut plain, set, way);
                    }
                    _ => {
                        SetPolicy::hit(&mut packed, set, way);
                        Replacement::hit(&mut plain, set, way);
                    }
                }
            }
            drop(packed);
            assert_eq!(lent, plain, "{sets}x{WAYS}: the state given back");
        }
    }

    #[test]
    fn packed_bits_choose_as_the_policy() {
        for seed in 0..20 {
            packed_agrees::<2>(64, seed);
            packed_agrees::<3>(32, seed);
            packed_agrees::<4>(16, seed);
            packed_agrees::<4>(21, seed);
            packed_agrees::<4>(1, seed);
            packed_agrees::<4>(22, seed);
        }
    }
}
