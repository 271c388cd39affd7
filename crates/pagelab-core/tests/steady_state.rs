//! Steady state (`--warmup`): the report after a warm-up of N references is the
//! report of the whole run less the report of a run of its first N references alone,
//! on every kind of machine (walk caches, data caches, promotion policies,
//! reservations, range translations with eager paging); a warm-up that ends inside a
//! batch gives the same report as batches that end there; and a fully associative
//! LRU TLB misses, after the warm-up, exactly on the references the reuse-distance
//! analysis with the same warm-up counts as misses.

use pagelab_core::analysis::reuse;
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef};
use pagelab_core::{Machine, MachineConfig, PageSize, Report};
use serde_json::Value;
use std::path::Path;

mod common;
use common::Batches;

const REGION: u64 = 0x7f00_0000_0000;
const REGION_BYTES: u64 = 64 << 20;

fn mmap(addr: u64, size: u64) -> Event {
    Event::Alloc(Alloc {
        op: AllocOp::Mmap,
        addr,
        size,
        old_addr: 0,
        flags: 0,
        callsite: 0,
    })
}

/// A program that maps a 64 MiB region, scans its first 8 MiB, reuses a hot set and
/// touches the first 12 MiB at random; a second region is mapped half way. Some
/// references cross a page boundary. Returned as one batch with its events.
fn program(n: usize) -> Batch {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut b = Batch::default();
    b.push_event(mmap(REGION, REGION_BYTES));
    for i in 0..n {
        if i == n / 2 {
            b.push_event(mmap(REGION + 2 * REGION_BYTES, REGION_BYTES));
        }
        let r = next();
        let base = if i > n / 2 && r % 5 == 0 {
            REGION + 2 * REGION_BYTES
        } else {
            REGION
        };
        let addr = match r % 10 {
            // A scan of the first 8 MiB, 64 bytes at a time.
            0..=2 => base + (i as u64 * 64) % (8 << 20),
            // The hot set: 256 pages.
            3..=7 => base + (r >> 20) % 256 * 4096 + (r >> 8) % 4088,
            // Anywhere, across a page boundary now and then.
            8 => base + (r >> 16) % (12 << 20) / 4096 * 4096 + 4092,
            _ => base + (r >> 16) % (12 << 20),
        };
        let kind = if r % 3 == 0 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        b.refs.push(MemRef::new(addr & !7, 8, kind));
    }
    b
}

/// `whole` cut into batches at every multiple of `chunk` and at each of `cuts`.
fn batches(whole: &Batch, chunk: usize, cuts: &[usize]) -> Vec<Batch> {
    let mut points: Vec<usize> = (chunk..whole.refs.len()).step_by(chunk).collect();
    points.extend(cuts);
    points.sort();
    points.dedup();
    let mut out = Vec::new();
    let (mut rest, mut done) = (whole.clone(), 0);
    for p in points {
        let (head, tail) = rest.split_at(p - done);
        out.push(head);
        rest = tail;
        done = p;
    }
    out.push(rest);
    out
}

fn run(config: &MachineConfig, batches: Vec<Batch>, warmup: u64) -> Report {
    let mut m = Machine::build(config).unwrap();
    m.set_warmup(warmup);
    let mut reader = Batches::new(batches);
    m.run_trace(&mut reader, Path::new("program"), |_, _| {})
        .unwrap();
    m.report()
}

fn configs() -> Vec<(String, MachineConfig)> {
    let preset = |name: &str| pagelab_core::presets::load(name).unwrap();
    let mut out: Vec<(String, MachineConfig)> = ["skylake", "sandy-bridge-rmm", "zen4"]
        .iter()
        .map(|n| (n.to_string(), preset(n)))
        .collect();
    for policy in ["reservation", "thp", "online", "asap"] {
        let mut c = preset("skylake");
        let doc = format!("[promotion]\npolicy = {policy:?}\n");
        c.promotion = MachineConfig::from_toml(&doc, "test").unwrap().promotion;
        out.push((format!("skylake, {policy}"), c));
    }
    // The presets above have data caches or none (sandy-bridge-rmm); one more with a
    // single level.
    let mut one_level = preset("skylake");
    one_level.cache.levels.truncate(1);
    out.push(("skylake, one cache level".into(), one_level));
    out
}

