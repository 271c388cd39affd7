//! `pagelab analyze benefit`: the page-size benefit of each data category
//! (`pagelab_core::analysis::benefit`): the ranking of the mappings as a table, the
//! significance test, the agent's choice within a budget, and with `--simulate` the
//! same mappings run through the simulator beside the prediction.

use crate::MachineArgs;
use anyhow::Result;
use pagelab_core::analysis::benefit::{self, simulate, Benefit, Budget, Options, Row};
use pagelab_core::{addr::format_bytes, trace, MachineConfig};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct BenefitArgs {
    /// The trace.
    #[arg(long)]
    trace: PathBuf,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    format: Option<String>,
    /// The machine: its data TLBs' sizes, its large pages, the costs. Default
    /// sandy-bridge.
    #[command(flatten)]
    machine: MachineArgs,
    /// Large page sizes to analyse, comma-separated. Default: every one the machine has.
    #[arg(long, value_delimiter = ',')]
    page_size: Vec<String>,
    /// Large pages available to the agent: a count ("512") or bytes ("1G").
    #[arg(long, allow_hyphen_values = true)]
    budget: Option<String>,
    /// C_TLBmiss, cycles of a TLB miss. Default: the machine's walk of an uncached
    /// 4K translation.
    #[arg(long, allow_negative_numbers = true)]
    tlb_miss_cycles: Option<f64>,
    /// C_PF, cycles of a page fault. Default: the machine's page_fault_cycles.
    #[arg(long, allow_negative_numbers = true)]
    page_fault_cycles: Option<f64>,
    /// Entries of the page table page faults are counted at (H_PF). Default: every
    /// page stays mapped (faults are first touches).
    #[arg(long, allow_negative_numbers = true)]
    page_table_entries: Option<i64>,
    /// The program's run time with small pages, in seconds, for the significance
    /// test. Default: estimated from the references and the miss cycles.
    #[arg(long, allow_negative_numbers = true)]
    seconds: Option<f64>,
    /// The clock the run time is estimated at.
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    clock_ghz: f64,
    /// Analyse one data reference in N (§5.1) and report the Hellinger affinity of
    /// the sampled page accesses to all of them.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    sample: i64,
    /// User-defined categories: a TOML file of [[category]] rules (name, callsites,
    /// functions, min_size, max_size).
    #[arg(long)]
    categories: Option<PathBuf>,
    /// Also run every mapping through the simulator, with the mapping's large pages
    /// backed from the first fault, and give the ranking error.
    #[arg(long)]
    simulate: bool,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also write the mappings as CSV to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// The options of the analysis from the command line's.
fn options(args: &BenefitArgs) -> Result<Options> {
    let request = benefit::Request {
        page_sizes: args.page_size.clone(),
        budget: args.budget.clone(),
        tlb_miss_cycles: args.tlb_miss_cycles,
        page_fault_cycles: args.page_fault_cycles,
        page_table_entries: args.page_table_entries,
        seconds: args.seconds,
        clock_ghz: args.clock_ghz,
        sample: args.sample,
        simulate: args.simulate,
    };
    let rules = match &args.categories {
        Some(p) => pagelab_core::categories::load_rules(p).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    // Errors name the options as typed: `--page-size`, `--page-table-entries`.
    let flag = |field: &str| match field {
        "page_sizes" => "--page-size".to_string(),
        other => format!("--{}", other.replace('_', "-")),
    };
    request.options(rules, flag).map_err(anyhow::Error::msg)
}

/// What the table's PMB and bloat are, under it.
pub const PMB_AND_BLOAT: &str = "(PMB: the percentage of the maximal benefit, Caşcaval et al. PACT 2005 §3.3: \
the MissCycles a mapping saves over all small, as a share of what the best mapping saves; bloat: the memory its \
large pages take beyond the 4K pages the program touches in them)\n";

pub fn run(args: &BenefitArgs) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![&args.trace];
    inputs.extend(args.machine.config.as_deref());
    inputs.extend(args.categories.as_deref());
    for (path, what) in [(&args.json, "--json"), (&args.csv, "--csv")] {
        if let Some(p) = path {
            crate::output::check(p, what, &inputs)?;
        }
    }
    if args.machine.policy.is_some() || args.machine.mechanism.is_some() {
        anyhow::bail!(
            "--policy, --mechanism: the analysis maps pages itself; name the machine only"
        );
    }
    let config: MachineConfig = if args.machine.config.is_none() && args.machine.machine.is_none() {
        pagelab_core::presets::load(benefit::DEFAULT_MACHINE)?
    } else {
        crate::load_config(&args.machine)?
    };
    let options = options(args)?;
    let format = crate::parse_format(&args.format)?;
    let mut reader = trace::open(&args.trace, format)?;
    let mut progress =
        crate::progress::Progress::new("analysing", args.quiet).of_files([args.trace.as_path()]);
    let result = benefit::analyze_trace(
        reader.as_mut(),
        &args.trace,
        &config,
        &options,
        |refs, position| progress.tick(refs, position),
    )?;
    progress.finish();
    let validation = if args.simulate {
        let mut progress: Option<(String, crate::progress::Progress)> = None;
        let v = simulate::validate(
            &result,
            &config,
            &options.rules,
            || trace::open(&args.trace, format),
            &args.trace,
            |mapping, refs, position| {
                if progress.as_ref().map(|p| p.0.as_str()) != Some(mapping) {
                    if let Some((_, p)) = progress.take() {
                        p.finish();
                    }
                    let p =
                        crate::progress::Progress::new(format!("simulating {mapping}"), args.quiet)
                            .of_files([args.trace.as_path()]);
                    progress = Some((mapping.to_string(), p));
                }
                if let Some((_, p)) = &mut progress {
                    p.tick(refs, position);
                }
            },
        )?;
        if let Some((_, p)) = progress {
            p.finish();
        }
        Some(v)
    } else {
        None
    };
    let mut json = serde_json::to_value(&result)?;
    json["trace"] = serde_json::json!(args.trace);
    json["validation"] = serde_json::to_value(&validation)?;
    let json = serde_json::to_string_pretty(&json)? + "\n";
    crate::output::emit(
        &[
            (args.json.as_ref(), json),
            (args.csv.as_ref(), csv(&result, validation.as_ref())),
        ],
        || report(&args.trace, &result, validation.as_ref()),
    )
}

fn count(n: f64) -> String {
    match n.abs() {
        x if x >= 1e9 => format!("{:.2} G", n / 1e9),
        x if x >= 1e6 => format!("{:.2} M", n / 1e6),
        x if x >= 1e4 => format!("{:.1} K", n / 1e3),
        _ => format!("{n:.0}"),
    }
}

/// The rows in ranking order, the unranked after them.
fn ranked(rows: &[Row]) -> Vec<&Row> {
    let mut v: Vec<&Row> = rows.iter().collect();
    v.sort_by_key(|r| r.rank.unwrap_or(usize::MAX));
    v
}

fn report(trace: &Path, b: &Benefit, v: Option<&simulate::Validation>) -> String {
    let mut s = format!(
        "{} on {}: {} data references",
        trace.display(),
        b.machine,
        b.references
    );
    if !b.exact {
        let _ = write!(
            s,
            ", one in {} analysed (approximate; Hellinger affinity of the sampled page accesses to all: {:.4})",
            b.sampled_one_in,
            b.hellinger_affinity.unwrap_or(0.0)
        );
    }
    s.push('\n');
    let tlbs: Vec<String> = b
        .tlbs
        .iter()
        .map(|t| format!("{} in {} ({} entries)", t.page_size, t.array, t.entries))
        .collect();
    let _ = writeln!(
        s,
        "TLBs modelled fully associative: {}; C_TLBmiss {} cycles, {}",
        tlbs.join(", "),
        b.tlb_miss_cycles,
        fault_cost(b)
    );
    let cats: Vec<String> = b
        .categories
        .iter()
        .filter(|c| c.1 > 0)
        .map(|(n, r)| format!("{n} {}", count(*r as f64)))
        .collect();
    let _ = writeln!(s, "references by category: {}", cats.join(", "));
    let mut t = crate::table::Columns::new([
        "rank",
        "mapping",
        "large pages",
        "bloat",
        "TLB misses",
        "page faults",
        "MissCycles",
        "benefit",
        "PMB",
    ])
    .names(2);
    for r in ranked(&b.rows) {
        t.row([
            r.rank.map_or("-".into(), |k| k.to_string()),
            r.mapping.clone(),
            r.large_pages.to_string(),
            crate::human_bytes(r.bloat_bytes),
            count(r.tlb_misses as f64),
            count(r.page_faults as f64),
            count(r.miss_cycles),
            count(r.benefit_cycles),
            r.pmb.map_or("-".into(), |p| format!("{p:.1}%")),
        ]);
    }
    s.push('\n');
    s.push_str(&t.render());
    s.push_str(PMB_AND_BLOAT);
    let g = &b.significance;
    let _ = writeln!(
        s,
        "\nsignificance: {}/s DTLB misses, {}/s page faults over {:.3} s{}: {}",
        count(g.tlb_misses_per_second),
        count(g.page_faults_per_second),
        g.seconds,
        if g.estimated {
            " (estimated; --seconds gives the real run time)"
        } else {
            ""
        },
        if g.passes {
            "passes"
        } else {
            "fails (both under 100 K and 1 K a second: large pages cannot pay)"
        }
    );
    let c = &b.choice;
    let budget = match b.budget {
        Some(Budget::Pages(n)) => format!(" (budget {n} large pages)"),
        Some(Budget::Bytes(n)) => format!(" (budget {})", format_bytes(n)),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "agent{budget}: {}{}: {}",
        c.mapping,
        if c.large_pages > 0 {
            format!(
                " ({} large pages, benefit {} cycles{})",
                c.large_pages,
                count(c.benefit_cycles),
                if c.additive {
                    ", the sum of its base mappings'"
                } else {
                    ""
                }
            )
        } else {
            String::new()
        },
        c.why
    );
    if let Some(v) = v {
        let _ = writeln!(
            s,
            "\nsimulated on {} (large pages backed from the first fault):",
            v.machine
        );
        let mut t = crate::table::Columns::new([
            "mapping",
            "walks",
            "page faults",
            "MissCycles",
            "PMB",
            "predicted",
            "rank",
            "pred",
        ]);
        for r in &v.rows {
            let pmb = |p: Option<f64>| p.map_or("-".into(), |p| format!("{p:.1}%"));
            let rank = |k: Option<usize>| k.map_or("-".into(), |k| k.to_string());
            t.row([
                r.mapping.clone(),
                count(r.walks as f64),
                count(r.page_faults as f64),
                count(r.miss_cycles),
                pmb(r.pmb),
                pmb(r.predicted_pmb),
                rank(r.rank),
                rank(r.predicted_rank),
            ]);
        }
        s.push_str(&t.render());
        let _ = writeln!(
            s,
            "ranking error (mean |predicted − simulated PMB|): {}",
            v.ranking_error
                .map_or("none (a side ranks nothing)".into(), |e| format!(
                    "{e:.2} points"
                ))
        );
        for n in &v.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    for n in &b.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn csv(b: &Benefit, v: Option<&simulate::Validation>) -> String {
    let mut s = String::from("mapping,page_size,categories,translations,tlb_misses,page_faults,large_pages,bloat_bytes,miss_cycles,benefit_cycles,pmb,rank,exact,sampled_one_in,simulated_walks,simulated_page_faults,simulated_miss_cycles,simulated_pmb,simulated_rank\n");
    let opt = |x: Option<String>| x.unwrap_or_default();
    for (i, r) in b.rows.iter().enumerate() {
        let sim = v.and_then(|v| v.rows.get(i));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.mapping,
            opt(r.page_size.clone()),
            r.categories.join(";"),
            r.translations,
            r.tlb_misses,
            r.page_faults,
            r.large_pages,
            r.bloat_bytes,
            r.miss_cycles,
            r.benefit_cycles,
            opt(r.pmb.map(|p| p.to_string())),
            opt(r.rank.map(|k| k.to_string())),
            b.exact,
            b.sampled_one_in,
            opt(sim.map(|x| x.walks.to_string())),
            opt(sim.map(|x| x.page_faults.to_string())),
            opt(sim.map(|x| x.miss_cycles.to_string())),
            opt(sim.and_then(|x| x.pmb).map(|p| p.to_string())),
            opt(sim.and_then(|x| x.rank).map(|k| k.to_string())),
        );
    }
    s
}

/// C_PF as the tables give it: with what a large page's fault adds, where anything.
pub fn fault_cost(b: &Benefit) -> String {
    if b.large_fault_cycles_per_page > 0.0 {
        format!(
            "C_PF {} cycles (a large page's: + {} for each of its other 4 KiB pages, cleared)",
            b.page_fault_cycles, b.large_fault_cycles_per_page
        )
    } else {
        format!("C_PF {} cycles", b.page_fault_cycles)
    }
}
