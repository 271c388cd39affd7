//! What a sweep's runs compute: a simulation (the default), or one of the analyses the
//! CLI has as its own command, each run being one trace (or synthetic workload or
//! layout) on one machine. A sweep file names it:
//!
//! ```toml
//! analysis = "contiguity"                          # or a table with its options:
//! analysis = { kind = "benefit", simulate = true }
//! ```
//!
//! Every kind returns its result as the JSON its command writes with `--json`.

use pagelab_core::analysis::{benefit, contiguity, layout::Layout, pagetables, reuse, translation};
use pagelab_core::config::MachineConfig;
use pagelab_core::trace::TraceReader;
use pagelab_core::Machine;
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::inputs::layout;

/// One kind of run and its options.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Analysis {
    /// `pagelab simulate`: the machine's report.
    #[default]
    Simulate,
    /// `pagelab pagetables compare`: every page-table structure over the trace or a
    /// layout, behind the machine's TLB when `behind_tlb`.
    Pagetables {
        #[serde(default)]
        behind_tlb: bool,
        #[serde(default)]
        max_refs: Option<u64>,
    },
    /// `pagelab analyze contiguity`: entries to map the footprint by pages and ranges.
    Contiguity {
        #[serde(default)]
        regions: Vec<String>,
    },
    /// `pagelab compare translation`: 4K, THP, 1G, direct segment and RMM.
    Translation {
        #[serde(default)]
        regions: Vec<String>,
    },
    /// `pagelab analyze benefit`: the page-size benefit analysis with every option
    /// its command has (`benefit::Request`), the simulator's ranking beside it when
    /// `simulate`.
    Benefit(benefit::Request),
    /// `pagelab analyze reuse`: exact (or, with `sample_rate`, sampled) reuse
    /// distances of the page stream at each of `page_sizes` (default 4K), and the
    /// misses of a fully associative LRU TLB of every size. The machine is not used.
    Reuse {
        #[serde(default)]
        page_sizes: Vec<String>,
        #[serde(default)]
        sample_rate: Option<f64>,
    },
}

impl Analysis {
    /// The kinds, as sweep files name them.
    pub const NAMES: [&'static str; 6] = [
        "simulate",
        "pagetables",
        "contiguity",
        "translation",
        "benefit",
        "reuse",
    ];

