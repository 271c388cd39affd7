//! Exact LRU stack distance in one pass, O(log M) a reference for M distinct pages
//! (Cașcaval et al., "Multiple Page Size Modeling and Optimization", PACT 2005, §3.1:
//! the reuse distance of a reference is the number of distinct pages touched since the
//! last reference to the same page; a fully associative LRU TLB of N entries misses
//! exactly on the references at distance N or more, and on first references).
//!
//! Each page keeps one *marker* at the time of its last reference. The distance of a
//! reference is the number of markers later than its page's: the pages touched since.
//! Time advances only on references that are not to the most recent page (a repeat
//! has distance 0 and moves no marker), and the markers live in a bitmap over time
//! whose counts per block of 512 positions are kept in a Fenwick tree: a count is one
//! prefix sum over blocks (a tree of a few thousand counters, in the host's L1 cache)
//! plus the population counts of the last block's words; a short distance is counted
//! from the bitmap directly. When time reaches the bitmap's end the live markers are
//! renumbered in order (compaction), so memory follows the distinct pages, not the
//! references. The last time of each page is found in an open-addressing table of its
//! own (a slot of 16 bytes a page), whose slots are prefetched a few references ahead.

/// Positions a block of the Fenwick tree counts.
const BLOCK_BITS: u32 = 512;
const BLOCK_WORDS: usize = (BLOCK_BITS / 64) as usize;
/// Distances up to this many positions are counted from the bitmap alone.
const NEAR: u32 = 2048;
/// References looked ahead for prefetching their table slots.
const AHEAD: usize = 8;
const EMPTY: u64 = u64::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    key: u64,
    time: u32,
}

/// The stack-distance engine over keys (page numbers, tagged with an address space).
#[derive(Clone)]
pub struct StackDistance {
    slots: Vec<Slot>,
    mask: usize,
    /// Keys held.
    len: usize,
    /// The marker bitmap over time, and the slot whose marker each position holds.
    bits: Vec<u64>,
    owner: Vec<u32>,
    /// Fenwick tree over blocks of [`BLOCK_BITS`] positions (1-based).
    tree: Vec<u32>,
    /// The next time; the markers set.
    now: u32,
    live: u32,
    /// The last key referenced (its marker is at `now - 1`).
    last: u64,
    compactions: u64,
}

impl Default for StackDistance {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn hash(key: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26)
}

