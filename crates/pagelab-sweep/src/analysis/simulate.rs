//! `pagelab simulate`: the machine's report of the trace.

use super::{json, warmup_args, warmup_references, words, Kind};
use pagelab_core::analysis::warmup::Warmup;
use pagelab_core::config::MachineConfig;
use pagelab_core::Machine;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A simulation; its one option, `warmup`, leaves the first references out of the
/// report (references, or a share of each trace: `5000000`, `"10%"`, `0.1`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Simulate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
}

impl Kind for Simulate {
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let mut machine = Machine::build(config).map_err(|e| e.to_string())?;
        machine.set_warmup(warmup_references(self.warmup, trace)?);
        let mut reader = crate::inputs::open_trace(trace)?;
        machine
            .run_trace(reader.as_mut(), trace, |_, _| {})
            .map_err(|e| e.to_string())?;
        let report = machine.report();
        Ok((json(&report)?, machine.counts().references))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        let mut args = words(&[
            "simulate",
            "--quiet",
            "--machine",
            machine,
            "--trace",
            trace,
        ]);
        args.extend(warmup_args(self.warmup));
        args
    }
    fn stored_member(&self) -> Option<&'static str> {
        Some("report")
    }
}
