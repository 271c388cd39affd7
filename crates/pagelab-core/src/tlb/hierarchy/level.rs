//! One level of a hierarchy: its arrays, its parent and its counts by page size.

use super::*;

/// One level: its arrays and its counts. Counts by page size are indexed by the
/// size's log2.
pub struct Level {
    pub name: String,
    pub serves: Serves,
    pub hit_cycles: f64,
    pub(super) arrays: Vec<AnyArray>,
    /// A range TLB or direct segment looked up when the arrays miss.
    pub(super) range: Option<Box<crate::range::RangeTlb>>,
    /// What a hit of `range` refills the levels below with.
    pub(super) range_fill: crate::config::RangeFill,
    pub(super) parent: Option<usize>,
    /// The array that keeps a translation of the base page size at that size, if one
    /// does (see [`Hierarchy::base_parts`]).
    pub(super) base_array: Option<usize>,
    pub(super) hits: [u64; 64],
    pub(super) misses: [u64; 64],
}

impl Level {
    /// Probe the arrays; the size of the entry hit. Counts hits, not misses (the miss
    /// path counts those, once it knows the size of the translation that served them).
    #[inline(always)]
    pub(super) fn access(&mut self, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        let hit = match &mut self.arrays[..] {
            [one] => one.access(asid, va),
            arrays => arrays.iter_mut().find_map(|a| a.access(asid, va)),
        };
        if let Some(size) = hit {
            self.hits[size.shift() as usize & 63] += 1;
        }
        hit
    }

    pub(super) fn lookup(&mut self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        for a in self.arrays.iter_mut() {
            if let Some(t) = a.lookup(asid, va) {
                self.hits[t.size.shift() as usize] += 1;
                return Some(t);
            }
        }
        None
    }

    /// Put `t` in the array that holds the largest page size no larger than `t.size`
    /// (the first such array on a tie). The size of the entry made.
    pub(super) fn fill(&mut self, asid: Asid, va: VirtAddr, t: Translation) -> Option<PageSize> {
        if let [one] = &mut self.arrays[..] {
            return one.fill(asid, va, t);
        }
        let (i, _) = self.fill_array(t.size)?;
        self.arrays[i].fill(asid, va, t)
    }

    /// The array a translation of `size` fills, and the size it keeps it as.
    pub(super) fn fill_array(&self, size: PageSize) -> Option<(usize, PageSize)> {
        let mut best: Option<(usize, PageSize)> = None;
        for (i, a) in self.arrays.iter().enumerate() {
            if let Some(s) = a.fits(size) {
                if best.map_or(true, |(_, b)| s > b) {
                    best = Some((i, s));
                }
            }
        }
        best
    }

    /// The range TLB or direct segment beside the level, if any.
    pub fn range(&self) -> Option<&crate::range::RangeTlb> {
        self.range.as_deref()
    }

    pub fn entries(&self) -> usize {
        self.arrays.iter().map(|a| a.capacity()).sum()
    }
    pub fn hits(&self) -> u64 {
        self.hits.iter().sum()
    }
    pub fn misses(&self) -> u64 {
        self.misses.iter().sum()
    }
    pub fn evictions(&self) -> u64 {
        self.arrays.iter().map(|a| a.stats().evictions).sum()
    }
    /// (page size, hits, misses) for every size with any.
    pub fn by_size(&self) -> Vec<SizeCounts> {
        (0..64)
            .filter(|&s| self.hits[s] + self.misses[s] > 0)
            .map(|s| SizeCounts {
                size: PageSize::from_shift(s as u32)
                    .expect("counted sizes are page sizes")
                    .to_string(),
                hits: self.hits[s],
                misses: self.misses[s],
            })
            .collect()
    }
    /// The name of the level a miss goes to next.
    pub fn parent_name<'h>(&self, h: &'h Hierarchy) -> Option<&'h str> {
        self.parent.map(|p| h.levels[p].name.as_str())
    }

    /// The arrays as "16×4 4K lru + 8×4 2M lru" (sets × ways).
    pub fn shape(&self) -> String {
        self.arrays
            .iter()
            .map(|a| {
                let (sets, ways, sizes, policy) = a.shape();
                let sizes: Vec<_> = sizes.iter().map(|s| s.to_string()).collect();
                format!("{sets}×{ways} {} {policy}", sizes.join("/"))
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The smallest page size any array holds, in bytes.
    pub(super) fn min_page_bytes(&self) -> u64 {
        self.arrays
            .iter()
            .map(|a| a.min_page_bytes())
            .min()
            .unwrap_or(4096)
    }
}
