//! A sweep file: traces × configuration overrides, checked whole before any run.
//!
//! ```toml
//! traces = ["data/traces/bunzip2-rec.plt", "data/traces/sqlite-rec.plt"]
//! machine = "skylake"                # a preset; or config = "machine.toml"
//!
//! [grid]                             # every combination of these
//! "tlb.levels.stlb.ways" = [4, 8, 12]
//! "tlb.levels.dtlb.replacement" = ["lru", "fifo"]
//!
//! [zip]                              # lists of one length, taken together
//! "cost.walk_ref_cycles" = [8.0, 12.0]
//! "cost.page_fault_cycles" = [3000.0, 5000.0]
//! ```
//!
//! The runs are every trace with every combination of the grid and every row of the
//! zip (either may be absent). Each run's configuration is built before the first
//! one starts, so a key the configuration does not have, a value it refuses, a trace
//! that does not exist or an empty axis is a one-line error naming it, and nothing
//! has run.

use crate::inputs::{layout, synthetic};
use pagelab_core::config::MachineConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Value;

/// A sweep as written: a sweep file's fields, or the same from any serde source (the
/// Python bindings pass a dict).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    pub traces: Vec<PathBuf>,
    #[serde(default)]
    pub machine: Option<String>,
    #[serde(default)]
    pub config: Option<PathBuf>,
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<Value>>,
    #[serde(default)]
    pub zip: BTreeMap<String, Vec<Value>>,
    /// What each run computes: a kind's name or a table with `kind` and its options
    /// ([`crate::Analysis`]); default a simulation.
    #[serde(default)]
    pub analysis: Option<Value>,
    /// The most runs the sweep may have (traces × grid combinations × zip rows),
    /// checked before anything is expanded; default [`MAX_RUNS`].
    #[serde(default)]
    pub max_runs: Option<u64>,
}

/// The most runs a sweep may have unless its `max_runs` says otherwise: a limit that
/// a mistyped grid reaches long before memory does (each run's configuration is
/// built and kept before the first starts).
pub const MAX_RUNS: u64 = 10_000;

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub trace: PathBuf,
    /// The overrides, in key order.
    pub overrides: Vec<(String, Value)>,
    /// The base with the overrides: what runs.
    pub config: MachineConfig,
}

/// A sweep, expanded and checked.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub base: MachineConfig,
    pub analysis: crate::Analysis,
    pub runs: Vec<Run>,
}

/// Read a sweep file; relative paths in it are taken from the file's folder.
pub fn load(path: &Path) -> Result<Sweep, String> {
    load_observed(path, &mut |_, _| {})
}

/// The same, telling `checked(done, total)` after each run's configuration is built
/// and checked (a large grid takes a while).
pub fn load_observed(path: &Path, checked: &mut dyn FnMut(usize, usize)) -> Result<Sweep, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    parse_observed(&text, &path.display().to_string(), folder, checked)
}

/// Parse a sweep from TOML text; `origin` starts every error, with the line of the
/// sweep file it concerns; relative paths are taken from `folder`.
pub fn parse(text: &str, origin: &str, folder: &Path) -> Result<Sweep, String> {
    parse_observed(text, origin, folder, &mut |_, _| {})
}

fn parse_observed(
    text: &str,
    origin: &str,
    folder: &Path,
    checked: &mut dyn FnMut(usize, usize),
) -> Result<Sweep, String> {
    let file: SweepFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let Some(line) = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count())
        else {
            return format!("{origin}: {message}");
        };
        // The key written on that line, unless the message names it already.
        let key = text
            .lines()
            .nth(line)
            .and_then(|l| l.split_once('='))
            .map(|(k, _)| k.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
            .filter(|k| !k.is_empty() && !message.contains(k.as_str()));
        match key {
            Some(key) => format!("{origin}: line {}: {key}: {message}", line + 1),
            None => format!("{origin}: line {}: {message}", line + 1),
        }
    })?;
    expand_located(&file, folder, checked).map_err(|r| match r.line(text) {
        Some(line) => format!("{origin}: line {line}: {}", r.message),
        None => format!("{origin}: {}", r.message),
    })
}

/// Expand and check a sweep: every run's configuration built, every trace found.
pub fn expand(file: &SweepFile, origin: &str, folder: &Path) -> Result<Sweep, String> {
    expand_observed(file, origin, folder, &mut |_, _| {})
}

