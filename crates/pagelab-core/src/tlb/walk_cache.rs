//! Paging-structure caches ("page-walk caches") of a radix page table. The cache of
//! table level L holds entries of level L, found by the virtual-address bits that index
//! level L and the levels above; a walk that hits it skips the references to level L
//! and above. Each cache is a TLB array whose "page" is the region one level-L entry
//! covers (2M for page-directory entries, 1G for PDPT entries, 512G for PML4 entries).
//!
//! The caches are probed lowest level first (the hit that skips most wins, as in
//! Intel's description); a cache is counted as looked up when it is probed. After the
//! walk, every cache whose level's entry the walk read as a pointer to a lower table
//! is filled.

use super::fa_lru::{self, FaLru};
use super::hierarchy::AnyArray;
use super::set_assoc::tag_meta;
use super::Tlb;
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::config::{SetAssocConfig, WalkCacheConfig};
use crate::pagetable::Perms;
use serde::Serialize;

struct WalkCache<A> {
    level: u32,
    /// The region one entry covers.
    size: PageSize,
    array: A,
    hits: u64,
    misses: u64,
    /// The key (region number, tag meta) the array touched last, by a hit or a fill:
    /// a hit on it again changes no policy's state (see [`Replacement::hit`]), so it
    /// is counted without a lookup. Meta 0: none (after an invalidation or a flush).
    ///
    /// [`Replacement::hit`]: crate::replacement::Replacement::hit
    last: (u64, u32),
}

impl<A: CacheArray> WalkCache<A> {
    /// The key of the region of `va` in `asid`.
    #[inline(always)]
    fn key(&self, asid: Asid, va: VirtAddr) -> (u64, u32) {
        (va.0 >> self.size.shift(), tag_meta(asid, self.size))
    }

    /// Look the region of `va` up in `asid`, and touch it if held.
    #[inline(always)]
    fn touch(&mut self, asid: Asid, va: VirtAddr, memo: bool) -> bool {
        let key = self.key(asid, va);
        if key == self.last && memo {
            return true;
        }
        let held = self.array.touch(key.0, key.1);
        if held {
            self.last = key;
        }
        held
    }

    /// Fill the region of `va` in `asid`, known not to be held.
    #[inline(always)]
    fn fill(&mut self, asid: Asid, va: VirtAddr) {
        let key = self.key(asid, va);
        self.array.fill_absent(key.0, key.1);
        self.last = key;
    }
}

/// [`WalkCache::last`] when there is none.
const NO_HIT: (u64, u32) = (0, 0);

/// What a walk cache keeps its entries in: an array of one page size (the region an
/// entry covers) whose entries hold no frame.
trait CacheArray {
    fn touch(&mut self, vpn: u64, meta: u32) -> bool;
    fn fill_absent(&mut self, vpn: u64, meta: u32);
    fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64);
    fn flush_all(&mut self);
    fn capacity(&self) -> usize;
}

/// Fully associative with LRU replacement: every preset's walk caches.
impl CacheArray for FaLru {
    #[inline(always)]
    fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        FaLru::touch(self, vpn, meta)
    }
    #[inline(always)]
    fn fill_absent(&mut self, vpn: u64, meta: u32) {
        FaLru::fill_absent(self, vpn, meta)
    }
    fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        FaLru::invalidate_range(self, asid, start, len)
    }
    fn flush_all(&mut self) {
        FaLru::flush_all(self)
    }
    fn capacity(&self) -> usize {
        FaLru::capacity(self)
    }
}

/// Any shape and policy, in a TLB array.
impl CacheArray for AnyArray {
    #[inline(always)]
    fn touch(&mut self, vpn: u64, meta: u32) -> bool {
        AnyArray::touch(self, vpn, meta)
    }
    #[inline(always)]
    fn fill_absent(&mut self, vpn: u64, meta: u32) {
        AnyArray::fill_absent(self, vpn, meta, Pfn(0), Perms::NONE)
    }
    fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        Tlb::invalidate_range(self, asid, start, len)
    }
    fn flush_all(&mut self) {
        Tlb::flush_all(self)
    }
    fn capacity(&self) -> usize {
        Tlb::capacity(self)
    }
}

/// The caches, lowest level first: all in arrays of their own when all are fully
/// associative with LRU replacement (so that a walk's lookups compile for that
/// array alone), else all in TLB arrays.
enum Caches {
    FaLru(Vec<WalkCache<FaLru>>),
    Any(Vec<WalkCache<AnyArray>>),
}

