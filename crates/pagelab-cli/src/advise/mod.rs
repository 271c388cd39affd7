//! `pagelab advise`: the benefit analysis checked on this machine. Record the program
//! (or take `--trace`), analyse it for 2M pages on this machine (`host`), then run the
//! program natively with each mapping the preload library can make (all small; static,
//! small dynamic, large dynamic; the three together), in rounds (rounds.rs) until each
//! mapping's speedup over all small is told from the noise or the time is spent;
//! report per mapping the predicted benefit, the measured speedup with its interval
//! (interval.rs), and the huge pages the process really got.
//!
//! The prediction in seconds is the MissCycles saved at this machine's clock; the
//! predicted speedup is the all-small median over that median less the saving.
//! C_TLBmiss is, on a machine with data caches (the default `host` has this one's), the
//! program's mean walk in a simulation of its trace, its entries read through the
//! caches; else the machine's flat cost.

mod interval;
mod report;
mod rounds;

use crate::native::{self, Run, BACKED};
use crate::supervisor::Supervisor;
use crate::target::Target;
use crate::MachineArgs;
use anyhow::{bail, Context, Result};
use pagelab_core::analysis::benefit::{self, Benefit, Budget, Options};
use pagelab_core::PageSize;
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct AdviseArgs {
    /// A trace of the program already recorded (with the same inputs); default:
    /// record it first.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Run a workload of the catalogue instead of a command.
    #[arg(long)]
    workload: Option<String>,
    /// The machine the analysis models. Default: this machine (`--machine host`; with
    /// data caches, C_TLBmiss is the program's mean walk, simulated through them).
    #[command(flatten)]
    machine: MachineArgs,
    /// Rounds of native runs that run every mapping (each round: all small and the
    /// others, in an order that turns by one each round).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// More rounds, of the mappings whose interval still holds 1.0 and is wider than
    /// 1 ± --resolution, up to this many rounds in all.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    max_runs: u32,
    /// ... while the native runs (warm-ups included) have taken less than this many
    /// seconds in all (0: exactly --runs rounds).
    #[arg(long, default_value_t = 600.0, allow_negative_numbers = true)]
    max_seconds: f64,
    /// The confidence that every interval holds its mapping's speedup: shared among the
    /// looks at them (after --runs rounds, twice as many, ..., --max-runs), each
    /// interval is at 1 - (1 - this) / looks.
    #[arg(long, default_value_t = 0.95, allow_negative_numbers = true)]
    confidence: f64,
    /// An interval within 1 ± this needs no more rounds: any difference is smaller
    /// than what is worth telling.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    resolution: f64,
    /// Untimed runs of a mapping right before each timed one: in a virtual machine
    /// that gives freed memory back to its host (free page reporting), the first run
    /// to touch memory again pays the host's faults, and huge pages, taken from the
    /// largest free blocks, pay them most.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Large pages available to the agent: a count ("512") or bytes ("1G").
    #[arg(long, allow_hyphen_values = true)]
    budget: Option<String>,
    /// C_TLBmiss and C_PF; default from the machine.
    #[arg(long, allow_negative_numbers = true)]
    tlb_miss_cycles: Option<f64>,
    #[arg(long, allow_negative_numbers = true)]
    page_fault_cycles: Option<f64>,
    /// This machine's clock, for cycles to seconds. Default: the core clock, measured
    /// (by `make native`'s calibrate program), else /proc/cpuinfo's.
    #[arg(long, allow_negative_numbers = true)]
    clock_ghz: Option<f64>,
    /// Keep the recorded trace in this file (default: a temporary file, removed).
    #[arg(long)]
    keep_trace: Option<PathBuf>,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also write the mappings as CSV to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
    /// The program and its arguments (after `--`).
    #[arg(last = true)]
    command: Vec<OsString>,
}

/// A mapping to run, as predicted.
struct Planned {
    name: String,
    categories: Vec<String>,
    additive: bool,
    large_pages: u64,
    bloat_bytes: u64,
    benefit: f64,
    pmb: Option<f64>,
}

