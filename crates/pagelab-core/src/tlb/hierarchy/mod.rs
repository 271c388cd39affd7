//! A TLB hierarchy: named levels, each one or more set-associative arrays probed in
//! parallel, each linked to the level a miss goes to next. References start at the
//! first level of their side (data or instruction fetch); a miss climbs the path of
//! parents, and the translation found (or walked) fills every level that missed.
//!
//! The hierarchy counts per level, and per page size of the entries involved: a hit is
//! counted under the size of the entry hit, a miss under the size of the translation
//! that served it (from a parent level or the walk).

use super::{Tlb, TlbStats};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr};
use crate::config::{HierarchyConfig, LevelConfig, Serves, SetAssocConfig, TlbConfig};
use crate::pagetable::{Perms, Translation};
use crate::replacement::*;
use crate::tlb::set_assoc::tag_meta;
use crate::tlb::SetAssocTlb;
use serde::Serialize;

mod array;
mod build;
mod level;
#[cfg(test)]
mod tests;
pub use array::*;
pub use level::Level;

/// Look the range unit of the level at `pos` on `path` up for `va`: on a hit, the
/// translation it refills the levels below with.
#[cold]
#[allow(clippy::too_many_arguments)]
fn range_hit(
    levels: &mut [Level],
    base_page: PageSize,
    path: &[usize],
    pos: usize,
    asid: Asid,
    va: VirtAddr,
    tables: &crate::range::RangeTables,
) -> Option<Translation> {
    let vpn = va.0 >> crate::addr::BASE_SHIFT;
    let level = &mut levels[path[pos]];
    let fill = level.range_fill;
    let range = level.range.as_mut()?.lookup(asid, vpn, tables)?;
    let mut size = base_page;
    if fill == crate::config::RangeFill::Largest {
        let below = path[..pos].iter().flat_map(|&l| levels[l].arrays.iter());
        for &s in below.flat_map(|a| a.shape().2) {
            let pages = s.base_frames();
            let first = vpn & !(pages - 1);
            let whole = first >= range.base && first + pages <= range.limit;
            if s > size && whole && range.frame(first) % pages == 0 {
                size = s;
            }
        }
        let pages = size.base_frames();
        let first = vpn & !(pages - 1);
        if let Some(t) = tables.get(asid) {
            t.touch_span(&range, first, first + pages);
        }
    }
    let first = vpn & !(size.base_frames() - 1);
    Some(Translation {
        pfn: Pfn(range.frame(first)),
        size,
        perms: range.perms,
    })
}

/// Whether a range hit at `l` refills with pages larger than the base page.
fn l_fills_larger(l: &Level) -> bool {
    l.range_fill == crate::config::RangeFill::Largest
}

/// Data references and instruction fetches start at different levels.
pub const DATA: usize = 0;
pub const INSTRUCTION: usize = 1;

/// The most entries a TLB array may have (a guard against typos that would exhaust memory).
pub const MAX_TLB_ENTRIES: usize = 1 << 24;

/// Hits and misses of one page size at one level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeCounts {
    pub size: String,
    pub hits: u64,
    pub misses: u64,
}

pub struct Hierarchy {
    levels: Vec<Level>,
    /// The first level of each side (`paths[side][0]`).
    first: [usize; 2],
    /// Level indices from the first level of each side to the last parent.
    paths: [Vec<usize>; 2],
    pub flush_on_switch: bool,
    /// The page size the hierarchy was built for (`Level::base_array` keeps it).
    base_page: PageSize,
    /// Flushes and invalidations of its arrays so far.
    invalidations: u64,
}

impl Hierarchy {
    /// For a run where every translation is a page of size `base`: the parts of the
    /// hierarchy that a loop over the references of `side` touches, when every level on
    /// the path keeps such a translation at size `base` (the first level in the one
    /// array that would take it; other arrays stay empty). `None` when some level
    /// would keep it otherwise (as smaller pages, say): use the general path.
    pub fn base_parts(
        &mut self,
        side: usize,
        base: PageSize,
    ) -> Option<(&mut AnyArray, Above<'_>)> {
        self.base_parts_ranged(side, base, None)
    }

