//! `pagelab.Machine`: a machine configuration held by the core, built from a preset,
//! TOML or a Python dict (through serde: `pythonize`), changed by dotted-key overrides,
//! and given back as TOML or a dict. Python values never become TOML text by hand.

use pagelab_core::MachineConfig;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A Python value as a TOML value, through serde (`TypeError` for what TOML cannot
/// hold: None, non-string keys, integers beyond 64 bits, a container that holds
/// itself or is nested deeper than [`MAX_DEPTH`]).
pub fn toml_value(value: &Bound<'_, PyAny>, what: &str) -> PyResult<toml::Value> {
    check_shape(value, what)?;
    pythonize::depythonize::<toml::Value>(value)
        .map_err(|e| refuse(what.to_string(), e.to_string()))
}

/// The deepest nesting of lists and dicts a configuration or a sweep may have (the
/// deepest of pagelab's own is four).
pub const MAX_DEPTH: usize = 64;

fn refuse(at: String, e: String) -> PyErr {
    let at = if at.is_empty() { "config".into() } else { at };
    PyTypeError::new_err(format!(
        "{at}: {e} (a configuration holds str, int, float, bool, lists and dicts; leave a key out for its default)"
    ))
}

/// Refuse, before serde walks it, a value with no TOML form somewhere under it, a
/// container that holds itself, or nesting deeper than [`MAX_DEPTH`] (serde would
/// recurse until the stack ran out).
pub fn check_shape(value: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    let mut path = Vec::new();
    match culprit(value, what.to_string(), &mut path) {
        None => Ok(()),
        Some(Found::Leaf(at, leaf)) => {
            let kind = leaf
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            // Looked for first: a set would pass as a list, in no fixed order.
            Err(refuse(at, format!("{kind} has no TOML form")))
        }
        Some(Found::Cycle(at)) => Err(refuse(at, "a list or dict that contains itself".into())),
        Some(Found::Deep(at)) => Err(refuse(
            at,
            format!("nested more than {MAX_DEPTH} lists or dicts deep"),
        )),
    }
}

enum Found<'py> {
    Leaf(String, Bound<'py, PyAny>),
    Cycle(String),
    Deep(String),
}

/// The first value under `value` that has no TOML form, with its dotted path (or the
/// key that is not a string), or the first container met again on its own path, or
/// too deep. `path` holds the containers above `value`.
fn culprit<'py>(
    value: &Bound<'py, PyAny>,
    at: String,
    path: &mut Vec<usize>,
) -> Option<Found<'py>> {
    use pyo3::types::{PyList, PyTuple};
    let join = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    let container = value.is_instance_of::<PyDict>()
        || value.is_instance_of::<PyList>()
        || value.is_instance_of::<PyTuple>();
    if container {
        let id = value.as_ptr() as usize;
        if path.contains(&id) {
            return Some(Found::Cycle(at));
        }
        if path.len() >= MAX_DEPTH {
            return Some(Found::Deep(at));
        }
        path.push(id);
    }
    let found = if let Ok(d) = value.downcast::<PyDict>() {
        d.iter().find_map(|(k, v)| match k.downcast::<PyString>() {
            Err(_) => Some(Found::Leaf(join(&k.to_string()), k)),
            Ok(key) => culprit(&v, join(&key.to_string()), path),
        })
    } else if container {
        value.iter().ok().and_then(|items| {
            items
                .flatten()
                .enumerate()
                .find_map(|(i, v)| culprit(&v, format!("{at}[{i}]"), path))
        })
    } else {
        let unordered = value.is_instance_of::<pyo3::types::PySet>()
            || value.is_instance_of::<pyo3::types::PyFrozenSet>();
        (unordered || pythonize::depythonize::<toml::Value>(value).is_err())
            .then(|| Found::Leaf(at, value.clone()))
    };
    if container {
        path.pop();
    }
    found
}

