//! Every page-table structure over the same address stream, as Szmajda and Heiser's
//! "Variable Radix Page Table" (ACSAC 2003) compares them: memory references and distinct
//! 64-byte lines per lookup, bytes of table, and references per map. Pages are mapped
//! on first touch (demand paging, a fresh 4K frame each). Without a TLB every reference
//! is a lookup; behind a machine's TLB ([`Filter`]) only the references its TLB misses
//! are, one per TLB reload, as the paper measures (§5.2, "per TLB reload"). Trace
//! events (mmap, munmap, …) are not replayed: a page once mapped stays.

use super::layout::Workload;
use crate::addr::{PageSize, VirtAddr};
use crate::event::{Batch, MemRef};
use crate::frames::{FrameAllocator, SimpleAllocator};
use crate::pagetable::{build_page_table, each_table, each_table_match, AnyPageTable};
pub use crate::pagetable::{default_structures, PageTableConfig};
use crate::pagetable::{MapError, PageTable, Perms, Segment, Walk, MAX_WALK_REFS};
use crate::tlb::hierarchy::{Hierarchy, DATA, INSTRUCTION};
use crate::trace::{TraceError, TraceReader};
use serde::Serialize;

/// Base frames each structure's allocator has: 64 GiB, what the inverted table covers
/// by default.
const FRAMES: u64 = 1 << 24;

/// How many lookups made each number of references (0 to [`MAX_WALK_REFS`], all a
/// [`Walk`] can record): exact quantiles without storing the lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: [u64; MAX_WALK_REFS + 1],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: [0; MAX_WALK_REFS + 1],
        }
    }
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, n: usize) {
        self.counts[n.min(MAX_WALK_REFS)] += 1;
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    pub fn mean(&self) -> f64 {
        let sum: u64 = self
            .counts
            .iter()
            .enumerate()
            .map(|(n, &c)| n as u64 * c)
            .sum();
        sum as f64 / self.total().max(1) as f64
    }
    /// The nearest-rank quantile: the least `n` such that at least `q` of the lookups
    /// made `n` references or fewer (0 for an empty histogram).
    pub fn quantile(&self, q: f64) -> usize {
        let rank = ((q * self.total() as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (n, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return n;
            }
        }
        0
    }
}

/// One structure's results.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The configuration's `kind`.
    pub structure: String,
    pub lookups: u64,
    pub refs_mean: f64,
    pub refs_p99: usize,
    pub lines_mean: f64,
    /// Bytes of page-table memory at the end.
    pub footprint_bytes: u64,
    /// Of those, the bytes the structure could give back without a lookup changing
    /// ([`PageTable::reclaimable_bytes`]: the greedy variable radix table's unused
    /// level frames), and the rest, in use.
    pub reclaimable_bytes: u64,
    pub in_use_bytes: u64,
    /// Pages mapped on first touch, and the table references (reads + writes) per map.
    pub maps: u64,
    pub map_refs_mean: f64,
    /// Table references of mapping the shared segments (0 without any).
    pub shared_map_refs: u64,
    /// Lookups per second of host time, demand mapping included (the structure's
    /// speed as a simulator component; it varies from run to run, unlike the rest).
    pub lookups_per_second: f64,
    /// Table references of the updates of one 2 MiB segment.
    pub segment: SegmentUpdates,
}

/// Table references (reads + writes) of updates to one 2 MiB segment of 512 base
/// pages, made after the lookups (in the table they left) at an address they did not
/// touch: mapping it page by page, protecting it read-only as one range
/// ([`PageTable::protect_range`]: page by page but in the variable radix table, which
/// writes the entry above a level the range covers whole), promoting it in
/// place to one 2M page on the same frames (the 512 entries removed, the one made),
/// demoting it back, and unmapping it. Promotion and demotion are `None` where the
/// structure does not map 2M pages.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SegmentUpdates {
    pub map: u64,
    pub protect: u64,
    pub promote: Option<u64>,
    pub demote: Option<u64>,
    pub unmap: u64,
}

