//! `pagelab`: the command line of the address-translation laboratory.

mod advise;
mod benefit;
mod calibrate;
mod catalogue;
mod contiguity;
mod convert;
mod exec_follow;
mod fifo;
mod interrupt;
mod machines;
mod native;
mod output;
mod pagetables;
mod progress;
mod python;
mod record;
mod recorded;
mod report;
mod repository;
mod repro;
mod results;
mod reuse;
mod supervisor;
mod sweep;
mod table;
mod target;
mod trace_args;
mod trace_info;
mod translation;
mod virtualized;
mod workloads;

pub(crate) use pagelab_core::addr::human_bytes;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use pagelab_core::analysis::simulation;
use pagelab_core::analysis::warmup::Warmup;
use pagelab_core::trace::{self, TraceFormat};
use pagelab_core::{Machine, MachineConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "pagelab",
    version,
    about = "A laboratory for address translation: TLBs, page tables and superpages on traces of real programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect and convert traces.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Run a program under Valgrind and record its memory references, allocations and
    /// memory map as a native trace: `pagelab record -o app.plt -- ./app args`.
    Record(record::RecordArgs),
    /// Simulate one machine configuration over a trace (several `--trace`s run as
    /// processes of one machine) or a synthetic workload.
    Simulate(SimulateArgs),
    /// Compare the page-table structures.
    #[command(subcommand)]
    Pagetables(PagetablesCommand),
    /// Analyses of a trace (its contiguity, …), beyond one machine's report.
    #[command(subcommand)]
    Analyze(AnalyzeCommand),
    /// Run a trace once per scheme and compare them side by side.
    #[command(subcommand)]
    Compare(CompareCommand),
    /// Which data categories of a program gain from huge pages, predicted and checked
    /// on this machine: record it, analyse it (analyze benefit), run it natively with
    /// each category backed by transparent huge pages, and compare:
    /// `pagelab advise -- ./app args`. Columns: PMB, the percentage of the maximal
    /// benefit (the MissCycles a mapping saves over all small, as a share of what the
    /// best mapping saves); bloat, the memory its large pages take beyond the 4K pages
    /// the program touches in them; saved, the MissCycles saved at this machine's
    /// clock; predicted and measured, the speedup over all small; huge, the huge pages
    /// a run got (AnonHugePages). Standard input, unless a terminal, is read once
    /// and given to the recording and to every native run. Interrupted (SIGINT or
    /// SIGTERM), it stops the programs it runs and removes its temporary files.
    Advise(advise::AdviseArgs),
    /// Run every configuration of a sweep file over its traces on the local cores (or
    /// a Ray cluster: --ray), each run committed to a SQLite results database as it
    /// finishes; run again, it runs only what the database lacks:
    /// `pagelab sweep sweep.toml -o results.db`.
    Sweep(sweep::SweepArgs),
    /// Read a results database.
    #[command(subcommand)]
    Results(results::ResultsCommand),
    /// One self-contained HTML page of a results database: its runs, and figures of
    /// miss ratios, TLB misses, overheads, walk costs, fragmentation and speedups
    /// (drawn by pagelab's Python package with matplotlib):
    /// `pagelab report results.db -o report.html`.
    Report(report::ReportArgs),
    /// Reproduce a paper pagelab is built on: its headline experiments as sweeps, a
    /// verdict per claim beside the paper's number, and the HTML report:
    /// `pagelab repro list`, `pagelab repro fang -o DIR`.
    Repro(repro::ReproArgs),
    /// Print a machine configuration with every default filled in.
    Config {
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// List the workload catalogue (workloads/catalogue.toml, or the one in
    /// $PAGELAB_WORKLOADS) after validating it: `pagelab record --workload NAME` records one.
    Workloads {
        /// Print JSON instead of a table (what workloads/catalogue.py reads).
        #[arg(long)]
        json: bool,
    },
    /// List the machine presets (`simulate --machine NAME`) with their sources.
    Machines(machines::MachinesArgs),
    /// Measure this machine's costs natively (page faults of 4K and 2M pages, pages
    /// cleared and copied, loads whose pages miss the TLBs by footprint, each cache's
    /// and memory's latency) and write the host machine with them (-o FILE, for
    /// --config). About fifteen seconds.
    Calibrate(calibrate::CalibrateArgs),
}

/// Which machine: a preset by name or a TOML file; the default machine without either.
#[derive(clap::Args)]
struct MachineArgs {
    /// The machine, as a TOML configuration.
    #[arg(long, conflicts_with = "machine")]
    config: Option<PathBuf>,
    /// The machine, as a preset name (`pagelab machines` lists them).
    #[arg(long)]
    machine: Option<String>,
    /// Replace the machine's promotion policy, with that policy's defaults.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::superpage::NAMES.iter().copied()))]
    policy: Option<String>,
    /// Replace the machine's promotion mechanism (copy, remap), with its defaults.
    #[arg(long)]
    mechanism: Option<String>,
    /// Set one field of the machine by its dotted key, as sweeps name them
    /// (`--set tlb.levels.stlb.ways=16`, `--set page_table.kind=hashed`); repeatable,
    /// applied after --policy and --mechanism.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// What a trace holds: references by kind, events, footprint per page size.
    Info {
        file: PathBuf,
        /// Input format; detected when omitted.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
        format: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Read a native trace that was cut short (an interrupted recording) up to its
        /// last complete chunk, with a warning, instead of failing.
        #[arg(long)]
        salvage: bool,
        /// User-defined categories: a TOML file of [[category]] rules (name,
        /// callsites, functions, min_size, max_size), counted beside the built-in ones.
        #[arg(long)]
        categories: Option<PathBuf>,
        /// No progress on standard error.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Convert a trace between formats (by default into pagelab's native format).
    Convert(convert::ConvertArgs),
}

#[derive(Subcommand)]
enum PagetablesCommand {
    /// Every structure over the same trace or synthetic layout: references and cache
    /// lines per lookup (mean, p99), bytes, references per map.
    Compare(pagetables::CompareArgs),
}

#[derive(Subcommand)]
enum AnalyzeCommand {
    /// How many translation entries map 50%…100% of the footprint with 4K, 2M and 1G
    /// pages, ideal ranges and the ranges eager paging made
    /// (Gandhi et al., IEEE Micro 2016, Figure 2). Eager paging runs on the
    /// sandy-bridge-rmm preset unless --machine or --config names another.
    Contiguity(contiguity::ContiguityArgs),
    /// Exact reuse (LRU stack) distances of the page stream at one or more page
    /// sizes, and the misses of a fully associative LRU TLB of every size
    /// (Cașcaval et al., PACT 2005, §3.1).
    Reuse(reuse::ReuseArgs),
    /// The benefit of large pages for each data category
    /// (Cașcaval et al., PACT 2005, §3-4): every mapping's TLB misses,
    /// page faults and MissCycles from reuse distances, ranked by PMB, the percentage
    /// of the maximal benefit (the MissCycles a mapping saves over all small, as a
    /// share of what the best mapping saves), with each mapping's bloat (the memory its
    /// large pages take beyond the 4K pages touched in them); the significance test;
    /// the mapping the agent would choose within a budget of large pages; with
    /// --simulate, the simulator's ranking beside.
    Benefit(benefit::BenefitArgs),
}

#[derive(Subcommand)]
enum CompareCommand {
    /// 4K pages, THP 2M, 1G pages, a direct segment and RMM's range TLB on one
    /// machine: TLB misses, walk references and cycles, overhead, memory bloat
    /// (Gandhi et al., IEEE Micro 2016, Figure 7). The schemes are built on the
    /// sandy-bridge preset unless --machine or --config names another.
    Translation(translation::TranslationArgs),
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// The trace to simulate. Given more than once, the traces run as processes of
    /// one machine, each in its own address space, switched every `--quantum` references.
    #[arg(long, required_unless_present = "synthetic")]
    trace: Vec<PathBuf>,
    /// A built-in synthetic workload instead of a trace, e.g.
    /// `column-walk:iterations=64` (the 4096-page microbenchmark of Fang et al.,
    /// SIGMETRICS 2000, §4.1; options rows, row_bytes, base).
    #[arg(long, conflicts_with = "trace")]
    synthetic: Option<String>,
    /// Also run the machine with base pages only (promotion policy none, all else the
    /// same) and report the speedup, the TLB misses removed and the memory bloat.
    #[arg(long)]
    baseline: bool,
    /// References each process runs before the scheduler switches to the next (with
    /// several traces).
    #[arg(long, default_value_t = 1_000_000)]
    quantum: usize,
    #[command(flatten)]
    machine: MachineArgs,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    format: Option<String>,
    /// Read a native trace that was cut short (an interrupted recording) up to its last
    /// complete chunk, with a warning, instead of failing.
    #[arg(long)]
    salvage: bool,
    /// Measure the steady state: run the first references (a number, 5000000 or 5e6,
    /// or a share of the input, 10% or 0.1) to warm the TLBs, caches and page table
    /// up, and leave them out of every count and cost. Their cold page faults and
    /// eager paging are reported apart.
    #[arg(long, value_name = "N|SHARE", value_parser = parse_warmup)]
    warmup: Option<pagelab_core::analysis::warmup::Warmup>,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress or timing on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// `--warmup`'s value.
pub(crate) fn parse_warmup(text: &str) -> Result<pagelab_core::analysis::warmup::Warmup, String> {
    pagelab_core::analysis::warmup::Warmup::parse(text)
}

fn parse_format(name: &Option<String>) -> Result<Option<TraceFormat>> {
    name.as_deref()
        .map(TraceFormat::parse)
        .transpose()
        .map_err(anyhow::Error::msg)
}

fn load_config(args: &MachineArgs) -> Result<MachineConfig> {
    let mut config = match (&args.config, &args.machine) {
        (Some(p), _) => MachineConfig::load(p)?,
        (None, Some(name)) => pagelab_core::presets::load(name)?,
        (None, None) => MachineConfig::default(),
    };
    // Through the configuration's own parser, so the names and errors are its own.
    if let Some(policy) = &args.policy {
        let doc = format!("[promotion]\npolicy = {policy:?}\n");
        config.promotion = MachineConfig::from_toml(&doc, "--policy")?.promotion;
    }
    if let Some(kind) = &args.mechanism {
        let doc = format!("[mechanism]\nkind = {kind:?}\n");
        config.mechanism = MachineConfig::from_toml(&doc, "--mechanism")?.mechanism;
    }
    with_settings(config, &args.set)
}

/// `config` with the `--set KEY=VALUE` of the command line; an error names the key.
pub(crate) fn with_settings(config: MachineConfig, set: &[String]) -> Result<MachineConfig> {
    if set.is_empty() {
        return Ok(config);
    }
    use pagelab_core::config::overrides;
    let assignments = set
        .iter()
        .map(|a| overrides::parse_assignment(a).map_err(|e| anyhow::anyhow!("--set {e}")))
        .collect::<Result<Vec<_>>>()?;
    overrides::apply_keyed(&config, &assignments).map_err(|e| anyhow::anyhow!("--set {e}"))
}

/// Build the machine; an error names where its configuration came from.
fn build_machine(config: &MachineConfig, args: &MachineArgs) -> Result<Machine> {
    let origin = match (&args.config, &args.machine) {
        (Some(p), _) => p.display().to_string(),
        (None, Some(name)) => format!("--machine {name}"),
        (None, None) => "the default machine".into(),
    };
    let origin = match args.set.as_slice() {
        [] => origin,
        set => format!("{origin} with --set {}", set.join(" --set ")),
    };
    Ok(Machine::build(config).with_context(|| origin)?)
}

/// The input of a simulation: its traces, interleaved, or a synthetic workload.
fn simulation_input(args: &SimulateArgs) -> Result<simulation::Input> {
    Ok(simulation::Input {
        traces: args.trace.clone(),
        synthetic: args.synthetic.clone(),
        quantum: args.quantum,
        format: parse_format(&args.format)?,
        salvage: args.salvage,
        warmup: args.warmup.unwrap_or(Warmup::References(0)),
    })
}

fn simulate(args: &SimulateArgs) -> Result<()> {
    let config = load_config(&args.machine)?;
    let mut machine = build_machine(&config, &args.machine)?;
    let mut inputs: Vec<&Path> = args.trace.iter().map(PathBuf::as_path).collect();
    inputs.extend(args.machine.config.as_deref());
    if let Some(p) = &args.json {
        output::check(p, "--json", &inputs)?;
    }
    let input = simulation_input(args)?;
    if args.baseline {
        // The base-page run reads the traces again: a pipe cannot be.
        input
            .check_rereadable("--baseline")
            .map_err(anyhow::Error::msg)?;
    }
    let warmup = input
        .warmup_references()
        .map_err(|e| anyhow::anyhow!("--warmup: {e}"))?;
    machine.set_warmup(warmup);
    let (mut reader, names) = (input.open().map_err(anyhow::Error::msg)?, input.name());
    let traces = || args.trace.iter().map(PathBuf::as_path);
    let mut progress = progress::Progress::new("simulating", args.quiet).of_files(traces());
    machine.run_trace(reader.as_mut(), Path::new(&names), |refs, position| {
        progress.tick(refs, position)
    })?;
    let elapsed = progress.finish();
    if let Some(w) = reader.warning() {
        eprintln!("pagelab: warning: {w}");
    }
    let salvaged = reader.warning().map(str::to_string);
    let report = machine.report();
    let refs = machine.counts().references;
    if refs == 0 {
        bail!("{names}: holds no references: nothing to simulate");
    }
    if !args.quiet {
        eprintln!(
            "pagelab: simulated {refs} references in {:.3} s ({:.1} M refs/s)",
            elapsed.as_secs_f64(),
            refs as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6
        );
    }
    let baseline = if args.baseline {
        let mut base = build_machine(&simulation::base_pages(&config), &args.machine)?;
        base.set_warmup(warmup);
        let mut reader = input.open().map_err(anyhow::Error::msg)?;
        let mut progress =
            progress::Progress::new("simulating base pages", args.quiet).of_files(traces());
        base.run_trace(reader.as_mut(), Path::new(&names), |refs, position| {
            progress.tick(refs, position)
        })?;
        progress.finish();
        Some(simulation::Baseline::between(&report, &base.report()))
    } else {
        None
    };
    let json = || -> Result<String> {
        let value = serde_json::json!({
            "trace": args.trace,
            "config": config,
            "report": report,
            "baseline": baseline,
            "seconds": elapsed.as_secs_f64(),
            "salvaged": salvaged,
        });
        Ok(serde_json::to_string_pretty(&value)?)
    };
    let against = baseline
        .as_ref()
        .map(|b| {
            format!(
                "against base pages:\n  {:<34} {:>16}\n  {:<34} {:>16}\n  {:<34} {:>16}\n  {:<34} {:>16}\n",
                "speedup",
                format!("{:.3}", b.speedup),
                "TLB misses removed",
                format!("{:.1}% of {}", 100.0 * b.walks_removed, b.base_walks),
                "base pages' TLB overhead",
                format!("{:.2}%", b.base_tlb_overhead_percent),
                "memory bloat",
                format!("{} frames ({})", b.bloat_frames, human_bytes(b.bloat_bytes.max(0) as u64)),
            )
        })
        .unwrap_or_default();
    let cut = match salvaged {
        Some(_) => " (salvaged: cut short, the results cover what precedes the cut)",
        None => "",
    };
    match &args.json {
        Some(p) if output::is_stdout(p) => output::write_text(p, &(json()? + "\n"))?,
        Some(p) => {
            output::write_text(p, &(json()? + "\n"))?;
            write!(std::io::stdout(), "trace {names}{cut}\n{report}{against}",)?;
        }
        None => write!(std::io::stdout(), "trace {names}{cut}\n{report}{against}",)?,
    }
    Ok(())
}

/// Run a command; its exit status (0 but for `record`, which passes the recorded
/// program's on).
fn run(cli: Cli) -> Result<u8> {
    if let Command::Record(args) = &cli.command {
        return record::run(args);
    }
    match cli.command {
        Command::Trace(TraceCommand::Info {
            file,
            format,
            json,
            salvage,
            categories,
            quiet,
        }) => trace_info::run(
            &file,
            parse_format(&format)?,
            json,
            salvage,
            categories.as_deref(),
            quiet,
        ),
        Command::Trace(TraceCommand::Convert(args)) => convert::run(&args),
        Command::Simulate(args) => simulate(&args),
        Command::Pagetables(PagetablesCommand::Compare(args)) => pagetables::compare(&args),
        Command::Analyze(AnalyzeCommand::Contiguity(args)) => contiguity::run(&args),
        Command::Analyze(AnalyzeCommand::Reuse(args)) => reuse::run(&args),
        Command::Analyze(AnalyzeCommand::Benefit(args)) => benefit::run(&args),
        Command::Compare(CompareCommand::Translation(args)) => translation::run(&args),
        Command::Record(_) => unreachable!("ran above"),
        Command::Advise(args) => advise::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Repro(args) => repro::run(&args),
        Command::Results(command) => results::run(&command),
        Command::Machines(args) => machines::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Workloads { json } => workloads::list(json),
        Command::Config { machine } => {
            let config = load_config(&machine)?;
            build_machine(&config, &machine)?;
            write!(std::io::stdout(), "{}", config.to_toml())?;
            Ok(())
        }
    }
    .map(|()| 0)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`| head`) is not an error of ours.
        Err(e)
            if e.chain().any(|c| {
                let kind = c
                    .downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| c.downcast_ref::<trace::TraceError>()?.io_kind);
                kind == Some(std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One line: the context chain joined, most general first.
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("pagelab: error: {}", chain.join(": "));
            ExitCode::FAILURE
        }
    }
}
