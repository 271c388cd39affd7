//! A byte per way that hashes the entry's key, for a fully associative array of a
//! few dozen ways: a lookup compares the key's byte with 16 ways at a time and checks
//! only the ways whose byte matches (the held one, and about one in 256 of the others),
//! instead of reading every way's tag. A fill writes one byte; nothing else changes.
//!
//! It only finds ways faster; which entries the array holds, and which one a miss
//! evicts, are decided by the array and its policy exactly as without it. A way's
//! byte may be stale (the entry was invalidated): the check of its tag rejects it.
//!
//! The same way of searching serves 12-way sets with the low 32 bits of each tag in
//! place of the byte ([`equal_lows`]); [`held_among`] checks the candidates of both.

/// Arrays of one set with this many ways or more and at most [`MAX_WAYS`] keep
/// fingerprints (wider ones keep a [`super::way_index::WayIndex`]).
pub const MIN_WAYS: usize = 16;
pub const MAX_WAYS: usize = 64;

/// Ways compared in one step.
pub(crate) const LANES: usize = 16;

pub struct Fingerprints {
    /// One byte per way, in groups of [`LANES`] (the last group padded).
    bytes: Vec<[u8; LANES]>,
}

/// The byte of key (vpn, meta).
#[inline(always)]
pub(crate) fn print(vpn: u64, meta: u32) -> u8 {
    ((vpn ^ (meta as u64) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

impl Fingerprints {
    /// For an array of `ways` ways (at most [`MAX_WAYS`]).
    pub fn new(ways: usize) -> Fingerprints {
        assert!(ways <= MAX_WAYS && MAX_WAYS <= 4 * LANES);
        Fingerprints {
            bytes: vec![[0; LANES]; ways.div_ceil(LANES)],
        }
    }

    /// The way holding (vpn, meta), given the array's tags and metas.
    #[inline(always)]
    pub fn find(&self, vpn: u64, meta: u32, tags: &[u64], metas: &[u32]) -> Option<usize> {
        // A loop of known length per number of groups.
        match self.bytes.len() {
            1 => self.find_in::<1>(vpn, meta, tags, metas),
            2 => self.find_in::<2>(vpn, meta, tags, metas),
            3 => self.find_in::<3>(vpn, meta, tags, metas),
            _ => self.find_in::<4>(vpn, meta, tags, metas),
        }
    }

    #[inline(always)]
    fn find_in<const G: usize>(
        &self,
        vpn: u64,
        meta: u32,
        tags: &[u64],
        metas: &[u32],
    ) -> Option<usize> {
        let groups: &[[u8; LANES]; G] = self.bytes[..G].try_into().expect("G groups");
        let p = print(vpn, meta);
        let mut candidates = 0u64;
        for (g, group) in groups.iter().enumerate() {
            candidates |= (equal_lanes(group, p) as u64) << (g * LANES);
        }
        held_among(candidates, tags, metas, vpn, meta)
    }

    /// Way `way` now holds (vpn, meta).
    #[inline(always)]
    pub fn set(&mut self, way: usize, vpn: u64, meta: u32) {
        self.bytes[way / LANES][way % LANES] = print(vpn, meta);
    }
}

/// The first of the `candidates` ways (as bits) that holds (vpn, meta).
#[inline(always)]
pub fn held_among(
    mut candidates: u64,
    tags: &[u64],
    metas: &[u32],
    vpn: u64,
    meta: u32,
) -> Option<usize> {
    while candidates != 0 {
        let w = candidates.trailing_zeros() as usize;
        if tags.get(w) == Some(&vpn) && metas.get(w) == Some(&meta) {
            return Some(w);
        }
        candidates &= candidates - 1;
    }
    None
}

/// Ways of a 12-way set whose low 32 bits of page number (`lows`) equal those of
/// `vpn`, as bits: the candidates whose whole tag is then compared. (The ways of a set
/// share its index bits, so the low bits still tell most pages apart.)
#[inline(always)]
pub fn equal_lows(lows: &[u32; 12], vpn: u64) -> u32 {
    let v = vpn as u32;
    equal_words(&lows[0..4], v)
        | equal_words(&lows[4..8], v) << 4
        | equal_words(&lows[8..12], v) << 8
}

/// Which of four words equal `v`, as bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn equal_words(words: &[u32], v: u32) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps,
        _mm_set1_epi32,
    };
    let words: &[u32; 4] = words.try_into().expect("4 words");
    // SAFETY: SSE2 is part of every x86-64 target; `words` is 16 readable bytes, and
    // the unaligned load reads exactly those.
    unsafe {
        let w = _mm_loadu_si128(words.as_ptr().cast::<__m128i>());
        let eq = _mm_cmpeq_epi32(w, _mm_set1_epi32(v as i32));
        _mm_movemask_ps(_mm_castsi128_ps(eq)) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn equal_words(words: &[u32], v: u32) -> u32 {
    equal_words_portable(words, v)
}

/// [`equal_words`] a word at a time, on any target.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn equal_words_portable(words: &[u32], v: u32) -> u32 {
    words
        .iter()
        .take(4)
        .enumerate()
        .fold(0, |bits, (i, &w)| bits | ((w == v) as u32) << i)
}

/// Which bytes of `group` equal `p`, as bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn equal_lanes(group: &[u8; LANES], p: u8) -> u16 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86-64 target; `group` is 16 readable bytes, and
    // the unaligned load reads exactly those.
    unsafe {
        let bytes = _mm_loadu_si128(group.as_ptr().cast::<__m128i>());
        _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(p as i8))) as u16
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn equal_lanes(group: &[u8; LANES], p: u8) -> u16 {
    equal_lanes_portable(group, p)
}

/// [`equal_lanes`] eight bytes to a word, on any target.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn equal_lanes_portable(group: &[u8; LANES], p: u8) -> u16 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut bits = 0u16;
    for (half, word) in group.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        // A byte of x is zero exactly where the word's byte equals p; then, and only
        // then, the top bit of its byte in `nonzero` is clear (no carry between bytes).
        let x = word ^ (p as u64 * 0x0101_0101_0101_0101);
        let nonzero = ((x & LOW7) + LOW7) | x;
        let zero = !nonzero & !LOW7;
        // Gather the eight top bits into one byte.
        let gathered = ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u16;
        bits |= gathered << (8 * half);
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Both ways of comparing a group agree with a byte-by-byte comparison.
        #[test]
        fn lanes_match_bytes(group in proptest::array::uniform16(0u8..4), p in 0u8..4) {
            let mut want = 0u16;
            for (i, &b) in group.iter().enumerate() {
                want |= ((b == p) as u16) << i;
            }
            proptest::prop_assert_eq!(equal_lanes(&group, p), want);
            proptest::prop_assert_eq!(equal_lanes_portable(&group, p), want);
        }

        /// Both ways of comparing words agree with a comparison one by one.
        #[test]
        fn words_match_one_by_one(lows in proptest::array::uniform12(0u32..3), high in 0u64..3, v in 0u32..3) {
            let vpn = high << 32 | v as u64;
            let mut want = 0u32;
            for (i, &w) in lows.iter().enumerate() {
                want |= ((w == v) as u32) << i;
            }
            proptest::prop_assert_eq!(equal_lows(&lows, vpn), want);
            let portable = (0..3).fold(0, |bits, g| {
                bits | equal_words_portable(&lows[4 * g..4 * g + 4], v) << (4 * g)
            });
            proptest::prop_assert_eq!(portable, want);
        }

        /// Random fills of a 40-way array: every held key is found at its way, and no
        /// other key is found.
        #[test]
        fn finds_exactly_what_is_held(ops in proptest::collection::vec((0u64..64, 0u32..3, 0usize..40), 1..300)) {
            let ways = 40;
            let (mut tags, mut metas) = (vec![0u64; ways], vec![0u32; ways]);
            let mut prints = Fingerprints::new(ways);
            for &(vpn, meta, way) in &ops {
                let meta = meta + 1;
                if let Some(w) = prints.find(vpn, meta, &tags, &metas) {
                    // Held already: a key is held at most once.
                    proptest::prop_assert_eq!((tags[w], metas[w]), (vpn, meta));
                    continue;
                }
                tags[way] = vpn;
                metas[way] = meta;
                prints.set(way, vpn, meta);
            }
            for vpn in 0..64 {
                for meta in 1..4 {
                    let held = (0..ways).find(|&w| tags[w] == vpn && metas[w] == meta);
                    proptest::prop_assert_eq!(prints.find(vpn, meta, &tags, &metas), held);
                }
            }
        }
    }
}
