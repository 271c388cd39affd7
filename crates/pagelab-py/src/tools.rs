//! The page-table comparison, trace conversion and the presets' descriptions from
//! Python: `pagetables compare`, `trace convert` and `machines` of the command line,
//! through the same core functions.

use crate::sweep::same_file;
use crate::{detached, input_error, Failure, Output};
use pagelab_core::analysis::pagetable_comparison::{self, Lookups};
use pagelab_core::trace::convert;
use pagelab_core::trace::native::WriterOptions;
use pagelab_core::trace::TraceFormat;
use pagelab_core::MachineConfig;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

fn format_named(name: Option<&str>) -> PyResult<Option<TraceFormat>> {
    name.map(TraceFormat::parse)
        .transpose()
        .map_err(PyValueError::new_err)
}

/// Every page-table structure over a trace (`trace`, up to `max_refs` references) or
/// a synthetic layout (`layout`); behind the TLB of the preset `machine` or of the TOML
/// configuration `config_toml` if one is given. A dict: source, structures (rows).
#[pyfunction]
#[pyo3(signature = (trace = None, layout = None, format = None, max_refs = None, machine = None,
    config_toml = "", origin = "<config>"))]
#[allow(clippy::too_many_arguments)]
pub fn compare_pagetables(
    py: Python<'_>,
    trace: Option<PathBuf>,
    layout: Option<String>,
    format: Option<&str>,
    max_refs: Option<u64>,
    machine: Option<String>,
    config_toml: &str,
    origin: &str,
) -> PyResult<PyObject> {
    let lookups = match (trace, layout) {
        (Some(path), None) => Lookups::Trace {
            path,
            format: format_named(format)?,
            max_refs,
        },
        (None, Some(name)) => Lookups::Layout(name),
        _ => {
            return Err(PyValueError::new_err(
                "name a trace or a layout (one of them)",
            ))
        }
    };
    detached(py, || {
        let behind = match (&machine, config_toml.trim().is_empty()) {
            (Some(name), _) => Some((
                pagelab_core::presets::load(name).map_err(input_error)?,
                name.clone(),
            )),
            (None, false) => Some((
                MachineConfig::from_toml(config_toml, origin).map_err(input_error)?,
                origin.to_string(),
            )),
            (None, true) => None,
        };
        pagetable_comparison::compare(
            &lookups,
            behind.as_ref().map(|(c, name)| (c, name.as_str())),
            |_, _| {},
        )
        .map(Output::new)
        .map_err(Failure::Input)
    })
}

/// Convert the trace `input` into `output`, written whole or not at all: into the
/// format `to` (native, lackey, addrs, u64; else from the output's extension, else
/// native). Returns the format written.
#[pyfunction]
#[pyo3(signature = (input, output, to = None, from_format = None, workload = None,
    chunk_refs = None, level = None, compress_literals = false, salvage = false))]
#[allow(clippy::too_many_arguments)]
pub fn convert_trace(
    py: Python<'_>,
    input: PathBuf,
    output: PathBuf,
    to: Option<&str>,
    from_format: Option<&str>,
    workload: Option<String>,
    chunk_refs: Option<u32>,
    level: Option<i32>,
    compress_literals: bool,
    salvage: bool,
) -> PyResult<PyObject> {
    let defaults = WriterOptions::default();
    let writer = WriterOptions {
        chunk_refs: chunk_refs.unwrap_or(defaults.chunk_refs),
        level: level.unwrap_or(defaults.level),
        compress_literals,
    };
    if writer.chunk_refs == 0 {
        return Err(PyValueError::new_err("chunk_refs must be at least 1"));
    }
    if !(-7..=19).contains(&writer.level) {
        return Err(PyValueError::new_err(format!(
            "level {}: zstd's levels are -7 (fastest) to 19 (smallest)",
            writer.level
        )));
    }
    let options = convert::Options {
        from: format_named(from_format)?,
        to: convert::output_format(to, &output).map_err(PyValueError::new_err)?,
        workload,
        writer,
        salvage,
    };
    if same_file(&input, &output) {
        return Err(PyValueError::new_err(format!(
            "{}: the output would overwrite the input",
            output.display()
        )));
    }
    detached(py, || {
        let mut pending =
            pagelab_core::whole_file::Pending::create(&output).map_err(input_error)?;
        let warning = convert::convert(&input, pending.file(), &output, &options, |_, _| {})
            .map_err(input_error)?;
        pending.commit().map_err(input_error)?;
        Ok(Output {
            value: options.to.name(),
            warning,
        })
    })
}

/// The machine presets: a list of {name, description, levels, config}.
#[pyfunction]
pub fn machines(py: Python<'_>) -> PyResult<PyObject> {
    detached(py, || {
        pagelab_core::presets::describe_all()
            .map(Output::new)
            .map_err(Failure::Bug)
    })
}

/// This machine as `--machine host` builds it: {host, notes, levels, config}, as
/// `pagelab machines --host --json` prints it.
#[pyfunction]
pub fn host_machine(py: Python<'_>) -> PyResult<PyObject> {
    detached(py, || {
        pagelab_core::presets::describe_host(pagelab_core::host::Host::this_machine())
            .map(Output::new)
            .map_err(Failure::Bug)
    })
}