/// The numbers of `v` by path ("counts.walks", "levels.1.misses").
fn numbers(v: &Value, path: String, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => out.push((path, n.as_f64().unwrap())),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| numbers(v, format!("{path}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| numbers(v, format!("{path}.{i}"), out)),
        _ => {}
    }
}

fn number(v: &Value, path: &str) -> Option<f64> {
    let mut at = v;
    for part in path.split('.').skip(1) {
        at = match at {
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            other => other.get(part)?,
        };
    }
    at.as_f64()
}

/// What a report counts (sums that a warm-up splits), as opposed to ratios and
/// states at a moment.
fn is_count(path: &str) -> bool {
    let count_parts = [
        ".counts.",
        ".hits",
        ".misses",
        ".evictions",
        ".cycles.",
        ".hit_cycles",
    ];
    count_parts.iter().any(|p| path.contains(p))
        && !path.contains("ratio")
        && !path.starts_with(".fragmentation")
        && !path.contains(".entries")
        // A cache level's hit_cycles is its latency.
        && !(path.starts_with(".cache.levels") && path.ends_with(".hit_cycles"))
}

#[test]
fn the_steady_state_is_the_whole_run_less_its_warmup() {
    let program = program(60_000);
    let n = 24_000;
    for (name, config) in configs() {
        let cut = batches(&program, 5_000, &[n]);
        let whole = serde_json::to_value(run(&config, cut.clone(), 0)).unwrap();
        let head: Vec<Batch> = (batches(&program, 5_000, &[n]).into_iter())
            .scan(0, |done, b| {
                let keep = *done < n;
                *done += b.refs.len();
                Some(keep.then_some(b))
            })
            .flatten()
            .collect();
        let first = serde_json::to_value(run(&config, head, 0)).unwrap();
        let steady_report = run(&config, cut, n as u64);
        let steady = serde_json::to_value(&steady_report).unwrap();
        let mut all = Vec::new();
        numbers(&whole, String::new(), &mut all);
        let mut checked = 0;
        for (path, w) in all.iter().filter(|(p, _)| is_count(p)) {
            let f = number(&first, path).unwrap_or(0.0);
            let s = number(&steady, path)
                .unwrap_or_else(|| panic!("{name}: {path} missing from the steady state"));
            let tolerance = 1e-9 * w.abs().max(1.0);
            assert!(
                (s - (w - f)).abs() <= tolerance,
                "{name}: {path}: steady {s} != whole {w} - warm-up {f}"
            );
            checked += 1;
        }
        assert!(checked > 40, "{name}: only {checked} counts compared");
        let w = steady_report.warmup.as_ref().expect("a warm-up report");
        assert_eq!(w.references, n as u64);
        assert_eq!(
            Some(w.page_faults as f64),
            number(&first, ".counts.page_faults")
        );
        assert_eq!(
            steady_report.counts.references,
            (program.refs.len() - n) as u64
        );
        // The ratios are the steady state's own.
        let c = &steady_report.cycles;
        let tlb = c.tlb_hits + c.walks + c.promotions + c.policy + c.range_walks;
        let expected = 100.0 * tlb / (c.base + tlb);
        assert!(
            (steady_report.tlb_overhead_percent - expected).abs() < 1e-9,
            "{name}"
        );
        for l in &steady_report.levels {
            let lookups = (l.hits + l.misses).max(1) as f64;
            assert!(
                (l.miss_ratio - l.misses as f64 / lookups).abs() < 1e-12,
                "{name}"
            );
        }
        // Most of the faults are the warm-up's: that is what it is for.
        assert!(w.page_faults > steady_report.counts.page_faults, "{name}");
    }
}

#[test]
fn a_warmup_ending_inside_a_batch_equals_batches_ending_there() {
    let program = program(30_000);
    for (name, config) in configs() {
        for n in [1, 9_999, 12_345, 29_999] {
            let inside = run(&config, batches(&program, 5_000, &[]), n as u64);
            let at = run(&config, batches(&program, 5_000, &[n]), n as u64);
            assert_eq!(
                serde_json::to_value(inside).unwrap(),
                serde_json::to_value(at).unwrap(),
                "{name}, warm-up {n}"
            );
        }
    }
}

#[test]
fn a_warmup_that_leaves_nothing_is_an_error() {
    let program = program(1_000);
    let config = MachineConfig::default();
    for n in [1_000, 5_000] {
        let mut m = Machine::build(&config).unwrap();
        m.set_warmup(n);
        let mut reader = Batches::new(batches(&program, 300, &[]));
        let e = m
            .run_trace(&mut reader, Path::new("program"), |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("program")
                && e.contains(&format!("warm-up of {n} references"))
                && e.contains("holds 1000"),
            "{e}"
        );
    }
}

/// Two ways to the same number: a fully associative LRU TLB's misses after the
/// warm-up, simulated, and counted from reuse distances with the same warm-up.
#[test]
fn steady_state_misses_are_the_reuse_distances_after_the_warmup() {
    let program = program(40_000);
    for entries in [16u64, 64, 256] {
        let config = MachineConfig::from_toml(
            &format!("[tlb]\nkind = \"set-associative\"\nsets = 1\nways = {entries}\nreplacement = \"lru\"\n"),
            "test",
        )
        .unwrap();
        for n in [0u64, 7_777, 20_000] {
            let r = run(&config, batches(&program, 4_096, &[]), n);
            let mut reader = Batches::new(batches(&program, 4_096, &[]));
            let reuse = reuse::analyze_trace(
                &mut reader,
                Path::new("program"),
                &[PageSize::K4],
                None,
                n,
                |_, _| {},
            )
            .unwrap();
            assert_eq!(reuse.references, r.counts.references);
            assert_eq!(reuse.warmup_references, n);
            let misses = reuse.page_sizes[0]
                .curve
                .iter()
                .find(|p| p.0 == entries)
                .map(|p| p.1);
            assert_eq!(
                misses,
                Some(r.levels[0].misses),
                "{entries} entries, warm-up {n}"
            );
        }
    }
}
