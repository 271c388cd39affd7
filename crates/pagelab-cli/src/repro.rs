//! `pagelab repro list | PAPER [-o DIR]`: a paper's headline experiments as sweeps into
//! `DIR/results.db` (an interrupted repro resumes), a verdict per claim
//! (`pagelab_repro`), the HTML report with the paper's numbers beside ours
//! (`DIR/report.html`), the verdicts as JSON (`DIR/verdicts.json`), as a Markdown
//! table (`DIR/verdicts.md`) and as text (on standard output and in `DIR/summary.txt`).

use anyhow::{bail, Context, Result};
use pagelab_repro::claims::Native;
use pagelab_repro::run::{reproduce, summary, Options};
use pagelab_sweep::{Local, Observer, TerminalProgress};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct ReproArgs {
    /// The paper: fang, vrpt, navarro, cpo or rmm; `list` names them.
    paper: String,
    /// The folder of the results: results.db, report.html, verdicts.json, verdicts.md,
    /// summary.txt. Default: pagelab-repro/PAPER.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The experiments on small inputs: the whole pipeline in seconds, for a first look
    /// (the verdicts are the full inputs' only where the README says so).
    #[arg(long)]
    quick: bool,
    /// The bundled traces' folder. Default: the repository's data/traces.
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Where the papers' own kernels (catalogue workloads) are recorded on first use
    /// and kept. Default: $PAGELAB_CACHE, else $XDG_CACHE_HOME/pagelab/traces, else
    /// ~/.cache/pagelab/traces.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Runs at once. Default: the cores this process may use.
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// No native measurement (the CPO paper's huge-page speedup on this machine, by
    /// `pagelab advise`): the claims that need one are not run. `--quick` makes none.
    #[arg(long)]
    no_native: bool,
    /// Measure the experiments' simulations (their `simulate` runs) in the steady
    /// state: the first references (a number, or a share of each trace: 10%, 0.1) are
    /// left out of every count and cost. Other analyses, the benefit analysis's
    /// simulations among them, are run as they are.
    #[arg(long, value_name = "N|SHARE", value_parser = crate::parse_warmup)]
    warmup: Option<pagelab_core::analysis::warmup::Warmup>,
    /// No HTML report (it needs pagelab's Python package with matplotlib).
    #[arg(long)]
    no_report: bool,
    /// The Python interpreter that draws the report. Default: $PAGELAB_PYTHON, else the
    /// repository's .venv, else python3.
    #[arg(long)]
    python: Option<String>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// The bundled traces: the repository's `data/traces`, else `data/traces` here.
fn bundled_traces() -> PathBuf {
    crate::repository::candidates("data/traces")
        .into_iter()
        .find(|d| d.is_dir())
        .unwrap_or_else(|| PathBuf::from("data/traces"))
}

fn list() -> Result<()> {
    let mut out = String::new();
    for p in &pagelab_repro::PAPERS {
        let f =
            pagelab_repro::claims::PaperFile::parse(p.text, p.id).map_err(anyhow::Error::msg)?;
        out += &format!(
            "{:<8} {} ({}): {} claims, {} experiments\n",
            p.id,
            f.paper.title,
            f.paper.cite,
            f.claim.len(),
            f.experiment.len()
        );
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

pub fn run(args: &ReproArgs) -> Result<()> {
    if args.paper == "list" {
        return list();
    }
    let paper = pagelab_repro::paper(&args.paper).map_err(anyhow::Error::msg)?;
    if args.output.as_deref().is_some_and(crate::output::is_stdout) {
        bail!("-o -: repro writes a folder (results, tables, report); standard output cannot hold one");
    }
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| Path::new("pagelab-repro").join(paper.id));
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(pagelab_repro::run::default_cache);
    // The papers' own kernels, recorded once into the cache (kept afterwards), before
    // anything is written to the results folder.
    for name in pagelab_repro::run::workloads(paper, args.quick)? {
        crate::recorded::ensure(&cache, &name, args.quiet)?;
    }
    // The folders made here are removed again if the repro fails before writing in
    // them.
    let made: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot make", dir.display()))?;
    let result = reproduce_into(args, paper, &dir, cache);
    if result.is_err() {
        // Only empty folders go: remove_dir refuses the others.
        for d in &made {
            let _ = std::fs::remove_dir(d);
        }
    }
    result
}

fn reproduce_into(
    args: &ReproArgs,
    paper: &'static pagelab_repro::PaperDef,
    dir: &Path,
    cache: PathBuf,
) -> Result<()> {
    let options = Options {
        db: dir.join("results.db"),
        traces: args.traces.clone().unwrap_or_else(bundled_traces),
        cache,
        quick: args.quick,
        no_native: match (args.quick, args.no_native) {
            (true, _) => Some("not run: --quick makes no native measurement".into()),
            (_, true) => Some("not run: --no-native".into()),
            _ => None,
        },
        warmup: args.warmup,
    };
    let executor = Local {
        jobs: args.jobs,
        separate: false,
    };
    let quiet = args.quiet;
    let db = options.db.display().to_string();
    let mut observer = |name: &str, i: usize, n: usize| -> Box<dyn Observer> {
        if !quiet {
            eprintln!("pagelab repro {}: experiment {i} of {n}, {name}", paper.id);
        }
        Box::new(TerminalProgress::new(&db, quiet))
    };
    let mut measure = |n: &Native, path: &Path| -> Result<()> {
        if !quiet {
            eprintln!(
                "pagelab repro {}: {} (native, on this machine)",
                paper.id, n.about
            );
        }
        let exe = std::env::current_exe().context("cannot find pagelab's own executable")?;
        let o = std::process::Command::new(exe)
            .args(&n.args)
            .arg("--json")
            .arg(path)
            .arg("--quiet")
            .stdout(std::process::Stdio::null())
            .output()
            .with_context(|| format!("pagelab {}", n.args.join(" ")))?;
        if !o.status.success() {
            let e = String::from_utf8_lossy(&o.stderr);
            bail!(
                "pagelab {}: {}",
                n.args.join(" "),
                e.trim().lines().last().unwrap_or("failed")
            );
        }
        Ok(())
    };
    let r = reproduce(paper, &options, &executor, &mut observer, &mut measure)?;
    let failed: usize = r.sweeps.iter().map(|(_, s)| s.failed).sum();
    pagelab_repro::run::write(&dir, &r, args.quick)?;
    let text = summary(&r);
    std::io::stdout().write_all(text.as_bytes())?;
    if !args.no_report {
        let title = format!("pagelab repro {}: {}", paper.id, r.file.paper.title);
        crate::report::draw(
            &options.db,
            &dir.join("report.html"),
            Some(&title),
            args.python.as_deref(),
            false,
        )?;
    }
    if failed > 0 {
        bail!("{failed} runs failed (their errors are in {db}: pagelab results export)");
    }
    Ok(())
}