/// One mapping: predicted and measured.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    pub mapping: String,
    pub categories: Vec<String>,
    /// The sum of base mappings' benefits (the model is additive), not one analysed.
    pub additive: bool,
    pub large_pages: u64,
    /// The memory its large pages take beyond the 4K pages the program touches (of a
    /// sum of base mappings, the sum of theirs: at most that, since a large page two
    /// categories share counts in both).
    pub bloat_bytes: u64,
    pub predicted_pmb: Option<f64>,
    pub predicted_benefit_cycles: f64,
    pub predicted_seconds_saved: f64,
    /// None when the predicted saving is the whole run time or more.
    pub predicted_speedup: Option<f64>,
    pub median_seconds: f64,
    pub min_seconds: f64,
    pub max_seconds: f64,
    /// The geometric mean of the rounds' speedups (all small's seconds over this
    /// mapping's, in the same round).
    pub measured_speedup: f64,
    /// Its interval at the run's confidence (none with one round).
    pub measured_low: Option<f64>,
    pub measured_high: Option<f64>,
    /// The interval leaves out 1.0: a difference larger than the noise.
    pub measurable: bool,
    /// The rounds this mapping ran in.
    pub rounds: usize,
    /// The most huge pages any run got, in MiB.
    pub anon_huge_mib: f64,
    pub runs: Vec<Run>,
}

