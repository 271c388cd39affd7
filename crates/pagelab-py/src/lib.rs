//! `pagelab._pagelab`: the Python bindings of pagelab-core. Type conversion only: every
//! function takes strings, hands them to the core with the GIL released, and returns
//! JSON text that the Python package (`python/pagelab`) turns into dicts. Errors of the
//! user's making (a bad trace, configuration or run) raise `ValueError` with the core's
//! one-line message; a panic in the core (a bug) raises `RuntimeError`.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr (clippy false positive).
#![allow(clippy::useless_conversion)]

use pagelab_core::trace::info::InfoBuilder;
use pagelab_core::trace::{self, TraceFormat, TraceReader};
use pagelab_core::{Batch, Machine, MachineConfig};
use pyo3::exceptions::{PyRuntimeError, PyRuntimeWarning, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

mod machine;
mod repro;
mod sweep;

/// Why a call failed, before it becomes a Python exception.
enum Failure {
    /// The input is wrong (trace, configuration, format, run): `ValueError`.
    Input(String),
    /// The core panicked: `RuntimeError`.
    Bug(String),
}

/// What a call returns: JSON text and any warning a reader chose to survive.
struct Output {
    json: String,
    warning: Option<String>,
}

fn input<E: std::fmt::Display>(e: E) -> Failure {
    Failure::Input(e.to_string())
}

/// Run `work` without the GIL, turning a panic into [`Failure::Bug`].
fn detached<F>(py: Python<'_>, work: F) -> PyResult<String>
where
    F: FnOnce() -> Result<Output, Failure> + Send,
{
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(work))
            .unwrap_or_else(|panic| Err(Failure::Bug(pagelab_core::internal_error(panic.as_ref()))))
    });
    match result {
        Ok(out) => {
            if let Some(w) = out.warning {
                PyErr::warn_bound(py, &py.get_type_bound::<PyRuntimeWarning>(), &w, 1)?;
            }
            Ok(out.json)
        }
        Err(Failure::Input(m)) => Err(PyValueError::new_err(m)),
        Err(Failure::Bug(m)) => Err(PyRuntimeError::new_err(m)),
    }
}

/// Open a trace, detecting its format unless one is named; returns the format used.
fn open_trace(
    path: &str,
    format: Option<&str>,
) -> Result<(Box<dyn TraceReader + Send>, TraceFormat), Failure> {
    let format = match format {
        Some(name) => Some(TraceFormat::parse(name).map_err(Failure::Input)?),
        None => None,
    };
    trace::open_detected(Path::new(path), format, false).map_err(input)
}

fn run_simulation(
    trace: &str,
    config_toml: &str,
    format: Option<&str>,
    origin: &str,
) -> Result<Output, Failure> {
    let config = MachineConfig::from_toml(config_toml, origin).map_err(input)?;
    let mut machine =
        Machine::build(&config).map_err(|e| Failure::Input(format!("{origin}: {e}")))?;
    let (mut reader, _) = open_trace(trace, format)?;
    machine
        .run_trace(reader.as_mut(), Path::new(trace), |_, _| {})
        .map_err(input)?;
    if machine.counts().references == 0 {
        return Err(Failure::Input(format!(
            "{trace}: holds no references: nothing to simulate"
        )));
    }
    Ok(Output {
        json: serde_json::to_string(&machine.report()).map_err(|e| Failure::Bug(e.to_string()))?,
        warning: reader.warning().map(str::to_string),
    })
}

/// User-defined categories from TOML text (empty: none).
fn rules(categories_toml: &str) -> Result<Vec<pagelab_core::categories::UserCategory>, Failure> {
    if categories_toml.trim().is_empty() {
        return Ok(Vec::new());
    }
    pagelab_core::categories::parse_rules(categories_toml, "categories").map_err(Failure::Input)
}

fn run_info(trace: &str, format: Option<&str>, categories_toml: &str) -> Result<Output, Failure> {
    let rules = rules(categories_toml)?;
    let (mut reader, format) = open_trace(trace, format)?;
    let mut builder = InfoBuilder::new().with_categories(rules);
    let mut batch = Batch::default();
    while reader.next_batch(&mut batch).map_err(input)? {
        builder.add(&batch);
    }
    let bug = |e: serde_json::Error| Failure::Bug(e.to_string());
    let mut value = serde_json::to_value(builder.finish()).map_err(bug)?;
    if let serde_json::Value::Object(map) = &mut value {
        map.insert("format".into(), format.name().into());
        map.insert(
            "metadata".into(),
            serde_json::to_value(reader.metadata()).map_err(bug)?,
        );
    }
    Ok(Output {
        json: value.to_string(),
        warning: reader.warning().map(str::to_string),
    })
}

