//! Where each valid entry of a wide one-set (fully associative) array sits, by its
//! key: an open-addressing table with linear probing and backward-shift deletion, at
//! most half full, so that a lookup reads a slot or two instead of every way.
//!
//! It only finds ways faster; which entries the array holds, and which one a miss
//! evicts, are decided by the array and its policy exactly as without it.

pub struct WayIndex {
    /// `way + 1` of the entry whose probe sequence passes here; 0: empty.
    slots: Vec<u32>,
    mask: usize,
    /// Entries indexed.
    len: usize,
}

/// The slot a key's probe sequence starts at.
#[inline(always)]
fn home(vpn: u64, meta: u32, mask: usize) -> usize {
    let k = vpn ^ (meta as u64).rotate_right(24);
    (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
}

impl WayIndex {
    pub fn new(ways: usize) -> WayIndex {
        let n = (2 * ways).next_power_of_two().max(8);
        WayIndex {
            slots: vec![0; n],
            mask: n - 1,
            len: 0,
        }
    }

    /// How many entries are indexed (the array's valid entries).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The way holding (vpn, meta), given the array's tags and metas.
    #[inline]
    pub fn find(&self, vpn: u64, meta: u32, tags: &[u64], metas: &[u32]) -> Option<usize> {
        let mut i = home(vpn, meta, self.mask);
        loop {
            let way = (self.slots[i] as usize).checked_sub(1)?;
            if tags[way] == vpn && metas[way] == meta {
                return Some(way);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Index `way`, which now holds (vpn, meta) (not indexed yet).
    #[inline]
    pub fn insert(&mut self, way: usize, vpn: u64, meta: u32) {
        let mut i = home(vpn, meta, self.mask);
        while self.slots[i] != 0 {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = way as u32 + 1;
        self.len += 1;
    }

    /// Forget `way`, which holds (vpn, meta) (indexed), closing the gap it leaves so
    /// that every other key stays reachable from its home slot.
    #[inline]
    pub fn remove(&mut self, way: usize, vpn: u64, meta: u32, tags: &[u64], metas: &[u32]) {
        let mut hole = home(vpn, meta, self.mask);
        while self.slots[hole] as usize != way + 1 {
            hole = (hole + 1) & self.mask;
        }
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let Some(w) = (self.slots[j] as usize).checked_sub(1) else {
                break;
            };
            // The entry at j may move back to the hole if its home is not in (hole, j].
            let h = home(tags[w], metas[w], self.mask);
            let between = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !between {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole] = 0;
        self.len -= 1;
    }

    /// Index afresh every valid entry (meta ≠ 0) of the arrays.
    pub fn rebuild(&mut self, tags: &[u64], metas: &[u32]) {
        self.slots.fill(0);
        self.len = 0;
        for (way, (&t, &m)) in tags.iter().zip(metas).enumerate() {
            if m != 0 {
                self.insert(way, t, m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    proptest::proptest! {
        /// Against a HashMap: random fills (into a free way or over a victim) and
        /// invalidations of a 32-way array keep every held key findable at its way
        /// and no other key findable.
        #[test]
        fn finds_exactly_what_is_held(ops in proptest::collection::vec((0u8..3, 0u64..48, 0u32..3, 0usize..32), 1..400)) {
            let ways = 32;
            let (mut tags, mut metas) = (vec![0u64; ways], vec![0u32; ways]);
            let mut ix = WayIndex::new(ways);
            let mut held: HashMap<(u64, u32), usize> = HashMap::new();
            for (op, vpn, asid, way) in ops {
                let meta = asid << 8 | 12;
                match op {
                    0 | 1 if !held.contains_key(&(vpn, meta)) => {
                        if metas[way] != 0 {
                            ix.remove(way, tags[way], metas[way], &tags, &metas);
                            held.remove(&(tags[way], metas[way]));
                        }
                        tags[way] = vpn;
                        metas[way] = meta;
                        ix.insert(way, vpn, meta);
                        held.insert((vpn, meta), way);
                    }
                    2 if metas[way] != 0 => {
                        ix.remove(way, tags[way], metas[way], &tags, &metas);
                        held.remove(&(tags[way], metas[way]));
                        metas[way] = 0;
                    }
                    _ => {}
                }
                proptest::prop_assert_eq!(ix.len(), held.len());
                for v in 0..48u64 {
                    for a in 0..3u32 {
                        let m = a << 8 | 12;
                        proptest::prop_assert_eq!(ix.find(v, m, &tags, &metas), held.get(&(v, m)).copied());
                    }
                }
            }
            let mut fresh = WayIndex::new(ways);
            fresh.rebuild(&tags, &metas);
            proptest::prop_assert_eq!(fresh.len(), held.len());
            for (&(v, m), &w) in &held {
                proptest::prop_assert_eq!(fresh.find(v, m, &tags, &metas), Some(w));
            }
        }
    }
}
