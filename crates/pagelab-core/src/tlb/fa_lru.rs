//! A fully associative array with LRU replacement, of one page size and no frames:
//! the shape of every walk cache the presets configure (2, 4 or 32 ways). It holds
//! and evicts exactly what a [`super::SetAssocTlb`] of one set with LRU replacement
//! holds and evicts (a fill takes the lowest free way, else the way touched longest
//! ago), in fewer steps: no policy chosen at run time, no frames, the ways found by
//! comparing all of them at once (by their fingerprints from 16 ways, see
//! [`Fingerprints`]), and their order kept as a rank byte per way (0: the newest),
//! which a touch and a search for the oldest read 16 at a time, without a branch per
//! way. The tests of `walk_cache` check that both arrays give the same counts.

use super::fingerprint::{self, equal_lanes, Fingerprints, LANES};
use crate::addr::{Asid, PageSize, VirtAddr};

pub struct FaLru {
    /// Region numbers, and their tag metas (0: the way is free).
    tags: Vec<u64>,
    metas: Vec<u32>,
    prints: Option<Fingerprints>,
    /// The rank of each way in the order of last touches (0: the newest; a free way
    /// ranks as the oldest). Padding lanes hold [`PAD`].
    ranks: Vec<[u8; LANES]>,
    /// The valid ways, a bit each.
    valid: u64,
}

/// Widest array kept this way (the fingerprints' limit, a bit per way).
pub const MAX_WAYS: usize = fingerprint::MAX_WAYS;

/// The rank of a padding lane: above every real rank (which is below 64), and below
/// 128 so that ranks compare as signed bytes.
const PAD: u8 = 127;

impl FaLru {
    /// `ways` from 1 to [`MAX_WAYS`]. The ways start ordered by index, way 0 the
    /// oldest (as [`super::replacement::Lru`]'s list).
    pub fn new(ways: usize) -> FaLru {
        assert!((1..=MAX_WAYS).contains(&ways) && MAX_WAYS <= 64);
        let mut ranks = vec![[PAD; LANES]; ways.div_ceil(LANES)];
        for way in 0..ways {
            ranks[way / LANES][way % LANES] = (ways - 1 - way) as u8;
        }
        FaLru {
            tags: vec![0; ways],
            metas: vec![0; ways],
            prints: (ways >= fingerprint::MIN_WAYS).then(|| Fingerprints::new(ways)),
            ranks,
            valid: 0,
        }
    }

    /// The way holding (vpn, meta).
    #[inline(always)]
    fn find(&self, vpn: u64, meta: u32) -> Option<usize> {
        if let Some(prints) = &self.prints {
            return prints.find(vpn, meta, &self.tags, &self.metas);
        }
        // A few ways: all compared, no branch per way (a key is held at most once).
        let mut held = 0u64;
        for (w, (&t, &m)) in self.tags.iter().zip(&self.metas).enumerate() {
            held |= (((t == vpn) & (m == meta)) as u64) << w;
        }
        (held != 0).then(|| held.trailing_zeros() as usize)
    }

    /// Look (vpn, meta) up; on a hit, it becomes the newest.
    #[inline(always)]
    pub fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        match self.find(vpn, meta) {
            Some(way) => {
                self.make_newest(way);
                true
            }
            None => false,
        }
    }

    /// Every way newer than `way` ages by one; `way` becomes the newest. (For the
    /// newest way already, nothing changes.)
    #[inline(always)]
    fn make_newest(&mut self, way: usize) {
        let rank = self.ranks[way / LANES][way % LANES];
        for group in self.ranks.iter_mut() {
            *group = age_below(group, rank);
        }
        self.ranks[way / LANES][way % LANES] = 0;
    }

    /// Fill (vpn, meta), known not to be held: the lowest free way, else the way
    /// touched longest ago.
    #[inline(always)]
    pub fn fill_absent(&mut self, vpn: u64, meta: u32) {
        let ways = self.metas.len();
        let free = !self.valid & (u64::MAX >> (64 - ways));
        let way = if free != 0 {
            free.trailing_zeros() as usize
        } else {
            self.oldest()
        };
        self.valid |= 1 << way;
        self.tags[way] = vpn;
        self.metas[way] = meta;
        if let Some(prints) = &mut self.prints {
            prints.set(way, vpn, meta);
        }
        self.make_newest(way);
    }

    /// The way of the highest rank.
    #[inline(always)]
    fn oldest(&self) -> usize {
        let last = (self.metas.len() - 1) as u8;
        let mut at = 0u64;
        for (g, group) in self.ranks.iter().enumerate() {
            at |= (equal_lanes(group, last) as u64) << (g * LANES);
        }
        at.trailing_zeros() as usize
    }

    /// Drop every entry of `asid` whose region overlaps `[start, start + len)`.
    pub fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        let end = start.0.saturating_add(len);
        self.drop_where(|vpn, meta| {
            let Some(size) = PageSize::from_shift(meta & 0xff) else {
                return false;
            };
            let base = vpn << size.shift();
            (meta >> 8) as u16 == asid.0
                && base < end
                && base.saturating_add(size.bytes()) > start.0
        });
    }

    pub fn flush_all(&mut self) {
        self.drop_where(|_, _| true);
    }

    /// Drop the entries `pred` names; each becomes the oldest way.
    fn drop_where(&mut self, pred: impl Fn(u64, u32) -> bool) {
        let last = (self.metas.len() - 1) as u8;
        for way in 0..self.metas.len() {
            let meta = self.metas[way];
            if meta != 0 && pred(self.tags[way], meta) {
                self.metas[way] = 0;
                self.valid &= !(1 << way);
                let rank = self.ranks[way / LANES][way % LANES];
                for r in self.ranks.iter_mut().flatten() {
                    *r -= (*r > rank && *r <= last) as u8;
                }
                self.ranks[way / LANES][way % LANES] = last;
            }
        }
    }

    pub fn capacity(&self) -> usize {
        self.metas.len()
    }
}

/// `group` with every rank below `rank` one higher (padding is never below).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn age_below(group: &[u8; LANES], rank: u8) -> [u8; LANES] {
    use std::arch::x86_64::{
        __m128i, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_set1_epi8, _mm_storeu_si128, _mm_sub_epi8,
    };
    let mut out = [0u8; LANES];
    // SAFETY: SSE2 is part of every x86-64 target; `group` and `out` are 16 bytes
    // each, read and written unaligned. Ranks and PAD are below 128, so they compare
    // as signed bytes.
    unsafe {
        let x = _mm_loadu_si128(group.as_ptr().cast::<__m128i>());
        let below = _mm_cmpgt_epi8(_mm_set1_epi8(rank as i8), x);
        _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), _mm_sub_epi8(x, below));
    }
    out
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn age_below(group: &[u8; LANES], rank: u8) -> [u8; LANES] {
    age_below_portable(group, rank)
}

/// [`age_below`] a byte at a time, on any target.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn age_below_portable(group: &[u8; LANES], rank: u8) -> [u8; LANES] {
    group.map(|r| r + (r < rank) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Both ways of aging a group agree.
        #[test]
        fn aging_matches_bytes(group in proptest::array::uniform16(0u8..=PAD), rank in 0u8..64) {
            proptest::prop_assert_eq!(age_below(&group, rank), age_below_portable(&group, rank));
        }
    }
}
