//! `pagelab.Machine`: a machine configuration held by the core, built from a preset,
//! TOML or a Python dict (through serde: `pythonize`), changed by dotted-key overrides,
//! and given back as TOML or a dict. Python values never become TOML text by hand.

use pagelab_core::MachineConfig;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A Python value as a TOML value, through serde (`TypeError` for what TOML cannot
/// hold: None, non-string keys, integers beyond 64 bits).
pub fn toml_value(value: &Bound<'_, PyAny>, what: &str) -> PyResult<toml::Value> {
    let refuse = |at: String, e: String| {
        let at = if at.is_empty() { "config".into() } else { at };
        PyTypeError::new_err(format!(
            "{at}: {e} (a configuration holds str, int, float, bool, lists and dicts; leave a key out for its default)"
        ))
    };
    // Looked for first: a set would pass as a list, in no fixed order.
    if let Some((at, leaf)) = culprit(value, what.to_string()) {
        let kind = leaf
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(refuse(at, format!("{kind} has no TOML form")));
    }
    pythonize::depythonize::<toml::Value>(value)
        .map_err(|e| refuse(what.to_string(), e.to_string()))
}

/// The first value under `value` that has no TOML form, with its dotted path (or the
/// key that is not a string).
fn culprit<'py>(value: &Bound<'py, PyAny>, at: String) -> Option<(String, Bound<'py, PyAny>)> {
    use pyo3::types::{PyList, PyTuple};
    let join = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    if let Ok(d) = value.downcast::<PyDict>() {
        for (k, v) in d.iter() {
            let Ok(key) = k.downcast::<PyString>() else {
                return Some((join(&k.to_string()), k));
            };
            if let Some(found) = culprit(&v, join(&key.to_string())) {
                return Some(found);
            }
        }
        return None;
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        for (i, v) in value.iter().ok()?.flatten().enumerate() {
            if let Some(found) = culprit(&v, format!("{at}[{i}]")) {
                return Some(found);
            }
        }
        return None;
    }
    let unordered = value.is_instance_of::<pyo3::types::PySet>()
        || value.is_instance_of::<pyo3::types::PyFrozenSet>();
    (unordered || pythonize::depythonize::<toml::Value>(value).is_err())
        .then(|| (at, value.clone()))
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
        Ok(Machine { config })
    }

    /// From a TOML file.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Machine> {
        let config = MachineConfig::load(&path).map_err(value_error)?;
        Ok(Machine { config })
    }

    /// From a dict of the configuration's fields (`variant_of` a preset included).
    #[staticmethod]
    #[pyo3(signature = (value, origin = "<config>"))]
    fn from_dict(value: &Bound<'_, PyAny>, origin: &str) -> PyResult<Machine> {
        let text = dict_to_toml(value)?;
        Self::from_toml(&text, origin)
    }

    /// This machine with dotted-key overrides: `{"tlb.levels.stlb.ways": 16}`.
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
        Ok(Machine { config })
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
