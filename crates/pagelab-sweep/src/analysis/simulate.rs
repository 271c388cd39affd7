//! `pagelab simulate`: the machine's report of the trace.

use super::{json, words, Kind};
use pagelab_core::config::MachineConfig;
use pagelab_core::Machine;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A simulation: no options.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Simulate {}

impl Kind for Simulate {
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let mut machine = Machine::build(config).map_err(|e| e.to_string())?;
        let mut reader = crate::inputs::open_trace(trace)?;
        machine
            .run_trace(reader.as_mut(), trace, |_, _| {})
            .map_err(|e| e.to_string())?;
        let report = machine.report();
        Ok((json(&report)?, report.counts.references))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        words(&[
            "simulate",
            "--quiet",
            "--machine",
            machine,
            "--trace",
            trace,
        ])
    }
    fn stored_member(&self) -> Option<&'static str> {
        Some("report")
    }
}