/// The same, telling `checked(done, total)` as [`load_observed`] does.
pub fn expand_observed(
    file: &SweepFile,
    origin: &str,
    folder: &Path,
    checked: &mut dyn FnMut(usize, usize),
) -> Result<Sweep, String> {
    expand_located(file, folder, checked).map_err(|r| format!("{origin}: {}", r.message))
}

/// Why a sweep is refused, and the key of the sweep file it concerns: a top-level
/// key, a key of `[grid]` or `[zip]`, or a table's header (no key).
struct Refusal {
    table: Option<&'static str>,
    key: Option<String>,
    message: String,
}

impl Refusal {
    fn top(key: &str, message: String) -> Refusal {
        Refusal {
            table: None,
            key: Some(key.to_string()),
            message,
        }
    }

    fn anywhere(message: String) -> Refusal {
        Refusal {
            table: None,
            key: None,
            message,
        }
    }

    /// The line (from 1) of `text` that holds the key, if the file writes it as
    /// `key = …` on a line of its own.
    fn line(&self, text: &str) -> Option<usize> {
        let mut table: Option<String> = None;
        for (i, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.starts_with('[') {
                // `[grid]`, `[[x]]`, with or without a comment after it.
                let inside = l.trim_start_matches('[');
                let name = inside[..inside.find(']').unwrap_or(inside.len())]
                    .trim()
                    .to_string();
                if self.key.is_none() && Some(name.as_str()) == self.table {
                    return Some(i + 1);
                }
                table = Some(name);
                continue;
            }
            let Some(key) = &self.key else { continue };
            let Some((k, _)) = l.split_once('=') else {
                continue;
            };
            let k = k.trim();
            let written = k == key || k == format!("\"{key}\"") || k == format!("'{key}'");
            if written && table.as_deref() == self.table {
                return Some(i + 1);
            }
        }
        None
    }
}

