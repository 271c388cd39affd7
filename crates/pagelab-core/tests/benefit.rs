//! The page-size benefit analysis (Cașcaval et al., "Multiple Page Size Modeling and
//! Optimization", PACT 2005, §3) against pagelab's simulator where both must give the
//! same numbers: a machine whose one TLB is fully associative LRU and holds 4K and 2M
//! pages, as Equation 1 assumes, on a trace whose categories share no 2M page, and on
//! one where the heap and the data segment share one (the simulation moves a category
//! mapped large to pages of its own, as the model's streams take it). There every
//! mapping's predicted TLB misses are the simulated page walks and its page faults the
//! simulated faults, exactly. Then the ranking, the agent's choice under budgets,
//! sampling, and input the analysis refuses.

use pagelab_core::analysis::benefit::{self, simulate, Budget, Options};
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use pagelab_core::trace::{TraceError, TraceReader};
use pagelab_core::MachineConfig;
use std::path::Path;

mod common;
use common::Batches;

const MACHINE: &str = r#"
name = "fa-lru-64"
[tlb]
kind = "set-associative"
sets = 1
ways = 64
replacement = "lru"
page_sizes = ["4K", "2M"]
"#;

const LARGE: u64 = 0x7f00_0000_0000; // one 64 MiB block: 32 2M pages
const HEAP: u64 = 0x0100_0000; // small blocks over 16 pages
const DATA: u64 = 0x0060_0000; // the data segment: 64 pages

fn reader(batches: &[Batch]) -> Box<dyn TraceReader + Send> {
    Box::new(Batches::new(batches.to_vec()))
}

fn malloc(addr: u64, size: u64) -> Event {
    Event::Alloc(Alloc {
        op: AllocOp::Malloc,
        addr,
        size,
        old_addr: 0,
        flags: 0,
        callsite: 0,
    })
}

/// 70 % of references at random pages of the large block, 20 % in the heap's small
/// blocks, 10 % in the data segment; `events` false leaves the allocations out.
fn trace(events: bool) -> Vec<Batch> {
    trace_from(events, 0)
}

/// The same, the first `late` batches referencing the heap only, the next as many
/// the heap and the data segment: the categories appear one after another.
fn trace_from(events: bool, late: usize) -> Vec<Batch> {
    trace_with(events, late, HEAP)
}

/// [`trace_from`] with the heap's small blocks at `heap`.
fn trace_with(events: bool, late: usize, heap: u64) -> Vec<Batch> {
    let mut first = Batch::default();
    if events {
        first.push_event(Event::Segment(Segment {
            start: DATA,
            end: DATA + (64 << 12),
            perms: 3,
            kind: SegmentKind::Data,
            name: String::new(),
        }));
        first.push_event(malloc(LARGE, 64 << 20));
        for i in 0..256 {
            first.push_event(malloc(heap + i * 256, 256));
        }
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut batches = vec![first];
    for batch in 0..20 {
        let mut b = Batch::default();
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pick = match x % 10 {
                _ if batch < late => 7,
                p @ 7..=9 if batch < 2 * late => p,
                _ if batch < 2 * late => 9,
                p => p,
            };
            let addr = match pick {
                0..=6 => LARGE + (x >> 8) % (64 << 20),
                7 | 8 => heap + (x >> 8) % (16 << 12),
                _ => DATA + (x >> 8) % (64 << 12),
            };
            let kind = if x & 1 == 0 {
                AccessKind::Load
            } else {
                AccessKind::Store
            };
            b.refs.push(MemRef::new(addr & !7, 8, kind));
        }
        batches.push(b);
    }
    batches
}

fn machine() -> MachineConfig {
    MachineConfig::from_toml(MACHINE, "test").unwrap()
}

fn analyze(batches: &[Batch], options: &Options) -> Result<benefit::Benefit, TraceError> {
    let mut r = reader(batches);
    benefit::analyze_trace(r.as_mut(), Path::new("t"), &machine(), options, |_, _| {})
}

/// Every mapping's predicted TLB misses, faults and large pages are the simulated
/// walks, faults and large faults.
fn equal_to_the_simulation(batches: &[Batch]) -> (benefit::Benefit, simulate::Validation) {
    let b = analyze(batches, &Options::default()).unwrap();
    let v = simulate::validate(
        &b,
        &machine(),
        &[],
        || Ok(reader(batches)),
        Path::new("t"),
        |_, _, _| {},
    )
    .unwrap();
    for (p, s) in b.rows.iter().zip(&v.rows) {
        assert_eq!(
            (s.walks, s.page_faults),
            (p.tlb_misses, p.page_faults),
            "{}",
            p.mapping
        );
        assert_eq!(s.large_faults, p.large_pages, "{}", p.mapping);
    }
    (b, v)
}

