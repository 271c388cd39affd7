//! The page-size benefit analysis of Cașcaval et al., "Multiple Page Size Modeling and
//! Optimization", PACT 2005, §3: from one trace with small pages, for each *base
//! mapping* (every reference on 4K pages; one category on large pages; every reference
//! on large pages), for each large size the machine has, the page stream the mapping
//! makes, its TLB misses and page faults by Equation 1 on its reuse histograms, its
//! MissCycles by Equation 2, and the mappings ranked by their percentage of the maximal
//! benefit (PMB). Then the significance test of §3.3 and the choice of the online agent
//! of §4 ([`agent`]), and a check of the prediction against pagelab's own simulation
//! ([`simulate`]).
//!
//! Readings where the paper is silent (docs/papers.md, "CPO"):
//! - the benefit of a mapping is B = MissCycles(all small) − MissCycles(mapping), and
//!   PMB = 100·B / max B, negative benefits taken as 0; with no positive benefit there
//!   is no ranking;
//! - the large pages a mapping needs are the distinct large pages its large-mapped
//!   references touch;
//! - base mappings are made for static, small dynamic, large dynamic, stack and the
//!   user's categories (code and other go to large pages only in "all large");
//! - the significance test takes the all-small run's TLB misses and page faults per
//!   second over the program's run time if given, else over an estimate (references
//!   at the machine's base cycles each, plus MissCycles, at `clock_ghz`).

pub mod agent;
mod model;
mod pass;
mod request;
pub mod simulate;

pub use agent::{Budget, Choice};
pub use model::{model, MachineModel, ModelTlb};
pub use request::Request;

use crate::addr::BASE_SHIFT;
use crate::categories::{names, Category, UserCategory};
use crate::trace::{Location, TraceError, TraceReader};
use crate::{MachineConfig, PageSize};
use pass::{Pass, StreamSpec};
use serde::Serialize;
use std::path::Path;

/// The thresholds of the significance test (§5.3.1): a program fails it if both its
/// DTLB misses and its page faults per second are below them.
pub const TLB_MISSES_PER_SECOND: f64 = 100_000.0;
pub const PAGE_FAULTS_PER_SECOND: f64 = 1_000.0;

/// The machine analysed when none is named: the paper's is a PowerPC 970FX, which
/// pagelab has no preset of; Sandy Bridge has 2M and 1G pages.
pub const DEFAULT_MACHINE: &str = "sandy-bridge";

#[derive(Clone, Debug)]
pub struct Options {
    /// Large sizes to analyse (each the machine must have); None: all it has.
    pub large_sizes: Option<Vec<PageSize>>,
    /// C_TLBmiss and C_PF; None: from the machine ([`model`]).
    pub tlb_miss_cycles: Option<f64>,
    pub page_fault_cycles: Option<f64>,
    /// Entries of the page table H_PF is read at; None: every page stays mapped.
    pub page_table_entries: Option<u64>,
    pub budget: Option<Budget>,
    /// The program's run time with small pages, for the significance test.
    pub seconds: Option<f64>,
    /// The clock the run time is estimated at when `seconds` is not given.
    pub clock_ghz: f64,
    /// Keep one data reference in this many (§5.1); 1: every one.
    pub sample: u64,
    pub rules: Vec<UserCategory>,
    /// Let streams follow the all-small one while their categories are unreferenced
    /// (an optimisation that changes no count; off only to test that it does not).
    #[doc(hidden)]
    pub follow: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            large_sizes: None,
            tlb_miss_cycles: None,
            page_fault_cycles: None,
            page_table_entries: None,
            budget: None,
            seconds: None,
            clock_ghz: 3.0,
            sample: 1,
            rules: Vec::new(),
            follow: true,
        }
    }
}

/// One mapping's prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// "all small", "large-dynamic@2M", "all@2M".
    pub mapping: String,
    /// The large size, None for all small.
    pub page_size: Option<String>,
    /// The categories on large pages.
    pub categories: Vec<String>,
    /// Every category on large pages.
    pub all: bool,
    pub translations: u64,
    pub tlb_misses: u64,
    pub page_faults: u64,
    pub large_pages: u64,
    /// The memory its large pages take beyond the 4K pages the program touches in
    /// them (of every data reference, sampled or not); 0 for all small.
    pub bloat_bytes: u64,
    /// Equation 2.
    pub miss_cycles: f64,
    pub benefit_cycles: f64,
    /// Percentage of the maximal benefit, and the rank by it (1 the best); None
    /// when no mapping gains.
    pub pmb: Option<f64>,
    pub rank: Option<usize>,
    /// The first address of each large page (for the simulation to back them).
    #[serde(skip)]
    pub large_page_starts: Vec<u64>,
}

