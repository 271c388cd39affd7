//! `pagelab sweep FILE -o results.db`: every run of a sweep file
//! (`pagelab_core::sweep`) on the local cores, each committed to a SQLite database
//! the moment it finishes. A run is keyed by a hash of the trace's content, the
//! normalised configuration and pagelab's version: a sweep stopped at any moment and
//! started again runs only the runs the database lacks, and results of another
//! version are never taken for this one's. A run that fails is recorded with its
//! error; the others go on.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pagelab_core::sweep::{self, Run};
use pagelab_core::{trace, Machine};
use rusqlite::{params, Connection};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The sweep file (TOML: traces, machine or config, [grid], [zip]).
    file: PathBuf,
    /// The results database (SQLite), made if missing; the runs it holds are not run
    /// again.
    #[arg(short, long)]
    output: PathBuf,
    /// Runs at once. Default: the cores this process may use.
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The results database, its table made if missing.
pub fn open_db(path: &Path) -> Result<Connection> {
    let db = Connection::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    // Write-ahead logging: a committed run survives the process being killed.
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.pragma_update(None, "synchronous", "NORMAL")?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS runs (
            key TEXT PRIMARY KEY,
            trace TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            overrides TEXT NOT NULL,
            config TEXT NOT NULL,
            version TEXT NOT NULL,
            status TEXT NOT NULL,
            error TEXT,
            report TEXT,
            seconds REAL NOT NULL
        )",
    )
    .with_context(|| format!("{}: not a pagelab results database", path.display()))?;
    Ok(db)
}

/// The content id of a trace: the SHA-256 of its bytes.
fn content_id(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// A run's key: the hash of its trace's content, its configuration and the version.
fn key(trace_id: &str, config_toml: &str) -> String {
    let mut h = Sha256::new();
    for part in [trace_id, config_toml, VERSION] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("{:x}", h.finalize())
}

/// What a worker sends back.
struct Done {
    index: usize,
    result: Result<(String, u64), String>,
    seconds: f64,
}

/// Run one: the report as JSON and the references simulated, or the error.
fn simulate(run: &Run) -> Result<(String, u64), String> {
    let mut machine = Machine::build(&run.config).map_err(|e| e.to_string())?;
    let mut reader = trace::open(&run.trace, None).map_err(|e| e.to_string())?;
    machine
        .run_trace(reader.as_mut(), &run.trace, |_, _| {})
        .map_err(|e| e.to_string())?;
    let report = machine.report();
    let json = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    Ok((json, report.counts.references))
}

pub fn run(args: &SweepArgs) -> Result<()> {
    let spec = sweep::load(&args.file).map_err(anyhow::Error::msg)?;
    let db = open_db(&args.output)?;
    // Each trace's content read once.
    let mut ids: HashMap<PathBuf, String> = HashMap::new();
    let mut keyed = Vec::with_capacity(spec.runs.len());
    for r in &spec.runs {
        if !ids.contains_key(&r.trace) {
            ids.insert(r.trace.clone(), content_id(&r.trace)?);
        }
        let config = r.config.to_toml();
        keyed.push((key(&ids[&r.trace], &config), config));
    }
    let have = |k: &str| -> Result<bool> {
        Ok(db
            .query_row("SELECT 1 FROM runs WHERE key = ?1", [k], |_| Ok(()))
            .map(|()| true)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(false),
                e => Err(e),
            })?)
    };
    let mut todo: VecDeque<usize> = VecDeque::new();
    for (i, (k, _)) in keyed.iter().enumerate() {
        if !have(k)? {
            todo.push_back(i);
        }
    }
    let other: u64 = db.query_row(
        "SELECT COUNT(*) FROM runs WHERE version != ?1",
        [VERSION],
        |r| r.get(0),
    )?;
    let total = spec.runs.len();
    let missing = todo.len();
    if !args.quiet {
        eprintln!(
            "pagelab: {total} runs, {} already in {}, {missing} to run{}",
            total - missing,
            args.output.display(),
            if other > 0 {
                format!(" ({other} runs of other pagelab versions kept apart)")
            } else {
                String::new()
            }
        );
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, missing.max(1));
    let bar = progress(missing as u64, args.quiet);
    let queue = Mutex::new(todo);
    let (tx, rx) = mpsc::channel::<Done>();
    let start = Instant::now();
    let (mut failed, mut refs) = (0u64, 0u64);
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..jobs {
            let (queue, tx, runs) = (&queue, tx.clone(), &spec.runs);
            s.spawn(move || loop {
                let Some(index) = queue.lock().expect("the queue").pop_front() else {
                    break;
                };
                let t = Instant::now();
                let result = simulate(&runs[index]);
                let done = Done {
                    index,
                    result,
                    seconds: t.elapsed().as_secs_f64(),
                };
                if tx.send(done).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        // One writer: each finished run committed at once.
        for done in rx {
            let r = &spec.runs[done.index];
            let (k, config) = &keyed[done.index];
            let overrides = serde_json::to_string(
                &r.overrides
                    .iter()
                    .map(|(k, v)| (k.clone(), toml_to_json(v)))
                    .collect::<serde_json::Map<_, _>>(),
            )?;
            let (status, error, report) = match &done.result {
                Ok((json, n)) => {
                    refs += n;
                    ("ok", None, Some(json.as_str()))
                }
                Err(e) => {
                    failed += 1;
                    ("error", Some(e.as_str()), None)
                }
            };
            db.execute(
                "INSERT OR REPLACE INTO runs (key, trace, trace_id, overrides, config, version, status, error, report, seconds)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    k,
                    r.trace.display().to_string(),
                    ids[&r.trace],
                    overrides,
                    config,
                    VERSION,
                    status,
                    error,
                    report,
                    done.seconds
                ],
            )?;
            bar.inc(1);
            bar.set_message(format!(
                "{failed} failed, {:.1} M refs/s",
                refs as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6
            ));
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "pagelab: {} runs done in {:.1} s, {failed} failed; results in {}",
            missing,
            start.elapsed().as_secs_f64(),
            args.output.display()
        );
    }
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {missing} runs failed (their errors are in {}: pagelab results export)",
            args.output.display()
        );
    }
    Ok(())
}

fn progress(total: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(2));
    bar.set_style(
        ProgressStyle::with_template("{pos}/{len} runs  {msg}  {elapsed} elapsed, {eta} left")
            .expect("a valid template"),
    );
    bar
}

/// A TOML value as JSON (overrides are stored as JSON).
pub fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