/// Expand and check a sweep, saying which key of the sweep is refused.
fn expand_located(
    file: &SweepFile,
    folder: &Path,
    checked: &mut dyn FnMut(usize, usize),
) -> Result<Sweep, Refusal> {
    let base = match (&file.machine, &file.config) {
        (Some(_), Some(_)) => {
            return Err(Refusal::top(
                "config",
                "give machine or config, not both".into(),
            ))
        }
        (Some(name), None) => pagelab_core::presets::load(name)
            .map_err(|e| Refusal::top("machine", format!("machine: {e}")))?,
        (None, Some(p)) => MachineConfig::load(&folder.join(p))
            .map_err(|e| Refusal::top("config", format!("config: {}", e.0)))?,
        (None, None) => MachineConfig::default(),
    };
    let analysis = match &file.analysis {
        Some(a) => crate::Analysis::from_toml(a).map_err(|e| Refusal::top("analysis", e))?,
        None => crate::Analysis::default(),
    };
    let fail = |m: String| Refusal::top("traces", m);
    if file.traces.is_empty() {
        return Err(fail("traces: name at least one trace".into()));
    }
    // A trace is named by its tidied path when that is the same file (through links);
    // a synthetic workload by its description.
    let traces: Vec<PathBuf> = file
        .traces
        .iter()
        .map(|t| {
            if synthetic(t).is_some() || layout(t).is_some() {
                return t.clone();
            }
            let joined = folder.join(t);
            let tidy = clean(&joined);
            match (tidy.canonicalize(), joined.canonicalize()) {
                (Ok(a), Ok(b)) if a == b => tidy,
                _ => joined,
            }
        })
        .collect();
    for (i, t) in traces.iter().enumerate() {
        if layout(t).is_some() {
            analysis
                .check_trace(t)
                .map_err(|e| fail(format!("traces[{i}]: {e}")))?;
            continue;
        }
        if let Some(spec) = synthetic(t) {
            pagelab_core::trace::synthetic::parse(spec)
                .map_err(|e| fail(format!("traces[{i}]: {e}")))?;
            continue;
        }
        // A folder is a trace too: a drmemtrace of several threads. A pipe or a
        // device has no end to hash and cannot be read a second time.
        match std::fs::metadata(t) {
            Err(_) => return Err(fail(format!("traces[{i}]: {}: no such file", t.display()))),
            Ok(m) if !m.is_file() && !m.is_dir() => {
                return Err(fail(format!(
                    "traces[{i}]: {}: not a regular file or a folder (a pipe or a device cannot be hashed, or read once per run)",
                    t.display()
                )))
            }
            Ok(_) => {}
        }
    }
    // Which table of the sweep a grid or zip key is in.
    let axis = |key: &str, message: String| Refusal {
        table: Some(if file.grid.contains_key(key) {
            "grid"
        } else {
            "zip"
        }),
        key: Some(key.to_string()),
        message,
    };
    for (table, axes) in [("grid", &file.grid), ("zip", &file.zip)] {
        if let Some((key, _)) = axes.iter().find(|(_, v)| v.is_empty()) {
            return Err(Refusal {
                table: Some(table),
                key: Some(key.clone()),
                message: format!("{table}.{key:?}: an empty axis makes no run"),
            });
        }
    }
    if let Some(key) = file.grid.keys().find(|k| file.zip.contains_key(*k)) {
        return Err(Refusal {
            table: Some("zip"),
            key: Some(key.clone()),
            message: format!("{key:?} is in both grid and zip"),
        });
    }
    let zip_rows = match file
        .zip
        .values()
        .map(Vec::len)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => 1,
        [n, rest @ ..] => {
            if let Some(m) = rest.iter().find(|m| *m != n) {
                return Err(Refusal {
                    table: Some("zip"),
                    key: None,
                    message: format!("zip: the lists must have one length ({n} and {m})"),
                });
            }
            *n
        }
    };
    // How many runs, before any is made: a product that may overflow.
    let limit = file.max_runs.unwrap_or(MAX_RUNS);
    let count = file
        .grid
        .values()
        .map(|v| v.len() as u64)
        .chain([zip_rows as u64, traces.len() as u64])
        .try_fold(1u64, |n, k| n.checked_mul(k));
    match count {
        Some(n) if n <= limit => {}
        Some(n) => {
            return Err(Refusal::anywhere(format!(
                "{n} runs (traces × the grid's combinations × zip rows) is more than max_runs ({limit}); set max_runs to run them"
            )))
        }
        None => {
            return Err(Refusal::anywhere(format!(
                "more than 2^64 runs (traces × the grid's combinations × zip rows) is more than max_runs ({limit})"
            )))
        }
    }
    // The first combination first, so that a mistyped key is named before a large
    // grid is expanded.
    let mut first: Vec<(String, Value)> = file
        .grid
        .iter()
        .chain(&file.zip)
        .map(|(k, v)| (k.clone(), v[0].clone()))
        .collect();
    first.sort_by(|a, b| a.0.cmp(&b.0));
    // An override refused is named by its key, at its line of the sweep file.
    let refused = |e: pagelab_core::config::overrides::OverrideError| match &e.key {
        Some(key) => axis(key, e.to_string()),
        None => Refusal::anywhere(e.to_string()),
    };
    pagelab_core::config::overrides::apply_keyed(&base, &first).map_err(refused)?;
    // Every combination: the grid's in order (the last key fastest), each with every
    // row of the zip.
    let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for (key, values) in &file.grid {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let zip = &file.zip;
    let combos: Vec<Vec<(String, Value)>> = combos
        .into_iter()
        .flat_map(|c| {
            (0..zip_rows).map(move |row| {
                let mut c = c.clone();
                c.extend(zip.iter().map(|(k, v)| (k.clone(), v[row].clone())));
                c.sort_by(|a, b| a.0.cmp(&b.0));
                c
            })
        })
        .collect();
    let mut configs = Vec::with_capacity(combos.len());
    for (done, c) in combos.iter().enumerate() {
        checked(done, combos.len());
        let config = pagelab_core::config::overrides::apply_keyed(&base, c).map_err(refused)?;
        pagelab_core::Machine::build(&config).map_err(|e| {
            // A field's own check names the field: at its line when it is swept.
            match c.iter().find(|(k, _)| e.0.starts_with(&format!("{k}:"))) {
                Some((key, _)) if c.len() == 1 => axis(key, e.0),
                Some((key, _)) => axis(key, format!("{e} (in the run with {})", describe(c))),
                None => Refusal::anywhere(format!("{}: {e}", describe(c))),
            }
        })?;
        configs.push(config);
    }
    checked(combos.len(), combos.len());
    let runs = traces
        .iter()
        .flat_map(|t| {
            combos.iter().zip(&configs).map(|(c, config)| Run {
                trace: t.clone(),
                overrides: c.clone(),
                config: config.clone(),
            })
        })
        .collect();
    Ok(Sweep {
        base,
        analysis,
        runs,
    })
}