/// Hits and misses of one walk cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WalkCacheReport {
    /// The table level whose entries it holds.
    pub level: u32,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub hit_ratio: f64,
}

pub struct WalkCaches {
    caches: Caches,
    /// Levels of the table (4 or 5): the root's entries are level `top`.
    top: u32,
    /// Whether a hit on the key touched last is counted without a lookup (see
    /// [`WalkCache::last`]): on in every set of caches built, off in the test that
    /// checks it changes nothing.
    memo: bool,
}

impl Default for WalkCaches {
    fn default() -> WalkCaches {
        WalkCaches {
            caches: Caches::Any(Vec::new()),
            top: 0,
            memo: true,
        }
    }
}

impl WalkCaches {
    /// `table_levels` is the radix table's depth; `None` when the page table is no
    /// radix table (then no walk cache may be configured).
    pub fn build(
        configs: &[WalkCacheConfig],
        table_levels: Option<u32>,
        seed: u64,
    ) -> Result<WalkCaches, String> {
        Self::build_with(configs, table_levels, seed, true)
    }

    /// [`WalkCaches::build`]; `fa_lru`: when every cache is fully associative with
    /// LRU replacement, they get arrays of their own ([`FaLru`]; off only in the test
    /// that checks it counts the same).
    fn build_with(
        configs: &[WalkCacheConfig],
        table_levels: Option<u32>,
        seed: u64,
        fa_lru: bool,
    ) -> Result<WalkCaches, String> {
        let mut caches = Vec::with_capacity(configs.len());
        for (i, c) in configs.iter().enumerate() {
            let field = format!("walk_caches[{i}]");
            let Some(top) = table_levels else {
                return Err(format!(
                    "{field}: walk caches hold radix-table entries, and the page table is no radix table"
                ));
            };
            if c.level < 2 || c.level > top {
                return Err(format!(
                    "{field}.level: {} is not a level of a {top}-level table that points to another table (2..={top})",
                    c.level
                ));
            }
            if configs[..i].iter().any(|o| o.level == c.level) {
                return Err(format!(
                    "{field}.level: two walk caches hold level {} entries",
                    c.level
                ));
            }
            let size = PageSize::from_shift(12 + 9 * (c.level - 1))
                .expect("levels up to 5 cover at most 2^48 bytes");
            // Built either way: it checks the configuration and names its field.
            let array = AnyArray::build(
                &SetAssocConfig {
                    sets: c.sets,
                    ways: c.ways,
                    replacement: c.replacement.clone(),
                    page_sizes: vec![size],
                    hit_cycles: 0.0,
                },
                super::array_seed(seed, &field),
                &field,
            )?;
            caches.push(WalkCache {
                level: c.level,
                size,
                array,
                hits: 0,
                misses: 0,
                last: NO_HIT,
            });
        }
        caches.sort_by_key(|c| c.level);
        let fully_lru = |c: &WalkCacheConfig| {
            c.sets == 1 && c.replacement == "lru" && c.ways <= fa_lru::MAX_WAYS
        };
        let caches = if fa_lru && !caches.is_empty() && configs.iter().all(fully_lru) {
            Caches::FaLru(
                caches
                    .into_iter()
                    .map(|c| WalkCache {
                        array: FaLru::new(CacheArray::capacity(&c.array)),
                        level: c.level,
                        size: c.size,
                        hits: 0,
                        misses: 0,
                        last: NO_HIT,
                    })
                    .collect(),
            )
        } else {
            Caches::Any(caches)
        };
        Ok(WalkCaches {
            caches,
            top: table_levels.unwrap_or(0),
            memo: true,
        })
    }

    pub fn is_empty(&self) -> bool {
        match &self.caches {
            Caches::FaLru(c) => c.is_empty(),
            Caches::Any(c) => c.is_empty(),
        }
    }

    /// A walk of `va` read `walk_len` entries, root first, and stopped at the last
    /// (a leaf, or an absent entry: a fault): how many of the leading references the
    /// caches made unnecessary. Fills the caches with the pointer entries read.
    #[inline(always)]
    pub fn filter(&mut self, asid: Asid, va: VirtAddr, walk_len: usize) -> usize {
        let (top, memo) = (self.top as usize, self.memo);
        match &mut self.caches {
            Caches::FaLru(c) => filter(c, top, memo, asid, va, walk_len),
            Caches::Any(c) => filter(c, top, memo, asid, va, walk_len),
        }
    }

