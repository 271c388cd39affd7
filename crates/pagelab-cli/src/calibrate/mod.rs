//! `pagelab calibrate`: the costs of this machine, measured natively by
//! native/calibrate.c (`make native` builds it): a 4 KiB and a 2 MiB page fault, a
//! page cleared and copied from memory, and the latency of loads whose pages miss the
//! TLBs by footprint, with 4 KiB and with 2 MiB pages, and the latency of each data
//! cache Linux lists and of memory, and the data TLBs' reach (reach.rs). Printed as a
//! table with each figure's spread; with `-o`, written as the `host` machine with the
//! measured costs, latencies and TLB sizes in place (a configuration `--config`
//! takes), every measurement in its comments.

mod reach;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Write the host machine with the measured costs as TOML to this file (for
    /// --config).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write the measurements as JSON to this file ("-" for standard output,
    /// instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Fewer runs and footprints: a first look in about six seconds (the whole
    /// measurement takes about twenty).
    #[arg(long)]
    quick: bool,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// One figure measured several times, in core cycles (the clock in GHz).
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: u32,
}

/// Loads over one footprint: one line in each 4 KiB page of it.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Loads {
    pub footprint_bytes: u64,
    /// The share of the 2 MiB run's region the kernel gave as huge pages.
    pub huge_share: f64,
    pub cycles_4k: Spread,
    pub cycles_2m: Spread,
}

/// Loads over every line of a footprint on 2 MiB pages: a cache level's latency
/// (half its size), or memory's (`cache_bytes` 0).
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Lines {
    pub cache_bytes: u64,
    pub footprint_bytes: u64,
    /// The share of the footprint the kernel gave as huge pages (below 1, some loads
    /// also walk, and the latency is an overestimate).
    #[serde(default)]
    pub huge_share: f64,
    pub cycles: Spread,
}

/// What native/calibrate prints.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Calibration {
    pub clock_ghz: Spread,
    pub fault_4k_cycles: Spread,
    pub fault_2m_cycles: Spread,
    pub fault_2m_huge_share: f64,
    pub zero_4k_cycles: Spread,
    pub copy_4k_cycles: Spread,
    pub loads: Vec<Loads>,
    /// Per data cache Linux lists, then memory (none when Linux lists no cache).
    #[serde(default)]
    pub lines: Vec<Lines>,
    /// The data TLBs' reach, footprints ascending.
    #[serde(default)]
    pub reach: Vec<reach::Reach>,
}

/// The measuring program `make native` builds.
fn program() -> Result<PathBuf> {
    crate::native::built("calibrate")
}

