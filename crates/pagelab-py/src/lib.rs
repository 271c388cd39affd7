//! `pagelab._pagelab`: the Python bindings of pagelab-core. Type conversion only: every
//! function takes Python values, hands them to the core with the GIL released, and
//! returns the core's result types as native Python values (dicts, lists, numbers,
//! strings: `pythonize`), which the Python package (`python/pagelab`) wraps in its
//! records. Errors of the user's making (a bad trace, configuration or run) raise
//! `ValueError` with the core's one-line message; a panic in the core (a bug) raises
//! `RuntimeError`.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr (clippy false positive).
#![allow(clippy::useless_conversion)]

use pagelab_core::analysis::simulation;
use pagelab_core::analysis::warmup::Warmup;
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
mod tools;

/// Why a call failed, before it becomes a Python exception.
enum Failure {
    /// The input is wrong (trace, configuration, format, run): `ValueError`.
    Input(String),
    /// The core panicked: `RuntimeError`.
    Bug(String),
}

/// What a call returns: its result and any warning a reader chose to survive.
struct Output<T> {
    value: T,
    warning: Option<String>,
}

impl<T> Output<T> {
    fn new(value: T) -> Output<T> {
        Output {
            value,
            warning: None,
        }
    }
}

fn input_error<E: std::fmt::Display>(e: E) -> Failure {
    Failure::Input(e.to_string())
}

