//! Sweeps from Python: the same engine as `pagelab sweep` (`pagelab_sweep`), the
//! one run a Ray task executes, and the results database's table.

use crate::{detached, Failure, Output};
use pagelab_sweep::SweepFile;
use pagelab_sweep::{Executor, Local, Ray, TerminalProgress};
use pyo3::prelude::*;
use std::path::Path;

/// Run a sweep: `spec` is a sweep file's path or a dict of its fields (traces,
/// machine or config, grid, zip; relative paths from `folder`). On the local cores
/// (`jobs` at once; simulations that differ only in the last TLB level's geometry in
/// one pass unless `separate`), or on the Ray cluster at `ray` through the
/// interpreter `python`.
/// Returns the summary as a dict.
#[pyfunction]
#[pyo3(signature = (spec, db, jobs = None, ray = None, python = None, quiet = false, folder = ".", separate = false))]
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    py: Python<'_>,
    spec: &Bound<'_, PyAny>,
    db: &str,
    jobs: Option<usize>,
    ray: Option<String>,
    python: Option<String>,
    quiet: bool,
    folder: &str,
    separate: bool,
) -> PyResult<PyObject> {
    // The spec is read with the GIL held; the runs go without it.
    let spec = if let Ok(path) = spec.extract::<std::path::PathBuf>() {
        pagelab_sweep::load_observed(&path, &mut pagelab_sweep::progress::checking(quiet))
    } else {
        // Through a TOML value, which keeps a str a str: read as a list of paths or
        // values, it would be one of one-letter names.
        let value = crate::machine::toml_value(spec, "sweep")?;
        let file: SweepFile = value.try_into().map_err(|e: toml::de::Error| {
            // "what\nin `key`\n" as "key: what".
            let text = e.to_string();
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let what = lines.next().unwrap_or_default().to_string();
            let message = match lines.next().and_then(|l| l.strip_prefix("in ")) {
                Some(key) => format!("sweep: {}: {what}", key.trim_matches('`')),
                None => format!("sweep: {what}"),
            };
            if what.starts_with("invalid type") {
                pyo3::exceptions::PyTypeError::new_err(message)
            } else {
                pyo3::exceptions::PyValueError::new_err(message)
            }
        })?;
        pagelab_sweep::expand_observed(
            &file,
            "sweep",
            Path::new(folder),
            &mut pagelab_sweep::progress::checking(quiet),
        )
    }
    .map_err(pyo3::exceptions::PyValueError::new_err)?;
    if jobs == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jobs must be at least 1",
        ));
    }
    detached(py, || {
        let executor: Box<dyn Executor> = match ray {
            Some(address) => Box::new(Ray {
                address,
                python: python.unwrap_or_else(|| "python3".into()),
            }),
            None => Box::new(Local { jobs, separate }),
        };
        let mut progress = TerminalProgress::new(db, quiet);
        let s = pagelab_sweep::run(&spec, Path::new(db), executor.as_ref(), &mut progress)
            .map_err(|e| Failure::Input(format!("{e:#}")))?;
        Ok(Output::new(s))
    })
}

/// One run of a sweep, as a Ray task executes it: the result (a dict) and the
/// references read; `analysis` is the sweep's analysis as the engine hands it to a
/// task (empty: simulate). Raises ValueError with the run's error.
#[pyfunction]
#[pyo3(signature = (trace, config_toml, analysis = ""))]
pub fn sweep_run(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    analysis: &str,
) -> PyResult<(PyObject, u64)> {
    let mut refs = 0;
    let report = detached(py, || {
        let (text, n) = pagelab_sweep::run_one(Path::new(trace), config_toml, analysis)
            .map_err(Failure::Input)?;
        refs = n;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Failure::Bug(e.to_string()))?;
        Ok(Output::new(value))
    })?;
    Ok((report, refs))
}

/// A results database's runs as one table: a dict {"columns": [...], "rows": [[...]],
/// "keys": [the columns that are override keys]};
/// with `whole`, each run's configuration (TOML text) and report (a dict) too.
#[pyfunction]
#[pyo3(signature = (db, whole = false))]
pub fn results_table(py: Python<'_>, db: &str, whole: bool) -> PyResult<PyObject> {
    detached(py, || {
        let t = pagelab_sweep::export::table(Path::new(db), whole)
            .map_err(|e| Failure::Input(format!("{e:#}")))?;
        Ok(Output::new(
            serde_json::json!({"columns": t.columns, "rows": t.rows, "keys": t.keys}),
        ))
    })
}

/// A report (a dict, as `simulate` returns it) as flat columns, in their order
/// (`pagelab_core::report_columns`): the columns of `results_table` and `to_frame`.
#[pyfunction]
pub fn flatten_report(py: Python<'_>, report: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    let value: serde_json::Value = pythonize::depythonize(report)
        .map_err(|e| pyo3::exceptions::PyTypeError::new_err(format!("a report: {e}")))?;
    detached(py, move || {
        let row: serde_json::Map<String, serde_json::Value> =
            pagelab_core::report_columns::columns(&value)
                .into_iter()
                .collect();
        Ok(Output::new(row))
    })
}

/// Write a results database's table as CSV and/or Parquet, each file whole or not at all.
#[pyfunction]
#[pyo3(signature = (db, csv = None, parquet = None))]
pub fn export_results(
    py: Python<'_>,
    db: &str,
    csv: Option<String>,
    parquet: Option<String>,
) -> PyResult<()> {
    detached(py, || {
        let fail = |e: anyhow::Error| Failure::Input(format!("{e:#}"));
        for (p, what) in [(&csv, "csv"), (&parquet, "parquet")] {
            if let Some(p) = p {
                if same_file(Path::new(p), Path::new(db)) {
                    return Err(Failure::Input(format!(
                        "{what}: {p} is the results database itself"
                    )));
                }
            }
        }
        if csv.is_some() && csv == parquet {
            return Err(Failure::Input("csv and parquet name the same file".into()));
        }
        let t = pagelab_sweep::export::table(Path::new(db), false).map_err(fail)?;
        if let Some(p) = &csv {
            write_whole(p, &pagelab_sweep::export::csv(&t).map_err(fail)?)?;
        }
        if let Some(p) = &parquet {
            write_whole(p, &pagelab_sweep::export::parquet(&t).map_err(fail)?)?;
        }
        Ok(Output::new(()))
    })?;
    Ok(())
}

/// Whether two paths name one existing file.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Write `bytes` to `path` whole or not at all.
fn write_whole(path: &str, bytes: &[u8]) -> Result<(), Failure> {
    pagelab_core::whole_file::write(Path::new(path), bytes)
        .map_err(|e| Failure::Input(e.to_string()))
}

/// Write `data` to the file `path` whole or not at all, as the command line writes its
/// outputs (the report's page, from Python).
#[pyfunction]
pub fn write_file(py: Python<'_>, path: &str, data: &[u8]) -> PyResult<()> {
    let data = data.to_vec();
    detached(py, move || write_whole(path, &data).map(Output::new))?;
    Ok(())
}
