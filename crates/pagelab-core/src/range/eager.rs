//! Eager paging (Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE
//! Micro 2016, "Eager Paging", Fig. 6): when a program maps a region (what
//! [`super::change`] reads from the events: a segment of its memory map at start, an
//! `mmap`, an `mprotect` to some access, the heap grown by `brk`, a `mremap`'s new
//! extent), the operating system allocates all of its memory at once from the buddy
//! allocator, "in the largest blocks available": while pages remain, the largest power
//! of two no larger than what remains (and no larger than `frames.max_block`) that the
//! allocator can give, splitting a larger free block if it must, as Linux's buddy
//! allocator does. Every page gets its PTE at once, and each run of frames contiguous
//! with the last becomes, or extends, one range. Above `ranges.fragmentation_threshold`
//! (the share of free memory outside blocks of the largest size) the region is left to
//! demand paging, as the figure's `else` branch does.
//!
//! An `munmap` (the heap shrunk by `brk`, a `mremap`'s old extent) takes its pages out
//! of the ranges, shrinking or splitting them, unmaps them and gives their frames back.
//! Pages of the region that were mapped already (by a fault before the event) keep
//! their frames and break the range there. `free` gives memory back to the program's
//! allocator, not to the OS, and changes nothing. Demand-paged pages are not unmapped
//! (as in a run without eager paging).

use super::change::{memory_change, page, page_up};
use super::config::RangesConfig;
use super::{Range, RangeTables};
use crate::addr::{Asid, PageSize, Pfn, VirtAddr, BASE_SHIFT};
use crate::event::Event;
use crate::frames::FrameAllocator;
use crate::pagetable::{AnyPageTable, MapError, Perms};
use serde::Serialize;

pub struct EagerPaging {
    threshold: f64,
    max_order: u32,
    /// Direct segments are chosen (within these pages, if given).
    segments: bool,
    segment_bounds: Option<(u64, u64)>,
    stats: Stats,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    regions: u64,
    regions_demand: u64,
    pages: u64,
    pages_freed: u64,
    untouched_freed: u64,
    ranges_made: u64,
    out_of_memory: u64,
    unmappable: u64,
}

/// What eager paging did in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EagerReport {
    /// Regions allocated eagerly, and those left to demand paging because memory was
    /// too fragmented (or ran out).
    pub regions_eager: u64,
    pub regions_demand: u64,
    /// Pages allocated ahead of use, and given back by unmappings.
    pub pages_allocated: u64,
    pub pages_freed: u64,
    /// Of the pages allocated, those no reference used before they were freed or the
    /// run ended: the memory eager paging spends that demand paging would not. A page
    /// is seen used when the range unit serves it (a hit, a page walk in a range; with
    /// `fill = "largest"`, every page of the large page it fills); without a range
    /// unit, unknown (None).
    pub pages_untouched: Option<u64>,
    /// Ranges made (a range grown onto the next block counts once).
    pub ranges_made: u64,
    /// Ranges at the end, over all address spaces.
    pub ranges_live: u64,
    /// The live ranges by size: (smallest size of the bucket, as "4K", "8K", "1G"..., ranges)
    /// in buckets of powers of two.
    pub range_sizes: Vec<(String, u64)>,
    /// Pages the largest live range maps.
    pub largest_range_pages: u64,
    /// The range-table nodes, over all address spaces.
    pub table_nodes: u64,
    /// Regions cut short when memory ran out (their remaining pages demand-paged).
    pub out_of_memory: u64,
    /// Regions cut short at an address the page table cannot map.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmappable: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What an event freed: base pages `[from, to)` of `asid`, to invalidate in the TLBs.
pub type Freed = Option<(Asid, u64, u64)>;

impl EagerPaging {
    /// `max_order`: log2 of the largest block, in base frames.
    pub fn build(c: &RangesConfig, max_order: u32, segments: bool) -> Result<EagerPaging, String> {
        let threshold = c.threshold()?;
        let segment_bounds = c.segment_bounds()?.map(|(a, b)| (page(a), page_up(b)));
        Ok(EagerPaging {
            threshold,
            max_order,
            segments,
            segment_bounds,
            stats: Stats::default(),
        })
    }

