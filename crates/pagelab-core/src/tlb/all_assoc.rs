//! Every associativity of an LRU set-associative array in one pass: the stack
//! algorithm of Mattson, Gecsei, Slutz and Traiger ("Evaluation techniques for storage
//! hierarchies", IBM Systems Journal 9(2), 1970, doi:10.1147/sj.92.0078), one recency
//! stack per set, and one family of stacks per number of sets (as Hill and Smith,
//! "Evaluating associativity in CPU caches", IEEE Trans. Computers 38(12), 1989,
//! doi:10.1109/12.40842, do for a set count each).
//!
//! An LRU array of `W` ways holds, in each set, the `W` most recent distinct pages
//! of that set: the top of the set's stack. So a reference found at depth `d` of its
//! stack hits every array of more than `d` ways and misses the others, and a miss
//! evicts in an array of `W` ways when its set already held `W` pages. One lookup per
//! number of sets gives the hits, misses and evictions of every number of ways.
//!
//! Beside each reference the caller may give what a miss of it costs (a walk's
//! references and lines, the same whatever the array): the costs of the hits of each
//! geometry are summed, so that a geometry's walks are the others less its hits.

/// A page as an array tags it: its page number and its tag's metadata (address space
/// and size, [`super::set_assoc::tag_meta`]).
type Key = (u64, u32);

/// The stacks of one number of sets, as deep as its most ways.
struct Family {
    sets: usize,
    depth: usize,
    /// `depth` keys per set, most recent first; the first `len[set]` are valid.
    keys: Vec<Key>,
    len: Vec<u32>,
    /// By depth found: references, and the miss costs they carried.
    found: Vec<u64>,
    found_refs: Vec<u64>,
    found_lines: Vec<u64>,
    /// Pages not in the stack (a first reference, or deeper than `depth`), by the
    /// set's number of pages before it (`0..=depth`).
    absent: Vec<u64>,
    /// The depth the last reference was found at (`usize::MAX`: absent).
    last: usize,
}

/// What one geometry counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssocCounts {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// The sums of the miss costs of the references that hit.
    pub hit_refs: u64,
    pub hit_lines: u64,
}

/// LRU arrays of every (sets, ways) asked for, fed one stream of pages.
pub struct AllAssoc {
    families: Vec<Family>,
    /// The references found by depth, per family, at each mark.
    marks: Vec<Vec<Vec<u64>>>,
}

impl AllAssoc {
    /// For `geometries` as (sets, ways), each at least 1.
    pub fn new(geometries: &[(usize, usize)]) -> AllAssoc {
        let mut families: Vec<Family> = Vec::new();
        for &(sets, ways) in geometries {
            assert!(sets >= 1 && ways >= 1, "a geometry has sets and ways");
            match families.iter_mut().find(|f| f.sets == sets) {
                Some(f) => f.depth = f.depth.max(ways),
                None => families.push(Family {
                    sets,
                    depth: ways,
                    keys: Vec::new(),
                    len: Vec::new(),
                    found: Vec::new(),
                    found_refs: Vec::new(),
                    found_lines: Vec::new(),
                    absent: Vec::new(),
                    last: usize::MAX,
                }),
            }
        }
        for f in &mut families {
            f.keys = vec![(0, 0); f.sets * f.depth];
            f.len = vec![0; f.sets];
            f.found = vec![0; f.depth];
            f.found_refs = vec![0; f.depth];
            f.found_lines = vec![0; f.depth];
            f.absent = vec![0; f.depth + 1];
        }
        AllAssoc {
            families,
            marks: Vec::new(),
        }
    }

    /// A reference to page `vpn` tagged `meta`; a miss of it would cost `refs`
    /// references and `lines` lines.
    #[inline]
    pub fn access(&mut self, vpn: u64, meta: u32, refs: u64, lines: u64) {
        for f in &mut self.families {
            let set = (vpn % f.sets as u64) as usize;
            let depth = f.depth;
            let stack = &mut f.keys[set * depth..(set + 1) * depth];
            let len = f.len[set] as usize;
            let key = (vpn, meta);
            // Move to front in one pass: each key moves down one place until the page
            // is found (its old place takes the one above it) or the stack ends.
            let mut carry = key;
            let mut found = None;
            for (d, slot) in stack[..len].iter_mut().enumerate() {
                let here = std::mem::replace(slot, carry);
                if here == key {
                    found = Some(d);
                    break;
                }
                carry = here;
            }
            match found {
                Some(d) => {
                    f.last = d;
                    f.found[d] += 1;
                    f.found_refs[d] += refs;
                    f.found_lines[d] += lines;
                }
                None => {
                    // The deepest key falls off a full stack.
                    f.last = usize::MAX;
                    f.absent[len] += 1;
                    if len < depth {
                        stack[len] = carry;
                        f.len[set] = len as u32 + 1;
                    }
                }
            }
        }
    }

    /// The family of the arrays of `sets` sets, if asked for (see [`AllAssoc::missed`]).
    pub fn family(&self, sets: usize) -> Option<usize> {
        self.families.iter().position(|f| f.sets == sets)
    }

    /// Whether the last reference missed in the array of `ways` ways of `family`.
    #[inline]
    pub fn missed(&self, family: usize, ways: usize) -> bool {
        self.families[family].last >= ways
    }

