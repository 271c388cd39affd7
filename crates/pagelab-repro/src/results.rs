//! The runs of a repro's experiments, read back from its database for the papers'
//! measures: each run by its trace's short name and its overrides.

use serde_json::Value;
use std::collections::BTreeMap;

/// What starts the error of a measure whose run is missing or failed: its claim is
/// *not run*, not compared ([`crate::verdict::Measured::from_error`]).
pub const NOT_RUN: &str = "not run: ";

/// One run of an experiment.
#[derive(Clone, Debug)]
pub struct Run {
    /// The trace's file name, a synthetic workload's description
    /// (`column-walk:iterations=64`) or a layout's name.
    pub trace: String,
    /// The overrides, each value as text ([`text`]).
    pub overrides: BTreeMap<String, String>,
    /// The result (a report, or an analysis's output), or the run's error.
    pub result: Result<Value, String>,
}

/// Every experiment's runs.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub experiments: BTreeMap<String, Vec<Run>>,
}

/// A configuration value as text: a string bare, a whole float as an integer.
pub fn text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => other.to_string(),
    }
}

impl Run {
    /// Whether every `(key, value)` is one of this run's overrides.
    pub fn has(&self, overrides: &[(&str, &str)]) -> bool {
        overrides
            .iter()
            .all(|(k, v)| self.overrides.get(*k).map(String::as_str) == Some(*v))
    }
}

impl Results {
    /// The runs of `experiment` (none if it has none).
    pub fn runs(&self, experiment: &str) -> &[Run] {
        self.experiments.get(experiment).map_or(&[], Vec::as_slice)
    }

    /// The result of the run of `experiment` over `trace` with `overrides`: Err says
    /// which run is missing or failed, for the claim that needed it.
    pub fn get(
        &self,
        experiment: &str,
        trace: &str,
        overrides: &[(&str, &str)],
    ) -> Result<&Value, String> {
        let run = self
            .runs(experiment)
            .iter()
            .find(|r| r.trace == trace && r.has(overrides));
        let what = || {
            let o: Vec<String> = overrides
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            format!("{experiment}: {trace} with {}", o.join(", "))
        };
        match run {
            None => Err(format!("{NOT_RUN}no run of {}", what())),
            Some(Run { result: Err(e), .. }) => {
                Err(format!("{NOT_RUN}the run of {} failed: {e}", what()))
            }
            Some(Run { result: Ok(v), .. }) => Ok(v),
        }
    }

    /// The traces of `experiment`, in their first run's order.
    pub fn traces(&self, experiment: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.runs(experiment) {
            if !out.contains(&r.trace) {
                out.push(r.trace.clone());
            }
        }
        out
    }
}

/// A number at a JSON path of a result.
pub fn at(v: &Value, path: &[&str]) -> Result<f64, String> {
    path.iter()
        .try_fold(v, |v, p| v.get(*p))
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("the result has no number at {}", path.join(".")))
}

/// The element of the array `v[list]` whose `key` is `name` (a report's level, a
/// comparison's scheme, an analysis's mapping).
pub fn named<'a>(v: &'a Value, list: &str, key: &str, name: &str) -> Result<&'a Value, String> {
    v.get(list)
        .and_then(Value::as_array)
        .and_then(|items| {
            items
                .iter()
                .find(|x| x.get(key).and_then(Value::as_str) == Some(name))
        })
        .ok_or_else(|| format!("the result's {list} have no {name}"))
}

/// A simulation's total cycles: every component of its report's `cycles`.
pub fn total_cycles(report: &Value) -> Result<f64, String> {
    let cycles = report
        .get("cycles")
        .and_then(Value::as_object)
        .ok_or("the result is not a simulation's report (no cycles)")?;
    Ok(cycles.values().filter_map(Value::as_f64).sum())
}
