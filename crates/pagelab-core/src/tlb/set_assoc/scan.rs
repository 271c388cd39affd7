//! A set-associative array borrowed apart for a specialized loop: the same lookups and
//! fills as the array's own, with the replacement policy's state possibly lent to the
//! loop.

use super::*;

/// A [`SetAssocTlb`] borrowed apart (see [`SetAssocTlb::scan`]): lookups and fills
/// exactly as the array's own, for an array of `W` ways and `mask + 1` sets, except
/// that fills write no frame (see [`Scan::fill_key`]). The policy's choices are made
/// by `P`: the policy itself, or its state lent to the loop.
pub struct Scan<'a, R: Replacement, const W: usize, P: SetPolicy = &'a mut R> {
    pub(super) mask: u64,
    pub(super) valid: &'a mut usize,
    pub(super) tags: &'a mut [u64],
    pub(super) metas: &'a mut [u32],
    pub(super) policy: P,
    pub(super) _policy: std::marker::PhantomData<&'a mut R>,
    /// The array's low tag bits (when `W` is 12).
    pub(super) lows: &'a mut [u32],
    /// The live entries by size, when the array holds several sizes.
    pub(super) live: Option<&'a mut [u32; 64]>,
    pub(super) stats: &'a mut TlbStats,
    pub(super) evictions: u64,
}

impl<R: Replacement, const W: usize, P: SetPolicy> Scan<'_, R, W, P> {
    /// As [`SetAssocTlb::touch`].
    #[inline(always)]
    pub fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        let set = (vpn & self.mask) as usize;
        let base = set * W;
        let (Some(tags), Some(metas)) = (
            self.tags.get(base..base + W),
            self.metas.get(base..base + W),
        ) else {
            return false;
        };
        let found = if W == 12 {
            let Some(lows) = self.lows.get(base..base + 12) else {
                return false;
            };
            let lows: &[u32; 12] = lows.try_into().expect("12 ways");
            SetAssocTlb::<R>::search_lows(lows, tags, metas, vpn, meta)
        } else {
            SetAssocTlb::<R>::search(tags, metas, vpn, meta)
        };
        match found {
            Some(way) => {
                self.policy.hit(set, way);
                true
            }
            None => false,
        }
    }

    /// As [`SetAssocTlb::count`].
    pub fn count(&mut self, hits: u64, misses: u64) {
        self.stats.add(hits, misses);
    }

    /// As [`SetAssocTlb::fill_absent`], for a decoupled run, whose entries hold
    /// placeholder frames that no count reads: only the key is written; the way keeps
    /// the frame and permissions it held. (Two stores fewer per fill, and a loop of
    /// lookups and fills leaves the frames out of the host's cache.)
    #[inline(always)]
    pub fn fill_key(&mut self, vpn: u64, meta: u32) {
        let set = (vpn & self.mask) as usize;
        let base = set * W;
        let free = if *self.valid == self.metas.len() {
            None
        } else {
            SetAssocTlb::<R>::first_free(&self.metas[base..base + W])
        };
        let way = match free {
            Some(way) => way,
            None => {
                self.evictions += 1;
                self.policy.victim(set)
            }
        };
        let i = base + way;
        *self.valid += (self.metas[i] == 0) as usize;
        if let Some(live) = self.live.as_deref_mut() {
            SetAssocTlb::<R>::relive(live, self.metas[i], meta);
        }
        if W == 12 {
            self.lows[i] = vpn as u32;
        }
        self.tags[i] = vpn;
        self.metas[i] = meta;
        self.policy.fill(set, way);
    }
}

impl<R: Replacement, const W: usize, P: SetPolicy> Drop for Scan<'_, R, W, P> {
    fn drop(&mut self) {
        self.stats.evictions += self.evictions;
    }
}