#[inline]
fn prefetch(p: *const Slot) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl StackDistance {
    pub fn new() -> StackDistance {
        let slots = 1 << 12;
        let times = 1 << 13;
        StackDistance {
            slots: vec![
                Slot {
                    key: EMPTY,
                    time: 0
                };
                slots
            ],
            mask: slots - 1,
            len: 0,
            bits: vec![0; times / 64],
            owner: vec![0; times],
            tree: vec![0; times / BLOCK_BITS as usize + 1],
            now: 0,
            live: 0,
            last: EMPTY,
            compactions: 0,
        }
    }

    /// Distinct keys seen.
    pub fn distinct(&self) -> u64 {
        self.len as u64
    }

    /// Times the markers were renumbered.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<Slot>()
            + self.bits.len() * 8
            + self.owner.len() * 4
            + self.tree.len() * 4) as u64
    }

    /// Reference every key of `keys` in order, telling `distance` each one's distance
    /// (`None` for a first reference).
    #[inline]
    pub fn access_all(&mut self, keys: &[u64], mut distance: impl FnMut(Option<u64>)) {
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + AHEAD) {
                let at = hash(ahead) as usize & self.mask;
                prefetch(&self.slots[at]);
            }
            distance(self.access(key));
        }
    }

    /// Reference `key`: its distance, `None` for its first reference. `key` must not
    /// be `u64::MAX`.
    #[inline]
    pub fn access(&mut self, key: u64) -> Option<u64> {
        debug_assert_ne!(key, EMPTY);
        if key == self.last {
            return Some(0);
        }
        self.last = key;
        let (mut slot, found) = self.find(key);
        let distance = if found {
            let t = self.slots[slot].time;
            let d = self.after(t + 1);
            self.clear(t);
            Some(d as u64)
        } else {
            if (self.len + 1) * 2 > self.slots.len() {
                self.grow();
                slot = self.find(key).0;
            }
            self.slots[slot] = Slot { key, time: 0 };
            self.len += 1;
            self.live += 1;
            None
        };
        self.place(slot, distance)
    }

    /// Put the marker of the key at `slot` at the current time.
    #[inline]
    fn place(&mut self, slot: usize, distance: Option<u64>) -> Option<u64> {
        if self.now as usize == self.owner.len() {
            self.compact();
        }
        let t = self.now;
        self.bits[(t >> 6) as usize] |= 1 << (t & 63);
        self.add(t, 1);
        self.owner[t as usize] = slot as u32;
        self.slots[slot].time = t;
        self.now += 1;
        distance
    }

    /// The slot of `key`, and whether it holds it (else the empty slot for it).
    #[inline]
    fn find(&self, key: u64) -> (usize, bool) {
        let mut at = hash(key) as usize & self.mask;
        loop {
            let k = self.slots[at].key;
            if k == key {
                return (at, true);
            }
            if k == EMPTY {
                return (at, false);
            }
            at = (at + 1) & self.mask;
        }
    }

    /// Markers at positions `from` and later.
    #[inline]
    fn after(&self, from: u32) -> u32 {
        let now = self.now;
        if from >= now {
            return 0;
        }
        if now - from <= NEAR {
            // Positions at `now` and beyond hold no marker: the words up to `now - 1`.
            let (mut w, end) = ((from >> 6) as usize, ((now - 1) >> 6) as usize);
            let mut n = (self.bits[w] >> (from & 63)).count_ones();
            while w < end {
                w += 1;
                n += self.bits[w].count_ones();
            }
            return n;
        }
        self.live - self.before(from)
    }

    /// Markers at positions before `x`.
    #[inline]
    fn before(&self, x: u32) -> u32 {
        let block = (x / BLOCK_BITS) as usize;
        let mut n = 0;
        let mut i = block;
        while i > 0 {
            n += self.tree[i];
            i &= i - 1;
        }
        let first = block * BLOCK_WORDS;
        let w = (x >> 6) as usize;
        for word in &self.bits[first..w] {
            n += word.count_ones();
        }
        if x & 63 != 0 {
            n += (self.bits[w] & ((1u64 << (x & 63)) - 1)).count_ones();
        }
        n
    }

    #[inline]
    fn clear(&mut self, t: u32) {
        self.bits[(t >> 6) as usize] &= !(1 << (t & 63));
        self.add(t, u32::MAX); // -1, wrapping
    }

    #[inline]
    fn add(&mut self, t: u32, delta: u32) {
        let mut i = (t / BLOCK_BITS) as usize + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumber the markers in order from 0 (all but the one of the key being
    /// placed, which `place` sets next), in a bitmap twice as large as
    /// they need (at least as large as it was, if most positions are live).
    #[cold]
    fn compact(&mut self) {
        self.compactions += 1;
        let live = self.live as usize;
        let times = (2 * live + BLOCK_BITS as usize)
            .next_multiple_of(BLOCK_BITS as usize)
            .max(1 << 13);
        let mut owner = vec![0u32; times];
        let mut k = 0usize;
        for (w, &word) in self.bits.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let p = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let slot = self.owner[p];
                self.slots[slot as usize].time = k as u32;
                owner[k] = slot;
                k += 1;
            }
        }
        // The key being placed has no marker yet (it was cleared, or is new).
        debug_assert_eq!(k + 1, live);
        self.owner = owner;
        self.bits = vec![0; times / 64];
        for p in 0..k {
            self.bits[p >> 6] |= 1 << (p & 63);
        }
        self.now = k as u32;
        self.rebuild_tree();
    }

    fn rebuild_tree(&mut self) {
        let blocks = self.owner.len() / BLOCK_BITS as usize;
        self.tree = vec![0; blocks + 1];
        for b in 0..blocks {
            let n: u32 = self.bits[b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS]
                .iter()
                .map(|w| w.count_ones())
                .sum();
            self.tree[b + 1] += n;
            let parent = (b + 1) + ((b + 1) & (b + 1).wrapping_neg());
            if parent <= blocks {
                let v = self.tree[b + 1];
                self.tree[parent] += v;
            }
        }
    }

    /// Twice the table's slots; the markers' owners follow their keys.
    #[cold]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let size = old.len() * 2;
        self.slots = vec![
            Slot {
                key: EMPTY,
                time: 0
            };
            size
        ];
        self.mask = size - 1;
        let mut moved = vec![0u32; old.len()];
        for (i, s) in old.iter().enumerate().filter(|(_, s)| s.key != EMPTY) {
            let (at, _) = self.find(s.key);
            self.slots[at] = *s;
            moved[i] = at as u32;
        }
        for (w, &word) in self.bits.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let p = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                self.owner[p] = moved[self.owner[p] as usize];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A brute-force LRU stack, most recent first.
    fn brute(keys: &[u64]) -> Vec<Option<u64>> {
        let mut stack: Vec<u64> = Vec::new();
        keys.iter()
            .map(|&k| {
                let d = stack.iter().position(|&x| x == k);
                if let Some(d) = d {
                    stack.remove(d);
                }
                stack.insert(0, k);
                d.map(|d| d as u64)
            })
            .collect()
    }

    fn engine(keys: &[u64]) -> Vec<Option<u64>> {
        let mut s = StackDistance::new();
        let mut out = Vec::new();
        s.access_all(keys, |d| out.push(d));
        out
    }

    /// The paper's example: a b c c a gives ∞ ∞ ∞ 0 2.
    #[test]
    fn the_papers_example() {
        assert_eq!(
            engine(&[1, 2, 3, 3, 1]),
            [None, None, None, Some(0), Some(2)]
        );
    }

    /// Long enough to grow the table and compact the markers many times, with near
    /// and far distances.
    #[test]
    fn agrees_with_a_brute_force_stack_through_growth_and_compaction() {
        let mut x = 12345u64;
        let keys: Vec<u64> = (0..30_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // A hot set, a sweep, and a wide set.
                match i % 3 {
                    0 => x % 40,
                    1 => 1000 + (i / 3) % 3000,
                    _ => 100_000 + x % 5000,
                }
            })
            .collect();
        let mut s = StackDistance::new();
        let mut got = Vec::new();
        s.access_all(&keys, |d| got.push(d));
        assert!(s.compactions() > 3, "{} compactions", s.compactions());
        assert_eq!(got, brute(&keys));
        assert_eq!(s.distinct(), {
            let mut k = keys.clone();
            k.sort_unstable();
            k.dedup();
            k.len() as u64
        });
    }
}