    pub fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        match &mut self.caches {
            Caches::FaLru(c) => invalidate_range(c, asid, start, len),
            Caches::Any(c) => invalidate_range(c, asid, start, len),
        }
    }

    pub fn flush_all(&mut self) {
        match &mut self.caches {
            Caches::FaLru(c) => flush_all(c),
            Caches::Any(c) => flush_all(c),
        }
    }

    pub fn report(&self) -> Vec<WalkCacheReport> {
        match &self.caches {
            Caches::FaLru(c) => report(c),
            Caches::Any(c) => report(c),
        }
    }
}

/// [`WalkCaches::filter`] over caches of one kind of array (`top`: the table's
/// levels).
#[inline(always)]
fn filter<A: CacheArray>(
    caches: &mut [WalkCache<A>],
    top: usize,
    memo: bool,
    asid: Asid,
    va: VirtAddr,
    walk_len: usize,
) -> usize {
    // The entry of level L is reference `top - L`; it points to a lower table
    // when the walk went on past it: L >= lowest.
    let lowest = (top + 2).saturating_sub(walk_len);
    // Most walks hit the lowest cache, most of those on the key it touched last: that
    // case stays small and inline.
    if let Some(c) = caches.first_mut() {
        if memo && c.level as usize >= lowest && c.key(asid, va) == c.last {
            c.hits += 1;
            return top - c.level as usize + 1;
        }
    }
    probe(caches, top, memo, asid, va, lowest)
}

/// [`filter`] past the memo of the lowest cache: the caches the walk reached are
/// probed lowest first up to the first that holds the entry, and those that missed
/// are filled.
#[inline(never)]
fn probe<A: CacheArray>(
    caches: &mut [WalkCache<A>],
    top: usize,
    memo: bool,
    asid: Asid,
    va: VirtAddr,
    lowest: usize,
) -> usize {
    let mut skip = 0;
    let mut held = caches.len();
    for (i, c) in caches.iter_mut().enumerate() {
        if (c.level as usize) < lowest {
            continue;
        }
        if c.touch(asid, va, memo) {
            c.hits += 1;
            skip = top - c.level as usize + 1;
            held = i;
            break;
        }
        c.misses += 1;
    }
    // The caches filled are exactly those probed that missed (the lower ones).
    for c in caches[..held].iter_mut() {
        if c.level as usize >= lowest {
            c.fill(asid, va);
        }
    }
    skip
}

fn invalidate_range<A: CacheArray>(
    caches: &mut [WalkCache<A>],
    asid: Asid,
    start: VirtAddr,
    len: u64,
) {
    for c in caches.iter_mut() {
        c.last = NO_HIT;
        c.array.invalidate_range(asid, start, len);
    }
}

fn flush_all<A: CacheArray>(caches: &mut [WalkCache<A>]) {
    for c in caches.iter_mut() {
        c.last = NO_HIT;
        c.array.flush_all();
    }
}

