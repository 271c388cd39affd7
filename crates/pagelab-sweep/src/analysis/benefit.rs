//! `pagelab analyze benefit`: the page-size benefit analysis with every option its
//! command has (`benefit::Request`), the simulator's ranking beside it when
//! `simulate`.

use super::{json, reopen, words, Kind};
use pagelab_core::analysis::benefit;
use pagelab_core::config::MachineConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The command's options, as the CLI and Python take them.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Benefit(pub benefit::Request);

impl Benefit {
    fn options(&self) -> Result<benefit::Options, String> {
        self.0.options(Vec::new(), |f| format!("analysis.{f}"))
    }
}

impl Kind for Benefit {
    fn check(&self) -> Result<(), String> {
        self.options().map(|_| ())
    }
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let options = self.options()?;
        let mut reader = crate::inputs::open_trace(trace)?;
        let result = benefit::analyze_trace(reader.as_mut(), trace, config, &options, |_, _| {})
            .map_err(|e| e.to_string())?;
        let validation = match self.0.simulate {
            true => Some(
                benefit::simulate::validate(
                    &result,
                    config,
                    &options.rules,
                    || reopen(trace),
                    trace,
                    |_, _, _| {},
                )
                .map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        let mut value = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        value["validation"] = serde_json::to_value(&validation).map_err(|e| e.to_string())?;
        Ok((json(&value)?, result.references))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        let r = &self.0;
        let mut args = words(&["analyze", "benefit", "--quiet", "--machine", machine]);
        args.extend(words(&["--trace", trace]));
        let mut option = |flag: &str, value: Option<String>| {
            if let Some(v) = value {
                args.extend([flag.to_string(), v]);
            }
        };
        option(
            "--page-size",
            (!r.page_sizes.is_empty()).then(|| r.page_sizes.join(",")),
        );
        option("--budget", r.budget.clone());
        option(
            "--tlb-miss-cycles",
            r.tlb_miss_cycles.map(|c| c.to_string()),
        );
        option(
            "--page-fault-cycles",
            r.page_fault_cycles.map(|c| c.to_string()),
        );
        option(
            "--page-table-entries",
            r.page_table_entries.map(|n| n.to_string()),
        );
        option("--seconds", r.seconds.map(|s| s.to_string()));
        option("--clock-ghz", Some(r.clock_ghz.to_string()));
        option("--sample", Some(r.sample.to_string()));
        if r.simulate {
            args.push("--simulate".into());
        }
        args
    }
}