/// C_TLBmiss of the recorded program on `config`, when the machine models data
/// caches: its walks' mean cycles in a simulation of the trace with base pages, where
/// each page-table entry costs the latency of the cache level that holds it (beside
/// the flat cost the machine's cost model gives a walk). None without data caches or
/// without a walk.
fn walk_cycles(
    trace: &std::path::Path,
    config: &pagelab_core::MachineConfig,
    quiet: bool,
) -> Result<Option<(f64, f64)>> {
    if config.cache.is_off() {
        return Ok(None);
    }
    let flat = benefit::model(config, None, None)
        .map_err(anyhow::Error::msg)?
        .tlb_miss_cycles;
    let small = pagelab_core::analysis::simulation::base_pages(config);
    let mut machine = pagelab_core::Machine::build(&small)?;
    let mut reader = pagelab_core::trace::open(trace, None)?;
    let mut progress = crate::progress::Progress::new("pricing walks", quiet).of_files([trace]);
    machine.run_trace(reader.as_mut(), trace, |r, p| progress.tick(r, p))?;
    progress.finish();
    let report = machine.report();
    let c = &report.counts;
    // The walks' cycles, without the retries of faulting walks, which the cost model
    // files with them when caches price walks but which are a fault's cost (C_PF): at
    // the mean cycles of a walk reference, each retry's references taken out.
    let refs = c.walk_refs + c.fault_walk_refs;
    let walk_cache_cycles = report.cache.as_ref().map_or(0.0, |k| k.cycles.walk);
    let retries = if refs > 0 {
        walk_cache_cycles * c.fault_walk_refs as f64 / refs as f64
    } else {
        0.0
    };
    Ok((c.walks > 0).then(|| ((report.cycles.walks - retries) / c.walks as f64, flat)))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Record `target` (by `pagelab record` in a child process) into `path`, its
/// standard input the file `stdin` (the one every native run reads) or none.
fn record(
    args: &AdviseArgs,
    path: &std::path::Path,
    stdin: Option<&std::path::Path>,
    supervisor: &Supervisor,
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find pagelab's own executable")?;
    let mut cmd = std::process::Command::new(exe);
    // Quiet: Valgrind's banner and the recorder's progress would bury advise's own.
    cmd.arg("record").arg("-o").arg(path).arg("--quiet");
    match &args.workload {
        Some(w) => {
            cmd.arg("--workload").arg(w);
        }
        None => {
            cmd.arg("--").args(&args.command);
        }
    }
    // The program's own output goes to standard error: standard output is advise's.
    use std::os::fd::AsFd;
    let err = std::io::stderr().as_fd().try_clone_to_owned()?;
    cmd.stdout(std::process::Stdio::from(err));
    // The recording reads what the native runs read.
    match stdin {
        Some(p) => cmd.stdin(
            std::fs::File::open(p).with_context(|| format!("{}: cannot open", p.display()))?,
        ),
        None => cmd.stdin(std::process::Stdio::null()),
    };
    crate::supervisor::prepare(&mut cmd);
    let mut child = cmd.spawn().context("cannot run pagelab record")?;
    let supervised = supervisor.child(child.id());
    let status = child.wait().context("cannot run pagelab record")?;
    drop(supervised);
    if !status.success() {
        bail!("recording the program failed ({status})");
    }
    Ok(())
}

pub fn run(args: &AdviseArgs) -> Result<()> {
    // Interrupted, advise stops what it runs and removes its temporary files.
    let supervisor = Supervisor::start().context("cannot catch SIGINT")?;
    let result = advise(args, &supervisor);
    supervisor.settle();
    result
}

fn advise(args: &AdviseArgs, supervisor: &Supervisor) -> Result<()> {
    if args.workload.is_some() == !args.command.is_empty() {
        bail!("give the program after -- or --workload NAME (one of them)");
    }
    if args.machine.policy.is_some() || args.machine.mechanism.is_some() {
        bail!("--policy, --mechanism: advise maps pages itself; name the machine only");
    }
    let mut inputs: Vec<&std::path::Path> = args.trace.iter().map(PathBuf::as_path).collect();
    inputs.extend(args.machine.config.as_deref());
    for (path, what) in [(&args.json, "--json"), (&args.csv, "--csv")] {
        if let Some(p) = path {
            crate::output::check(p, what, &inputs)?;
        }
    }
    if args
        .keep_trace
        .as_deref()
        .is_some_and(crate::output::is_stdout)
    {
        bail!("--keep-trace -: the recording is read again after it is made; name a file");
    }
    if args.max_runs < args.runs {
        bail!(
            "--max-runs {} is fewer than --runs {}",
            args.max_runs,
            args.runs
        );
    }
    if !(args.max_seconds >= 0.0) {
        bail!("--max-seconds {}: not a duration", args.max_seconds);
    }
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        bail!(
            "--confidence {}: a probability between 0 and 1 (0.95 for 95 %)",
            args.confidence
        );
    }
    if !(args.resolution >= 0.0 && args.resolution.is_finite()) {
        bail!(
            "--resolution {}: a share of the run time (0.01 for 1 %)",
            args.resolution
        );
    }
    let plan = rounds::Plan {
        min_rounds: args.runs,
        max_rounds: args.max_runs,
        max_seconds: args.max_seconds,
        warmup: args.warmup,
        confidence: args.confidence,
        resolution: args.resolution,
    };
    let lib = native::library()?;
    let mut notes = Vec::new();
    match native::thp_mode().as_deref() {
        Some("never") => bail!(
            "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled is never): no mapping can get huge pages"
        ),
        Some("always") => notes.push("transparent huge pages are on for every region (always): the all-small runs get huge pages too".to_string()),
        Some(_) => {}
        None => bail!("this kernel has no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled): no mapping can get them"),
    }
    let mut target: Target = match &args.workload {
        Some(name) => crate::workloads::target(name, args.quiet)?,
        None => Target::from_command(&args.command),
    };
    // The program's standard input, when it is given one (not a terminal): kept once,
    // so that the recording and every native run read the same bytes.
    // Its temporary files (the kept standard input, the recording and what recording
    // it writes beside it) in a folder of its own, removed at the end or on a signal.
    let work = tempfile::Builder::new()
        .prefix("pagelab-advise-")
        .tempdir()
        .context("cannot make a temporary folder")?;
    let _work_removed = supervisor.temporary(work.path());
    let input = work.path().join("stdin");
    if args.workload.is_none() {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            if !args.quiet {
                eprintln!(
                    "pagelab: reading the program's standard input to the end (give it </dev/null to run it without)"
                );
            }
            let mut file = std::fs::File::create(&input)
                .with_context(|| format!("{}: cannot keep the standard input", input.display()))?;
            std::io::copy(&mut std::io::stdin().lock(), &mut file)
                .with_context(|| format!("{}: cannot keep the standard input", input.display()))?;
            target.stdin = Some(input.clone());
        }
    }
    let clock = match args.clock_ghz {
        Some(g) if g.is_finite() && g > 0.0 => g,
        Some(g) => bail!("--clock-ghz {g}: not a clock rate"),
        // The core clock, measured: the clock the cycles of the cost model (and of
        // `pagelab calibrate`) are counted at. /proc/cpuinfo's, in a virtual machine,
        // is often the host's nominal one.
        None => match crate::calibrate::core_clock_ghz() {
            Ok(g) => {
                notes.push(format!(
                    "clock {g:.2} GHz: this core's, measured (a chain of dependent additions){}",
                    native::clock_ghz()
                        .map_or(String::new(), |c| format!("; /proc/cpuinfo says {c:.2}"))
                ));
                g
            }
            Err(e) => {
                let g = native::clock_ghz().with_context(|| {
                    format!("--clock-ghz: the core clock cannot be measured ({e:#}) and /proc/cpuinfo gives none; name it")
                })?;
                notes.push(format!(
                    "clock {g:.2} GHz: /proc/cpuinfo's, as the core clock cannot be measured ({e:#})"
                ));
                g
            }
        },
    };
    let config = if args.machine.config.is_none() && args.machine.machine.is_none() {
        // This machine, and what of it was not read from it.
        let (config, host) = pagelab_core::host::Host::this_machine()
            .config_with_notes()
            .map_err(anyhow::Error::msg)?;
        notes.extend(host.into_iter().map(|n| format!("host: {n}")));
        config
    } else {
        crate::load_config(&args.machine)?
    };
    let mut options = Options {
        large_sizes: Some(vec![PageSize::M2]),
        tlb_miss_cycles: args.tlb_miss_cycles,
        page_fault_cycles: args.page_fault_cycles,
        budget: args
            .budget
            .as_deref()
            .map(Budget::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        clock_ghz: clock,
        ..Options::default()
    };

    // The trace: given, or recorded now.
    let temp = work.path().join("recording.plt");
    let trace = match (&args.trace, &args.keep_trace) {
        (Some(t), _) => t.clone(),
        (None, keep) => {
            let path = keep.clone().unwrap_or_else(|| temp.clone());
            if !args.quiet {
                eprintln!(
                    "pagelab: recording {} into {}",
                    target.label,
                    path.display()
                );
            }
            record(args, &path, target.stdin.as_deref(), supervisor)?;
            path
        }
    };
    let analysed = (|| -> Result<Benefit> {
        if options.tlb_miss_cycles.is_none() {
            match walk_cycles(&trace, &config, args.quiet) {
                Ok(Some((cycles, flat))) => {
                    let cycles = (cycles * 10.0).round() / 10.0;
                    notes.push(format!(
                        "C_TLBmiss {cycles} cycles: this program's mean walk on {}, simulated with its page-table entries read through the machine's data caches (instruction fetches' walks included; the machine's flat cost would be {flat})",
                        config.name
                    ));
                    options.tlb_miss_cycles = Some(cycles);
                }
                Ok(None) => {}
                Err(e) => notes.push(format!(
                    "C_TLBmiss: the machine's flat cost, as the simulation that prices walks failed: {e:#}"
                )),
            }
        }
        let mut reader = pagelab_core::trace::open(&trace, None)?;
        let mut progress =
            crate::progress::Progress::new("analysing", args.quiet).of_files([trace.as_path()]);
        let b = benefit::analyze_trace(reader.as_mut(), &trace, &config, &options, |r, p| {
            progress.tick(r, p)
        })?;
        progress.finish();
        Ok(b)
    })();
    if args.trace.is_none() && args.keep_trace.is_none() {
        let _ = std::fs::remove_file(&temp);
    }
    let analysed = analysed?;

    // The mappings the library can make, as predicted.
    let mut mappings: Vec<Planned> = Vec::new();
    let mut backed: Vec<&benefit::Row> = Vec::new();
    for r in &analysed.rows {
        let base = r.page_size.is_none();
        if base || !r.all && r.categories.len() == 1 && BACKED.contains(&r.categories[0].as_str()) {
            mappings.push(Planned {
                name: r.mapping.clone(),
                categories: r.categories.clone(),
                additive: false,
                large_pages: r.large_pages,
                bloat_bytes: r.bloat_bytes,
                benefit: r.benefit_cycles,
                pmb: r.pmb,
            });
            if !base {
                backed.push(r);
            }
        }
    }
    if backed.len() >= 2 {
        // The model is additive (§3.2): the sum of the base mappings' benefits, as a
        // share of the best analysed mapping's (so it may pass 100 %).
        let categories: Vec<String> = backed.iter().map(|r| r.categories[0].clone()).collect();
        let benefit: f64 = backed.iter().map(|r| r.benefit_cycles).sum();
        let best = analysed
            .rows
            .iter()
            .map(|r| r.benefit_cycles)
            .fold(0.0, f64::max);
        mappings.push(Planned {
            name: format!("{}@2M", categories.join("+")),
            categories,
            additive: true,
            large_pages: backed.iter().map(|r| r.large_pages).sum(),
            bloat_bytes: backed.iter().map(|r| r.bloat_bytes).sum(),
            benefit,
            pmb: (best > 0.0).then(|| 100.0 * benefit.max(0.0) / best),
        });
    }
    let skipped: Vec<String> = analysed
        .rows
        .iter()
        .filter(|r| r.page_size.is_some() && !mappings.iter().any(|m| m.name == r.mapping))
        .map(|r| r.mapping.clone())
        .collect();
    if !skipped.is_empty() {
        notes.push(format!(
            "not run natively: {} (the preload library backs {} only)",
            skipped.join(", "),
            BACKED.join(", ")
        ));
    }

    // The native runs, in rounds.
    let named: Vec<(String, Vec<String>)> = mappings
        .iter()
        .map(|m| (m.name.clone(), m.categories.clone()))
        .collect();
    let measured = rounds::measure(&target, &lib, &named, &plan, supervisor, args.quiet)?;
    let seconds = |i: usize| {
        measured.runs[i]
            .iter()
            .map(|r| r.seconds)
            .collect::<Vec<_>>()
    };
    let small = median(&seconds(0));
    let analysed = analysed.with_seconds(small).map_err(anyhow::Error::msg)?;
    let mut advice: Vec<Advice> = Vec::new();
    for (i, p) in mappings.iter().enumerate() {
        let s = seconds(i);
        let saved = p.benefit / (clock * 1e9);
        let speedup = measured.speedup(i).context("a native run took no time")?;
        advice.push(Advice {
            mapping: p.name.clone(),
            categories: p.categories.clone(),
            additive: p.additive,
            large_pages: p.large_pages,
            bloat_bytes: p.bloat_bytes,
            predicted_pmb: p.pmb,
            predicted_benefit_cycles: p.benefit,
            predicted_seconds_saved: saved,
            predicted_speedup: (saved < small).then(|| small / (small - saved)),
            median_seconds: median(&s),
            min_seconds: s.iter().copied().fold(f64::INFINITY, f64::min),
            max_seconds: s.iter().copied().fold(0.0, f64::max),
            measured_speedup: speedup.speedup,
            measured_low: speedup.low,
            measured_high: speedup.high,
            measurable: speedup.measurable(),
            rounds: speedup.rounds,
            anon_huge_mib: measured.runs[i]
                .iter()
                .map(|r| r.anon_huge_kib)
                .max()
                .unwrap_or(0) as f64
                / 1024.0,
            runs: measured.runs[i].clone(),
        });
    }
    notes.push(format!(
        "{} rounds: {}",
        measured.rounds(),
        measured.stopped
    ));
    if measured.looks > 1 {
        notes.push(format!(
            "intervals at {:.2} %: {} % shared among {} looks at them",
            measured.confidence * 100.0,
            args.confidence * 100.0,
            measured.looks
        ));
    }
    if advice[0].anon_huge_mib > 0.0 {
        notes.push(format!(
            "all small got {:.0} MiB of huge pages: the program (or its allocator) asks for them itself, so the speedups do not compare small pages with huge",
            advice[0].anon_huge_mib
        ));
    }
    for a in &advice {
        if a.large_pages > 0 && a.anon_huge_mib == 0.0 {
            notes.push(format!(
                "{} got no huge pages in any run: its measured time is of small pages",
                a.mapping
            ));
        }
    }
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "program": target.label,
        "machine": analysed.machine,
        "clock_ghz": clock,
        "rounds": measured.rounds(),
        "confidence": measured.confidence,
        "looks": measured.looks,
        "mappings": advice,
        "analysis": analysed,
        "notes": notes,
    }))? + "\n";
    crate::output::emit(
        &[
            (args.json.as_ref(), json),
            (args.csv.as_ref(), report::csv(&advice)),
        ],
        || {
            report::table(
                &target.label,
                &analysed,
                &advice,
                clock,
                measured.confidence,
                &notes,
            )
        },
    )
}