    /// Act on one event of address space `asid` (see [`super::change`]). Errors are
    /// none today; the type leaves room for a refusal to report.
    pub fn on_event(
        &mut self,
        asid: Asid,
        event: &Event,
        table: &mut AnyPageTable,
        frames: &mut dyn FrameAllocator,
        tables: &mut RangeTables,
    ) -> Result<Freed, String> {
        let Some(change) = memory_change(event) else {
            return Ok(None);
        };
        let freed = match change.unmap {
            Some((from, to)) => self.release(asid, from, to, table, frames, tables),
            None => None,
        };
        if let Some((from, to, _)) = change.map {
            self.allocate(asid, from, to, table, frames, tables);
        }
        if self.segments {
            self.choose_segment(asid, tables);
        }
        Ok(freed)
    }

    /// The share of free memory outside blocks of the largest order (Fig. 6's
    /// "memory fragmentation").
    pub fn fragmentation(&self, frames: &dyn FrameAllocator) -> f64 {
        let Some(by_order) = frames.free_frames_by_order() else {
            return 1.0;
        };
        let free: u64 = by_order.iter().sum();
        if free == 0 {
            return 1.0;
        }
        let whole: u64 = by_order.iter().skip(self.max_order as usize).sum();
        1.0 - whole as f64 / free as f64
    }

    /// Allocate and map pages `[from, to)` eagerly, skipping pages ranges hold already.
    fn allocate(
        &mut self,
        asid: Asid,
        from: u64,
        to: u64,
        table: &mut AnyPageTable,
        frames: &mut dyn FrameAllocator,
        tables: &mut RangeTables,
    ) {
        if from >= to {
            return;
        }
        if self.fragmentation(frames) > self.threshold {
            self.stats.regions_demand += 1;
            return;
        }
        self.stats.regions += 1;
        let ranges = tables.table_mut(asid);
        let mut vpn = from;
        while vpn < to {
            // Pages a range holds are mapped; the next range bounds this run.
            let found = ranges.lookup(vpn).range;
            if let Some(r) = found {
                vpn = r.limit;
                continue;
            }
            let at = ranges.ranges().partition_point(|r| r.base < vpn);
            let stop = ranges.ranges().get(at).map_or(to, |r| r.base.min(to));
            let want = stop - vpn;
            let order = (63 - want.leading_zeros()).min(self.max_order);
            let Some((pfn, order)) = (0..=order).rev().find_map(|k| {
                let size = PageSize::from_shift(BASE_SHIFT + k)?;
                frames.alloc(size).map(|p| (p.0, k))
            }) else {
                self.stats.out_of_memory += 1;
                return;
            };
            let n = 1u64 << order;
            let mut run = 0;
            for i in 0..n {
                let va = VirtAddr((vpn + i) << BASE_SHIFT);
                match table
                    .as_dyn()
                    .map(asid, va, PageSize::K4, Pfn(pfn + i), Perms::RW, frames)
                {
                    Ok(_) => {
                        run += 1;
                        continue;
                    }
                    Err(MapError::Overlap) => {
                        // Mapped before (a fault): it keeps its frame; the range breaks.
                        free_frames(frames, self.max_order, pfn + i, 1);
                        self.commit(ranges, vpn + i - run, run, pfn + i - run);
                        run = 0;
                    }
                    Err(e) => {
                        // Out of memory for a page-table node, or an address the
                        // table cannot map: the rest of the region is left to demand
                        // paging (which fails only if a reference reaches it).
                        free_frames(frames, self.max_order, pfn + i, n - i);
                        self.commit(ranges, vpn + i - run, run, pfn + i - run);
                        match e {
                            MapError::OutOfMemory => self.stats.out_of_memory += 1,
                            _ => self.stats.unmappable += 1,
                        }
                        return;
                    }
                }
            }
            self.commit(ranges, vpn + n - run, run, pfn + n - run);
            vpn += n;
        }
    }

