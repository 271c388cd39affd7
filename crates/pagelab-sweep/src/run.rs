//! Running a sweep: the runs its database lacks, on an executor, each committed the
//! moment it finishes.

use crate::db::{self, Record};
use crate::spec::Sweep;
use crate::{Executor, Job};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a sweep did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Runs in the sweep.
    pub total: usize,
    /// Runs already in the database, not run again.
    pub present: usize,
    /// Runs of other pagelab versions in the database, kept apart.
    pub other_versions: u64,
    /// Runs that repeat another of the sweep (the same trace content and
    /// configuration): run once.
    pub duplicates: usize,
    /// Runs executed now, and how many of them failed.
    pub ran: usize,
    pub failed: usize,
    /// Of the runs executed now, those made in one pass with others (simulations
    /// that differ only in the last TLB level's geometry).
    pub one_pass: usize,
    /// References simulated by the runs executed now.
    pub references: u64,
    pub seconds: f64,
}

/// Told of a sweep's progress.
pub trait Observer {
    /// Before any run: the counts of `summary` known up front.
    fn planned(&mut self, summary: &Summary);
    /// After each committed run: the counts so far.
    fn committed(&mut self, summary: &Summary);
    /// At the end.
    fn finished(&mut self, summary: &Summary);
}

/// Run every run of `sweep` that the database at `db_path` lacks on `executor`.
/// Failed runs are recorded and counted, not returned as an error; an error is a
/// database or executor failure (the runs committed before it are kept).
pub fn run(
    sweep: &Sweep,
    db_path: &Path,
    executor: &dyn Executor,
    observer: &mut dyn Observer,
) -> Result<Summary> {
    if db_path.as_os_str() == "-" {
        anyhow::bail!("-: a results database is a file (SQLite); standard output cannot hold one");
    }
    // The traces are read (hashed) before the database is touched.
    let (ids, keyed) = keyed(sweep)?;
    let (conn, hold) = crate::hold::open_held(db_path)?;
    let mut summary = Summary::default();
    let result = run_keyed(
        sweep,
        conn,
        db_path,
        executor,
        observer,
        &ids,
        &keyed,
        &mut summary,
    );
    if result.is_err() && summary.ran == 0 {
        // Failed before any run was recorded: no empty database it made is left.
        hold.remove_if_unused();
    }
    result.map(|()| summary)
}

#[allow(clippy::too_many_arguments)]
fn run_keyed(
    sweep: &Sweep,
    conn: rusqlite::Connection,
    db_path: &Path,
    executor: &dyn Executor,
    observer: &mut dyn Observer,
    ids: &HashMap<PathBuf, String>,
    keyed: &[(String, String, String)],
    summary: &mut Summary,
) -> Result<()> {
    let analysis = sweep.analysis.to_json();
    let mut jobs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut duplicates = 0;
    for (index, (key, config, _)) in keyed.iter().enumerate() {
        if !seen.insert(key.as_str()) {
            duplicates += 1;
            continue;
        }
        let present = db::has(&conn, key).with_context(|| format!("{}", db_path.display()))?;
        if !present {
            let r = &sweep.runs[index];
            jobs.push(Job {
                index,
                trace: r.trace.clone(),
                analysis: analysis.clone(),
                config_toml: config.clone(),
                siblings: Vec::new(),
            });
        }
    }
    *summary = Summary {
        total: sweep.runs.len(),
        present: sweep.runs.len() - duplicates - jobs.len(),
        duplicates,
        other_versions: db::other_versions(&conn)
            .with_context(|| format!("{}", db_path.display()))?,
        ..Summary::default()
    };
    observer.planned(summary);
    let start = Instant::now();
    if executor.one_pass() {
        jobs = crate::one_pass::group(jobs);
    }
    let ran: std::collections::HashSet<usize> = jobs
        .iter()
        .flat_map(|j| std::iter::once(j.index).chain(j.siblings.iter().map(|&(i, _)| i)))
        .collect();
    let mut done = std::collections::HashSet::new();
    executor.execute(jobs, &mut |outcome| {
        // An executor elsewhere (Ray) is held to the runs it was given, each once.
        if !ran.contains(&outcome.index) || !done.insert(outcome.index) {
            anyhow::bail!(
                "the executor returned run {} it was not given, or twice",
                outcome.index
            );
        }
        let r = &sweep.runs[outcome.index];
        let (key, config, overrides) = &keyed[outcome.index];
        let trace = r.trace.display().to_string();
        db::insert(
            &conn,
            &Record {
                key,
                trace: &trace,
                trace_id: &ids[&r.trace],
                analysis: &analysis,
                overrides,
                config,
                result: match &outcome.result {
                    Ok((report, _)) => Ok(report),
                    Err(e) => Err(e),
                },
                seconds: outcome.seconds,
            },
        )
        .with_context(|| format!("{}: cannot record a run", db_path.display()))?;
        summary.ran += 1;
        summary.one_pass += outcome.shared as usize;
        match &outcome.result {
            Ok((_, references)) => summary.references += references,
            Err(_) => summary.failed += 1,
        }
        summary.seconds = start.elapsed().as_secs_f64();
        observer.committed(summary);
        Ok(())
    })?;
    summary.seconds = start.elapsed().as_secs_f64();
    observer.finished(summary);
    Ok(())
}

/// Each trace's content id (read once), and each run's key, normalised configuration
/// and overrides (JSON).
#[allow(clippy::type_complexity)]
fn keyed(sweep: &Sweep) -> Result<(HashMap<PathBuf, String>, Vec<(String, String, String)>)> {
    let analysis = sweep.analysis.to_json();
    let mut ids: HashMap<PathBuf, String> = HashMap::new();
    let mut keyed = Vec::with_capacity(sweep.runs.len());
    for r in &sweep.runs {
        if !ids.contains_key(&r.trace) {
            ids.insert(r.trace.clone(), db::content_id(&r.trace)?);
        }
        let config = r.config.to_toml();
        // The settings are a record of how the configuration was made: the same
        // machine reached by an edited file is the same run.
        let mut normalised = r.config.clone();
        normalised.settings.clear();
        let key = db::key(&ids[&r.trace], &normalised.to_toml(), &analysis);
        let overrides = serde_json::to_string(
            &r.overrides
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
                .collect::<serde_json::Map<_, _>>(),
        )?;
        keyed.push((key, config, overrides));
    }
    Ok((ids, keyed))
}

/// The key of each run of `sweep`, in its order: where its result is in a database.
pub fn keys(sweep: &Sweep) -> Result<Vec<String>> {
    Ok(keyed(sweep)?.1.into_iter().map(|(key, _, _)| key).collect())
}