/// Run `work` without the GIL, turning a panic into [`Failure::Bug`], and its result
/// into a Python value.
fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<PyObject>
where
    T: serde::Serialize + Send,
    F: FnOnce() -> Result<Output<T>, Failure> + Send,
{
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| {
            // Through a JSON value, without the GIL: fixed-size arrays become lists
            // (pythonize makes tuples of them), as in the command line's JSON.
            let out = work()?;
            let value =
                serde_json::to_value(&out.value).map_err(|e| Failure::Bug(e.to_string()))?;
            Ok(Output {
                value,
                warning: out.warning,
            })
        }))
        .unwrap_or_else(|panic| Err(Failure::Bug(pagelab_core::internal_error(panic.as_ref()))))
    });
    match result {
        Ok(out) => {
            if let Some(w) = out.warning {
                PyErr::warn_bound(py, &py.get_type_bound::<PyRuntimeWarning>(), &w, 1)?;
            }
            Ok(pythonize::pythonize(py, &out.value)
                .map_err(|e| PyRuntimeError::new_err(format!("pagelab: {e}")))?
                .unbind())
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
    trace::open_detected(Path::new(path), format, false).map_err(input_error)
}

/// What `simulate` returns: the report, and with a baseline the same machine with base
/// pages only beside it.
#[derive(serde::Serialize)]
struct SimulationOut {
    #[serde(flatten)]
    report: pagelab_core::Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<simulation::Baseline>,
}

fn run_simulation(
    input: &simulation::Input,
    config_toml: &str,
    origin: &str,
    baseline: bool,
) -> Result<Output<SimulationOut>, Failure> {
    let config = MachineConfig::from_toml(config_toml, origin).map_err(input_error)?;
    let build = |config: &MachineConfig| {
        Machine::build(config).map_err(|e| Failure::Input(format!("{origin}: {e}")))
    };
    let mut machine = build(&config)?;
    if baseline {
        input.check_rereadable("baseline").map_err(Failure::Input)?;
    }
    let warmup = input
        .warmup_references()
        .map_err(|e| Failure::Input(format!("warmup: {e}")))?;
    machine.set_warmup(warmup);
    let name = input.name();
    let mut reader = input.open().map_err(Failure::Input)?;
    machine
        .run_trace(reader.as_mut(), Path::new(&name), |_, _| {})
        .map_err(input_error)?;
    if machine.counts().references == 0 {
        return Err(Failure::Input(format!(
            "{name}: holds no references: nothing to simulate"
        )));
    }
    let report = machine.report();
    let baseline = if baseline {
        let mut base = build(&simulation::base_pages(&config))?;
        base.set_warmup(warmup);
        let mut reader = input.open().map_err(Failure::Input)?;
        base.run_trace(reader.as_mut(), Path::new(&name), |_, _| {})
            .map_err(input_error)?;
        Some(simulation::Baseline::between(&report, &base.report()))
    } else {
        None
    };
    Ok(Output {
        value: SimulationOut { report, baseline },
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

/// What `trace_info` returns: the trace's info, the format read and its metadata.
#[derive(serde::Serialize)]
struct InfoOut {
    #[serde(flatten)]
    info: pagelab_core::trace::info::TraceInfo,
    format: &'static str,
    metadata: pagelab_core::trace::Metadata,
}

fn run_info(
    trace: &str,
    format: Option<&str>,
    categories_toml: &str,
) -> Result<Output<InfoOut>, Failure> {
    let rules = rules(categories_toml)?;
    let (mut reader, format) = open_trace(trace, format)?;
    let mut builder = InfoBuilder::new().with_categories(rules);
    let mut batch = Batch::default();
    while reader.next_batch(&mut batch).map_err(input_error)? {
        builder.add(&batch);
    }
    Ok(Output {
        value: InfoOut {
            info: builder.finish(),
            format: format.name(),
            metadata: reader.metadata().clone(),
        },
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
        Some(name) => pagelab_core::presets::load(name).map_err(input_error),
        None if config_toml.trim().is_empty() => {
            pagelab_core::presets::load(default).map_err(input_error)
        }
        None => MachineConfig::from_toml(config_toml, origin).map_err(input_error),
    }
}

/// How many translation entries map the footprint of a trace with 4K, 2M and 1G
/// pages, ideal ranges and the ranges eager paging made on the machine (the preset
/// `machine`, or the TOML configuration; sandy-bridge-rmm when neither is given),
/// with `regions` allocated eagerly before the trace. Returns a dict.
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
) -> PyResult<PyObject> {
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
        .map_err(input_error)?;
        Ok(Output {
            value: result,
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// One run per translation scheme (4K, THP 2M, 1G, DS, RMM; with `coalescing`, mTHP
/// 64K and PTE coalescing after THP 2M) of a trace on the machine (the preset
/// `machine`, or the TOML configuration; sandy-bridge when neither is given). Returns
/// a dict: machine, schemes (rows), skipped.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", machine = None, regions = Vec::new(), format = None, origin = "<config>", coalescing = false))]
#[allow(clippy::too_many_arguments)]
fn compare_translation(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    machine: Option<&str>,
    regions: Vec<String>,
    format: Option<&str>,
    origin: &str,
    coalescing: bool,
) -> PyResult<PyObject> {
    use pagelab_core::analysis::translation;
    detached(py, || {
        let config = machine_config(config_toml, machine, origin, translation::DEFAULT_MACHINE)?;
        // The format is parsed (and the file opened) once before any run.
        let (_, format) = open_trace(trace, format)?;
        let result = translation::compare_with(
            &config,
            &regions,
            coalescing,
            || trace::open(Path::new(trace), Some(format)),
            Path::new(trace),
            |_, _, _| {},
        )
        .map_err(input_error)?;
        Ok(Output {
            value: result,
            warning: None,
        })
    })
}

/// Every guest page-table structure of `guests` natively and over every host
/// structure of `hosts` (empty: all seven) on a trace, on the machine (the preset
/// `machine`, or the TOML configuration; sandy-bridge when neither is given), a host
/// fault mapping `host_page` when given. Returns a dict: machine, host_page, native,
/// pairs.
#[pyfunction]
#[pyo3(signature = (trace, config_toml = "", machine = None, guests = Vec::new(), hosts = Vec::new(), host_page = None, format = None, origin = "<config>"))]
#[allow(clippy::too_many_arguments)]
fn compare_virtualized(
    py: Python<'_>,
    trace: &str,
    config_toml: &str,
    machine: Option<&str>,
    guests: Vec<String>,
    hosts: Vec<String>,
    host_page: Option<&str>,
    format: Option<&str>,
    origin: &str,
) -> PyResult<PyObject> {
    use pagelab_core::analysis::{translation, virtualized};
    detached(py, || {
        let mut config =
            machine_config(config_toml, machine, origin, translation::DEFAULT_MACHINE)?;
        if let Some(page) = host_page {
            virtualized::with_host_page(&mut config, page)
                .map_err(|e| Failure::Input(format!("host_page: {e}")))?;
        }
        let (_, format) = open_trace(trace, format)?;
        let result = virtualized::compare(
            &config,
            &guests,
            &hosts,
            || trace::open(Path::new(trace), Some(format)),
            Path::new(trace),
            |_, _, _| {},
        )
        .map_err(input_error)?;
        Ok(Output {
            value: result,
            warning: None,
        })
    })
}

/// Exact reuse distances of a trace's page stream at each of `page_sizes` ("4K",
/// "2M", …) in one pass, with the misses of a fully associative LRU TLB of every size.
/// Returns a dict.
#[pyfunction]
#[pyo3(signature = (trace, page_sizes = vec!["4K".to_string()], format = None, sample_rate = None, warmup = None))]
fn reuse(
    py: Python<'_>,
    trace: &str,
    page_sizes: Vec<String>,
    format: Option<&str>,
    sample_rate: Option<f64>,
    warmup: Option<&str>,
) -> PyResult<PyObject> {
    let warmup = parse_warmup(warmup)?;
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
        let warmup = simulation::Input {
            traces: vec![trace.into()],
            format: format
                .map(TraceFormat::parse)
                .transpose()
                .map_err(Failure::Input)?,
            warmup,
            ..Default::default()
        }
        .warmup_references()
        .map_err(|e| Failure::Input(format!("warmup: {e}")))?;
        let (mut reader, _) = open_trace(trace, format)?;
        let result = pagelab_core::analysis::reuse::analyze_trace(
            reader.as_mut(),
            Path::new(trace),
            &sizes,
            sample_rate,
            warmup,
            |_, _| {},
        )
        .map_err(input_error)?;
        Ok(Output {
            value: result,
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// Run the machine the TOML configuration describes (empty: every default) over the
/// input and return its report as a dict: the `traces` (several run as processes of one
/// machine, switched every `quantum` references) and the `synthetic` workload after
/// them. `format` names the traces' format (one of `TRACE_FORMATS`); None detects it.
/// With `baseline`, the report gains `baseline`: the same machine with base pages only
/// against it. `origin` names the configuration in error messages. Raises ValueError on
/// a bad trace, configuration or run.
#[pyfunction]
#[pyo3(signature = (traces, config_toml = "", format = None, origin = "<config>", synthetic = None,
    quantum = simulation::DEFAULT_QUANTUM, baseline = false, warmup = None))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    traces: Vec<std::path::PathBuf>,
    config_toml: &str,
    format: Option<&str>,
    origin: &str,
    synthetic: Option<String>,
    quantum: usize,
    baseline: bool,
    warmup: Option<&str>,
) -> PyResult<PyObject> {
    let warmup = parse_warmup(warmup)?;
    if quantum == 0 {
        return Err(PyValueError::new_err("quantum must be at least 1"));
    }
    let format = format
        .map(TraceFormat::parse)
        .transpose()
        .map_err(PyValueError::new_err)?;
    let input = simulation::Input {
        traces,
        synthetic,
        quantum,
        format,
        salvage: false,
        warmup,
    };
    detached(py, || run_simulation(&input, config_toml, origin, baseline))
}

/// A warm-up as Python gives it (its text: 5000000, "10%", 0.1); none: no warm-up.
fn parse_warmup(text: Option<&str>) -> PyResult<Warmup> {
    text.map_or(Ok(Warmup::References(0)), |t| {
        Warmup::parse(t).map_err(|e| PyValueError::new_err(format!("warmup: {e}")))
    })
}

/// Read the whole trace and return what it holds as a dict: references by kind,
/// events by type, footprint in pages, address range, address spaces, the format read
/// and the trace's metadata. Raises ValueError on a bad trace.
#[pyfunction]
#[pyo3(signature = (trace, format = None, categories_toml = ""))]
fn trace_info(
    py: Python<'_>,
    trace: &str,
    format: Option<&str>,
    categories_toml: &str,
) -> PyResult<PyObject> {
    detached(py, || run_info(trace, format, categories_toml))
}

/// The page-size benefit analysis of a trace on the machine (the preset `machine`, or
/// the TOML configuration; sandy-bridge when neither is given), with `simulate` the
/// simulator's ranking beside. Returns a dict: the analysis, and `validation`.
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
) -> PyResult<PyObject> {
    use pagelab_core::analysis::benefit;
    detached(py, || {
        let config = machine_config(config_toml, machine, origin, benefit::DEFAULT_MACHINE)?;
        // The options as the command line reads them, named as the keywords are.
        let request = benefit::Request {
            page_sizes,
            budget,
            tlb_miss_cycles,
            page_fault_cycles,
            page_table_entries,
            seconds,
            clock_ghz,
            sample,
            simulate,
        };
        let options = request
            .options(rules(categories_toml)?, str::to_string)
            .map_err(Failure::Input)?;
        let (mut reader, format) = open_trace(trace, format)?;
        let result = benefit::analyze_trace(
            reader.as_mut(),
            Path::new(trace),
            &config,
            &options,
            |_, _| {},
        )
        .map_err(input_error)?;
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
                .map_err(input_error)?,
            )
        } else {
            None
        };
        Ok(Output {
            value: BenefitOut { result, validation },
            warning: reader.warning().map(str::to_string),
        })
    })
}

/// What `benefit` returns: the analysis, and the simulator's ranking beside it.
#[derive(serde::Serialize)]
struct BenefitOut {
    #[serde(flatten)]
    result: pagelab_core::analysis::benefit::Benefit,
    validation: Option<pagelab_core::analysis::benefit::simulate::Validation>,
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
    m.add_function(wrap_pyfunction!(compare_virtualized, m)?)?;
    m.add_function(wrap_pyfunction!(reuse, m)?)?;
    m.add_function(wrap_pyfunction!(benefit, m)?)?;
    m.add_class::<machine::Machine>()?;
    m.add_function(wrap_pyfunction!(machine::dict_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::results_table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::flatten_report, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::export_results, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::write_file, m)?)?;
    m.add_function(wrap_pyfunction!(tools::compare_pagetables, m)?)?;
    m.add_function(wrap_pyfunction!(tools::convert_trace, m)?)?;
    m.add_function(wrap_pyfunction!(tools::machines, m)?)?;
    m.add_function(wrap_pyfunction!(tools::host_machine, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro_papers, m)?)?;
    m.add_function(wrap_pyfunction!(repro::repro_claims, m)?)?;
    m.add("PRESETS", pagelab_core::presets::names())?;
    Ok(())
}
