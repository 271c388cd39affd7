//! How many translation entries map a trace's footprint: the cumulative distribution
//! of Gandhi et al., "Range Translations for Fast Virtual Memory", IEEE Micro 2016,
//! Figure 2 ("the application's memory that N translation entries map with pages and
//! with optimal ranges").
//!
//! The footprint is every 4K page a reference touches (both pages of a reference that
//! spans two), per address space. An entry maps the footprint pages it covers; the
//! entries are taken largest first, and the curve says how many it takes to map each
//! share of the footprint. The mappings:
//! - 4K, 2M, 1G pages: one entry per aligned page of that size that holds a footprint
//!   page (as if every page were of that size);
//! - ideal ranges: one entry per maximal virtually contiguous region of the address
//!   space that holds footprint pages (the figure's "optimal ranges"): the union of
//!   every region the trace mapped (its memory map, mmaps, the heap's growth: see
//!   `crate::range::change`),
//!   adjacent regions of the same protection joined (a range has uniform protection);
//!   footprint pages outside them (a trace without allocation events) join in maximal
//!   runs of consecutive pages;
//! - eager ranges: the ranges eager paging made in a run of the trace, each footprint
//!   page counted in the range that mapped it when it was first touched, or as an
//!   entry of its own if none did (it was demand-paged).
//!
//! With a machine's run ([`analyze_with`]), also the footprint its frame allocator
//! left coalescable at each run length (`super::coalescable`).

use crate::addr::{Asid, BASE_SHIFT};
use crate::event::{Batch, Event, MemRef};
use crate::machine::Machine;
use crate::range::RangeTables;
use crate::trace::{Location, TraceError, TraceReader};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::path::Path;

/// The shares of the footprint the curve is given at, in hundredths of a percent:
/// every percent, and 99.9%.
pub fn percents() -> Vec<u32> {
    let mut p: Vec<u32> = (1..=100).map(|p| p * 100).collect();
    p.insert(99, 9990);
    p
}

/// The shares the table shows, in hundredths of a percent.
pub const TABLE_PERCENTS: [u32; 5] = [5000, 9000, 9900, 9990, 10000];

/// The distinct pages a trace touches, gathered reference by reference.
#[derive(Default)]
pub struct Footprint {
    pages: FxHashSet<(u16, u64)>,
    last: Option<(u16, u64)>,
}

impl Footprint {
    pub fn add_batch(&mut self, batch: &Batch) {
        self.add_refs(&batch.refs, |_| {});
    }

    /// Add the pages of `refs`; `first_touch` is told each page not seen before.
    pub fn add_refs(&mut self, refs: &[MemRef], mut first_touch: impl FnMut((u16, u64))) {
        for r in refs {
            let first = r.addr.0 >> BASE_SHIFT;
            let last = r.addr.0.saturating_add(r.size.max(1) as u64 - 1) >> BASE_SHIFT;
            for vpn in first..=last {
                let key = (r.asid.0, vpn);
                if self.last != Some(key) {
                    self.last = Some(key);
                    if self.pages.insert(key) {
                        first_touch(key);
                    }
                }
            }
        }
    }

    /// The pages, sorted by address space, then page.
    pub fn sorted(&self) -> Vec<(u16, u64)> {
        let mut v: Vec<_> = self.pages.iter().copied().collect();
        v.sort_unstable();
        v
    }
}

/// The regions a trace allocates: (address space, first page, end page, protection
/// bits), in the order the events come.
#[derive(Default)]
pub struct Regions {
    spans: Vec<(u16, u64, u64, u8)>,
}

impl Regions {
    /// Note the region an event of address space `asid` maps, if it maps one
    /// (`crate::range::change`).
    pub fn add_event(&mut self, asid: u16, event: &Event) {
        if let Some((from, to, prot)) = crate::range::memory_change(event).and_then(|c| c.map) {
            self.spans.push((asid, from, to, prot));
        }
    }

    /// The union of the regions, sorted: adjacent and overlapping ones of the same
    /// protection joined (a page in two regions counts in the first).
    pub fn merged(&self) -> Vec<(u16, u64, u64)> {
        let mut v = self.spans.clone();
        v.sort_unstable();
        let mut out: Vec<(u16, u64, u64, u8)> = Vec::with_capacity(v.len());
        for (asid, from, to, prot) in v {
            match out.last_mut() {
                Some(last) if last.0 == asid && from <= last.2 && prot == last.3 => {
                    last.2 = last.2.max(to)
                }
                _ => out.push((asid, from, to, prot)),
            }
        }
        out.into_iter().map(|(a, f, t, _)| (a, f, t)).collect()
    }
}