#[test]
fn streams_that_follow_all_small_until_their_category_appears_count_the_same() {
    // Static and large dynamic follow all small for the first batches, then part.
    let (b, _) = equal_to_the_simulation(&trace_from(true, 4));
    assert_eq!(b.rows.len(), 5);
    // The same counts as every stream run from the start, with a page table of
    // limited size (its engine copied too) and sampled.
    let batches = trace_from(true, 4);
    for options in [
        Options::default(),
        Options {
            page_table_entries: Some(100),
            ..Options::default()
        },
        Options {
            sample: 3,
            ..Options::default()
        },
    ] {
        let followed = analyze(&batches, &options).unwrap();
        let own = analyze(
            &batches,
            &Options {
                follow: false,
                ..options.clone()
            },
        )
        .unwrap();
        assert_eq!(followed.rows, own.rows);
    }
}

#[test]
fn predictions_equal_the_simulation_of_a_fully_associative_lru_tlb() {
    let batches = trace(true);
    let (b, v) = equal_to_the_simulation(&batches);
    let names: Vec<&str> = b.rows.iter().map(|r| r.mapping.as_str()).collect();
    // No stack reference: no stack row.
    assert_eq!(
        names,
        [
            "all small",
            "static@2M",
            "small-dynamic@2M",
            "large-dynamic@2M",
            "all@2M"
        ]
    );
    let row = |m: &str| b.rows.iter().find(|r| r.mapping == m).unwrap();
    // Pages: 32 large ones for the block, 16 + 64 small ones for the rest (140,000
    // random references leave a few of the block's 16,384 small pages untouched).
    assert_eq!(row("large-dynamic@2M").large_pages, 32);
    assert_eq!(row("all@2M").large_pages, 34);
    let faults = row("all small").page_faults;
    assert!(
        (16384 + 16 + 64 - 10..=16384 + 16 + 64).contains(&faults),
        "{faults}"
    );
    assert_eq!(row("large-dynamic@2M").page_faults, 32 + 16 + 64);
    // All large leaves 34 pages in 64 entries: the best; then the large block.
    assert_eq!(row("all@2M").rank, Some(1));
    assert_eq!(row("large-dynamic@2M").rank, Some(2));
    assert_eq!(row("all@2M").pmb, Some(100.0));
    // The same counts; the simulation's 2M walks read 3 levels where the model
    // charges every miss 4: the same ranks, PMB within a point.
    for r in &v.rows {
        assert_eq!(r.rank, r.predicted_rank, "{}", r.mapping);
    }
    let e = v.ranking_error.unwrap();
    assert!(e < 1.0, "{e}");
    assert!(b.significance.passes);
    assert_eq!(b.choice.mapping, "all@2M");
}

#[test]
fn a_category_mapped_large_gets_large_pages_of_its_own_in_the_simulation() {
    // The heap's blocks just past the data segment, in the same 2M page: static@2M
    // backs the data segment's references alone, not the heap's beside them.
    let shared = trace_with(true, 0, DATA + (64 << 12));
    let (b, v) = equal_to_the_simulation(&shared);
    let row = |m: &str| b.rows.iter().find(|r| r.mapping == m).unwrap();
    assert_eq!(row("static@2M").large_pages, 1);
    assert_eq!(row("small-dynamic@2M").large_pages, 1);
    // Bloat: the 2M page less the pages touched in it, the data segment's 64 and the
    // heap's 16; together, one 2M page holds both.
    assert_eq!(row("static@2M").bloat_bytes, (2 << 20) - (64 << 12));
    assert_eq!(row("small-dynamic@2M").bloat_bytes, (2 << 20) - (16 << 12));
    assert_eq!(row("all small").bloat_bytes, 0);
    // The heap's 16 pages stay 4K faults under static@2M: one large fault, the
    // block's small pages and the heap's.
    let sim = |m: &str| v.rows.iter().find(|r| r.mapping == m).unwrap();
    assert_eq!(sim("static@2M").large_faults, 1);
    assert_eq!(
        sim("static@2M").page_faults,
        row("all small").page_faults - 64 + 1
    );
}

#[test]
fn the_agent_keeps_within_its_budget() {
    let batches = trace(true);
    let with = |budget: &str| {
        let options = Options {
            budget: Some(Budget::parse(budget).unwrap()),
            ..Options::default()
        };
        analyze(&batches, &options).unwrap().choice
    };
    let c = with("32");
    assert_eq!(
        (c.mapping.as_str(), c.large_pages),
        ("large-dynamic@2M", 32)
    );
    // 64 MiB in bytes is the same budget.
    assert_eq!(with("64M").mapping, "large-dynamic@2M");
    // Two pages: the two small categories together, credited additively.
    let c = with("2");
    assert_eq!(c.categories, ["static", "small-dynamic"]);
    assert!(c.additive);
    assert_eq!(with("0").mapping, "all small");
    for bad in ["-3", "lots"] {
        let e = Budget::parse(bad).unwrap_err();
        assert!(e.starts_with("--budget"), "{e}");
    }
}

