//! `pagelab pagetables compare`: every page-table structure over the trace or a
//! layout, behind the machine's TLB when `behind_tlb`.

use super::{json, words, Kind};
use crate::inputs::layout;
use pagelab_core::analysis::{layout::Layout, pagetables};
use pagelab_core::config::MachineConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pagetables {
    /// Look up only the references that miss the machine's TLB. Default false.
    #[serde(default)]
    pub behind_tlb: bool,
    /// Stop after this many references of the trace. Default: all.
    #[serde(default)]
    pub max_refs: Option<u64>,
}

impl Kind for Pagetables {
    fn reads_layouts(&self) -> bool {
        true
    }
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        let filter = match self.behind_tlb {
            true => Some(pagetables::Filter::of(config)?),
            false => None,
        };
        let structures = filter.as_ref().map_or_else(
            pagetables::default_structures,
            pagetables::Filter::structures,
        );
        let rows = match layout(trace) {
            Some(name) => {
                let layout = Layout::parse(name).ok_or("no such layout")?;
                pagetables::compare_workload(&structures, &layout.workload(), filter.as_ref())
            }
            None => {
                let mut reader = crate::inputs::open_trace(trace)?;
                pagetables::compare_trace(
                    &structures,
                    reader.as_mut(),
                    self.max_refs,
                    filter.as_ref(),
                    |_, _| {},
                )
            }
        }
        .map_err(|e| e.to_string())?;
        let refs = rows.first().map_or(0, |r| r.lookups);
        let value = serde_json::json!({ "structures": rows });
        Ok((json(&value)?, refs))
    }
    fn command(&self, trace: &str, machine: &str) -> Vec<String> {
        let mut args = words(&["pagetables", "compare", "--trace", trace]);
        if self.behind_tlb {
            args.extend(words(&["--machine", machine]));
        }
        if let Some(n) = self.max_refs {
            args.extend(["--max-refs".into(), n.to_string()]);
        }
        args
    }
}