/// The machine whose eager paging makes the eager ranges when none is named.
pub const DEFAULT_MACHINE: &str = "sandy-bridge-rmm";

/// [`analyze_trace`] with a run of `config` (its `ranges.regions` replaced by
/// `regions` if any are given): the eager ranges if it allocates eagerly, and the
/// coalescable footprint its frames leave. The result's note says why eager ranges
/// are missing or empty.
pub fn analyze_with(
    config: &crate::MachineConfig,
    regions: &[String],
    reader: &mut dyn TraceReader,
    path: &Path,
    after_batch: impl FnMut(u64, u64),
) -> Result<Contiguity, TraceError> {
    let mut config = config.clone();
    let eager = config.ranges.allocation == crate::config::Allocation::Eager;
    // Regions are allocated by eager paging; a machine without it has no use for them.
    if !regions.is_empty() && eager {
        config.ranges.regions = regions.to_vec();
    }
    let mut machine = Machine::build(&config)
        .map_err(|e| TraceError::new(path, Location::File, format!("{}: {e}", config.name)))?;
    let mut result = analyze_trace(reader, path, Some((&mut machine, eager)), after_batch)?;
    result.note = match result.eager_ranges {
        None => Some(format!(
            "{} does not allocate eagerly (ranges.allocation): no eager ranges",
            config.name
        )),
        Some(0) => Some(
            "eager paging made no ranges: the trace has no allocation events or memory map; give its regions (--region, regions=)".into(),
        ),
        Some(_) => None,
    };
    result.machine = Some(config.name);
    Ok(result)
}

/// Footprint pages by the eager range that mapped each at its first touch.
#[derive(Default)]
pub struct EagerTally {
    /// (address space, the range's first page, its first frame): pages.
    ranges: FxHashMap<(u16, u64, u64), u64>,
    /// Pages no range mapped at their first touch.
    alone: u64,
}

impl EagerTally {
    pub fn first_touch(&mut self, tables: &RangeTables, (asid, vpn): (u16, u64)) {
        match tables.lookup(Asid(asid), vpn).range {
            Some(r) => *self.ranges.entry((asid, r.base, r.pfn)).or_insert(0) += 1,
            None => self.alone += 1,
        }
    }

    fn weights(&self) -> Vec<u64> {
        let mut w: Vec<u64> = self.ranges.values().copied().collect();
        w.extend(std::iter::repeat(1).take(self.alone as usize));
        w
    }

    /// Ranges that mapped some footprint page.
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }
}

/// One mapping's curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mapping {
    pub name: String,
    /// Entries that map the whole footprint.
    pub entries: u64,
    /// Footprint pages the largest entry maps.
    pub largest_pages: u64,
    /// (share of the footprint in percent, entries that map at least that share),
    /// at [`percents`].
    pub curve: Vec<(f64, u64)>,
}

impl Mapping {
    /// Entries that map at least `percent_x100` hundredths of a percent (one of
    /// [`percents`]).
    pub fn entries_for(&self, percent_x100: u32) -> Option<u64> {
        let p = percent_x100 as f64 / 100.0;
        self.curve.iter().find(|(q, _)| *q == p).map(|(_, n)| *n)
    }
}

/// The analysis of one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Contiguity {
    pub footprint_pages: u64,
    pub address_spaces: u64,
    pub mappings: Vec<Mapping>,
    /// Eager ranges that mapped some footprint page at its first touch (with a run of
    /// eager paging).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_ranges: Option<u64>,
    /// The machine whose run made the eager ranges and the frames
    /// ([`analyze_with`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// At each run length, the footprint that run's frames leave coalescable (empty
    /// without a machine's run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coalescable: Vec<super::coalescable::Coalescable>,
    /// Why the eager ranges are missing or empty, if they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The curve of a mapping whose entries cover `weights` footprint pages each.
pub fn mapping(name: &str, mut weights: Vec<u64>) -> Mapping {
    weights.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = weights.iter().sum();
    let mut curve = Vec::new();
    let (mut k, mut covered) = (0usize, 0u64);
    for p in percents() {
        // The least k whose largest entries cover p/10000 of the footprint.
        while (covered as u128) * 10_000 < (total as u128) * p as u128 {
            covered += weights[k];
            k += 1;
        }
        curve.push((p as f64 / 100.0, k as u64));
    }
    Mapping {
        name: name.into(),
        entries: weights.len() as u64,
        largest_pages: weights.first().copied().unwrap_or(0),
        curve,
    }
}

/// Footprint pages per aligned block of `2^shift` base pages.
fn per_block(pages: &[(u16, u64)], shift: u32) -> Vec<u64> {
    runs_by(pages, |a, b| a.0 == b.0 && a.1 >> shift == b.1 >> shift)
}

