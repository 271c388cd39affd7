//! The prediction checked against pagelab's own simulator: each mapping run on the
//! machine's TLB hierarchy and page table, with the large pages the mapping's
//! categories touched backed by large pages from the first fault in them (the
//! `static` promotion policy, as `madvise` or hugetlbfs would back them), and its
//! simulated MissCycles (walk cycles and page-fault cycles) ranked as the predicted
//! ones are. The ranking error is §5.3.2's: the mean distance between predicted and
//! simulated PMB.
//!
//! Only the categories a mapping puts on large pages get them, as in the model's
//! streams and as a program whose allocator gives those categories an arena of their
//! own would: each data reference of such a category is moved to the same address
//! in the upper, kernel half of the address space ([`RELOCATED`]), so that a large page holds that category's data alone and
//! the data of other categories at neighbouring addresses stays on 4K pages. (Without
//! it a 2M page of static data would also back the heap beside it.)
//!
//! The simulation differs from the model where the machine does: set-associative
//! arrays and several levels instead of one fully associative TLB, walks shortened by
//! paging-structure caches and 2M and 1G walks shorter than 4K ones, instruction
//! fetches walking too, and large pages backed in every address space (regions are
//! addresses, so a trace of several processes gets a large page wherever any of them
//! touched one).

use super::{rank, Benefit, Row};
use crate::categories::{names, Attribution, CategoryId, UserCategory};
use crate::event::{AccessKind, Batch};
use crate::superpage::{PromotionConfig, StaticPromotionConfig, StaticRegion};
use crate::trace::{Location, Metadata, TraceError, TraceReader};
use crate::{addr::ByteSize, Machine, MachineConfig, PageSize};
use serde::Serialize;
use std::path::Path;

/// The bits set on the address of a reference moved to its category's own large
/// pages: the canonical upper half of a 48-bit address space (bit 47 and its sign
/// extension), which user programs never reference and every page table of a 48-bit
/// or larger space maps. A trace whose data already reaches there is refused.
pub const RELOCATED: u64 = 0xffff_8000_0000_0000;

/// A trace with the data references of the categories in `large` (a bit each) moved
/// up by [`RELOCATED`].
struct Relocate {
    inner: Box<dyn TraceReader + Send>,
    attribution: Attribution,
    large: u16,
    ids: Vec<CategoryId>,
    path: std::path::PathBuf,
}

impl TraceReader for Relocate {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        let more = self.inner.next_batch(batch)?;
        self.attribution.categorize(batch, &mut self.ids);
        for (r, &c) in batch.refs.iter_mut().zip(&self.ids) {
            if r.kind == AccessKind::Fetch || self.large & (1 << c) == 0 {
                continue;
            }
            if r.addr.0 >= 1 << 47 {
                return Err(TraceError::new(
                    &self.path,
                    Location::File,
                    format!(
                        "the data address {:#x} is in the upper half of the address space: the simulation cannot give a category large pages of its own there",
                        r.addr.0
                    ),
                ));
            }
            r.addr.0 |= RELOCATED;
        }
        Ok(more)
    }
    fn metadata(&self) -> &Metadata {
        self.inner.metadata()
    }
    fn position(&self) -> u64 {
        self.inner.position()
    }
}

/// One mapping, simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimulatedRow {
    pub mapping: String,
    /// Page walks (data and instruction side), page faults and of them large ones.
    pub walks: u64,
    pub page_faults: u64,
    pub large_faults: u64,
    /// Walk and page-fault cycles.
    pub miss_cycles: f64,
    pub benefit_cycles: f64,
    pub pmb: Option<f64>,
    pub rank: Option<usize>,
    pub predicted_pmb: Option<f64>,
    pub predicted_rank: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub machine: String,
    pub rows: Vec<SimulatedRow>,
    /// Mean |predicted PMB − simulated PMB| over the mappings both rank.
    pub ranking_error: Option<f64>,
    pub notes: Vec<String>,
}

/// The regions of a mapping's large pages, adjacent pages joined.
pub fn regions(starts: &[u64], size: PageSize) -> Vec<StaticRegion> {
    let mut starts = starts.to_vec();
    starts.sort_unstable();
    starts.dedup();
    let mut out: Vec<StaticRegion> = Vec::new();
    for s in starts {
        match out.last_mut() {
            Some(r) if r.start + r.bytes.0 == s => r.bytes.0 += size.bytes(),
            _ => out.push(StaticRegion {
                start: s,
                bytes: ByteSize(size.bytes()),
                page_size: size,
            }),
        }
    }
    out
}