/// The significance test of §3.3 on the all-small mapping.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Significance {
    pub seconds: f64,
    /// The run time was estimated, not given.
    pub estimated: bool,
    pub tlb_misses_per_second: f64,
    pub page_faults_per_second: f64,
    pub passes: bool,
}

impl Significance {
    /// The test on the all-small row over `seconds` of run time.
    pub fn of(all_small: &Row, seconds: f64, estimated: bool) -> Significance {
        let tlb_rate = all_small.tlb_misses as f64 / seconds;
        let pf_rate = all_small.page_faults as f64 / seconds;
        Significance {
            seconds,
            estimated,
            tlb_misses_per_second: tlb_rate,
            page_faults_per_second: pf_rate,
            passes: tlb_rate >= TLB_MISSES_PER_SECOND || pf_rate >= PAGE_FAULTS_PER_SECOND,
        }
    }
}

impl Benefit {
    /// The significance test and the agent's choice again, over the program's
    /// measured run time.
    pub fn with_seconds(mut self, seconds: f64) -> Result<Benefit, String> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(format!("{seconds} s: not a run time"));
        }
        self.significance = Significance::of(&self.rows[0], seconds, false);
        self.choice = agent::choose(&self.rows, self.budget, self.significance.passes);
        Ok(self)
    }
}

/// Everything the analysis found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Benefit {
    pub machine: String,
    /// Data references (instruction fetches are the instruction TLBs' business).
    pub references: u64,
    /// One reference kept in this many; exact when 1.
    pub sampled_one_in: u64,
    pub exact: bool,
    /// Sampled: the Hellinger affinity of the kept and the whole page-access
    /// distributions (1: the same).
    pub hellinger_affinity: Option<f64>,
    pub tlbs: Vec<ModelTlb>,
    pub tlb_miss_cycles: f64,
    pub page_fault_cycles: f64,
    /// What a large page's fault adds for each base page beyond its first.
    pub large_fault_cycles_per_page: f64,
    pub page_table_entries: Option<u64>,
    /// (category, data references) of the references kept.
    pub categories: Vec<(String, u64)>,
    /// Mappings in the order analysed: all small first, then by size.
    pub rows: Vec<Row>,
    pub significance: Significance,
    pub budget: Option<Budget>,
    pub choice: Choice,
    /// What limits the analysis (a trace without allocation events, no ranking).
    pub notes: Vec<String>,
}

/// A mapping as the pass makes it: its streams.
struct Mapping {
    name: String,
    size: Option<PageSize>,
    large: u16,
    all: bool,
    streams: Vec<usize>,
}

/// The categories that get a base mapping of their own.
fn mapped_categories(count: usize) -> Vec<usize> {
    let builtin = [
        Category::Static,
        Category::SmallDynamic,
        Category::LargeDynamic,
        Category::Stack,
    ];
    builtin
        .iter()
        .map(|c| c.index())
        .chain(Category::ALL.len()..count)
        .collect()
}