/// The machine of a call: the preset `machine` names, else the TOML text (`default`,
/// a preset, when both are empty).
fn machine_config(
    config_toml: &str,
    machine: Option<&str>,
    origin: &str,
    default: &str,
) -> Result<MachineConfig, Failure> {
    match machine {
        Some(name) => pagelab_core::presets::load(name).map_err(input),
        None if config_toml.trim().is_empty() => {
            pagelab_core::presets::load(default).map_err(input)
        }
        None => MachineConfig::from_toml(config_toml, origin).map_err(input),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| Failure::Bug(e.to_string()))
}

/// How many translation entries map the footprint of a trace with 4K, 2M and 1G
/// pages, ideal ranges and the ranges eager paging made on the machine (the preset
/// `machine`, or the TOML configuration; sandy-bridge-rmm when neither is given),
/// with `regions` allocated eagerly before the trace. Returns JSON text.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", machine = None, regions = Vec::new(), format = None, origin = "<config>"))]
fn contiguity(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    machine: Option<&str>,
    regions: Vec<String>,
    format: Option<&str>,
    origin: &str,
) -> PyResult<String> {
    use pagelab_core::analysis::contiguity;
    detached(py, || {
        let config = machine_config(config_toml, machine, origin, contiguity::DEFAULT_MACHINE)?;
        let (mut reader, _) = open_trace(trace, format)?;
        let result = contiguity::analyze_with(
            &config,
            &regions,
            reader.as_mut(),
            Path::new(trace),
            |_, _| {},
        )
        .map_err(input)?;
        Ok(Output {
            json: to_json(&result)?,
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// One run per translation scheme (4K, THP 2M, 1G, DS, RMM) of a trace on the machine
/// (the preset `machine`, or the TOML configuration; sandy-bridge when neither is
/// given). Returns JSON text: machine, schemes (rows), skipped.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", machine = None, regions = Vec::new(), format = None, origin = "<config>"))]
fn compare_translation(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    machine: Option<&str>,
    regions: Vec<String>,
    format: Option<&str>,
    origin: &str,
) -> PyResult<String> {
    use pagelab_core::analysis::translation;
    detached(py, || {
        let config = machine_config(config_toml, machine, origin, translation::DEFAULT_MACHINE)?;
        // The format is parsed (and the file opened) once before any run.
        let (_, format) = open_trace(trace, format)?;
        let result = translation::compare(
            &config,
            &regions,
            || trace::open(Path::new(trace), Some(format)),
            Path::new(trace),
            |_, _, _| {},
        )
        .map_err(input)?;
        Ok(Output {
            json: to_json(&result)?,
            warning: None,
        })
    })
}

/// Exact reuse distances of a trace's page stream at each of `page_sizes` ("4K",
/// "2M", …) in one pass, with the misses of a fully associative LRU TLB of every size.
/// Returns JSON text.
#[pyfunction]
#[pyo3(signature = (trace, page_sizes = vec!["4K".to_string()], format = None, sample_rate = None))]
fn reuse(
    py: Python<'_>,
    trace: &str,
    page_sizes: Vec<String>,
    format: Option<&str>,
    sample_rate: Option<f64>,
) -> PyResult<String> {
    detached(py, || {
        let mut sizes = Vec::new();
        for s in &page_sizes {
            let size = pagelab_core::PageSize::parse(s)
                .map_err(|e| Failure::Input(format!("page_sizes: {s:?}: {e}")))?;
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        if sizes.is_empty() {
            return Err(Failure::Input(
                "page_sizes: name at least one page size".into(),
            ));
        }
        let (mut reader, _) = open_trace(trace, format)?;
        let result = pagelab_core::analysis::reuse::analyze_trace(
            reader.as_mut(),
            Path::new(trace),
            &sizes,
            sample_rate,
            |_, _| {},
        )
        .map_err(input)?;
        Ok(Output {
            json: to_json(&result)?,
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// Run the machine the TOML configuration describes (empty: every default) over the
/// whole trace and return its report as JSON text. `format` names the trace format
/// (one of `TRACE_FORMATS`); None detects it. `origin` names the
/// configuration in error messages. Raises ValueError on a bad trace, configuration or run.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", format = None, origin = "<config>"))]
fn simulate(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    format: Option<&str>,
    origin: &str,
) -> PyResult<String> {
    detached(py, || run_simulation(trace, config_toml, format, origin))
}

/// Read the whole trace and return what it holds as JSON text: references by kind,
/// events by type, footprint in pages, address range, address spaces, the format read
/// and the trace's metadata. Raises ValueError on a bad trace.
#[pyfunction]
#[pyo3(signature = (trace, format = None, categories_toml = ""))]
fn trace_info(
    py: Python<'_>,
    trace: &str,
    format: Option<&str>,
    categories_toml: &str,
) -> PyResult<String> {
    detached(py, || run_info(trace, format, categories_toml))
}

/// The page-size benefit analysis of a trace on the machine (the preset `machine`, or
/// the TOML configuration; sandy-bridge when neither is given), with `simulate` the
/// simulator's ranking beside. Returns JSON text: the analysis, and `validation`.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", machine = None, format = None, origin = "<config>",
    page_sizes = Vec::new(), budget = None, tlb_miss_cycles = None, page_fault_cycles = None,
    page_table_entries = None, seconds = None, clock_ghz = 3.0, sample = 1,
    categories_toml = "", simulate = false))]
#[allow(clippy::too_many_arguments)]
fn benefit(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    machine: Option<&str>,
    format: Option<&str>,
    origin: &str,
    page_sizes: Vec<String>,
    budget: Option<String>,
    tlb_miss_cycles: Option<f64>,
    page_fault_cycles: Option<f64>,
    page_table_entries: Option<i64>,
    seconds: Option<f64>,
    clock_ghz: f64,
    sample: i64,
    categories_toml: &str,
    simulate: bool,
) -> PyResult<String> {
    use pagelab_core::analysis::benefit;
    detached(py, || {
        let config = machine_config(config_toml, machine, origin, benefit::DEFAULT_MACHINE)?;
        let mut sizes = Vec::new();
        for s in &page_sizes {
            let size = pagelab_core::PageSize::parse(s)
                .map_err(|e| Failure::Input(format!("page_sizes: {s:?}: {e}")))?;
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        let counted = |what: &str, n: i64| {
            u64::try_from(n).map_err(|_| Failure::Input(format!("{what} {n}: cannot be negative")))
        };
        let options = benefit::Options {
            large_sizes: (!sizes.is_empty()).then_some(sizes),
            tlb_miss_cycles,
            page_fault_cycles,
            page_table_entries: page_table_entries
                .map(|n| counted("page_table_entries", n))
                .transpose()?,
            budget: budget
                .as_deref()
                .map(benefit::Budget::parse)
                .transpose()
                .map_err(Failure::Input)?,
            seconds,
            clock_ghz,
            sample: counted("sample", sample)?,
            rules: rules(categories_toml)?,
            ..benefit::Options::default()
        };
        let (mut reader, format) = open_trace(trace, format)?;
        let result = benefit::analyze_trace(
            reader.as_mut(),
            Path::new(trace),
            &config,
            &options,
            |_, _| {},
        )
        .map_err(input)?;
        let validation = if simulate {
            Some(
                benefit::simulate::validate(
                    &result,
                    &config,
                    &options.rules,
                    || trace::open(Path::new(trace), Some(format)),
                    Path::new(trace),
                    |_, _, _| {},
                )
                .map_err(input)?,
            )
        } else {
            None
        };
        let bug = |e: serde_json::Error| Failure::Bug(e.to_string());
        let mut value = serde_json::to_value(&result).map_err(bug)?;
        value["validation"] = serde_json::to_value(&validation).map_err(bug)?;
        Ok(Output {
            json: value.to_string(),
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// The default machine configuration as TOML text.
#[pyfunction]
fn default_config() -> String {
    MachineConfig::default().to_toml()
}

/// The compiled half of pagelab; use the `pagelab` package instead.
#[pymodule]
fn _pagelab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The names the configuration and `format` accept, from the core's lists.
    m.add("TRACE_FORMATS", pagelab_core::trace::NAMES.to_vec())?;
    m.add("PAGE_TABLES", pagelab_core::pagetable::NAMES.to_vec())?;
    m.add(
        "PROMOTION_POLICIES",
        pagelab_core::superpage::NAMES.to_vec(),
    )?;
    m.add(
        "REPLACEMENT_POLICIES",
        pagelab_core::replacement::NAMES.to_vec(),
    )?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(default_config, m)?)?;
    m.add_function(wrap_pyfunction!(contiguity, m)?)?;
    m.add_function(wrap_pyfunction!(compare_translation, m)?)?;
    m.add_function(wrap_pyfunction!(reuse, m)?)?;
    m.add_function(wrap_pyfunction!(benefit, m)?)?;
    m.add_class::<machine::Machine>()?;
    m.add_function(wrap_pyfunction!(machine::dict_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::results_table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::export_results, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro_papers, m)?)?;
    m.add("PRESETS", pagelab_core::presets::names())?;
    Ok(())
}
