//! The distinct 4 KiB pages a trace touches, per address space, as bitmaps: a leaf of
//! 2^15 pages (4 KiB of bits) for each 128 MiB of address space touched, found through
//! a directory indexed by the page number's high bits. An insert is a few loads and an
//! OR, with no hashing: `trace info` counts a footprint at the speed it reads. The
//! footprints of larger pages (2M, 1G) are counted at the end: a larger page is
//! touched when a 4 KiB page in it is.
//!
//! Pages above 48-bit addresses, and every page once the bitmaps are sparse (fewer
//! than one page in 64 of their leaves set, as in a trace of random addresses), go to
//! a hash set instead: the bitmaps never take more than 8 bytes a page (beyond the
//! first 256 leaves).

use crate::addr::Asid;
use rustc_hash::FxHashSet;

/// Pages per leaf, as a power of two.
const LEAF_BITS: u32 = 15;
const LEAF_WORDS: usize = 1 << (LEAF_BITS - 6);
/// Leaves the directory indexes directly: 48-bit addresses (36-bit page numbers).
const DIRECT: u64 = 1 << (36 - LEAF_BITS);

/// Leaves allocated before the density is checked.
const FREE_LEAVES: usize = 256;

/// One address space's directory: leaf index + 1 by the page number's high bits, 0
/// where none (its zero pages are given by the OS lazily, as they are touched).
struct Space {
    asid: Asid,
    direct: Vec<u32>,
}

/// A set of (address space, 4 KiB page number).
pub struct PageSet {
    spaces: Vec<Space>,
    /// Every leaf's words, leaf after leaf.
    words: Vec<u64>,
    /// Each leaf's space (its index) and number (the page number's high bits).
    leaves: Vec<(usize, u64)>,
    /// The space of the last insert, and its address space.
    last: usize,
    last_asid: Option<Asid>,
    /// Pages in the bitmaps.
    len: u64,
    /// Every other page.
    sparse: FxHashSet<(Asid, u64)>,
    /// Whether pages below 48-bit addresses still go to the bitmaps.
    dense: bool,
}

impl Default for PageSet {
    fn default() -> Self {
        PageSet {
            spaces: Vec::new(),
            words: Vec::new(),
            leaves: Vec::new(),
            last: 0,
            last_asid: None,
            len: 0,
            sparse: FxHashSet::default(),
            dense: true,
        }
    }
}

impl PageSet {
    pub fn new() -> PageSet {
        PageSet::default()
    }

    /// Add a page.
    #[inline]
    pub fn insert(&mut self, asid: Asid, page: u64) {
        let high = page >> LEAF_BITS;
        if high >= DIRECT || !self.dense {
            return self.insert_sparse(asid, page);
        }
        if self.last_asid != Some(asid) {
            self.switch(asid);
        }
        let slot = self.spaces[self.last].direct[high as usize];
        let leaf = match slot {
            0 => {
                let leaf = self.new_leaf(high);
                if !self.dense {
                    return self.insert_sparse(asid, page);
                }
                leaf
            }
            n => n as usize - 1,
        };
        let bit = page & ((1 << LEAF_BITS) - 1);
        let word = &mut self.words[leaf * LEAF_WORDS + (bit >> 6) as usize];
        let mask = 1u64 << (bit & 63);
        self.len += u64::from(*word & mask == 0);
        *word |= mask;
    }

    #[cold]
    #[inline(never)]
    fn insert_sparse(&mut self, asid: Asid, page: u64) {
        self.sparse.insert((asid, page));
    }

    /// Make `asid`'s space the current one.
    #[cold]
    #[inline(never)]
    fn switch(&mut self, asid: Asid) {
        self.last = match self.spaces.iter().position(|s| s.asid == asid) {
            Some(i) => i,
            None => {
                self.spaces.push(Space {
                    asid,
                    direct: vec![0; DIRECT as usize],
                });
                self.spaces.len() - 1
            }
        };
        self.last_asid = Some(asid);
    }

