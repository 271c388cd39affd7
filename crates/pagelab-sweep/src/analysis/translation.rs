//! `pagelab compare translation`: the translation schemes (4K, THP, 1G, a direct
//! segment, RMM; with `coalescing`, mTHP 64K and PTE coalescing too) over the
//! trace.

use super::{json, reopen, words, Kind};
use pagelab_core::analysis::translation;
use pagelab_core::config::MachineConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Translation {
    /// Regions eager paging allocates before the trace starts, as the command's
    /// `--region`. Default none.
    #[serde(default)]
    pub regions: Vec<String>,
    /// The schemes whose TLB entries coalesce too, as the command's `--coalescing`.
    /// Default false.
    #[serde(default)]
    pub coalescing: bool,
}

impl Kind for Translation {
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let result = translation::compare_with(
            config,
            &self.regions,
            self.coalescing,
            || reopen(trace),
            trace,
            |_, _, _| {},
        )
        .map_err(|e| e.to_string())?;
        let refs = result.schemes.iter().map(|r| r.references).sum();
        Ok((json(&result)?, refs))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        let mut args = words(&["compare", "translation", "--quiet", "--machine", machine]);
        args.extend(words(&["--trace", trace]));
        for r in &self.regions {
            args.extend(["--region".into(), r.clone()]);
        }
        if self.coalescing {
            args.push("--coalescing".into());
        }
        args
    }
}
