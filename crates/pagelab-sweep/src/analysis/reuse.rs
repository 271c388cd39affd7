//! `pagelab analyze reuse`: exact (or, with `sample_rate`, sampled) reuse distances of
//! the page stream at each of `page_sizes` (default 4K), and the misses of a fully
//! associative LRU TLB of every size. The machine is not used.

use super::{json, sizes, warmup_args, warmup_references, words, Kind};
use pagelab_core::analysis::reuse;
use pagelab_core::analysis::warmup::Warmup;
use pagelab_core::config::MachineConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reuse {
    /// Page sizes ("4K", "2M", ...). Default 4K.
    #[serde(default)]
    pub page_sizes: Vec<String>,
    /// Analyse this share of the pages (spatial hashing). Default: all (exact).
    #[serde(default)]
    pub sample_rate: Option<f64>,
    /// References read before those counted: a number, or a share of the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
}

impl Kind for Reuse {
    fn check(&self) -> Result<(), String> {
        let sizes = sizes(&self.page_sizes)?;
        if let Some(r) = self.sample_rate {
            reuse::ReusePass::sampled(&sizes, r)
                .map_err(|e| format!("analysis.sample_rate: {e}"))?;
        }
        Ok(())
    }
    fn run(&self, trace: &Path, _config: &MachineConfig) -> Result<(String, u64), String> {
        let mut sizes = sizes(&self.page_sizes)?;
        if sizes.is_empty() {
            sizes.push(pagelab_core::PageSize::K4);
        }
        let warmup = warmup_references(self.warmup, trace)?;
        let mut reader = crate::inputs::open_trace(trace)?;
        let result = reuse::analyze_trace(
            reader.as_mut(),
            trace,
            &sizes,
            self.sample_rate,
            warmup,
            |_, _| {},
        )
        .map_err(|e| e.to_string())?;
        Ok((json(&result)?, result.references))
    }
    fn command(&self, trace: &str, _machine: &str) -> Vec<String> {
        let mut args = words(&["analyze", "reuse", "--quiet", "--trace", trace]);
        if !self.page_sizes.is_empty() {
            args.extend(["--page-size".into(), self.page_sizes.join(",")]);
        }
        if let Some(r) = self.sample_rate {
            args.extend(["--sample-rate".into(), r.to_string()]);
        }
        args.extend(warmup_args(self.warmup));
        args
    }
}
