//! A fully associative array with LRU replacement, of one page size and no frames:
//! the shape of every walk cache the presets configure (2, 4 or 32 ways). It holds
//! and evicts exactly what a [`super::SetAssocTlb`] of one set with LRU replacement
//! holds and evicts (a fill takes the lowest free way, else the way touched longest
//! ago), in fewer steps: no policy chosen at run time, no frames, storage inline (no
//! pointer to follow), the ways found by comparing a byte hashing each key 16 at a time
//! (only the valid ways whose byte matches have their keys compared), and their order
//! kept as a rank byte per way (0: the newest), which a touch and a search for the
//! oldest also read 16 at a time. Loops run over as many groups of 16 as the array
//! has, a number known at compile time. The tests of `walk_cache` check that both
//! arrays give the same counts.

use super::fingerprint::{equal_lanes, print, LANES};
use crate::addr::{Asid, PageSize, VirtAddr};

/// Widest array kept this way (a bit per way in the masks, four groups of lanes).
pub const MAX_WAYS: usize = 64;

/// Groups of [`LANES`] ways at most.
const GROUPS: usize = MAX_WAYS / LANES;

pub struct FaLru {
    ways: usize,
    /// Groups of lanes in use: `ways` rounded up to [`LANES`].
    groups: usize,
    /// The valid ways, a bit each.
    valid: u64,
    /// Every way, a bit each.
    all: u64,
    /// A byte per way hashing its key ([`print`]): a lookup compares all of them at
    /// once and checks the keys of the valid ways whose byte matches.
    prints: [[u8; LANES]; GROUPS],
    /// The rank of each way in the order of last touches (0: the newest; a free way
    /// ranks as the oldest). Padding lanes hold [`PAD`].
    ranks: [[u8; LANES]; GROUPS],
    /// Region numbers, and their tag metas (0: the way is free).
    tags: [u64; MAX_WAYS],
    metas: [u32; MAX_WAYS],
}

/// The rank of a padding lane: above every real rank (which is below 64), and below
/// 128 so that ranks compare as signed bytes.
const PAD: u8 = 127;

impl FaLru {
    /// `ways` from 1 to [`MAX_WAYS`]. The ways start ordered by index, way 0 the
    /// oldest (as [`crate::replacement::Lru`]'s list).
    pub fn new(ways: usize) -> FaLru {
        assert!((1..=MAX_WAYS).contains(&ways) && MAX_WAYS <= 64);
        let mut ranks = [[PAD; LANES]; GROUPS];
        for way in 0..ways {
            ranks[way / LANES][way % LANES] = (ways - 1 - way) as u8;
        }
        FaLru {
            ways,
            groups: ways.div_ceil(LANES),
            valid: 0,
            all: u64::MAX >> (64 - ways),
            prints: [[0; LANES]; GROUPS],
            ranks,
            tags: [0; MAX_WAYS],
            metas: [0; MAX_WAYS],
        }
    }

    /// Look (vpn, meta) up; on a hit, it becomes the newest.
    #[inline(always)]
    pub fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        match self.groups {
            1 => self.touch_in::<1>(vpn, meta),
            2 => self.touch_in::<2>(vpn, meta),
            3 => self.touch_in::<3>(vpn, meta),
            _ => self.touch_in::<4>(vpn, meta),
        }
    }

    /// Fill (vpn, meta), known not to be held: the lowest free way, else the way
    /// touched longest ago.
    #[inline(always)]
    pub fn fill_absent(&mut self, vpn: u64, meta: u32) {
        match self.groups {
            1 => self.fill_in::<1>(vpn, meta),
            2 => self.fill_in::<2>(vpn, meta),
            3 => self.fill_in::<3>(vpn, meta),
            _ => self.fill_in::<4>(vpn, meta),
        }
    }

    /// [`FaLru::touch`] for `G` groups of lanes (loops of known length).
    #[inline(always)]
    fn touch_in<const G: usize>(&mut self, vpn: u64, meta: u32) -> bool {
        let p = print(vpn, meta);
        let mut candidates = 0u64;
        for g in 0..G {
            candidates |= (equal_lanes(&self.prints[g], p) as u64) << (g * LANES);
        }
        candidates &= self.valid;
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize % MAX_WAYS;
            if self.tags[way] == vpn && self.metas[way] == meta {
                self.make_newest::<G>(way);
                return true;
            }
            candidates &= candidates - 1;
        }
        false
    }

    /// Every way newer than `way` ages by one; `way` becomes the newest. (For the
    /// newest way already, nothing changes.)
    #[inline(always)]
    fn make_newest<const G: usize>(&mut self, way: usize) {
        let (g, lane) = (way / LANES % GROUPS, way % LANES);
        let rank = self.ranks[g][lane];
        for group in self.ranks[..G].iter_mut() {
            *group = age_below(group, rank);
        }
        self.ranks[g][lane] = 0;
    }

    /// [`FaLru::fill_absent`] for `G` groups of lanes.
    #[inline(always)]
    fn fill_in<const G: usize>(&mut self, vpn: u64, meta: u32) {
        let free = !self.valid & self.all;
        let way = if free != 0 {
            free.trailing_zeros() as usize
        } else {
            self.oldest::<G>()
        } % MAX_WAYS;
        self.valid |= 1 << way;
        self.tags[way] = vpn;
        self.metas[way] = meta;
        self.prints[way / LANES % GROUPS][way % LANES] = print(vpn, meta);
        self.make_newest::<G>(way);
    }

    /// The way of the highest rank.
    #[inline(always)]
    fn oldest<const G: usize>(&self) -> usize {
        let last = (self.ways - 1) as u8;
        let mut at = 0u64;
        for g in 0..G {
            at |= (equal_lanes(&self.ranks[g], last) as u64) << (g * LANES);
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
        let last = (self.ways - 1) as u8;
        for way in 0..self.ways {
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
        self.ways
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