/// The mappings and the streams they need, each stream once.
fn mappings(
    m: &MachineModel,
    names: &[String],
    sizes: &[PageSize],
) -> (Vec<Mapping>, Vec<StreamSpec>) {
    let every: u16 = ((1u32 << names.len()) - 1) as u16;
    let small_tlb = m.tlb(PageSize::K4).expect("the model has 4K pages");
    let mut specs: Vec<StreamSpec> = Vec::new();
    let mut add = |spec: StreamSpec| -> Option<usize> {
        if spec.small == 0 && spec.large == 0 {
            return None;
        }
        let spec = if spec.large == 0 {
            StreamSpec {
                size: PageSize::K4,
                ..spec
            }
        } else {
            spec
        };
        Some(match specs.iter().position(|s| *s == spec) {
            Some(i) => i,
            None => {
                specs.push(spec);
                specs.len() - 1
            }
        })
    };
    let mut streams_of = |large: u16, size: PageSize| -> Vec<usize> {
        let big = m.tlb(size).expect("a large size of the model");
        let specs = if large == 0 || big.index == small_tlb.index {
            vec![StreamSpec {
                small: every & !large,
                large,
                size,
                entries: small_tlb.entries,
            }]
        } else {
            vec![
                StreamSpec {
                    small: every & !large,
                    large: 0,
                    size: PageSize::K4,
                    entries: small_tlb.entries,
                },
                StreamSpec {
                    small: 0,
                    large,
                    size,
                    entries: big.entries,
                },
            ]
        };
        specs.into_iter().filter_map(&mut add).collect()
    };
    let mut out = vec![Mapping {
        name: "all small".into(),
        size: None,
        large: 0,
        all: false,
        streams: streams_of(0, PageSize::K4),
    }];
    for &size in sizes {
        for c in mapped_categories(names.len()) {
            let large = 1u16 << c;
            out.push(Mapping {
                name: format!("{}@{size}", names[c]),
                size: Some(size),
                large,
                all: false,
                streams: streams_of(large, size),
            });
        }
        out.push(Mapping {
            name: format!("all@{size}"),
            size: Some(size),
            large: every,
            all: true,
            streams: streams_of(every, size),
        });
    }
    (out, specs)
}

/// Analyse the trace `reader` reads on the machine `config`; `progress` is told each
/// batch's references and the reader's position.
pub fn analyze_trace(
    reader: &mut dyn TraceReader,
    path: &Path,
    config: &MachineConfig,
    options: &Options,
    mut progress: impl FnMut(u64, u64),
) -> Result<Benefit, TraceError> {
    let fail = |e: String| TraceError::new(path, Location::File, e);
    let m = model(config, options.tlb_miss_cycles, options.page_fault_cycles)
        .map_err(|e| fail(format!("{}: {e}", config.name)))?;
    crate::categories::check_rules(&options.rules).map_err(fail)?;
    if !(options.clock_ghz.is_finite() && options.clock_ghz > 0.0) {
        return Err(fail(format!(
            "--clock-ghz {}: not a clock rate",
            options.clock_ghz
        )));
    }
    if let Some(s) = options.seconds {
        if !(s.is_finite() && s > 0.0) {
            return Err(fail(format!("--seconds {s}: not a run time")));
        }
    }
    if options.page_table_entries == Some(0) {
        return Err(fail(
            "--page-table-entries 0: a page table holds at least one page".into(),
        ));
    }
    if !(1..=1 << 32).contains(&options.sample) {
        return Err(fail(format!(
            "--sample {}: keep one reference in 1 to 2^32",
            options.sample
        )));
    }
    let sizes = match &options.large_sizes {
        None => m.large_sizes.clone(),
        Some(want) => {
            for s in want {
                if !m.large_sizes.contains(s) {
                    return Err(fail(format!(
                        "--page-size {s}: {} has no {s} pages (it has {})",
                        config.name,
                        list(&m.large_sizes)
                    )));
                }
            }
            want.clone()
        }
    };
    if sizes.is_empty() {
        return Err(fail(format!(
            "{}: the machine has no large pages to analyse",
            config.name
        )));
    }
    let names = names(&options.rules);
    let (maps, specs) = mappings(&m, &names, &sizes);
    if options.page_table_entries.is_some() {
        if let Some(split) = maps.iter().find(|map| map.streams.len() > 1) {
            return Err(fail(format!(
                "--page-table-entries: on {}, {} pages and 4K pages are in different TLBs, whose misses would go to two page tables of that size; take a machine whose TLB holds both (zen4, skylake at 2M) or leave the page table unlimited",
                config.name,
                split.size.map_or("large".into(), |s| s.to_string())
            )));
        }
    }
    let mut pass = Pass::new(
        &specs,
        options.rules.clone(),
        options.sample,
        options.page_table_entries,
    );
    if !options.follow {
        pass.follow_none();
    }
    let mut batch = crate::event::Batch::default();
    while reader.next_batch(&mut batch)? {
        pass.add_batch(&batch).map_err(fail)?;
        progress(batch.refs.len() as u64, reader.position());
    }
    if pass.references == 0 {
        return Err(fail("holds no data references: nothing to analyse".into()));
    }
    let counts = pass.finish();
    let mut notes: Vec<String> = pass.note().into_iter().collect();
    let referenced = |c: usize| pass.category_references[c] > 0;
    let mut rows: Vec<Row> = Vec::new();
    for map in &maps {
        let single = (map.large.count_ones() == 1).then(|| map.large.trailing_zeros() as usize);
        // A category the trace never references maps nothing: its row would be all
        // small's again.
        if single.is_some_and(|c| !referenced(c)) {
            continue;
        }
        let mut row = Row {
            mapping: map.name.clone(),
            page_size: map.size.map(|s| s.to_string()),
            categories: (0..names.len())
                .filter(|c| map.large >> c & 1 != 0 && referenced(*c))
                .map(|c| names[c].clone())
                .collect(),
            all: map.all,
            translations: 0,
            tlb_misses: 0,
            page_faults: 0,
            large_pages: 0,
            bloat_bytes: 0,
            miss_cycles: 0.0,
            benefit_cycles: 0.0,
            pmb: None,
            rank: None,
            large_page_starts: Vec::new(),
        };
        for &s in &map.streams {
            let c = &counts[s];
            row.translations += c.translations;
            row.tlb_misses += c.tlb_misses;
            row.page_faults += c.page_faults;
            row.large_pages += c.large_pages;
            row.large_page_starts.extend(&c.large_page_starts);
        }
        if let Some(size) = map.size {
            let touched = pass.touched(map.large);
            let large = touched.len_at(size.shift() - BASE_SHIFT);
            row.bloat_bytes = (large * size.bytes()).saturating_sub(touched.len() << BASE_SHIFT);
        }
        row.miss_cycles = row.tlb_misses as f64 * m.tlb_miss_cycles
            + row.page_faults as f64 * m.page_fault_cycles
            + map.size.map_or(0.0, |size| {
                large_fault_extra(row.large_pages, size, m.large_fault_cycles_per_page)
            });
        rows.push(row);
    }
    rank(&mut rows);
    if rows.iter().all(|r| r.pmb.is_none()) {
        notes.push("no mapping has fewer MissCycles than all small: no ranking".into());
    }
    let base = &rows[0];
    let (seconds, estimated) = match options.seconds {
        Some(s) => (s, false),
        None => (
            (pass.references as f64 * m.base_cycles_per_ref + base.miss_cycles)
                / (options.clock_ghz * 1e9),
            true,
        ),
    };
    let significance = Significance::of(base, seconds, estimated);
    let choice = agent::choose(&rows, options.budget, significance.passes);
    Ok(Benefit {
        machine: config.name.clone(),
        references: pass.references,
        sampled_one_in: options.sample,
        exact: options.sample == 1,
        hellinger_affinity: pass.affinity(),
        tlbs: m.tlbs.clone(),
        tlb_miss_cycles: m.tlb_miss_cycles,
        page_fault_cycles: m.page_fault_cycles,
        large_fault_cycles_per_page: m.large_fault_cycles_per_page,
        page_table_entries: options.page_table_entries,
        categories: names
            .iter()
            .zip(&pass.category_references)
            .map(|(n, &r)| (n.clone(), r * options.sample))
            .collect(),
        rows,
        significance,
        budget: options.budget,
        choice,
        notes,
    })
}