    /// A new leaf `high` of the current space: its index. If the bitmaps are then
    /// sparse (fewer than one page in 64 of their leaves set), their pages move to the
    /// hash set, which takes every page from then on (the caller's too).
    #[cold]
    #[inline(never)]
    fn new_leaf(&mut self, high: u64) -> usize {
        if self.leaves.len() >= FREE_LEAVES
            && ((self.leaves.len() + 1) as u64) << LEAF_BITS > 64 * self.len
        {
            let pages: Vec<(Asid, u64)> = self.pages().collect();
            self.sparse.extend(pages);
            self.spaces.clear();
            self.leaves.clear();
            self.last_asid = None;
            self.len = 0;
            self.dense = false;
            self.words = Vec::new();
            return 0;
        }
        self.spaces[self.last].direct[high as usize] = self.leaves.len() as u32 + 1;
        self.leaves.push((self.last, high));
        self.words.resize(self.words.len() + LEAF_WORDS, 0);
        self.leaves.len() - 1
    }

    /// Every page of the bitmaps.
    fn pages(&self) -> impl Iterator<Item = (Asid, u64)> + '_ {
        self.leaves
            .iter()
            .enumerate()
            .flat_map(move |(l, &(space, high))| {
                let asid = self.spaces[space].asid;
                let words = &self.words[l * LEAF_WORDS..(l + 1) * LEAF_WORDS];
                words.iter().enumerate().flat_map(move |(i, &w)| {
                    let base = (high << LEAF_BITS) + ((i as u64) << 6);
                    (0..64)
                        .filter(move |b| w >> b & 1 != 0)
                        .map(move |b| (asid, base + b))
                })
            })
    }

    /// Every page of `other` added.
    pub fn extend_from(&mut self, other: &PageSet) {
        for (asid, page) in other.pages().chain(other.sparse.iter().copied()) {
            self.insert(asid, page);
        }
    }

    /// Distinct pages.
    pub fn len(&self) -> u64 {
        self.len + self.sparse.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distinct pages of 2^`shift` 4 KiB pages (9: 2M pages, 18: 1G pages) that hold a
    /// page of the set.
    pub fn len_at(&self, shift: u32) -> u64 {
        let mut big: FxHashSet<(Asid, u64)> =
            self.sparse.iter().map(|(a, p)| (*a, p >> shift)).collect();
        if !self.dense {
            return big.len() as u64;
        }
        if !big.is_empty() {
            // A larger page split between the two is counted once.
            big.extend(self.pages().map(|(a, p)| (a, p >> shift)));
            return big.len() as u64;
        }
        if shift > LEAF_BITS {
            // Leaves into larger pages: distinct (space, leaf number) shifted.
            let mut v: Vec<(usize, u64)> = self
                .leaves
                .iter()
                .map(|&(s, high)| (s, high >> (shift - LEAF_BITS)))
                .collect();
            v.sort_unstable();
            v.dedup();
            return v.len() as u64;
        }
        if shift >= 6 {
            // Whole groups of words.
            let group = 1usize << (shift - 6);
            return self
                .words
                .chunks(group)
                .filter(|g| g.iter().any(|w| *w != 0))
                .count() as u64;
        }
        let width = 1u32 << shift;
        let mask = (1u64 << width) - 1;
        self.words
            .iter()
            .map(|w| {
                (0..64 / width)
                    .filter(|k| (w >> (k * width)) & mask != 0)
                    .count() as u64
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The bitmaps count what a plain set of pairs counts, at every size.
    #[test]
    fn counts_equal_a_plain_set() {
        let mut set = PageSet::new();
        let mut plain = HashSet::new();
        let mut x = 7u64;
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let page = match i % 4 {
                0 => x >> 47,               // 17-bit page numbers: dense
                1 => (1 << 30) + (x >> 52), // another region
                2 => (1 << 40) + (x >> 50), // beyond 48-bit addresses
                _ => (x >> 50) + 1000,      // a small range, repeats
            };
            let asid = Asid((i % 3 == 0) as u16);
            set.insert(asid, page);
            plain.insert((asid, page));
        }
        check(&set, &plain);
        assert!(set.dense && set.sparse.len() < 60_000);
        // Random pages: the bitmaps give way to the hash set, and count the same.
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            set.insert(Asid(0), x >> 28);
            plain.insert((Asid(0), x >> 28));
        }
        assert!(!set.dense);
        check(&set, &plain);
    }

    fn check(set: &PageSet, plain: &HashSet<(Asid, u64)>) {
        assert_eq!(set.len(), plain.len() as u64);
        for shift in [0, 3, 6, 9, 15, 18, 30] {
            let big: HashSet<_> = plain.iter().map(|(a, p)| (*a, p >> shift)).collect();
            assert_eq!(set.len_at(shift), big.len() as u64, "shift {shift}");
        }
    }
}