/// The lengths of the maximal runs of `pages` in which each page continues the last.
fn runs_by(pages: &[(u16, u64)], same: impl Fn(&(u16, u64), &(u16, u64)) -> bool) -> Vec<u64> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=pages.len() {
        if i == pages.len() || !same(&pages[i - 1], &pages[i]) {
            out.push((i - start) as u64);
            start = i;
        }
    }
    out
}

/// Footprint pages per region of `regions` (merged, sorted) that holds some; the
/// pages outside every region in maximal runs of consecutive pages.
fn per_region(pages: &[(u16, u64)], regions: &[(u16, u64, u64)]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut outside: Vec<(u16, u64)> = Vec::new();
    let mut r = 0;
    let mut i = 0;
    while i < pages.len() {
        let (asid, vpn) = pages[i];
        while r < regions.len() && (regions[r].0, regions[r].2) <= (asid, vpn) {
            r += 1;
        }
        match regions.get(r) {
            Some(&(a, from, to)) if a == asid && from <= vpn => {
                let n = pages[i..].partition_point(|p| p.0 == a && p.1 < to);
                out.push(n as u64);
                i += n;
            }
            _ => {
                outside.push(pages[i]);
                i += 1;
            }
        }
    }
    out.extend(runs_by(&outside, |a, b| a.0 == b.0 && a.1 + 1 == b.1));
    out
}

/// The curves of every mapping for a footprint (sorted, as [`Footprint::sorted`]),
/// the regions the trace allocated ([`Regions::merged`]), and the ranges of an
/// eager-paging run if there was one.
pub fn analyze(
    pages: &[(u16, u64)],
    regions: &[(u16, u64, u64)],
    eager: Option<&EagerTally>,
) -> Contiguity {
    let mut mappings = vec![
        mapping("4K pages", vec![1; pages.len()]),
        mapping("2M pages", per_block(pages, 9)),
        mapping("1G pages", per_block(pages, 18)),
        mapping("ideal ranges", per_region(pages, regions)),
    ];
    if let Some(tally) = eager {
        mappings.push(mapping("eager ranges", tally.weights()));
    }
    let address_spaces = runs_by(pages, |a, b| a.0 == b.0).len() as u64;
    Contiguity {
        footprint_pages: pages.len() as u64,
        address_spaces,
        mappings,
        eager_ranges: eager.map(|t| t.ranges() as u64),
        machine: None,
        coalescable: Vec::new(),
        note: None,
    }
}