/// The cycles `large` faults of large pages of `size` add to C_PF each: clearing
/// each base page of it beyond the first.
pub fn large_fault_extra(large: u64, size: PageSize, cycles_per_page: f64) -> f64 {
    let pages = size.bytes() >> BASE_SHIFT;
    large as f64 * pages.saturating_sub(1) as f64 * cycles_per_page
}

/// Benefits against the first row (all small), PMB and ranks.
pub fn rank(rows: &mut [Row]) {
    let Some(base) = rows.first().map(|r| r.miss_cycles) else {
        return;
    };
    for r in rows.iter_mut() {
        r.benefit_cycles = base - r.miss_cycles;
    }
    let best = rows.iter().map(|r| r.benefit_cycles).fold(0.0, f64::max);
    if best <= 0.0 {
        return;
    }
    for r in rows.iter_mut() {
        r.pmb = Some(100.0 * r.benefit_cycles.max(0.0) / best);
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        rows[b]
            .benefit_cycles
            .total_cmp(&rows[a].benefit_cycles)
            .then(a.cmp(&b))
    });
    for (rank, i) in order.into_iter().enumerate() {
        rows[i].rank = Some(rank + 1);
    }
}

fn list(sizes: &[PageSize]) -> String {
    if sizes.is_empty() {
        return "none".into();
    }
    sizes
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