/// TOML text of a Python dict, through serde.
#[pyfunction]
pub fn dict_to_toml(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let table = match toml_value(value, "")? {
        toml::Value::Table(t) => t,
        other => {
            return Err(PyTypeError::new_err(format!(
                "config: a configuration is a dict, not {}",
                other.type_str()
            )))
        }
    };
    toml::to_string(&table).map_err(|e| PyTypeError::new_err(format!("config: {e}")))
}

/// A machine configuration: the TLBs, walk caches, page table, physical memory, cost
/// model and policies of one simulated machine.
#[pyclass(name = "Machine", module = "pagelab", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Machine {
    pub config: MachineConfig,
}

fn value_error<E: std::fmt::Display>(e: E) -> PyErr {
    PyValueError::new_err(e.to_string())
}

impl Machine {
    /// A machine whose configuration passes every check building it makes (costs
    /// finite and in range, sizes within the memory estimate, parts that fit
    /// together): refused here, where it is made, not at its first run. What is built
    /// is dropped; the estimate is checked before anything large is allocated.
    fn checked(config: MachineConfig, origin: &str) -> PyResult<Machine> {
        pagelab_core::Machine::build(&config)
            .map_err(|e| PyValueError::new_err(format!("{origin}: {e}")))?;
        Ok(Machine { config })
    }
}

#[pymethods]
impl Machine {
    /// The default machine (a 64-entry 4-way LRU TLB, a 4-level radix table).
    #[new]
    fn new() -> Machine {
        Machine {
            config: MachineConfig::default(),
        }
    }

    /// The preset `name` (one of `pagelab.PRESETS`).
    #[staticmethod]
    fn preset(name: &str) -> PyResult<Machine> {
        let config = pagelab_core::presets::load(name).map_err(value_error)?;
        Ok(Machine { config })
    }

    /// From TOML text; `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<config>"))]
    fn from_toml(text: &str, origin: &str) -> PyResult<Machine> {
        let config = MachineConfig::from_toml(text, origin).map_err(value_error)?;
        Machine::checked(config, origin)
    }

    /// From a TOML file.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Machine> {
        let config = MachineConfig::load(&path).map_err(value_error)?;
        Machine::checked(config, &path.display().to_string())
    }

    /// From a dict of the configuration's fields (`variant_of` a preset included).
    /// Raises ValueError for what the configuration's checks refuse (a cost that is
    /// NaN, infinite or negative, a machine too large for memory), TypeError for a
    /// value with no TOML form.
    #[staticmethod]
    #[pyo3(signature = (value, origin = "<config>"))]
    fn from_dict(value: &Bound<'_, PyAny>, origin: &str) -> PyResult<Machine> {
        let text = dict_to_toml(value)?;
        Self::from_toml(&text, origin)
    }

    /// This machine with dotted-key overrides: `{"tlb.levels.stlb.ways": 16}`. Raises
    /// ValueError naming the override the configuration's checks refuse.
    fn with_overrides(&self, overrides: &Bound<'_, PyDict>) -> PyResult<Machine> {
        let mut pairs = Vec::with_capacity(overrides.len());
        for (k, v) in overrides.iter() {
            let key = k
                .downcast::<PyString>()
                .map_err(|_| PyTypeError::new_err("overrides: keys are dotted strings"))?
                .to_string();
            let value = toml_value(&v, &key)?;
            pairs.push((key, value));
        }
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let config = self.config.with_overrides(&pairs).map_err(value_error)?;
        Machine::checked(config, &self.config.name)
    }

    /// The configuration as TOML text, every default filled in.
    fn to_toml(&self) -> String {
        self.config.to_toml()
    }

    /// The configuration as a dict, every default filled in.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pythonize::pythonize(py, &self.config).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The machine's name.
    #[getter]
    fn name(&self) -> String {
        self.config.name.clone()
    }

    fn __repr__(&self) -> String {
        format!("Machine({:?})", self.config.name)
    }
}