    /// The references fed so far.
    pub fn references(&self) -> u64 {
        self.families.first().map_or(0, |f| {
            f.found.iter().sum::<u64>() + f.absent.iter().sum::<u64>()
        })
    }

    /// Keep the hits so far of every geometry, as the next mark (numbered from 0).
    pub fn mark(&mut self) {
        self.marks
            .push(self.families.iter().map(|f| f.found.clone()).collect());
    }

    /// The hits of the array of `sets` × `ways` at mark `mark`.
    pub fn hits_at(&self, mark: usize, sets: usize, ways: usize) -> Option<u64> {
        let i = self.families.iter().position(|f| f.sets == sets)?;
        let found = &self.marks.get(mark)?[i];
        (ways >= 1 && ways <= found.len()).then(|| found[..ways].iter().sum())
    }

    /// The counts of the array of `sets` × `ways`; `None` for a geometry not asked for.
    pub fn counts(&self, sets: usize, ways: usize) -> Option<AssocCounts> {
        let f = self.families.iter().find(|f| f.sets == sets)?;
        if ways > f.depth || ways == 0 {
            return None;
        }
        let sum = |v: &[u64]| v.iter().sum::<u64>();
        let hits = sum(&f.found[..ways]);
        let all = sum(&f.found) + sum(&f.absent);
        Some(AssocCounts {
            hits,
            misses: all - hits,
            evictions: sum(&f.found[ways..]) + sum(&f.absent[ways..]),
            hit_refs: sum(&f.found_refs[..ways]),
            hit_lines: sum(&f.found_lines[..ways]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Asid, PageSize, VirtAddr};
    use crate::pagetable::{Perms, Translation};
    use crate::replacement::Lru;
    use crate::tlb::{SetAssocTlb, Tlb};

    /// The counts of one LRU array fed the stream, as the simulator keeps them.
    fn simulated(sets: usize, ways: usize, stream: &[(u64, u16)]) -> (u64, u64, u64) {
        let mut t = SetAssocTlb::<Lru>::new(sets, ways, &[PageSize::K4], 0);
        let (mut hits, mut misses) = (0, 0);
        for &(vpn, asid) in stream {
            let va = VirtAddr(vpn << 12);
            if t.access(Asid(asid), va).is_some() {
                hits += 1;
            } else {
                misses += 1;
                let tr = Translation {
                    pfn: crate::addr::Pfn(vpn),
                    size: PageSize::K4,
                    perms: Perms::RW,
                };
                t.fill(Asid(asid), va, tr);
            }
        }
        (hits, misses, t.stats().evictions)
    }

    #[test]
    fn every_geometry_counts_as_its_own_lru_array() {
        let mut state = 7;
        let mut below = |n: u64| crate::rng::splitmix64(&mut state) % n;
        for round in 0..40 {
            let pages = 1 + below(300);
            let stream: Vec<(u64, u16)> =
                (0..3000).map(|_| (below(pages), below(2) as u16)).collect();
            let geometries: Vec<(usize, usize)> = (0..6)
                .map(|_| (1 + below(40) as usize, 1 + below(20) as usize))
                .collect();
            let mut all = AllAssoc::new(&geometries);
            for &(vpn, asid) in &stream {
                all.access(
                    vpn,
                    crate::tlb::set_assoc::tag_meta(Asid(asid), PageSize::K4),
                    4,
                    3,
                );
            }
            for &(sets, ways) in &geometries {
                let c = all.counts(sets, ways).unwrap();
                let want = simulated(sets, ways, &stream);
                assert_eq!(
                    (c.hits, c.misses, c.evictions),
                    want,
                    "round {round}: {sets}×{ways}"
                );
                assert_eq!((c.hit_refs, c.hit_lines), (4 * c.hits, 3 * c.hits));
            }
        }
    }

    /// Worked by hand: one set of two ways, pages A B A C B A.
    #[test]
    fn a_stream_worked_by_hand() {
        let mut all = AllAssoc::new(&[(1, 1), (1, 2), (1, 3)]);
        for (i, vpn) in [1, 2, 1, 3, 2, 1].into_iter().enumerate() {
            if i == 3 {
                all.mark();
            }
            all.access(vpn, 0, 1, 1);
        }
        assert_eq!(all.hits_at(0, 1, 2), Some(1));
        assert_eq!(all.hits_at(0, 1, 3), Some(1));
        assert_eq!(all.hits_at(1, 1, 3), None);
        assert_eq!(all.references(), 6);
        // The last reference, A, was found at depth 2: it missed with 1 or 2 ways.
        let f = all.family(1).unwrap();
        assert!(all.missed(f, 2) && !all.missed(f, 3));
        // Depths: A -, B -, A 1, C -, B 2, A 2.
        let c = |w| all.counts(1, w).unwrap();
        assert_eq!((c(1).hits, c(1).misses, c(1).evictions), (0, 6, 5));
        assert_eq!((c(2).hits, c(2).misses, c(2).evictions), (1, 5, 3));
        assert_eq!((c(3).hits, c(3).misses, c(3).evictions), (3, 3, 0));
        assert_eq!(all.counts(2, 1), None);
    }
}