#[test]
fn a_trace_without_allocation_events_says_so_and_names_no_block() {
    let b = analyze(&trace(false), &Options::default()).unwrap();
    assert!(
        b.notes[0].contains("no memory map and no allocation events"),
        "{:?}",
        b.notes
    );
    let names: Vec<&str> = b.rows.iter().map(|r| r.mapping.as_str()).collect();
    assert_eq!(names, ["all small", "all@2M"]);
}

#[test]
fn sampling_keeps_the_ranking_and_reports_the_affinity() {
    let batches = trace(true);
    let exact = analyze(&batches, &Options::default()).unwrap();
    assert_eq!(exact.hellinger_affinity, None);
    let sampled = analyze(
        &batches,
        &Options {
            sample: 10,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(!sampled.exact);
    let a = sampled.hellinger_affinity.unwrap();
    assert!(a > 0.5 && a <= 1.0 + 1e-9, "{a}");
    // Pages are not scaled: a sample sees at most the trace's.
    for (e, s) in exact.rows.iter().zip(&sampled.rows) {
        assert!(s.page_faults <= e.page_faults && s.large_pages <= e.large_pages);
        assert_eq!(s.translations, e.translations);
    }
    let ranks = |b: &benefit::Benefit| b.rows.iter().map(|r| r.rank).collect::<Vec<_>>();
    assert_eq!(ranks(&sampled)[..], ranks(&exact)[..]);
}

#[test]
fn a_page_table_larger_than_the_footprint_misses_first_touches_only() {
    let batches = trace(true);
    let unlimited = analyze(&batches, &Options::default()).unwrap();
    let large = Options {
        page_table_entries: Some(1 << 20),
        ..Options::default()
    };
    let limited = analyze(&batches, &large).unwrap();
    assert_eq!(unlimited.rows, limited.rows);
    // A page table of 100 entries misses more.
    let small = Options {
        page_table_entries: Some(100),
        ..Options::default()
    };
    let b = analyze(&batches, &small).unwrap();
    assert!(b.rows[0].page_faults > unlimited.rows[0].page_faults);
}

#[test]
fn bad_options_get_one_line_errors_naming_them() {
    let batches = trace(true);
    // Sandy Bridge keeps 2M pages apart from 4K ones: two page tables would be made.
    let mut r = reader(&batches);
    let split = Options {
        page_table_entries: Some(100),
        ..Options::default()
    };
    let sandy = pagelab_core::presets::load("sandy-bridge").unwrap();
    let e = benefit::analyze_trace(r.as_mut(), Path::new("t"), &sandy, &split, |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--page-table-entries") && !e.contains('\n'),
        "{e}"
    );
    for (options, says) in [
        (
            Options {
                tlb_miss_cycles: Some(-1.0),
                ..Options::default()
            },
            "C_TLBmiss",
        ),
        (
            Options {
                page_fault_cycles: Some(f64::NAN),
                ..Options::default()
            },
            "C_PF",
        ),
        (
            Options {
                large_sizes: Some(vec![pagelab_core::PageSize::G1]),
                ..Options::default()
            },
            "--page-size 1G",
        ),
        (
            Options {
                sample: 0,
                ..Options::default()
            },
            "--sample 0",
        ),
    ] {
        let e = analyze(&batches, &options).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{e}");
    }
}

/// A large page's fault adds the clearing of its other base pages, alike in the
/// prediction and in the simulation that checks it.
#[test]
fn a_large_faults_clearing_is_charged_alike_by_the_model_and_the_simulation() {
    let batches = trace(true);
    let run = |per_page: f64| {
        let mut config = machine();
        config
            .cost
            .as_simple_mut()
            .unwrap()
            .large_fault_cycles_per_page = per_page;
        let mut r = reader(&batches);
        let b = benefit::analyze_trace(
            r.as_mut(),
            Path::new("t"),
            &config,
            &Options::default(),
            |_, _| {},
        )
        .unwrap();
        let v = simulate::validate(
            &b,
            &config,
            &[],
            || Ok(reader(&batches)),
            Path::new("t"),
            |_, _, _| {},
        )
        .unwrap();
        (b, v)
    };
    let (b0, v0) = run(0.0);
    let (b1, v1) = run(700.0);
    assert_eq!(b1.large_fault_cycles_per_page, 700.0);
    for (p, (q, (s, t))) in b0
        .rows
        .iter()
        .zip(b1.rows.iter().zip(v0.rows.iter().zip(&v1.rows)))
    {
        let extra = p.large_pages as f64 * 511.0 * 700.0;
        assert_eq!(q.miss_cycles - p.miss_cycles, extra, "{}", p.mapping);
        assert_eq!(t.miss_cycles - s.miss_cycles, extra, "{}", p.mapping);
    }
    assert!(b1.rows.iter().any(|r| r.large_pages > 0));
}
