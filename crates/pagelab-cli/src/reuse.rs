//! `pagelab analyze reuse`: exact reuse distances of a trace's page stream at one or
//! more page sizes, and the misses of a fully associative LRU TLB of every size
//! (`pagelab_core::analysis::reuse`), as a table, JSON or CSV.

use anyhow::Result;
use pagelab_core::analysis::reuse::{self, Reuse, USUAL_SIZES};
use pagelab_core::{trace, PageSize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct ReuseArgs {
    /// The trace.
    #[arg(long)]
    trace: PathBuf,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    format: Option<String>,
    /// Page sizes, comma-separated (4K, 2M, 1G, or any power of two from 1K).
    #[arg(long, default_value = "4K", value_delimiter = ',')]
    page_size: Vec<String>,
    /// Approximate: analyse this share of the pages (2^-24 <= R <= 1), chosen by a hash of
    /// their numbers, and scale the counts (SHARDS). Default: exact.
    #[arg(long, value_name = "R")]
    sample_rate: Option<f64>,
    /// Read the first references without counting them: a number (5000000, 5e6) or a
    /// share of the trace (10%, 0.1). Their pages are known after, so only what
    /// follows is measured, as in the steady state.
    #[arg(long, value_name = "N|SHARE", value_parser = crate::parse_warmup)]
    warmup: Option<pagelab_core::analysis::warmup::Warmup>,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also write the miss curves as CSV (page_size, entries, misses, miss_ratio,
    /// exact, sample_rate) to
    /// this file ("-" for standard output, instead of the table).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: &ReuseArgs) -> Result<()> {
    let inputs: Vec<&Path> = vec![&args.trace];
    for (path, what) in [(&args.json, "--json"), (&args.csv, "--csv")] {
        if let Some(p) = path {
            crate::output::check(p, what, &inputs)?;
        }
    }
    let mut sizes = Vec::new();
    for s in &args.page_size {
        let size =
            PageSize::parse(s.trim()).map_err(|e| anyhow::anyhow!("--page-size: {s:?}: {e}"))?;
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    let format = crate::parse_format(&args.format)?;
    let warmup = match args.warmup {
        Some(w) => pagelab_core::analysis::simulation::Input {
            traces: vec![args.trace.clone()],
            format,
            warmup: w,
            ..Default::default()
        }
        .warmup_references()
        .map_err(|e| anyhow::anyhow!("--warmup: {e}"))?,
        None => 0,
    };
    let mut reader = trace::open(&args.trace, format)?;
    let mut progress =
        crate::progress::Progress::new("reading", args.quiet).of_files([args.trace.as_path()]);
    if let Some(r) = args.sample_rate {
        // The check of the analysis itself, named as the option.
        if let Err(e) = reuse::ReusePass::sampled(&sizes, r) {
            anyhow::bail!("--sample-rate: {e}");
        }
    }
    let result = reuse::analyze_trace(
        reader.as_mut(),
        &args.trace,
        &sizes,
        args.sample_rate,
        warmup,
        |refs, position| progress.tick(refs, position),
    )?;
    let elapsed = progress.finish();
    if result.references == 0 {
        anyhow::bail!(
            "{}: holds no references: nothing to analyse",
            args.trace.display()
        );
    }
    if !args.quiet {
        eprintln!(
            "pagelab: {} references in {:.2} s ({:.1} M refs/s)",
            result.references,
            elapsed.as_secs_f64(),
            result.references as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6
        );
    }
    let mut json = serde_json::to_value(&result)?;
    json["trace"] = serde_json::json!(args.trace);
    let json = serde_json::to_string_pretty(&json)? + "\n";
    crate::output::emit(
        &[
            (args.json.as_ref(), json),
            (args.csv.as_ref(), csv(&result)),
        ],
        || format!("{}\n{}", args.trace.display(), table(&result)),
    )
}

fn table(r: &Reuse) -> String {
    let mut s = String::new();
    let how = if r.exact {
        "exact".to_string()
    } else {
        format!("APPROXIMATE: pages sampled at rate {}", r.sample_rate)
    };
    for p in &r.page_sizes {
        let q = |d: Option<u64>| d.map_or("∞".to_string(), |d| d.to_string());
        let _ = writeln!(
            s,
            "{} pages: {} translations, {} distinct pages ({} first references); distance median {}, p90 {}, p99 {} ({how})",
            p.page_size,
            p.translations,
            p.distinct_pages,
            p.cold,
            q(p.median),
            q(p.p90),
            q(p.p99)
        );
        let mut t = crate::table::Columns::new(["entries", "misses", "miss ratio"]).names(0);
        for &(n, m, ratio) in p.curve.iter().filter(|c| USUAL_SIZES.contains(&c.0)) {
            t.row([n.to_string(), m.to_string(), format!("{ratio:.6}")]);
        }
        s.push_str(&t.render());
        s.push('\n');
    }
    s.push_str("(misses of a fully associative LRU TLB of that many entries, first references included; --json or --csv for every power of two)\n");
    s
}

fn csv(r: &Reuse) -> String {
    // Every row says whether it is exact or estimated from sampled pages.
    let mut s = String::from("page_size,entries,misses,miss_ratio,exact,sample_rate\n");
    for p in &r.page_sizes {
        for (n, m, ratio) in &p.curve {
            let _ = writeln!(
                s,
                "{},{n},{m},{ratio},{},{}",
                p.page_size, r.exact, r.sample_rate
            );
        }
    }
    s
}