/// Where [`SegmentUpdates`] are measured: 2 MiB-aligned, high in the 47-bit user
/// space, away from what programs and the layouts use.
const SEGMENT_VA: u64 = 0x7e00_0000_0000;

/// A machine's TLB in front of every structure: only its misses look the table up.
/// Every structure maps the same 4K pages, so each sees the same misses.
pub struct Filter {
    config: crate::MachineConfig,
}

impl Filter {
    /// The TLB of `config`; its page table is the comparison's structure of its kind
    /// ([`Filter::structures`]), and its costs play no part.
    pub fn of(config: &crate::MachineConfig) -> Result<Filter, String> {
        if config.base_page != PageSize::K4 {
            return Err(format!(
                "machine {}: its base page is {}; the structures are compared on 4K pages",
                config.name, config.base_page
            ));
        }
        let filter = Filter {
            config: config.clone(),
        };
        filter.tlb()?;
        Ok(filter)
    }

    /// The structures compared behind this TLB: each at its defaults but the
    /// machine's own, which is as the machine configures it (the variable radix
    /// table of `mips-r4x00` with the MIPS page sizes, say), so that a change to the
    /// machine's `[page_table]` reaches the comparison.
    pub fn structures(&self) -> Vec<PageTableConfig> {
        let own = &self.config.page_table;
        default_structures()
            .into_iter()
            .map(
                |s| match std::mem::discriminant(&s) == std::mem::discriminant(own) {
                    true => own.clone(),
                    false => s,
                },
            )
            .collect()
    }

