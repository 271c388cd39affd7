//! `pagetables compare` as the command line and Python run it: every page-table
//! structure over one trace or one synthetic layout, each lookup every reference (or,
//! behind a machine's TLB, every TLB reload), into the rows of
//! [`super::pagetables`].

use super::layout::Layout;
use super::pagetables::{self, Filter, Row};
use crate::trace::{self, TraceFormat};
use crate::MachineConfig;
use serde::Serialize;
use std::path::PathBuf;

/// What every structure looks up.
#[derive(Clone, Debug)]
pub enum Lookups {
    /// The references of a trace, up to `max_refs`.
    Trace {
        path: PathBuf,
        format: Option<TraceFormat>,
        max_refs: Option<u64>,
    },
    /// A synthetic layout (`Layout::NAMES`).
    Layout(String),
}

/// The comparison: what was looked up, and a row per structure.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// "trace PATH" or "layout NAME", and behind which TLB.
    pub source: String,
    pub structures: Vec<Row>,
}

/// Every structure over `lookups`; behind the TLB of `machine` (its name in the
/// source line) if one is given, where the machine's own structure is as it configures
/// it; `progress` as [`pagetables::compare_trace`] tells it.
pub fn compare(
    lookups: &Lookups,
    machine: Option<(&MachineConfig, &str)>,
    progress: impl FnMut(u64, u64),
) -> Result<Comparison, String> {
    let (filter, behind) = match machine {
        Some((config, name)) => (
            Some(Filter::of(config).map_err(|e| format!("{name}: {e}"))?),
            format!(", behind the TLB of {name}"),
        ),
        None => (None, String::new()),
    };
    let structures = filter
        .as_ref()
        .map_or_else(pagetables::default_structures, Filter::structures);
    let (source, rows) = match lookups {
        Lookups::Trace {
            path,
            format,
            max_refs,
        } => {
            let shown = path.display();
            let mut reader = trace::open(path, *format).map_err(|e| e.to_string())?;
            let rows = pagetables::compare_trace(
                &structures,
                reader.as_mut(),
                *max_refs,
                filter.as_ref(),
                progress,
            )
            .map_err(|e| format!("{shown}: {e}"))?;
            (format!("trace {shown}{behind}"), rows)
        }
        Lookups::Layout(name) => {
            let layout = Layout::parse(name).ok_or_else(|| {
                format!(
                    "layout: {name:?} is not one of {}",
                    Layout::NAMES.join(", ")
                )
            })?;
            let rows =
                pagetables::compare_workload(&structures, &layout.workload(), filter.as_ref())
                    .map_err(|e| e.to_string())?;
            (format!("layout {name}{behind}"), rows)
        }
    };
    Ok(Comparison {
        source,
        structures: rows,
    })
}