/// `path` without `.` and with `dir/..` folded, as a person would write it (used only
/// where it names the same file as `path`).
fn clean(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `key = value, …` of a run's overrides, for messages and tables.
pub fn describe(overrides: &[(String, Value)]) -> String {
    if overrides.is_empty() {
        return "the base machine".into();
    }
    overrides
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces")
    }

    #[test]
    fn a_grid_and_a_zip_make_every_combination_for_every_trace() {
        let s = parse(
            r#"
traces = ["xz.plt", "sqlite.plt"]
machine = "skylake"
[grid]
"tlb.levels.stlb.ways" = [4, 8, 12]
"tlb.levels.dtlb.replacement" = ["lru", "fifo"]
[zip]
"cost.walk_ref_cycles" = [8.0, 12.0]
"cost.page_fault_cycles" = [3000.0, 5000.0]
"#,
            "t",
            &traces(),
        )
        .unwrap();
        // 2 traces × 3 × 2 × 2 zip rows.
        assert_eq!(s.runs.len(), 24);
        let first = &s.runs[0];
        assert_eq!(describe(&first.overrides), "cost.page_fault_cycles = 3000.0, cost.walk_ref_cycles = 8.0, tlb.levels.dtlb.replacement = \"lru\", tlb.levels.stlb.ways = 4");
        // The zip's rows go together, never crossed.
        for r in &s.runs {
            let get = |k: &str| {
                r.overrides
                    .iter()
                    .find(|o| o.0 == k)
                    .unwrap()
                    .1
                    .as_float()
                    .unwrap()
            };
            assert_eq!(
                get("cost.walk_ref_cycles") == 8.0,
                get("cost.page_fault_cycles") == 3000.0
            );
        }
        // Every run distinct, the traces in order.
        assert!(s.runs[..12].iter().all(|r| r.trace.ends_with("xz.plt")));
        let mut keys: Vec<String> = s
            .runs
            .iter()
            .map(|r| format!("{:?}{:?}", r.trace, r.overrides))
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 24);
    }

    #[test]
    fn bad_sweeps_are_one_line_errors_before_any_run() {
        for (text, says) in [
            (
                "traces = [\"xz.plt\"]\n[grid]\n\"tlb.wayz\" = [1]\n",
                "wayz",
            ),
            ("traces = [\"nope.plt\"]\n", "traces[0]"),
            (
                "traces = [\"xz.plt\"]\n[grid]\n\"tlb.ways\" = []\n",
                "empty axis",
            ),
            ("traces = []\n", "at least one trace"),
            (
                "traces = [\"xz.plt\"]\n[zip]\na = [1]\nb = [1, 2]\n",
                "one length",
            ),
            ("traces = [\"xz.plt\"]\nmachine = \"nope\"\n", "nope"),
            (
                "traces = [\"xz.plt\"]\nmachines = \"skylake\"\n",
                "unknown field",
            ),
            ("traces = [\"xz.plt\"]\n[grid]\n\"tlb.ways\" = [0]\n", "tlb"),
        ] {
            let e = parse(text, "sweep.toml", &traces()).unwrap_err();
            assert!(
                e.starts_with("sweep.toml: ") && e.contains(says) && !e.contains('\n'),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn a_new_kind_starts_from_its_defaults_and_a_clash_is_named() {
        let traces = traces();
        // The default machine has no walk caches: a hashed table is fine.
        let s = parse(
            "traces = [\"xz.plt\"]\n[grid]\n\"page_table.kind\" = [\"radix\", \"hashed\"]\n",
            "t",
            &traces,
        )
        .unwrap();
        assert_eq!(s.runs.len(), 2);
        // Skylake's walk caches hold radix entries: said before any run.
        let e = parse(
            "traces = [\"xz.plt\"]\nmachine = \"skylake\"\n[grid]\n\"page_table.kind\" = [\"hashed\"]\n",
            "t",
            &traces,
        )
        .unwrap_err();
        assert!(
            e.contains("page_table.kind = \"hashed\"") && e.contains("walk caches"),
            "{e}"
        );
    }
}