/// Read a whole trace: its footprint, the regions it allocates, and with a machine
/// the footprint its frames leave coalescable and, when the flag says it allocates
/// eagerly, the ranges it makes running it, the machine run between events so that
/// each page is found in the range that maps it at its first touch. `after_batch` is
/// told each batch's references and the reader's position.
pub fn analyze_trace(
    reader: &mut dyn TraceReader,
    path: &Path,
    mut machine: Option<(&mut Machine, bool)>,
    mut after_batch: impl FnMut(u64, u64),
) -> Result<Contiguity, TraceError> {
    let mut footprint = Footprint::default();
    let mut regions = Regions::default();
    let mut tally = EagerTally::default();
    let (mut batch, mut part) = (Batch::default(), Batch::default());
    let mut asid = 0u16;
    let stopped = |e: crate::machine::SimError| {
        TraceError::new(path, Location::File, format!("simulation stopped at {e}"))
    };
    while reader.next_batch(&mut batch)? {
        let mut from = 0;
        let ends = batch
            .events
            .iter()
            .map(|(at, _)| (*at).min(batch.refs.len()));
        for (k, at) in ends.chain([batch.refs.len()]).enumerate() {
            let refs = &batch.refs[from..at];
            if let Some(r) = refs.last() {
                asid = r.asid.0;
            }
            part.clear();
            part.refs.extend_from_slice(refs);
            if let Some((_, event)) = batch.events.get(k) {
                part.events.push((refs.len(), event.clone()));
                match event {
                    Event::SwitchAddressSpace { asid: next } => asid = next.0,
                    e => regions.add_event(asid, e),
                }
            }
            match machine.as_mut() {
                Some((m, eager)) => {
                    // The references first (their ranges as they were), then the event.
                    let event = part.events.pop();
                    m.run_batch(&part).map_err(stopped)?;
                    let tables = m.range_tables();
                    footprint.add_refs(refs, |p| {
                        if *eager {
                            tally.first_touch(tables, p)
                        }
                    });
                    if let Some(e) = event {
                        part.refs.clear();
                        part.events.push((0, e.1));
                        m.run_batch(&part).map_err(stopped)?;
                    }
                }
                None => footprint.add_refs(refs, |_| {}),
            }
            from = at;
        }
        after_batch(batch.refs.len() as u64, reader.position());
    }
    let pages = footprint.sorted();
    let eager = machine.as_ref().is_some_and(|(_, eager)| *eager);
    let mut result = analyze(&pages, &regions.merged(), eager.then_some(&tally));
    if let Some((m, _)) = machine {
        result.coalescable =
            super::coalescable::coalescable(&pages, |asid, va| m.entry_of(asid, va));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_takes_the_largest_entries_first() {
        // 10 pages: one entry of 6, two of 2; 50% needs the 6, 80% the 6 and a 2.
        let m = mapping("m", vec![2, 6, 2]);
        assert_eq!(m.entries, 3);
        assert_eq!(m.largest_pages, 6);
        assert_eq!(m.entries_for(5000), Some(1));
        assert_eq!(m.entries_for(6000), Some(1));
        assert_eq!(m.entries_for(6100), Some(2));
        assert_eq!(m.entries_for(8000), Some(2));
        assert_eq!(m.entries_for(10000), Some(3));
        assert_eq!(m.entries_for(9990), Some(3));
        assert_eq!(m.curve.len(), 101);
    }

    #[test]
    fn pages_blocks_and_runs() {
        // Address space 0: pages 0..4, 10, 511, 512 (512 is the next 2M block);
        // address space 1: page 0.
        let pages = vec![
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (0, 10),
            (0, 511),
            (0, 512),
            (1, 0),
        ];
        let c = analyze(&pages, &[], None);
        assert_eq!((c.footprint_pages, c.address_spaces), (8, 2));
        let entries: Vec<u64> = c.mappings.iter().map(|m| m.entries).collect();
        // 4K: 8; 2M: [0..512) and [512..) of asid 0, and asid 1's; 1G: one per asid;
        // ranges (no regions known): runs 0..4, 10, 511..513, asid 1's 0.
        assert_eq!(entries, [8, 3, 2, 4]);
        assert_eq!(c.mappings[3].largest_pages, 4);
        // A region 0..11 of asid 0 (allocated in two adjacent parts) holds 0..4 and
        // 10; 511 and 512 stay a run of their own.
        let mut regions = Regions::default();
        let seg = |start: u64, end: u64, perms: u8| {
            Event::Segment(crate::event::Segment {
                start,
                end,
                perms,
                kind: crate::event::SegmentKind::Heap,
                name: String::new(),
            })
        };
        regions.add_event(0, &seg(0, 0x5000, 3));
        regions.add_event(0, &seg(0x5000, 0xb000, 3));
        regions.add_event(2, &seg(0, 0x1000, 3));
        // Adjacent, but read-only: a region of its own.
        regions.add_event(0, &seg(0xb000, 0xc000, 1));
        assert_eq!(regions.merged(), [(0, 0, 11), (0, 11, 12), (2, 0, 1)]);
        let c = analyze(&pages, &regions.merged(), None);
        let mut w = per_region(&pages, &regions.merged());
        w.sort_unstable();
        assert_eq!(w, [1, 2, 5]);
        assert_eq!(c.mappings[3].entries, 3);
    }

    #[test]
    fn eager_ranges_count_pages_by_the_range_at_first_touch() {
        let mut tables = RangeTables::default();
        let t = tables.table_mut(Asid(0));
        t.insert(0, 8, 100, crate::pagetable::Perms::RW).unwrap();
        t.insert(20, 4, 300, crate::pagetable::Perms::RW).unwrap();
        let mut tally = EagerTally::default();
        // Pages 0, 1, 5 in the first range, 9 outside, 21 in the second, asid 2's
        // page 0 outside (no table).
        for p in [(0, 0), (0, 1), (0, 5), (0, 9), (0, 21), (2, 0)] {
            tally.first_touch(&tables, p);
        }
        // The first range split later: pages touched after count in the new piece.
        tables.table_mut(Asid(0)).remove(3, 4);
        tally.first_touch(&tables, (0, 6));
        let mut w = tally.weights();
        w.sort_unstable();
        assert_eq!(w, [1, 1, 1, 1, 3]);
        assert_eq!(tally.ranges(), 3);
    }

    #[test]
    fn a_reference_across_pages_touches_both() {
        use crate::event::{AccessKind, MemRef};
        let mut f = Footprint::default();
        let batch = Batch {
            refs: vec![
                MemRef::new(0x1ffc, 8, AccessKind::Load),
                MemRef::new(0x2000, 4, AccessKind::Load),
            ],
            ..Batch::default()
        };
        f.add_batch(&batch);
        assert_eq!(f.sorted(), [(0, 1), (0, 2)]);
    }
}
