//! `thp`: Linux's transparent huge pages, in outline. A fault maps a whole huge page
//! (2M on x86-64) when the aligned range around it has nothing mapped and the
//! allocator has an aligned free block ("always" mode); otherwise a base page. A
//! background pass (khugepaged) visits the huge-page ranges that hold base pages, a
//! few ranges at a time in address order, and collapses a range into a huge page (by
//! the mechanism: khugepaged copies) when at most `max_ptes_none` of its base pages
//! are unmapped (Linux's `khugepaged/max_ptes_none`, 511 by default: one page
//! mapped suffices).
//!
//! Multi-size THP (`folio_sizes`, Linux's `hugepages-<size>kB/enabled` for sizes below
//! the huge page, since 6.8): a fault that maps no huge page tries each folio size,
//! largest first, and maps a folio of it (a naturally aligned block of frames, each
//! base page of the range with its own base-page entry) when no page of the aligned
//! range is mapped and the allocator has a free block of the size; else the next
//! smaller size, and last a base page, as `alloc_anon_folio` falls back.
//!
//! Simplification: pagelab knows no VMAs, so every aligned range is eligible (Linux
//! maps a huge page or folio only where the VMA covers the whole range, so small
//! mappings and the edges of large ones get smaller pages there).

use super::{check_miss_cycles, BuildPolicy, Candidate, Context, Miss, PromotionPolicy};
use crate::addr::{Asid, PageSize, VirtAddr};
use std::collections::BTreeMap;

pub struct Thp {
    huge: PageSize,
    base: PageSize,
    fault_huge: bool,
    max_ptes_none: u64,
    scan_every: u64,
    ranges_per_scan: usize,
    /// Mapped base pages per huge-page range holding base pages.
    ranges: BTreeMap<(Asid, u64), u64>,
    /// Where the next pass resumes, and when it runs.
    cursor: (Asid, u64),
    next_scan: u64,
    miss_cycles: f64,
    pub collapses_asked: u64,
    /// Folio sizes, largest first; folios mapped, fallbacks past a size, and the
    /// base pages folios mapped.
    folios: Vec<PageSize>,
    folio_faults: u64,
    folio_fallbacks: u64,
    folio_pages: u64,
}

impl Thp {
    pub fn new(huge: PageSize, base: PageSize, c: &ThpConfig) -> Thp {
        Thp {
            huge,
            base,
            fault_huge: c.fault,
            max_ptes_none: c.max_ptes_none,
            scan_every: c.scan_every,
            ranges_per_scan: c.ranges_per_scan,
            ranges: BTreeMap::new(),
            cursor: (Asid(0), 0),
            next_scan: c.scan_every,
            miss_cycles: c.miss_cycles,
            collapses_asked: 0,
            folios: {
                let mut f = c.folio_sizes.clone();
                f.sort_by(|a, b| b.cmp(a));
                f.dedup();
                f
            },
            folio_faults: 0,
            folio_fallbacks: 0,
            folio_pages: 0,
        }
    }

    fn pages(&self) -> u64 {
        self.huge.bytes() >> self.base.shift()
    }
}

impl PromotionPolicy for Thp {
    fn fault_size(&mut self, _asid: Asid, _va: VirtAddr) -> Option<PageSize> {
        self.fault_huge.then_some(self.huge)
    }

    fn fault_folios(&self) -> &[PageSize] {
        &self.folios
    }

    fn folio_fault(&mut self, asid: Asid, va: VirtAddr, mapped: Option<PageSize>) {
        match mapped {
            Some(size) => {
                let pages = size.bytes() >> self.base.shift();
                self.folio_faults += 1;
                self.folio_pages += pages;
                // The folio's other pages are mapped too (the faulting one is counted
                // by its miss), for the background pass's max_ptes_none.
                let key = (asid, va.0 >> self.huge.shift());
                *self.ranges.entry(key).or_insert(0) += pages - 1;
            }
            None => self.folio_fallbacks += 1,
        }
    }

    fn on_miss(&mut self, m: &Miss<'_>) -> Option<Candidate> {
        if m.first_touch && m.size < self.huge {
            let key = (m.asid, m.va.0 >> self.huge.shift());
            *self.ranges.entry(key).or_insert(0) += 1;
        }
        None
    }

