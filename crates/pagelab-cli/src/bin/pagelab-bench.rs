//! Throughput benchmark of pagelab's hot paths on one native trace (by default the
//! standard 100-million-reference benchmark trace that `bench/run.sh` generates):
//!
//! - `read`: decoding the native format alone (the references' addresses are summed);
//! - `simulate`: reading plus one 64-entry 4-way LRU TLB with x86-64 radix walks and
//!   demand paging, exactly what `pagelab simulate` does with the default machine (the
//!   trace read ahead on the second core); `simulate-one-core` the same on one core;
//! - `skylake`: reading plus the `skylake` preset (split L1 TLBs, a 1552-entry STLB,
//!   three walk caches, three data-cache levels that data and walks read through),
//!   exactly what `pagelab simulate --machine skylake` does;
//! - `skylake-tlbs`: the same without the data caches (walk references at the
//!   preset's flat cost): `--set cache.levels=[]`;
//! - `skylake-virtualized`: `skylake` as a guest over the default host (a 4-level
//!   radix table mapping 4 KiB pages, no nested caches): every TLB miss a
//!   two-dimensional walk, `--set virtualization.host_page=4K`;
//! - `sandy-bridge`: reading plus the `sandy-bridge` preset;
//! - `sandy-bridge-rmm`: the same with RMM's 32-entry range TLB beside the STLB
//!   (`sandy-bridge-rmm`), the standard trace's 4 GiB heap and stack window given to
//!   eager paging as regions mapped before the trace (`ranges.regions`: the trace
//!   itself carries no allocation events); its allocation is part of the time;
//! - `reuse`: reading plus exact reuse (LRU stack) distances of the 4K page stream,
//!   exactly what `pagelab analyze reuse` does; its miss ratios at 16K and 256K
//!   entries are checked against the reference results with `--expect-standard`;
//! - `check`: miss ratios of a fully associative 64-entry LRU TLB and a 128 × 12 LRU
//!   TLB, to compare with the reference results of the standard trace.
//!
//! Each measurement runs `--repeat` times (default 3), using the second core as
//! `pagelab simulate` does (a machine with data caches gives it them, another reads
//! the trace ahead on it; `simulate-one-core` does not); the median is shown.
//! With `--expect-standard` the check's miss ratios must equal the reference results of
//! the standard trace (0.254017 and 0.224331, docs/performance.md) to six decimals, or
//! it exits with 1.
//!
//! Usage: `pagelab-bench TRACE.plt [--repeat N] [--skip-check] [--only read|simulate|simulate-one-core|skylake|skylake-tlbs|skylake-virtualized|sandy-bridge|sandy-bridge-rmm|reuse] [--expect-standard]`
//! (`pagelab-bench --help`).

use clap::{Parser, ValueEnum};
use pagelab_core::config::{SetAssocConfig, TlbConfig};
use pagelab_core::trace;
use pagelab_core::{Batch, Machine, MachineConfig};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `println!` that ends the program quietly when standard output has gone away
/// (`pagelab-bench … | head`), instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn read_once(path: &Path) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let mut reader = trace::open(path, None)?;
    let mut batch = Batch::default();
    let (mut refs, mut sum) = (0u64, 0u64);
    while reader.next_batch(&mut batch)? {
        refs += batch.refs.len() as u64;
        for r in &batch.refs {
            sum = sum.wrapping_add(r.addr.0);
        }
    }
    Ok((refs, sum))
}

fn simulate_once(
    path: &Path,
    config: &MachineConfig,
) -> Result<(u64, pagelab_core::Report), Box<dyn std::error::Error>> {
    simulate_on(path, config, true)
}

/// [`simulate_once`]; with `second_core` false, on one core even when two are free.
fn simulate_on(
    path: &Path,
    config: &MachineConfig,
    second_core: bool,
) -> Result<(u64, pagelab_core::Report), Box<dyn std::error::Error>> {
    let mut machine = Machine::build(config)?;
    machine.set_cache_thread(second_core);
    let mut reader = trace::open(path, None)?;
    machine.run_trace(reader.as_mut(), path, |_, _| {})?;
    let report = machine.report();
    Ok((report.counts.references, report))
}