    /// An analysis as a sweep file gives it: a name, or a table with `kind`.
    pub fn from_toml(value: &toml::Value) -> Result<Analysis, String> {
        let table = match value {
            toml::Value::String(name) => {
                let mut t = toml::Table::new();
                t.insert("kind".into(), toml::Value::String(name.clone()));
                toml::Value::Table(t)
            }
            other => other.clone(),
        };
        let analysis: Analysis = table.try_into().map_err(|e: toml::de::Error| {
            let m = e.message().trim().replace('\n', " ");
            format!("analysis: {m} (kinds: {})", Analysis::NAMES.join(", "))
        })?;
        match &analysis {
            Analysis::Benefit(request) => {
                request.options(Vec::new(), |f| format!("analysis.{f}"))?;
            }
            Analysis::Reuse {
                page_sizes,
                sample_rate,
            } => {
                let sizes = sizes(page_sizes)?;
                if let Some(r) = sample_rate {
                    reuse::ReusePass::sampled(&sizes, *r)
                        .map_err(|e| format!("analysis.sample_rate: {e}"))?;
                }
            }
            _ => {}
        }
        Ok(analysis)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Analysis::Simulate => "simulate",
            Analysis::Pagetables { .. } => "pagetables",
            Analysis::Contiguity { .. } => "contiguity",
            Analysis::Translation { .. } => "translation",
            Analysis::Benefit(_) => "benefit",
            Analysis::Reuse { .. } => "reuse",
        }
    }

    /// The analysis as JSON text (empty for a simulation): part of a run's key, and
    /// what the Ray runner hands on.
    pub fn to_json(&self) -> String {
        match self {
            Analysis::Simulate => String::new(),
            other => serde_json::to_string(other).unwrap_or_default(),
        }
    }

    /// The analysis from [`Analysis::to_json`]'s text.
    pub fn from_json(text: &str) -> Result<Analysis, String> {
        if text.trim().is_empty() {
            return Ok(Analysis::Simulate);
        }
        serde_json::from_str(text).map_err(|e| format!("analysis: {e}"))
    }

    /// Whether a run of this kind can read `trace` (a layout only page tables can).
    pub fn check_trace(&self, trace: &Path) -> Result<(), String> {
        match (layout(trace), self) {
            (None, _) => Ok(()),
            (Some(name), Analysis::Pagetables { .. }) => match Layout::parse(name) {
                Some(_) => Ok(()),
                None => Err(format!(
                    "{}: no such layout (layouts: {})",
                    trace.display(),
                    Layout::NAMES.join(", ")
                )),
            },
            (Some(_), other) => Err(format!(
                "{}: a layout is an input of analysis \"pagetables\" only, not of \"{}\"",
                trace.display(),
                other.name()
            )),
        }
    }

    /// One run: the result as JSON text and the references it read (for the rate).
    pub fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        match self {
            Analysis::Simulate => {
                let mut machine = Machine::build(config).map_err(|e| e.to_string())?;
                let mut reader = crate::inputs::open_trace(trace)?;
                machine
                    .run_trace(reader.as_mut(), trace, |_, _| {})
                    .map_err(|e| e.to_string())?;
                let report = machine.report();
                Ok((json(&report)?, report.counts.references))
            }
            Analysis::Pagetables {
                behind_tlb,
                max_refs,
            } => {
                let filter = match behind_tlb {
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
                        pagetables::compare_workload(
                            &structures,
                            &layout.workload(),
                            filter.as_ref(),
                        )
                    }
                    None => {
                        let mut reader = crate::inputs::open_trace(trace)?;
                        pagetables::compare_trace(
                            &structures,
                            reader.as_mut(),
                            *max_refs,
                            filter.as_ref(),
                        )
                    }
                }
                .map_err(|e| e.to_string())?;
                let refs = rows.first().map_or(0, |r| r.lookups);
                let value = serde_json::json!({ "structures": rows });
                Ok((json(&value)?, refs))
            }
            Analysis::Contiguity { regions } => {
                let mut reader = crate::inputs::open_trace(trace)?;
                let mut refs = 0;
                let result =
                    contiguity::analyze_with(config, regions, reader.as_mut(), trace, |n, _| {
                        refs += n
                    })
                    .map_err(|e| e.to_string())?;
                Ok((json(&result)?, refs))
            }
            Analysis::Translation { regions } => {
                let result =
                    translation::compare(config, regions, || reopen(trace), trace, |_, _, _| {})
                        .map_err(|e| e.to_string())?;
                let refs = result.schemes.iter().map(|r| r.references).sum();
                Ok((json(&result)?, refs))
            }
            Analysis::Benefit(request) => {
                let options = request.options(Vec::new(), |f| format!("analysis.{f}"))?;
                let mut reader = crate::inputs::open_trace(trace)?;
                let result =
                    benefit::analyze_trace(reader.as_mut(), trace, config, &options, |_, _| {})
                        .map_err(|e| e.to_string())?;
                let validation = match request.simulate {
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
                value["validation"] =
                    serde_json::to_value(&validation).map_err(|e| e.to_string())?;
                Ok((json(&value)?, result.references))
            }
            Analysis::Reuse {
                page_sizes,
                sample_rate,
            } => {
                let mut sizes = sizes(page_sizes)?;
                if sizes.is_empty() {
                    sizes.push(pagelab_core::PageSize::K4);
                }
                let mut reader = crate::inputs::open_trace(trace)?;
                let result =
                    reuse::analyze_trace(reader.as_mut(), trace, &sizes, *sample_rate, |_, _| {})
                        .map_err(|e| e.to_string())?;
                Ok((json(&result)?, result.references))
            }
        }
    }
}

/// The page sizes an analysis names, each once, in order.
fn sizes(names: &[String]) -> Result<Vec<pagelab_core::PageSize>, String> {
    let mut sizes = Vec::new();
    for s in names {
        let size = pagelab_core::PageSize::parse(s)
            .map_err(|e| format!("analysis.page_sizes: {s:?}: {e}"))?;
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    Ok(sizes)
}

/// A result as JSON text; a failure (a bug) is the run's error.
fn json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// The trace opened again from its start, for the analyses that read it once per
/// configuration.
fn reopen(trace: &Path) -> Result<Box<dyn TraceReader + Send>, pagelab_core::trace::TraceError> {
    crate::inputs::open_trace(trace).map_err(|e| {
        pagelab_core::trace::TraceError::new(trace, pagelab_core::trace::Location::File, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAMES` is every kind the enum has: serde lists the variants in its error for
    /// an unknown kind, and each name reads back as the kind of that name.
    #[test]
    fn the_names_are_the_kinds() {
        let e = Analysis::from_toml(&toml::Value::String("nope".into())).unwrap_err();
        let listed: Vec<&str> = e
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("{e}"))
            .split(" (kinds")
            .next()
            .unwrap()
            .split(", ")
            .map(|n| n.trim_matches('`'))
            .collect();
        assert_eq!(listed, Analysis::NAMES, "{e}");
        for n in Analysis::NAMES {
            assert_eq!(
                Analysis::from_toml(&toml::Value::String(n.into()))
                    .unwrap()
                    .name(),
                n
            );
        }
    }
}