    /// Record `pages` pages from `vpn` at frames from `pfn` as a range: the last range
    /// grown, if they continue it, else a new one.
    fn commit(&mut self, ranges: &mut super::RangeTable, vpn: u64, pages: u64, pfn: u64) {
        if pages == 0 {
            return;
        }
        self.stats.pages += pages;
        if ranges.extend(vpn, pages, pfn).is_none() {
            ranges
                .insert(vpn, pages, pfn, Perms::RW)
                .expect("eager paging maps pages no range holds");
            self.stats.ranges_made += 1;
        }
    }

    /// Take pages `[from, to)` out of the ranges, unmap them, free their frames.
    fn release(
        &mut self,
        asid: Asid,
        from: u64,
        to: u64,
        table: &mut AnyPageTable,
        frames: &mut dyn FrameAllocator,
        tables: &mut RangeTables,
    ) -> Freed {
        if from >= to {
            return None;
        }
        let ranges = tables.table_mut(asid);
        let removed = ranges.remove(from, to);
        if removed.is_empty() {
            return None;
        }
        self.stats.untouched_freed += removed.iter().map(|r| ranges.untouched(r)).sum::<u64>();
        for r in &removed {
            for vpn in r.base..r.limit {
                let va = VirtAddr(vpn << BASE_SHIFT);
                table
                    .as_dyn()
                    .unmap(asid, va, PageSize::K4, frames)
                    .expect("a range's pages are mapped");
            }
            free_frames(frames, self.max_order, r.pfn, r.pages());
            self.stats.pages_freed += r.pages();
        }
        Some((asid, from, to))
    }

    /// The direct segment: the largest range (inside the configured bounds).
    fn choose_segment(&self, asid: Asid, tables: &mut RangeTables) {
        let ranges = tables.table_mut(asid);
        let inside = |r: &&Range| {
            self.segment_bounds
                .map_or(true, |(a, b)| r.base >= a && r.limit <= b)
        };
        let best = ranges
            .ranges()
            .iter()
            .filter(inside)
            .max_by_key(|r| (r.pages(), std::cmp::Reverse(r.base)))
            .copied();
        ranges.set_segment(best);
    }

    pub fn report(&self, tables: &RangeTables) -> EagerReport {
        let mut buckets = [0u64; 64];
        let (mut live, mut largest, mut nodes, mut untouched) = (0, 0, 0, 0);
        for (_, t) in tables.iter() {
            for r in t.ranges() {
                buckets[63 - r.pages().leading_zeros() as usize] += 1;
                largest = largest.max(r.pages());
                live += 1;
            }
            nodes += t.nodes() as u64;
            untouched += t.untouched_pages();
        }
        let s = &self.stats;
        EagerReport {
            regions_eager: s.regions,
            regions_demand: s.regions_demand,
            pages_allocated: s.pages,
            pages_freed: s.pages_freed,
            pages_untouched: Some(untouched + s.untouched_freed),
            ranges_made: s.ranges_made,
            ranges_live: live,
            range_sizes: buckets
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| {
                    (
                        crate::addr::format_bytes(1u64 << (k as u32 + BASE_SHIFT)),
                        n,
                    )
                })
                .collect(),
            largest_range_pages: largest,
            table_nodes: nodes,
            out_of_memory: s.out_of_memory,
            unmappable: s.unmappable,
        }
    }
}

/// Give back frames `[pfn, pfn + n)` in the largest aligned blocks they make.
fn free_frames(frames: &mut dyn FrameAllocator, max_order: u32, mut pfn: u64, mut n: u64) {
    while n > 0 {
        let k = pfn
            .trailing_zeros()
            .min(63 - n.leading_zeros())
            .min(max_order);
        let size = PageSize::from_shift(BASE_SHIFT + k).expect("a block of memory");
        frames.free(Pfn(pfn), size);
        pfn += 1 << k;
        n -= 1 << k;
    }
}

#[cfg(test)]
#[path = "eager_tests.rs"]
mod tests;