fn tlb(sets: usize, ways: usize) -> MachineConfig {
    MachineConfig {
        name: format!("{sets}x{ways}"),
        tlb: TlbConfig::SetAssociative(SetAssocConfig {
            sets,
            ways,
            ..SetAssocConfig::default()
        }),
        ..MachineConfig::default()
    }
}

fn timed<T>(
    repeat: usize,
    mut f: impl FnMut() -> Result<(u64, T), Box<dyn std::error::Error>>,
) -> Result<(f64, T), Box<dyn std::error::Error>> {
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let start = Instant::now();
        let (refs, out) = f()?;
        rates.push(refs as f64 / start.elapsed().as_secs_f64() / 1e6);
        last = Some(out);
    }
    Ok((median(rates), last.unwrap()))
}

/// Throughput of pagelab's hot paths on one native trace (by default the standard
/// 100-million-reference trace that bench/run.sh generates).
#[derive(Parser)]
#[command(name = "pagelab-bench")]
struct Args {
    /// The trace (a native .plt file).
    trace: PathBuf,
    /// Runs of each measurement; the median is shown.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Skip the check of the miss ratios against the standard trace's reference results.
    #[arg(long)]
    skip_check: bool,
    /// Measure only this (and skip the check).
    #[arg(long, value_enum)]
    only: Option<Only>,
    /// Fail unless the check's miss ratios equal the standard trace's reference results.
    #[arg(long, conflicts_with_all = ["skip_check", "only"])]
    expect_standard: bool,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Only {
    Read,
    Simulate,
    /// The default machine on one core (no trace read ahead).
    SimulateOneCore,
    Skylake,
    /// `skylake` without its data caches.
    SkylakeTlbs,
    /// `skylake` as a guest over a 4-level radix host table.
    SkylakeVirtualized,
    SandyBridge,
    SandyBridgeRmm,
    Reuse,
}

/// The standard trace's heap and hot stack window (bench/gen.rs: `HEAP_BASE`, 4 GiB;
/// the 32 KiB below `STACK_TOP`, here the 1 MiB below it).
const STANDARD_REGIONS: [&str; 2] = ["0x7f1200000000+4G", "0x7ffd7ff00000-0x7ffd80000000"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let path = args.trace.clone();
    let repeat = args.repeat as usize;
    let only = args.only;
    let runs = |what: Only| only.is_none() || only == Some(what);
    let check = !args.skip_check && only.is_none();

    if runs(Only::Read) {
        let (rate, (refs, sum)) = timed(repeat, || {
            let (refs, sum) = read_once(&path)?;
            Ok((refs, (refs, sum)))
        })?;
        say!("read      {rate:8.1} M refs/s   ({refs} references, address checksum {sum:#x})");
    }
    for (what, second_core) in [(Only::Simulate, true), (Only::SimulateOneCore, false)] {
        if !runs(what) {
            continue;
        }
        let (rate, report) = timed(repeat, || simulate_on(&path, &tlb(16, 4), second_core))?;
        let l = &report.levels[0];
        say!(
            "{:<9} {rate:8.1} M refs/s   (64-entry 4-way LRU + 4-level radix: miss ratio {:.6}, {} walks, {} faults)",
            if second_core { "simulate" } else { "one-core" },
            l.miss_ratio,
            report.counts.walks,
            report.counts.page_faults
        );
    }
    for what in [Only::Skylake, Only::SkylakeTlbs, Only::SkylakeVirtualized] {
        if !runs(what) {
            continue;
        }
        let mut skylake = pagelab_core::presets::load("skylake")?;
        let name = match what {
            Only::SkylakeTlbs => {
                skylake.cache.levels.clear();
                "skylake-tlbs"
            }
            Only::SkylakeVirtualized => {
                skylake.virtualization = Some(Default::default());
                "skylake-virtualized"
            }
            _ => "skylake",
        };
        let (rate, report) = timed(repeat, || simulate_once(&path, &skylake))?;
        let miss = |name: &str| {
            report
                .levels
                .iter()
                .find(|l| l.name == name)
                .map_or(f64::NAN, |l| l.miss_ratio)
        };
        // A virtualized run adds its walks' references by dimension.
        let dimensions = report.virtualization.as_ref().map_or(String::new(), |v| {
            format!(
                ", {:.2} guest and {:.2} host references a walk",
                v.guest_refs_per_walk, v.host_refs_per_walk
            )
        });
        say!(
            "{name:<9} {rate:8.1} M refs/s   (--machine skylake: dtlb miss ratio {:.6}, stlb {:.6}, {} walks{dimensions})",
            miss("dtlb"),
            miss("stlb"),
            report.counts.walks
        );
    }

    for (what, name) in [
        (Only::SandyBridge, "sandy-bridge"),
        (Only::SandyBridgeRmm, "sandy-bridge-rmm"),
    ] {
        if !runs(what) {
            continue;
        }
        let mut config = pagelab_core::presets::load(name)?;
        if what == Only::SandyBridgeRmm {
            config.ranges.regions = STANDARD_REGIONS.iter().map(|r| r.to_string()).collect();
        }
        let (rate, report) = timed(repeat, || simulate_once(&path, &config))?;
        let level = |n: &str| report.levels.iter().find(|l| l.name == n);
        let ranges = level("range-tlb").map_or(String::new(), |l| {
            format!(", range TLB hits {} misses {}", l.hits, l.misses)
        });
        say!(
            "{name:<16} {rate:8.1} M refs/s   (stlb miss ratio {:.6}, {} walks{ranges})",
            level("stlb").map_or(f64::NAN, |l| l.miss_ratio),
            report.counts.walks
        );
    }

    if runs(Only::Reuse) {
        let (rate, result) = timed(repeat, || {
            let mut reader = trace::open(&path, None)?;
            let r = pagelab_core::analysis::reuse::analyze_trace(
                reader.as_mut(),
                &path,
                &[pagelab_core::PageSize::K4],
                None,
                0,
                |_, _| {},
            )?;
            Ok((r.references, r))
        })?;
        let p = &result.page_sizes[0];
        let ratio = |n: u64| p.curve.iter().find(|c| c.0 == n).map_or(f64::NAN, |c| c.2);
        say!(
            "reuse     {rate:8.1} M refs/s   (exact stack distance, {} distinct pages: miss ratio {:.6} at 16K entries, {:.6} at 256K)",
            p.distinct_pages,
            ratio(16384),
            ratio(262144)
        );
        if args.expect_standard {
            for (n, reference) in [(16384, 0.163487), (262144, 0.125038)] {
                if format!("{:.6}", ratio(n)) != format!("{reference:.6}") {
                    return Err(format!("stack distance at {n} entries: miss ratio {:.6} differs from the reference {reference:.6}", ratio(n)).into());
                }
            }
        }
    }

    if check {
        let expect = args.expect_standard;
        // Reference results of the standard 100 M-reference trace (bench/gen.rs's stream).
        for (sets, ways, reference) in [(1, 64, 0.254017), (128, 12, 0.224331)] {
            let (rate, report) = timed(1, || simulate_once(&path, &tlb(sets, ways)))?;
            let ratio = report.levels[0].miss_ratio;
            say!("check     {rate:8.1} M refs/s   ({sets} x {ways} LRU: miss ratio {ratio:.6}, reference {reference:.6})");
            if expect && format!("{ratio:.6}") != format!("{reference:.6}") {
                return Err(format!("{sets} x {ways} LRU: miss ratio {ratio:.6} differs from the reference {reference:.6}").into());
            }
        }
    }
    say!("peak RSS  {:8.1} MB", peak_rss_mb());
    Ok(())
}