fn report<A: CacheArray>(caches: &[WalkCache<A>]) -> Vec<WalkCacheReport> {
    caches
        .iter()
        .map(|c| WalkCacheReport {
            level: c.level,
            entries: c.array.capacity() as u64,
            hits: c.hits,
            misses: c.misses,
            hit_ratio: if c.hits + c.misses > 0 {
                c.hits as f64 / (c.hits + c.misses) as f64
            } else {
                0.0
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches(levels: &[u32]) -> WalkCaches {
        let configs: Vec<_> = levels
            .iter()
            .map(|&level| WalkCacheConfig {
                level,
                ..WalkCacheConfig::default()
            })
            .collect();
        WalkCaches::build(&configs, Some(4), 0).unwrap()
    }

    #[test]
    fn a_pde_hit_leaves_only_the_pte_reference() {
        let mut c = caches(&[2, 3, 4]);
        let a = VirtAddr(0x7f00_0020_1000);
        // Cold: nothing skipped; all three pointer levels filled.
        assert_eq!(c.filter(Asid(0), a, 4), 0);
        // Same 2M region: the PDE cache hits, only the PTE is read.
        assert_eq!(c.filter(Asid(0), VirtAddr(a.0 + 0x1000), 4), 3);
        // Another 2M region of the same 1G region: the PDPTE cache hits.
        assert_eq!(c.filter(Asid(0), VirtAddr(a.0 + (2 << 20)), 4), 2);
        // Another 1G region of the same 512G region: the PML4E cache hits.
        assert_eq!(c.filter(Asid(0), VirtAddr(a.0 + (1 << 30)), 4), 1);
        // Another address space shares nothing.
        assert_eq!(c.filter(Asid(1), a, 4), 0);
        let r = c.report();
        assert_eq!((r[0].level, r[0].hits, r[0].misses), (2, 1, 4));
    }

    #[test]
    fn a_superpage_walk_uses_only_the_levels_above_its_leaf() {
        let mut c = caches(&[2, 3]);
        let a = VirtAddr(0x4000_0000);
        // A 2M page: the walk reads PML4E, PDPTE, PDE (leaf): the PDE is no pointer.
        assert_eq!(c.filter(Asid(0), a, 3), 0);
        assert_eq!(c.filter(Asid(0), a, 3), 2);
        assert_eq!(c.report()[0].hits + c.report()[0].misses, 0);
    }

    /// Random walks, invalidations and flushes through two sets of walk caches of
    /// one configuration, the second with the memo and the arrays of their own as
    /// `(memo, fa_lru)` say: every walk skips as many references in both, and the
    /// reports are equal.
    fn run_both(
        ops: &[(u64, u16, usize, u8)],
        (sets, ways): (usize, usize),
        policy: &str,
        seed: u64,
        (memo, fa_lru): (bool, bool),
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let configs: Vec<_> = [2, 3, 4]
            .iter()
            .map(|&level| WalkCacheConfig {
                level,
                sets,
                ways,
                replacement: policy.into(),
            })
            .collect();
        let mut with = WalkCaches::build(&configs, Some(4), seed).unwrap();
        let mut without = WalkCaches::build_with(&configs, Some(4), seed, fa_lru).unwrap();
        without.memo = memo;
        for (step, &(region, asid, walk_len, what)) in ops.iter().enumerate() {
            // Regions of 2M spread over a few 1G and 512G regions.
            let va = VirtAddr((region % 8) << 21 | (region / 8 % 3) << 30 | (region / 24) << 39);
            let asid = Asid(asid);
            match what {
                0 => {
                    with.flush_all();
                    without.flush_all();
                }
                1 => {
                    with.invalidate_range(asid, va, 1 << 21);
                    without.invalidate_range(asid, va, 1 << 21);
                }
                _ => {
                    let (a, b) = (
                        with.filter(asid, va, walk_len),
                        without.filter(asid, va, walk_len),
                    );
                    proptest::prop_assert_eq!(a, b, "{} {}×{}: step {}", policy, sets, ways, step);
                }
            }
        }
        proptest::prop_assert_eq!(
            with.report(),
            without.report(),
            "{} {}×{}",
            policy,
            sets,
            ways
        );
        Ok(())
    }

    proptest::proptest! {
        /// Hits on the key touched last, counted without a lookup, change nothing, for
        /// every policy.
        #[test]
        fn the_memo_changes_nothing(
            ops in proptest::collection::vec((0u64..48, 0u16..2, 2usize..=5, 0u8..40), 1..400),
            shape in proptest::sample::select(vec![(1usize, 2usize), (1, 4), (1, 32), (2, 4), (4, 3)]),
            seed in proptest::prelude::any::<u64>(),
        ) {
            for policy in ["lru", "nru", "plru", "fifo", "random"] {
                run_both(&ops, shape, policy, seed, (false, false))?;
            }
        }

        /// Fully associative LRU caches count in an array of their own as in a TLB
        /// array.
        #[test]
        fn the_fa_lru_array_counts_as_a_tlb_array(
            ops in proptest::collection::vec((0u64..100, 0u16..2, 2usize..=5, 0u8..40), 1..600),
            ways in proptest::sample::select(vec![1usize, 2, 3, 4, 15, 16, 17, 32, 64]),
        ) {
            run_both(&ops, (1, ways), "lru", 0, (true, false))?;
        }
    }

    #[test]
    fn bad_levels_are_named() {
        let e = WalkCaches::build(
            &[WalkCacheConfig {
                level: 1,
                ..WalkCacheConfig::default()
            }],
            Some(4),
            0,
        )
        .err()
        .unwrap();
        assert!(e.starts_with("walk_caches[0].level"), "{e}");
        let e = WalkCaches::build(&[WalkCacheConfig::default()], None, 0)
            .err()
            .unwrap();
        assert!(e.contains("no radix table"), "{e}");
    }
}