/// The core clock in GHz, measured now (the fastest of a few chains of dependent
/// additions, about a second): the clock calibrate's cycles are counted at, which in
/// a virtual machine can be far from /proc/cpuinfo's.
pub fn core_clock_ghz() -> Result<f64> {
    let out = Command::new(program()?)
        .arg("--clock")
        .stderr(Stdio::null())
        .output()
        .context("cannot run the calibration program")?;
    if !out.status.success() {
        bail!("the calibration program failed ({})", out.status);
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the calibration program's output")?;
    v["clock_ghz"]["max"]
        .as_f64()
        .filter(|g| g.is_finite() && *g > 0.0)
        .context("the calibration program gave no clock")
}

pub fn run(args: &CalibrateArgs) -> Result<()> {
    for (p, what) in [(&args.output, "--output"), (&args.json, "--json")] {
        if let Some(p) = p {
            crate::output::check(p, what, &[])?;
        }
    }
    if args.output.as_deref().is_some_and(crate::output::is_stdout) {
        bail!("--output: name a file (the table goes to standard output)");
    }
    let mut command = Command::new(program()?);
    if args.quick {
        command.arg("--quick");
    }
    for bytes in cache_sizes()? {
        command.arg("--cache").arg(bytes.to_string());
    }
    let out = command
        .stdout(Stdio::piped())
        .stderr(if args.quiet {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .output()
        .context("cannot run the calibration program")?;
    if !out.status.success() {
        // Its last line says why (shown already unless quiet).
        let said = String::from_utf8_lossy(&out.stderr);
        match said.lines().last() {
            Some(why) => bail!("the calibration program failed ({}): {why}", out.status),
            None => bail!("the calibration program failed ({})", out.status),
        }
    }
    let c: Calibration = serde_json::from_slice(&out.stdout)
        .context("the calibration program's output is not what pagelab reads")?;
    if let Some(p) = &args.output {
        crate::output::write_text(p, &config_text(&c)?)?;
    }
    let json = serde_json::to_string_pretty(&c)? + "\n";
    if let Some(p) = &args.json {
        crate::output::write_text(p, &json)?;
        if crate::output::is_stdout(p) {
            return Ok(());
        }
    }
    print!("{}", table(&c));
    Ok(())
}

/// The sizes of the host preset's data caches, closest first (at most 8): the levels
/// whose latencies are measured.
fn cache_sizes() -> Result<Vec<u64>> {
    Ok(level_sizes(&pagelab_core::presets::load("host")?.cache)
        .into_iter()
        .take(8)
        .collect())
}

fn level_sizes(c: &pagelab_core::cache::CacheConfig) -> Vec<u64> {
    c.levels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.sets * l.ways) as u64 * c.level_line_bytes(i))
        .collect()
}

fn spread(s: &Spread, unit: &str) -> String {
    format!(
        "{:.1}{unit} ({:.1} to {:.1}, {} runs)",
        s.median, s.min, s.max, s.runs
    )
}

/// The measurements as a table.
fn table(c: &Calibration) -> String {
    let mut t = String::new();
    let mut row = |k: &str, v: String| {
        let _ = writeln!(t, "  {k:<40} {v}");
    };
    row("core clock", spread(&c.clock_ghz, " GHz"));
    row("4 KiB page fault (cycles)", spread(&c.fault_4k_cycles, ""));
    row(
        &format!(
            "2 MiB page fault ({:.0}% huge)",
            100.0 * c.fault_2m_huge_share
        ),
        spread(&c.fault_2m_cycles, ""),
    );
    row("4 KiB page cleared, memory", spread(&c.zero_4k_cycles, ""));
    row("4 KiB page copied, memory", spread(&c.copy_4k_cycles, ""));
    for l in &c.loads {
        row(
            &format!(
                "load, {} of pages: 4K / 2M",
                pagelab_core::addr::human_bytes(l.footprint_bytes)
            ),
            format!(
                "{:.1} / {:.1} (walks: {:+.1})",
                l.cycles_4k.median,
                l.cycles_2m.median,
                l.cycles_4k.median - l.cycles_2m.median
            ),
        );
    }
    match reach::steps(&c.reach) {
        Ok(s) => row(
            "data TLBs' reach (4K pages)",
            format!(
                "{} pages load as on 2 MiB pages, {} do not; at {}, walks add {:.1} cycles",
                s.entries, s.next, s.largest, s.walk_cycles
            ),
        ),
        Err(_) if c.reach.is_empty() => {}
        Err(why) => row("data TLBs' reach (4K pages)", format!("no step: {why}")),
    }
    for l in &c.lines {
        let what = match l.cache_bytes {
            0 => "memory".to_string(),
            n => format!("a {} cache", pagelab_core::addr::human_bytes(n)),
        };
        let what = if l.huge_share < 0.9 {
            format!(
                "{what} ({:.0}% huge pages: walks included)",
                100.0 * l.huge_share
            )
        } else {
            what
        };
        row(
            &format!(
                "load, every line of {}: {what}",
                pagelab_core::addr::human_bytes(l.footprint_bytes)
            ),
            spread(&l.cycles, ""),
        );
    }
    t
}

/// The host machine with the measured costs in place, as TOML, the measurements in
/// comments at its head.
fn config_text(c: &Calibration) -> Result<String> {
    use pagelab_core::config::{CostConfig, MechanismConfig};
    let mut config = pagelab_core::presets::load("host")?;
    // The simple model's fields (the host's base presets use it); another model keeps
    // its own.
    #[allow(irrefutable_let_patterns)]
    if let CostConfig::Simple(cost) = &mut config.cost {
        cost.page_fault_cycles = c.fault_4k_cycles.median.round();
        cost.eager_page_cycles = c.zero_4k_cycles.median.round();
        cost.large_fault_cycles_per_page = c.zero_4k_cycles.median.round();
    }
    if let MechanismConfig::Copy(copy) = &mut config.mechanism {
        copy.cycles_per_page = c.copy_4k_cycles.median.round();
        copy.zero_cycles_per_page = c.zero_4k_cycles.median.round();
    }
    // Each cache level's latency and memory's, where the levels measured are the
    // preset's (both from the caches Linux lists, in order).
    let (levels, memory) = c.lines.split_at(c.lines.len().saturating_sub(1));
    let sizes = level_sizes(&config.cache);
    let caches_measured = !levels.is_empty()
        && levels
            .iter()
            .map(|l| l.cache_bytes)
            .eq(sizes.iter().copied())
        && memory.first().is_some_and(|m| m.cache_bytes == 0);
    if caches_measured {
        for (level, l) in config.cache.levels.iter_mut().zip(levels) {
            level.hit_cycles = l.cycles.median.round();
        }
        config.cache.memory_cycles = memory[0].cycles.median.round();
    }
    let tlbs = reach::steps(&c.reach)
        .map(|s| reach::apply(&mut config, &s))
        .unwrap_or_default();
    config.description = format!(
        "{}; page faults, clearing and copying{}{} measured by pagelab calibrate",
        config.description,
        if caches_measured {
            ", cache and memory latencies"
        } else {
            ""
        },
        if tlbs.is_empty() {
            ""
        } else {
            ", data TLB sizes"
        }
    );
    let mut head = String::new();
    let _ = writeln!(
        head,
        "# This machine, measured by `pagelab calibrate` (native/calibrate.c), pagelab {}.",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        head,
        "# Set from it: cost.page_fault_cycles (a 4 KiB zero-fill fault), cost.eager_page_cycles,\n\
         # cost.large_fault_cycles_per_page and mechanism.zero_cycles_per_page (a 4 KiB page\n\
         # cleared in memory), and\n\
         # mechanism.cycles_per_page (a 4 KiB page copied from memory): medians, in cycles."
    );
    let _ = if caches_measured {
        writeln!(
            head,
            "# And each cache level's hit_cycles and cache.memory_cycles: loads over every line\n\
             # of a footprint within the level (half the first; an eighth of a further one, four\n\
             # times the level above at least) and of memory's, on 2 MiB pages. Walks read their\n\
             # entries through these caches."
        )
    } else {
        writeln!(
            head,
            "# The caches keep the base preset's latencies (none of theirs was measured)."
        )
    };
    for t in &tlbs {
        let _ = writeln!(head, "# And {t} (the data TLBs' reach, below).");
    }
    let _ = writeln!(
        head,
        "# Measured, not used by the cost model: a 2 MiB fault, and loads over one line a page\n\
         # by footprint (walks: what 4 KiB pages cost over 2 MiB ones there)."
    );
    for line in table(c).lines() {
        let _ = writeln!(head, "#{line}");
    }
    Ok(head + &config.to_toml())
}
