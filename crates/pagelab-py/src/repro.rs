//! `pagelab repro` from Python: the same engine (`pagelab_repro`), its experiments on
//! the local cores; the native measurements are the command line's.

use crate::{detached, Failure, Output};
use pagelab_repro::run::{reproduce, Options};
use pagelab_sweep::{Local, Observer, TerminalProgress};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// The papers: a list of {id, title, cite, claims, experiments}.
#[pyfunction]
pub fn repro_papers(py: Python<'_>) -> PyResult<PyObject> {
    let mut out = Vec::new();
    for p in &pagelab_repro::PAPERS {
        let f = pagelab_repro::claims::PaperFile::parse(p.text, p.id)
            .map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
        out.push(serde_json::json!({
            "id": p.id,
            "title": f.paper.title,
            "cite": f.paper.cite,
            "claims": f.claim.len(),
            "experiments": f.experiment.len(),
        }));
    }
    Ok(pythonize::pythonize(py, &out)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?
        .unbind())
}

/// The papers reproduced into the results database `db`, with each claim's verdict:
/// a list of {id, title, cite, source, about, experiments, quick, claims}; empty for
/// a database of plain sweeps.
#[pyfunction]
pub fn repro_claims(py: Python<'_>, db: PathBuf) -> PyResult<PyObject> {
    detached(py, || {
        pagelab_repro::stored::read(&db)
            .map(Output::new)
            .map_err(|e| Failure::Input(format!("{e:#}")))
    })
}

/// Reproduce `paper` into the folder `output` (made if missing): its experiments as
/// sweeps into `output/results.db`, every claim judged, the verdicts written
/// (verdicts.json, verdicts.md, summary.txt). `traces` is the bundled traces' folder;
/// `cache` the trace cache holding the recorded kernels (`workload:` traces), which
/// `pagelab repro PAPER` on the command line records.
/// Returns the verdicts (what verdicts.json holds), as a dict.
#[pyfunction]
#[pyo3(signature = (paper, output, traces, quick = false, jobs = None, quiet = false, cache = None, warmup = None))]
#[allow(clippy::too_many_arguments)]
pub fn repro(
    py: Python<'_>,
    paper: &str,
    output: PathBuf,
    traces: PathBuf,
    quick: bool,
    jobs: Option<usize>,
    quiet: bool,
    cache: Option<PathBuf>,
    warmup: Option<&str>,
) -> PyResult<PyObject> {
    let warmup = warmup
        .map(pagelab_core::analysis::warmup::Warmup::parse)
        .transpose()
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("warmup: {e}")))?;
    let def = pagelab_repro::paper(paper).map_err(pyo3::exceptions::PyValueError::new_err)?;
    if jobs == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jobs must be at least 1",
        ));
    }
    detached(py, || {
        let input = |e: anyhow::Error| Failure::Input(format!("{e:#}"));
        std::fs::create_dir_all(&output)
            .map_err(|e| Failure::Input(format!("{}: cannot make: {e}", output.display())))?;
        let options = Options {
            db: output.join("results.db"),
            traces,
            cache: cache.unwrap_or_else(pagelab_repro::run::default_cache),
            quick,
            no_native: Some(
                "not run: native measurements are made by the command line (pagelab repro)".into(),
            ),
            warmup,
        };
        let db = options.db.display().to_string();
        let mut observer = |_: &str, _: usize, _: usize| -> Box<dyn Observer> {
            Box::new(TerminalProgress::new(&db, quiet))
        };
        let mut native = |_: &pagelab_repro::claims::Native, _: &Path| -> anyhow::Result<()> {
            anyhow::bail!("native measurements are made by the command line")
        };
        let r = reproduce(
            def,
            &options,
            &Local {
                jobs,
                separate: false,
            },
            &mut observer,
            &mut native,
        )
        .map_err(input)?;
        pagelab_repro::run::write(&output, &r, quick).map_err(input)?;
        Ok(Output::new(pagelab_repro::run::verdicts(&r, quick)))
    })
}
