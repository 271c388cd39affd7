//! Golden counts: for every machine preset (and the default machine) on every bundled
//! trace, under each promotion policy the machine can run (eager paging runs none), the exact hits and misses of
//! every TLB level and walk cache, the walks, their memory references, the page faults
//! and the promotions, against the checked-in `tests/golden/counts.txt`.
//!
//! A change that is meant to alter results regenerates the file, and the diff of the
//! file goes into the commit that explains it:
//!
//! ```sh
//! PAGELAB_BLESS=1 cargo test --release -p pagelab-core --test golden
//! ```

mod common;

use pagelab_core::machine::Report;
use pagelab_core::{presets, Machine, MachineConfig};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The policies each machine runs under: every promotion policy of the registry (a
/// new one gets golden counts), but `static`, whose regions are given by address.
fn policies() -> Vec<&'static str> {
    pagelab_core::superpage::NAMES
        .iter()
        .copied()
        .filter(|p| *p != "static")
        .collect()
}

/// The traces of 1 GiB footprints run each preset under `none` and every policy on
/// one preset only: the rest of the grid repeats code paths the small traces already
/// pin, at several times the time.
const LARGE: &[&str] = &[
    "bfs-rec.plt",
    "chess-large-rec.plt",
    "gups-rec.plt",
    "redis-huge-rec.plt",
];

/// The preset the large traces run every policy on.
const LARGE_POLICY_PRESET: &str = "skylake";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn golden_file() -> PathBuf {
    common::golden::file("counts.txt")
}

fn bundled_traces() -> Vec<PathBuf> {
    let dir = root().join("data/traces");
    let mut traces: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "plt"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 5, "bundled traces: {traces:?}");
    traces
}

fn machines() -> Vec<MachineConfig> {
    let mut all = vec![MachineConfig::default()];
    all.extend(presets::names().into_iter().map(|n| {
        let mut c = presets::load(n).unwrap();
        // The counts recorded here do not depend on a data-cache model (it prices
        // references, it decides no translation), and without one the runs take the
        // fast path: the PA-RISC presets' caches would double the test's time.
        // tests/superpages_costs.rs runs promotions through the cache model.
        c.cache = Default::default();
        c
    }));
    all
}

/// One line of counts: what a change to the model would move.
fn line(report: &Report) -> String {
    let c = &report.counts;
    let mut s = String::new();
    for l in &report.levels {
        write!(s, " {}={}/{}", l.name, l.hits, l.misses).unwrap();
    }
    for w in &report.walk_caches {
        write!(s, " pwc{}={}/{}", w.level, w.hits, w.misses).unwrap();
    }
    write!(
        s,
        " walks={} walk_refs={} walk_lines={} faults={} promotions={} failures={} copied={} remapped={} zeroed={}",
        c.walks,
        c.walk_refs,
        c.walk_lines,
        c.page_faults,
        c.promotions,
        c.promotion_failures,
        c.pages_copied,
        c.pages_remapped,
        c.pages_zeroed
    )
    .unwrap();
    s
}

/// Every run's line, in a fixed order; every preset runs every policy (the default
/// machine, with a TLB of 4K pages only, runs none but `none`), but for the [`LARGE`]
/// traces.
fn counts() -> String {
    let mut out = String::new();
    for trace in bundled_traces() {
        let name = trace.file_name().unwrap().to_string_lossy().to_string();
        for base in machines() {
            for policy in policies() {
                if LARGE.contains(&name.as_str())
                    && policy != "none"
                    && base.name != LARGE_POLICY_PRESET
                {
                    continue;
                }
                let mut config = base.clone();
                let doc = format!("[promotion]\npolicy = {policy:?}\n");
                config.promotion = MachineConfig::from_toml(&doc, "policy").unwrap().promotion;
                let mut machine = match Machine::build(&config) {
                    Ok(m) => m,
                    // The default machine's TLB holds 4K pages only; eager paging runs
                    // without promotions.
                    Err(_) if config.name == "default" && policy != "none" => continue,
                    Err(_)
                        if config.ranges.allocation == pagelab_core::config::Allocation::Eager
                            && policy != "none" =>
                    {
                        continue
                    }
                    // A coalescing preset refuses the policies that follow the TLB.
                    Err(e)
                        if config.coalescing.is_some()
                            && e.to_string().contains("which coalescing widens") =>
                    {
                        continue
                    }
                    Err(e) => panic!("{name} {} {policy}: {e}", config.name),
                };
                let mut reader = pagelab_core::trace::open(&trace, None).unwrap();
                // A footprint larger than the preset's memory (a policy's bloat on
                // the 1 GiB traces) stops the run: what it counted until then, and
                // that it stopped, are part of the record. Any other error fails.
                let stopped = match machine.run_trace(reader.as_mut(), &trace, |_, _| {}) {
                    Ok(()) => "",
                    Err(e) if e.to_string().contains("out of physical memory") => {
                        " stopped: out of memory"
                    }
                    Err(e) => panic!("{name} {} {policy}: {e}", config.name),
                };
                let report = machine.report();
                writeln!(
                    out,
                    "{name} {} {policy}:{}{stopped}",
                    config.name,
                    line(&report)
                )
                .unwrap();
            }
        }
    }
    out
}

#[test]
fn every_preset_on_every_bundled_trace_counts_as_recorded() {
    common::golden::check(&golden_file(), &counts(), "golden");
}