    /// A fresh copy of the TLB.
    fn tlb(&self) -> Result<Hierarchy, String> {
        let c = &self.config;
        Hierarchy::build(&c.tlb, c.base_page, c.seed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Trace(TraceError),
    /// A structure that cannot be built or refused an update.
    #[error("{structure}: {message}")]
    Structure { structure: String, message: String },
}

/// One structure being measured.
struct Run {
    structure: String,
    table: AnyPageTable,
    frames: SimpleAllocator,
    refs: Histogram,
    lines: u64,
    maps: u64,
    map_refs: u64,
    shared_map_refs: u64,
    /// Host time spent in lookups (timed per batch, not per reference).
    seconds: f64,
    walk: Walk,
    segment: SegmentUpdates,
    tlb: Option<Hierarchy>,
}

impl Run {
    fn fail(&self, message: String) -> CompareError {
        CompareError::Structure {
            structure: self.structure.clone(),
            message,
        }
    }

    /// Measure [`SegmentUpdates`] in the table as the lookups left it.
    fn segment_updates(&mut self) -> Result<SegmentUpdates, CompareError> {
        let Run { table, frames, .. } = self;
        let result = each_table!(table, t => segment_updates(t, frames));
        result.map_err(|(what, e)| self.fail(format!("segment {what} at {SEGMENT_VA:#x}: {e}")))
    }

    fn row(&self) -> Row {
        let lookups = self.refs.total();
        let footprint_bytes = each_table!(&self.table, t => t.footprint_bytes());
        let reclaimable_bytes = each_table!(&self.table, t => t.reclaimable_bytes());
        Row {
            structure: self.structure.clone(),
            lookups,
            refs_mean: self.refs.mean(),
            refs_p99: self.refs.quantile(0.99),
            lines_mean: self.lines as f64 / lookups.max(1) as f64,
            footprint_bytes,
            reclaimable_bytes,
            in_use_bytes: footprint_bytes - reclaimable_bytes,
            maps: self.maps,
            map_refs_mean: self.map_refs as f64 / self.maps.max(1) as f64,
            shared_map_refs: self.shared_map_refs,
            lookups_per_second: lookups as f64 / self.seconds.max(1e-9),
            segment: self.segment.clone(),
        }
    }

    /// Look every reference up, mapping its page first if it is not mapped.
    fn lookups(&mut self, refs: &[MemRef], first: u64) -> Result<(), CompareError> {
        let Run {
            table,
            frames,
            walk,
            refs: hist,
            lines,
            maps,
            map_refs,
            tlb,
            ..
        } = self;
        let clock = std::time::Instant::now();
        let mut tally = Tally {
            frames,
            walk,
            hist,
            lines,
            maps,
            map_refs,
        };
        let result = match tlb {
            None => each_table!(table, t => lookups(t, &mut tally, refs)),
            Some(tlb) => each_table!(table, t => reloads(t, &mut tally, tlb, refs)),
        };
        self.seconds += clock.elapsed().as_secs_f64();
        result.map_err(|(i, va, e)| {
            self.fail(format!(
                "reference {}: address {:#x}: {e}",
                first + i as u64,
                va.0
            ))
        })
    }
}

/// What the lookups count, and where they map pages.
struct Tally<'a> {
    frames: &'a mut SimpleAllocator,
    walk: &'a mut Walk,
    hist: &'a mut Histogram,
    lines: &'a mut u64,
    maps: &'a mut u64,
    map_refs: &'a mut u64,
}

type LookupError = (usize, VirtAddr, MapError);

/// One lookup of reference `i`, mapping its page first if it is not mapped.
#[inline]
fn lookup<T: PageTable>(
    table: &mut T,
    t: &mut Tally<'_>,
    i: usize,
    r: &MemRef,
) -> Result<crate::pagetable::Translation, LookupError> {
    table.walk_into(r.asid, r.addr, t.walk);
    if t.walk.translation.is_none() {
        let page = r.addr.vpn(PageSize::K4).base(PageSize::K4);
        let fail = |e| (i, r.addr, e);
        let pfn = t
            .frames
            .alloc(PageSize::K4)
            .ok_or(fail(MapError::OutOfMemory))?;
        let cost = table
            .map(r.asid, page, PageSize::K4, pfn, Perms::RW, t.frames)
            .map_err(fail)?;
        *t.maps += 1;
        *t.map_refs += cost.refs();
        table.walk_into(r.asid, r.addr, t.walk);
    }
    let found = t.walk.translation.ok_or((i, r.addr, MapError::NotMapped))?;
    t.hist.record(t.walk.refs().len());
    *t.lines += t.walk.distinct_lines() as u64;
    Ok(found)
}

/// The loop of [`Run::lookups`] without a TLB: every reference is a lookup. Generic
/// over the structure so that no call in it is dynamic; it allocates nothing.
fn lookups<T: PageTable>(
    table: &mut T,
    t: &mut Tally<'_>,
    refs: &[MemRef],
) -> Result<(), LookupError> {
    for (i, r) in refs.iter().enumerate() {
        lookup(table, t, i, r)?;
    }
    Ok(())
}

/// The loop of [`Run::lookups`] behind a TLB: a lookup per reload.
fn reloads<T: PageTable>(
    table: &mut T,
    t: &mut Tally<'_>,
    tlb: &mut Hierarchy,
    refs: &[MemRef],
) -> Result<(), LookupError> {
    for (i, r) in refs.iter().enumerate() {
        let side = match r.kind {
            crate::event::AccessKind::Fetch => INSTRUCTION,
            _ => DATA,
        };
        tlb.translate(side, r.asid, r.addr, || lookup(table, t, i, r))?;
    }
    Ok(())
}

/// The loop of [`Run::segment_updates`]; errors name the update that failed.
fn segment_updates<T: PageTable>(
    table: &mut T,
    frames: &mut SimpleAllocator,
) -> Result<SegmentUpdates, (&'static str, MapError)> {
    let asid = crate::addr::Asid(0);
    let base = frames
        .alloc(PageSize::M2)
        .ok_or(("frames", MapError::OutOfMemory))?;
    let page = |i: u64| {
        (
            VirtAddr(SEGMENT_VA + (i << 12)),
            crate::addr::Pfn(base.0 + i),
        )
    };
    let mut u = SegmentUpdates::default();
    let each = |table: &mut T,
                frames: &mut SimpleAllocator,
                f: &mut dyn FnMut(
        &mut T,
        &mut SimpleAllocator,
        VirtAddr,
        crate::addr::Pfn,
    ) -> Result<u64, MapError>|
     -> Result<u64, MapError> {
        let mut refs = 0;
        for i in 0..512 {
            let (va, pfn) = page(i);
            refs += f(table, frames, va, pfn)?;
        }
        Ok(refs)
    };
    let map_base = |t: &mut T, fr: &mut SimpleAllocator, va, pfn| {
        t.map(asid, va, PageSize::K4, pfn, Perms::RW, fr)
            .map(|c| c.refs())
    };
    let unmap_base = |t: &mut T, fr: &mut SimpleAllocator, va, _| {
        t.unmap(asid, va, PageSize::K4, fr).map(|c| c.refs())
    };
    u.map = each(table, frames, &mut map_base.clone()).map_err(|e| ("map", e))?;
    u.protect = table
        .protect_range(
            asid,
            VirtAddr(SEGMENT_VA),
            PageSize::M2.bytes(),
            Perms(Perms::READ),
            frames,
        )
        .map_err(|e| ("protect", e))?
        .refs();
    if table.page_sizes().contains(&PageSize::M2) {
        let seg = VirtAddr(SEGMENT_VA);
        let mut promote =
            each(table, frames, &mut unmap_base.clone()).map_err(|e| ("promote", e))?;
        promote += table
            .map(asid, seg, PageSize::M2, base, Perms::RW, frames)
            .map_err(|e| ("promote", e))?
            .refs();
        u.promote = Some(promote);
        let mut demote = table
            .unmap(asid, seg, PageSize::M2, frames)
            .map_err(|e| ("demote", e))?
            .refs();
        demote += each(table, frames, &mut map_base.clone()).map_err(|e| ("demote", e))?;
        u.demote = Some(demote);
    }
    u.unmap = each(table, frames, &mut unmap_base.clone()).map_err(|e| ("unmap", e))?;
    frames.free(base, PageSize::M2);
    Ok(u)
}

fn start(
    structures: &[PageTableConfig],
    filter: Option<&Filter>,
) -> Result<Vec<Run>, CompareError> {
    structures
        .iter()
        .map(|c| {
            let structure = serde_json::to_value(c)
                .ok()
                .and_then(|v| v["kind"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let table = build_page_table(c).map_err(|message| CompareError::Structure {
                structure: structure.clone(),
                message,
            })?;
            let tlb =
                filter
                    .map(Filter::tlb)
                    .transpose()
                    .map_err(|message| CompareError::Structure {
                        structure: structure.clone(),
                        message,
                    })?;
            Ok(Run {
                structure,
                table,
                frames: SimpleAllocator::new(FRAMES),
                refs: Histogram::default(),
                lines: 0,
                maps: 0,
                map_refs: 0,
                shared_map_refs: 0,
                seconds: 0.0,
                walk: Walk::new(),
                segment: SegmentUpdates::default(),
                tlb,
            })
        })
        .collect()
}

/// `structures` over the trace `reader` reads, up to `max_refs` references, each
/// behind its own copy of `filter`'s TLB if one is given; `progress` is told the
/// references of each batch and the reader's position after it.
pub fn compare_trace(
    structures: &[PageTableConfig],
    reader: &mut dyn TraceReader,
    max_refs: Option<u64>,
    filter: Option<&Filter>,
    mut progress: impl FnMut(u64, u64),
) -> Result<Vec<Row>, CompareError> {
    let mut runs = start(structures, filter)?;
    let mut batch = Batch::default();
    let mut done = 0u64;
    let limit = max_refs.unwrap_or(u64::MAX);
    while done < limit && reader.next_batch(&mut batch).map_err(CompareError::Trace)? {
        let n = batch
            .refs
            .len()
            .min((limit - done).try_into().unwrap_or(usize::MAX));
        for run in &mut runs {
            run.lookups(&batch.refs[..n], done)?;
        }
        done += n as u64;
        progress(n as u64, reader.position());
    }
    for run in &mut runs {
        run.segment = run.segment_updates()?;
    }
    Ok(runs.iter().map(Run::row).collect())
}

/// `structures` over a synthetic layout: its shared segments mapped first, then its
/// references (behind `filter`'s TLB if one is given).
pub fn compare_workload(
    structures: &[PageTableConfig],
    workload: &Workload,
    filter: Option<&Filter>,
) -> Result<Vec<Row>, CompareError> {
    let mut runs = start(structures, filter)?;
    for run in &mut runs {
        for &(va, pages) in &workload.segments {
            let pfn = run.frames.alloc(PageSize::M2);
            let pfn = pfn.ok_or_else(|| run.fail(MapError::OutOfMemory.to_string()))?;
            let segment = Segment {
                va,
                size: PageSize::K4,
                pages,
                pfn,
                perms: Perms::RW,
            };
            let Run { table, frames, .. } = run;
            let cost = each_table!(table, t => t.map_shared(&workload.asids, &segment, frames))
                .map_err(|e| run.fail(format!("shared segment at {:#x}: {e}", va.0)))?;
            run.shared_map_refs += cost.refs();
        }
        run.lookups(&workload.refs, 0)?;
        run.segment = run.segment_updates()?;
    }
    Ok(runs.iter().map(Run::row).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::layout::Layout;

    #[test]
    fn p99_of_a_known_histogram() {
        let mut h = Histogram::default();
        // 97 lookups of 4 references, then one each of 5, 9 and 20.
        (0..97).for_each(|_| h.record(4));
        [5, 9, 20].iter().for_each(|&n| h.record(n));
        assert_eq!(h.total(), 100);
        assert_eq!(h.quantile(0.99), 9, "the 99th of 100 sorted lookups");
        assert_eq!(h.quantile(0.97), 4);
        assert_eq!(h.quantile(1.0), 20);
        assert!((h.mean() - (97.0 * 4.0 + 34.0) / 100.0).abs() < 1e-12);
        assert_eq!(Histogram::default().quantile(0.99), 0);
    }

    #[test]
    fn behind_a_tlb_only_reloads_are_lookups_and_all_see_the_same() {
        // Each reference twice in a row: the second hits in the TLB.
        let mut w = Layout::Dense.workload();
        w.refs = w.refs.iter().flat_map(|&r| [r, r]).collect();
        let mips = crate::presets::load("mips-r4x00").unwrap();
        let filter = Filter::of(&mips).unwrap();
        let all = compare_workload(&default_structures(), &w, None).unwrap();
        let rows = compare_workload(&default_structures(), &w, Some(&filter)).unwrap();
        let reloads = rows[0].lookups;
        assert_eq!(reloads * 2, w.refs.len() as u64);
        for (r, a) in rows.iter().zip(&all) {
            assert_eq!(r.lookups, reloads, "{r:?}");
            assert_eq!(r.maps, a.maps, "every page is still mapped once: {r:?}");
        }
        let alpha = crate::presets::load("alpha-21264").unwrap();
        let e = Filter::of(&alpha).err().unwrap();
        assert!(e.contains("8K") && e.contains("4K"), "{e}");
    }

    #[test]
    fn every_structure_maps_each_page_once_and_finds_it() {
        let w = Layout::Sparse.workload();
        let rows = compare_workload(&default_structures(), &w, None).unwrap();
        assert_eq!(rows.len(), crate::pagetable::NAMES.len());
        for r in &rows {
            assert_eq!(r.lookups, w.refs.len() as u64, "{r:?}");
            assert_eq!(r.maps, w.refs.len() as u64, "each page touched once: {r:?}");
            assert!(
                r.refs_mean >= 1.0 && r.refs_p99 >= 1 && r.footprint_bytes > 0,
                "{r:?}"
            );
            // Every structure maps 2M pages by default: each update of the segment is
            // measured, and touches the table at least once per page it changes.
            let u = &r.segment;
            assert!(u.map >= 512 && u.protect >= 512 && u.unmap >= 512, "{r:?}");
            assert!(u.promote.unwrap() > 0 && u.demote.unwrap() >= 512, "{r:?}");
        }
    }
}