    /// [`Hierarchy::base_parts`], with the range tables a range TLB above the first
    /// level fetches from. `None` also when the first level has a range unit, or a
    /// range hit refills with pages larger than `base`.
    pub fn base_parts_ranged<'h>(
        &'h mut self,
        side: usize,
        base: PageSize,
        tables: Option<&'h crate::range::RangeTables>,
    ) -> Option<(&'h mut AnyArray, Above<'h>)> {
        let path = &self.paths[side & 1];
        let first = path[0];
        let k = self.levels[first].base_array?;
        if base != self.base_page || path.iter().any(|&i| self.levels[i].base_array.is_none()) {
            return None;
        }
        let ranged = |l: &Level| l.range.is_some();
        if ranged(&self.levels[first])
            || path
                .iter()
                .any(|&i| ranged(&self.levels[i]) && l_fills_larger(&self.levels[i]))
        {
            return None;
        }
        let (lower, parents) = self.levels.split_at_mut(first + 1);
        let Level {
            arrays,
            hits,
            misses,
            ..
        } = &mut lower[first];
        Some((
            &mut arrays[k],
            Above {
                hits,
                misses,
                parents,
                path: &path[1..],
                first,
                base,
                tables,
            },
        ))
    }

    /// Whether data references and instruction fetches start at different levels.
    pub fn split(&self) -> bool {
        self.first[DATA] != self.first[INSTRUCTION]
    }

    /// Whether a miss of `side`'s first level goes on to the other side's first level
    /// (as an ITLB miss reaches a unified TLB that is the data side's first level):
    /// then such a miss changes the other side's first level.
    pub fn miss_reaches_other_first(&self, side: usize) -> bool {
        let other = self.first[(side & 1) ^ 1];
        self.split() && self.paths[side & 1][1..].contains(&other)
    }

    /// Probe the first level of `side`: the size of the entry hit.
    #[inline(always)]
    pub fn access(&mut self, side: usize, asid: Asid, va: VirtAddr) -> Option<PageSize> {
        let first = self.first[side & 1];
        self.levels[first].access(asid, va)
    }

    /// Translate `va` for `side` through the whole hierarchy, asking `walk` when no
    /// level holds it (the slow, complete path: tests and tools).
    pub fn translate<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Translation, E> {
        let first = self.first[side & 1];
        if let Some(t) = self.levels[first].lookup(asid, va) {
            return Ok(t);
        }
        self.miss_translation(side, asid, va, None, walk)
            .map(|(t, _)| t)
    }

    /// After the first level of `side` missed: climb the parents; if none hits, ask
    /// `walk` for the translation. Fill every level that missed and count its miss.
    /// Returns the size of the entry made in the first level (`None` if it holds no
    /// size small enough).
    #[inline]
    pub fn miss<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Option<PageSize>, E> {
        self.miss_translation(side, asid, va, None, walk)
            .map(|(_, s)| s)
    }

    /// [`Hierarchy::miss`] with a range TLB or direct segment on the path: it is
    /// looked up where the level beside it misses, and after a walk the range walker
    /// fetches the page's range from `tables`.
    #[inline]
    pub fn miss_ranged<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        tables: &crate::range::RangeTables,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Option<PageSize>, E> {
        self.miss_translation(side, asid, va, Some(tables), walk)
            .map(|(_, s)| s)
    }

    /// [`Hierarchy::miss`], with the translation found: the one `va` reaches, as the
    /// first level's entry holds it (a piece of a larger page if that is all it holds).
    fn miss_translation<E>(
        &mut self,
        side: usize,
        asid: Asid,
        va: VirtAddr,
        tables: Option<&crate::range::RangeTables>,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<(Translation, Option<PageSize>), E> {
        let path = &self.paths[side];
        // (position on the path, translation, whether a range unit gave it)
        let mut found = None;
        for (pos, &i) in path.iter().enumerate() {
            if pos > 0 {
                if let Some(t) = self.levels[i].lookup(asid, va) {
                    found = Some((pos, t, false));
                    break;
                }
            }
            if let (Some(_), Some(tables)) = (&self.levels[i].range, tables) {
                if let Some(t) = range_hit(
                    &mut self.levels,
                    self.base_page,
                    path,
                    pos,
                    asid,
                    va,
                    tables,
                ) {
                    found = Some((pos, t, true));
                    break;
                }
            }
        }
        let (missed, t, by_range) = match found {
            Some(f) => f,
            None => {
                let t = walk()?;
                if let Some(tables) = tables {
                    let vpn = va.0 >> crate::addr::BASE_SHIFT;
                    for &i in path.iter() {
                        if let Some(r) = &mut self.levels[i].range {
                            r.walked(asid, vpn, tables);
                        }
                    }
                }
                (path.len(), t, false)
            }
        };
        if by_range {
            // The level beside the range unit missed too; it is not filled.
            self.levels[path[missed]].misses[t.size.shift() as usize] += 1;
        }
        let mut filled = None;
        for &i in path[..missed].iter().rev() {
            let level = &mut self.levels[i];
            level.misses[t.size.shift() as usize] += 1;
            filled = level.fill(asid, va, t);
        }
        Ok((t, filled))
    }

    /// Count `n` hits on entries of `size` in the first level of `side` that the
    /// machine established without a lookup.
    pub fn credit(&mut self, side: usize, size_shift: usize, n: u64) {
        let first = self.paths[side][0];
        self.levels[first].hits[size_shift] += n;
    }

    /// Have the last levels (those whose misses walk) record what their fills evict,
    /// for [`Hierarchy::walking_level_fill`].
    pub fn track_walking_victims(&mut self) {
        for side in [DATA, INSTRUCTION] {
            let last = *self.paths[side].last().expect("every path has a level");
            for a in &mut self.levels[last].arrays {
                a.track_victims();
            }
        }
    }

    /// After a miss of `side` walked to `t`: the entry the last level (the one whose
    /// misses walk) made for it, as (first address, size), and the entry that fill
    /// evicted, if any.
    pub fn walking_level_fill(
        &mut self,
        side: usize,
        va: VirtAddr,
        t: Translation,
    ) -> (Option<(VirtAddr, PageSize)>, Option<crate::tlb::TlbKey>) {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        let level = &mut self.levels[last];
        let Some((k, size)) = level.fill_array(t.size) else {
            return (None, None);
        };
        let victim = level.arrays[k].take_victim();
        (Some((va.vpn(size).base(size), size)), victim)
    }

    /// The translation the first level of `side` holds for `va`, changing nothing.
    pub fn peek(&self, side: usize, asid: Asid, va: VirtAddr) -> Option<Translation> {
        let first = self.first[side & 1];
        self.levels[first]
            .arrays
            .iter()
            .find_map(|a| a.peek(asid, va))
    }

    /// Call `f` with every entry of the last level on the path of `side` (the level
    /// whose misses walk the page table).
    pub fn for_each_last_entry(&self, side: usize, f: &mut dyn FnMut(crate::tlb::TlbKey, Pfn)) {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        for a in &self.levels[last].arrays {
            a.for_each_entry(f);
        }
    }

    /// Call `f` with the level's name and every entry of every level.
    pub fn for_each_entry(&self, f: &mut dyn FnMut(&str, crate::tlb::TlbKey, Pfn)) {
        for l in &self.levels {
            for a in &l.arrays {
                a.for_each_entry(&mut |k, pfn| f(&l.name, k, pfn));
            }
        }
    }

    /// The entries of the last level on the path of `side` (the level whose misses walk).
    pub fn walking_entries(&self, side: usize) -> usize {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        self.levels[last].entries()
    }

    /// The page sizes the last level on the path of `side` holds, ascending.
    pub fn last_level_sizes(&self, side: usize) -> Vec<PageSize> {
        let last = *self.paths[side & 1].last().expect("every path has a level");
        let mut sizes: Vec<PageSize> = self.levels[last]
            .arrays
            .iter()
            .flat_map(|a| a.shape().2.to_vec())
            .collect();
        sizes.sort();
        sizes.dedup();
        sizes
    }

    /// The page sizes some level on `side`'s path holds, ascending.
    pub fn path_sizes(&self, side: usize) -> Vec<PageSize> {
        let mut sizes: Vec<PageSize> = self.paths[side & 1]
            .iter()
            .flat_map(|&l| self.levels[l].arrays.iter())
            .flat_map(|a| a.shape().2.to_vec())
            .collect();
        sizes.sort();
        sizes.dedup();
        sizes
    }

    /// Drop every entry of `asid` overlapping `[start, start + len)`, at every level.
    pub fn invalidate_range(&mut self, asid: Asid, start: VirtAddr, len: u64) {
        self.invalidations += 1;
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.invalidate_range(asid, start, len);
        }
    }

    /// Drop the range-TLB entries of `asid` overlapping base pages `[from, to)`.
    pub fn invalidate_ranges(&mut self, asid: Asid, from: u64, to: u64) {
        for r in self.levels.iter_mut().filter_map(|l| l.range.as_mut()) {
            r.invalidate(asid, from, to);
        }
    }

    /// The range unit, if a level has one, with the name of that level.
    pub fn range_unit(&self) -> Option<(&crate::range::RangeTlb, &str)> {
        self.levels
            .iter()
            .find_map(|l| l.range.as_deref().map(|r| (r, l.name.as_str())))
    }
    pub fn flush_asid(&mut self, asid: Asid) {
        self.invalidations += 1;
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.flush_asid(asid);
        }
        self.invalidate_ranges(asid, 0, u64::MAX);
    }
    pub fn flush_all(&mut self) {
        self.invalidations += 1;
        for a in self.levels.iter_mut().flat_map(|l| l.arrays.iter_mut()) {
            a.flush_all();
        }
        for r in self.levels.iter_mut().filter_map(|l| l.range.as_mut()) {
            r.flush_all();
        }
    }

    /// The smallest page any first level holds, in bytes: references within one such
    /// page reach the same entry.
    pub fn min_first_page_bytes(&self) -> u64 {
        self.paths
            .iter()
            .map(|p| self.levels[p[0]].min_page_bytes())
            .min()
            .unwrap_or(4096)
    }

    /// How many flushes and range invalidations reached the arrays.
    pub fn invalidations(&self) -> u64 {
        self.invalidations
    }

    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Names of the levels a reference of `side` passes through.
    pub fn path_names(&self, side: usize) -> Vec<&str> {
        self.paths[side]
            .iter()
            .map(|&i| self.levels[i].name.as_str())
            .collect()
    }
}
