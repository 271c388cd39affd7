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

use pagelab_core::machine::Report;
use pagelab_core::{presets, Machine, MachineConfig};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The policies each machine runs under.
const POLICIES: &[&str] = &[
    "none",
    "asap",
    "approx-online",
    "online",
    "thp",
    "reservation",
];

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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/counts.txt")
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
            for policy in POLICIES {
                if LARGE.contains(&name.as_str())
                    && *policy != "none"
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
                    Err(_) if config.name == "default" && *policy != "none" => continue,
                    Err(_)
                        if config.ranges.allocation == pagelab_core::config::Allocation::Eager
                            && *policy != "none" =>
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
    let now = counts();
    let path = golden_file();
    if std::env::var_os("PAGELAB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (make it with PAGELAB_BLESS=1 cargo test --release -p pagelab-core --test golden)",
            path.display()
        )
    });
    let mut differ = Vec::new();
    let (now_lines, expected_lines): (Vec<_>, Vec<_>) =
        (now.lines().collect(), expected.lines().collect());
    for i in 0..now_lines.len().max(expected_lines.len()) {
        let (a, b) = (expected_lines.get(i), now_lines.get(i));
        if a != b {
            differ.push(format!(
                "  expected {}\n  now      {}",
                a.unwrap_or(&"(nothing)"),
                b.unwrap_or(&"(nothing)")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} runs count differently from {} (if the change is meant to alter results, \
         regenerate it: PAGELAB_BLESS=1 cargo test --release -p pagelab-core --test golden):\n{}",
        differ.len(),
        expected_lines.len(),
        path.display(),
        differ[..differ.len().min(20)].join("\n")
    );
}