/// Simulate every mapping of `benefit` on `config`, the trace read from its start by
/// `open` once per mapping; `progress` is told the mapping, each batch's references
/// and the reader's position.
pub fn validate(
    benefit: &Benefit,
    config: &MachineConfig,
    rules: &[UserCategory],
    mut open: impl FnMut() -> Result<Box<dyn TraceReader + Send>, TraceError>,
    path: &Path,
    mut progress: impl FnMut(&str, u64, u64),
) -> Result<Validation, TraceError> {
    let fail = |e: String| TraceError::new(path, Location::File, e);
    if benefit.sampled_one_in > 1 || benefit.page_table_entries.is_some() {
        return Err(fail(
            "the simulation runs every reference with every page kept mapped: compare it with an analysis without --sample and --page-table-entries".into(),
        ));
    }
    // The 4K machine of the translation comparison: demand paging on a buddy
    // allocator that has large blocks.
    let plain = crate::analysis::translation::schemes(config, &[])
        .map_err(|e| fail(format!("{}: {e}", config.name)))?
        .remove(0)
        .config;
    let mut plain = plain;
    // The fault cost the prediction used; a walk costs what the machine says.
    let cost = plain.cost.as_simple_mut().ok_or_else(|| {
        fail(format!(
            "{}: the benefit analysis needs cost.kind = \"simple\"",
            config.name
        ))
    })?;
    cost.page_fault_cycles = benefit.page_fault_cycles;
    let mut notes = Vec::new();
    let preset = super::model(config, None, None).map_err(fail)?;
    if !config.cache.is_off() {
        notes.push(format!(
            "the prediction charged {} cycles a TLB miss; the simulation reads each walk's entries through {}'s data caches, at the latency of the level that holds each",
            benefit.tlb_miss_cycles, config.name
        ));
    } else if preset.tlb_miss_cycles != benefit.tlb_miss_cycles {
        notes.push(format!(
            "the prediction charged {} cycles a TLB miss; the simulation charges walks as {} does ({} cycles a reference)",
            benefit.tlb_miss_cycles, config.name, cost.walk_ref_cycles
        ));
    }
    let category_names = names(rules);
    let mut simulated: Vec<Row> = Vec::new();
    for row in &benefit.rows {
        let mut c = plain.clone();
        // The categories this mapping moves to large pages of their own: none for all
        // small, and none for "all" (every reference is on large pages there).
        let mut large: u16 = 0;
        if !row.all {
            for name in &row.categories {
                let i = category_names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| fail(format!("no category {name:?} (a bug)")))?;
                large |= 1 << i;
            }
        }
        if let Some(size) = &row.page_size {
            let size = PageSize::parse(size).map_err(fail)?;
            let moved = if large != 0 { RELOCATED } else { 0 };
            let starts: Vec<u64> = row.large_page_starts.iter().map(|s| s | moved).collect();
            c.promotion = PromotionConfig::Static(StaticPromotionConfig {
                regions: regions(&starts, size),
            });
        }
        c.name = format!("{} ({})", config.name, row.mapping);
        let mut machine = Machine::build(&c).map_err(|e| fail(format!("{}: {e}", c.name)))?;
        let mut reader = open()?;
        if large != 0 {
            reader = Box::new(Relocate {
                inner: reader,
                attribution: Attribution::new(rules.to_vec()),
                large,
                ids: Vec::new(),
                path: path.to_path_buf(),
            });
        }
        machine.run_trace(reader.as_mut(), path, |refs, position| {
            progress(&row.mapping, refs, position)
        })?;
        let r = machine.report();
        simulated.push(Row {
            tlb_misses: r.counts.walks,
            page_faults: r.counts.page_faults,
            // The large faults, where the row keeps its large pages.
            large_pages: r.counts.large_faults,
            // The simulator charges a fault C_PF whatever its size; the analysis adds
            // the clearing of a large page's other base pages, and so here.
            miss_cycles: r.cycles.walks
                + r.cycles.page_faults
                + row
                    .page_size
                    .as_deref()
                    .map_or(Ok(0.0), |s| {
                        PageSize::parse(s).map(|size| {
                            super::large_fault_extra(
                                r.counts.large_faults,
                                size,
                                benefit.large_fault_cycles_per_page,
                            )
                        })
                    })
                    .map_err(fail)?,
            pmb: None,
            rank: None,
            large_page_starts: Vec::new(),
            ..row.clone()
        });
    }
    rank(&mut simulated);
    let rows: Vec<SimulatedRow> = simulated
        .iter()
        .zip(&benefit.rows)
        .map(|(s, p)| SimulatedRow {
            mapping: s.mapping.clone(),
            walks: s.tlb_misses,
            page_faults: s.page_faults,
            large_faults: s.large_pages,
            miss_cycles: s.miss_cycles,
            benefit_cycles: s.benefit_cycles,
            pmb: s.pmb,
            rank: s.rank,
            predicted_pmb: p.pmb,
            predicted_rank: p.rank,
        })
        .collect();
    let pairs: Vec<_> = rows.iter().map(|r| (r.predicted_pmb, r.pmb)).collect();
    Ok(Validation {
        machine: config.name.clone(),
        ranking_error: super::agent::ranking_error(&pairs),
        rows,
        notes,
    })
}