    fn background(&mut self, references: u64, out: &mut Vec<Candidate>) {
        if self.scan_every == 0 || references < self.next_scan {
            return;
        }
        self.next_scan = (references / self.scan_every + 1) * self.scan_every;
        let limit = self.pages();
        let keys: Vec<(Asid, u64)> = self
            .ranges
            .range(self.cursor..)
            .chain(self.ranges.range(..self.cursor))
            .take(self.ranges_per_scan)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let mapped = self.ranges[&key];
            self.cursor = (key.0, key.1 + 1);
            if limit - mapped.min(limit) <= self.max_ptes_none {
                out.push(Candidate {
                    asid: key.0,
                    va: VirtAddr(key.1 << self.huge.shift()),
                    size: self.huge,
                });
                self.collapses_asked += 1;
            }
        }
    }

    fn promoted(&mut self, c: Candidate) {
        self.ranges.remove(&(c.asid, c.va.0 >> self.huge.shift()));
    }

    fn demoted(&mut self, c: Candidate) {
        if c.size == self.huge {
            let pages = self.pages();
            self.ranges
                .insert((c.asid, c.va.0 >> self.huge.shift()), pages);
        }
    }

    fn unmapped(&mut self, asid: Asid, va: VirtAddr) -> bool {
        let key = (asid, va.0 >> self.huge.shift());
        if let Some(n) = self.ranges.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.ranges.remove(&key);
            }
        }
        false
    }

    fn miss_cycles(&self) -> f64 {
        self.miss_cycles
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("collapses asked", self.collapses_asked),
            ("ranges with base pages", self.ranges.len() as u64),
            ("folio faults", self.folio_faults),
            ("folio fallbacks", self.folio_fallbacks),
            ("folio base pages", self.folio_pages),
        ]
    }
    fn stat_is_state(&self, name: &str) -> bool {
        name == "ranges with base pages"
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpConfig {
    /// Candidate sizes (default as for asap); the huge page is the smallest of them.
    pub sizes: Vec<PageSize>,
    /// Map a huge page at a fault when possible ("always"; false: "madvise" without
    /// the advice, only the background pass makes huge pages). Default true.
    pub fault: bool,
    /// A range is collapsed when at most this many of its base pages are unmapped
    /// (khugepaged's max_ptes_none). Default 511.
    pub max_ptes_none: u64,
    /// References between background passes (0: none). Default 1,000,000.
    pub scan_every: u64,
    /// Ranges a pass visits (khugepaged's pages_to_scan / 512). Default 8.
    pub ranges_per_scan: usize,
    /// Cycles the fault and miss handlers spend on the policy per miss. Default 0.
    pub miss_cycles: f64,
    /// Multi-size THP: folio sizes a fault tries after the huge page, largest first,
    /// each a power of two above the base page and below the huge page ("64K",
    /// "16K"). Default none.
    pub folio_sizes: Vec<PageSize>,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig {
            sizes: Vec::new(),
            fault: true,
            max_ptes_none: 511,
            scan_every: 1_000_000,
            ranges_per_scan: 8,
            miss_cycles: 0.0,
            folio_sizes: Vec::new(),
        }
    }
}

impl BuildPolicy for Thp {
    type Options = ThpConfig;
    fn build(o: &ThpConfig, cx: &Context<'_>) -> Result<Thp, String> {
        check_miss_cycles(o.miss_cycles)?;
        if o.folio_sizes.len() > 16 {
            return Err("promotion.folio_sizes: at most 16 sizes".into());
        }
        if let Some(s) = o
            .folio_sizes
            .iter()
            .find(|s| **s <= cx.base || **s >= cx.sizes[0])
        {
            return Err(format!(
                "promotion.folio_sizes: {s} is not between the base page ({}) and the huge page ({})",
                cx.base, cx.sizes[0]
            ));
        }
        Ok(Thp::new(cx.sizes[0], cx.base, o))
    }
    fn configured_sizes(o: &ThpConfig) -> Option<&[PageSize]> {
        Some(&o.sizes)
    }
    /// The huge page: the smallest candidate.
    fn largest_page(_: &ThpConfig, sizes: &[PageSize]) -> Option<PageSize> {
        sizes.first().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_touch(p: &mut Thp, page: u64) {
        p.on_miss(&Miss {
            asid: Asid(0),
            va: VirtAddr(page << 12),
            size: PageSize::K4,
            first_touch: true,
            tlb: &[],
        });
    }

    #[test]
    fn khugepaged_collapses_ranges_with_few_enough_holes_a_few_at_a_time() {
        let c = ThpConfig {
            fault: false,
            max_ptes_none: 500,
            scan_every: 10,
            ranges_per_scan: 1,
            ..ThpConfig::default()
        };
        let mut p = Thp::new(PageSize::M2, PageSize::K4, &c);
        assert_eq!(p.fault_size(Asid(0), VirtAddr(0)), None);
        // Range 0: 12 pages mapped (500 holes: collapsible); range 1: 11 (501: not).
        for page in 0..12 {
            first_touch(&mut p, page);
        }
        for page in 512..523 {
            first_touch(&mut p, page);
        }
        let mut out = Vec::new();
        p.background(5, &mut out);
        assert!(out.is_empty(), "not time yet");
        p.background(10, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].va.0, out[0].size), (0, PageSize::M2));
        p.promoted(out[0]);
        // The next pass visits range 1, which has too many holes; then wraps around.
        out.clear();
        p.background(20, &mut out);
        assert!(out.is_empty());
        first_touch(&mut p, 523);
        p.background(30, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].va.0, 2 << 20);
    }
}
