//! `pagelab analyze contiguity`: the entries that map the footprint by pages of each
//! size and by ranges.

use super::{json, words, Kind};
use pagelab_core::analysis::contiguity;
use pagelab_core::config::MachineConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Contiguity {
    /// Regions eager paging allocates before the trace starts ("0xSTART-0xEND" or
    /// "0xSTART+SIZE"), as the command's `--region`. Default none.
    #[serde(default)]
    pub regions: Vec<String>,
}

impl Kind for Contiguity {
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let mut reader = crate::inputs::open_trace(trace)?;
        let mut refs = 0;
        let result =
            contiguity::analyze_with(config, &self.regions, reader.as_mut(), trace, |n, _| {
                refs += n
            })
            .map_err(|e| e.to_string())?;
        Ok((json(&result)?, refs))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        let mut args = words(&["analyze", "contiguity", "--quiet", "--machine", machine]);
        args.extend(words(&["--trace", trace]));
        for r in &self.regions {
            args.extend(["--region".into(), r.clone()]);
        }
        args
    }
}
