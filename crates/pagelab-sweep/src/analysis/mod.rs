//! What a sweep's runs compute: a simulation (the default), or one of the analyses the
//! CLI has as its own command, each run being one trace (or synthetic workload or
//! layout) on one machine. A sweep file names it:
//!
//! ```toml
//! analysis = "contiguity"                          # or a table with its options:
//! analysis = { kind = "benefit", simulate = true }
//! ```
//!
//! Every kind is one file here, its options a serde struct implementing [`Kind`],
//! listed once in [`for_each_analysis!`](crate::for_each_analysis), from which
//! [`Analysis`], its names and the documentation's list are made (docs/EXTENDING.md).
//! Every kind returns its result as the JSON its command writes with `--json`, and
//! says which command that is ([`Kind::command`]), which the tests run beside it.

mod benefit;
mod contiguity;
mod pagetables;
mod reuse;
pub(crate) mod simulate;
mod translation;

pub use benefit::Benefit;
pub use contiguity::Contiguity;
pub use pagetables::Pagetables;
pub use reuse::Reuse;
pub use simulate::Simulate;
pub use translation::Translation;

use pagelab_core::analysis::warmup::Warmup;
use pagelab_core::config::MachineConfig;
use pagelab_core::trace::TraceReader;
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::inputs::layout;

/// Every kind of run: `"name" => Variant(Options)`, with its doc line (the
/// documentation's table of analyses is made from these).
#[macro_export]
macro_rules! for_each_analysis {
    ($m:ident) => {
        $m! {
            /// `simulate`: the machine's report. Options: `warmup` (the first
            /// references left out of the report: a number, or a share of each
            /// trace, `"10%"` or `0.1`).
            "simulate" => Simulate(Simulate),
            /// `pagetables compare`: every page-table structure. Options: `behind_tlb`
            /// (only the references that miss the machine's TLB), `max_refs`; a trace
            /// may be a layout, `"layout:dense"`, `"layout:compact"`,
            /// `"layout:sparse"` or `"layout:shared"`.
            "pagetables" => Pagetables(Pagetables),
            /// `analyze contiguity`: the entries that map the footprint by pages and
            /// by ranges, and the footprint the machine's frames leave coalescable.
            /// Options: `regions`.
            "contiguity" => Contiguity(Contiguity),
            /// `compare translation`: 4K, THP, 1G, a direct segment and RMM. Options:
            /// `regions`, `coalescing` (true adds mTHP 64K and PTE coalescing, as
            /// `--coalescing`).
            "translation" => Translation(Translation),
            /// `analyze benefit`: the page-size benefit analysis. Options: every
            /// option of the command, named as in Python: `page_sizes`, `budget`,
            /// `tlb_miss_cycles`, `page_fault_cycles`, `page_table_entries`,
            /// `seconds`, `clock_ghz`, `sample`, and `simulate` (the simulator's
            /// ranking beside).
            "benefit" => Benefit(Benefit),
            /// `analyze reuse`: reuse distances and LRU miss curves of the page
            /// stream; the machine is not used. Options: `page_sizes` (default
            /// `["4K"]`), `sample_rate` (SHARDS sampling; default exact), `warmup`
            /// (as simulate's).
            "reuse" => Reuse(Reuse),
        }
    };
}

/// One kind of run, as its options.
pub trait Kind {
    /// Check the options before any run; errors name `analysis.<field>`.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// Whether it reads a synthetic layout (`layout:NAME`) as its input.
    fn reads_layouts(&self) -> bool {
        false
    }
    /// One run: the result as JSON text and the references it read (for the rate).
    fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String>;
    /// The arguments of the `pagelab` command whose `--json` this run stores, for a
    /// trace on a preset (what the tests run beside the sweep; without `--json`).
    fn command(&self, trace: &str, machine: &str) -> Vec<String>;
    /// The member of the command's JSON the run stores; `None`: all of it (less where
    /// the trace is and how long the run took, which the database keeps its own way).
    fn stored_member(&self) -> Option<&'static str> {
        None
    }
}

macro_rules! make_analysis {
    ($($(#[doc = $doc:literal])* $name:literal => $variant:ident($ty:ident),)*) => {
        /// One kind of run and its options.
        #[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
        #[serde(tag = "kind")]
        pub enum Analysis {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant($ty),)*
        }

        impl Analysis {
            /// The kinds, as sweep files name them.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            pub fn name(&self) -> &'static str {
                match self {
                    $(Analysis::$variant(_) => $name,)*
                }
            }

            /// The kind's options.
            pub fn kind(&self) -> &dyn Kind {
                match self {
                    $(Analysis::$variant(k) => k,)*
                }
            }
        }
    };
}
for_each_analysis!(make_analysis);

impl Default for Analysis {
    fn default() -> Self {
        Analysis::Simulate(Simulate::default())
    }
}

impl Analysis {
    /// The kind named `name` with its default options.
    pub fn named(name: &str) -> Result<Analysis, String> {
        Analysis::from_toml(&toml::Value::String(name.into()))
    }

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
        analysis.kind().check()?;
        Ok(analysis)
    }

    /// The analysis as JSON text (empty for a simulation): part of a run's key, and
    /// what the Ray runner hands on.
    pub fn to_json(&self) -> String {
        match self {
            // Without options, as before there were any: the keys of runs stored
            // then stay theirs.
            Analysis::Simulate(s) if *s == Simulate::default() => String::new(),
            other => serde_json::to_string(other).unwrap_or_default(),
        }
    }

    /// The analysis from [`Analysis::to_json`]'s text.
    pub fn from_json(text: &str) -> Result<Analysis, String> {
        if text.trim().is_empty() {
            return Ok(Analysis::default());
        }
        serde_json::from_str(text).map_err(|e| format!("analysis: {e}"))
    }

    /// Whether a run of this kind can read `trace` (a layout only some kinds can).
    pub fn check_trace(&self, trace: &Path) -> Result<(), String> {
        match layout(trace) {
            None => Ok(()),
            Some(name) if self.kind().reads_layouts() => {
                match pagelab_core::analysis::layout::Layout::parse(name) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "{}: no such layout (layouts: {})",
                        trace.display(),
                        pagelab_core::analysis::layout::Layout::NAMES.join(", ")
                    )),
                }
            }
            Some(_) => Err(format!(
                "{}: a layout is an input of analysis \"pagetables\" only, not of \"{}\"",
                trace.display(),
                self.name()
            )),
        }
    }

    /// One run: the result as JSON text and the references it read (for the rate).
    pub fn run(&self, trace: &Path, config: &MachineConfig) -> Result<(String, u64), String> {
        self.kind().run(trace, config)
    }
}

/// The references a warm-up leaves out of a run on `trace` (a share counts them).
fn warmup_references(warmup: Option<Warmup>, trace: &Path) -> Result<u64, String> {
    let Some(w) = warmup else { return Ok(0) };
    w.references(|| {
        let mut reader = crate::inputs::open_trace(trace)?;
        pagelab_core::analysis::warmup::count_references(reader.as_mut()).map_err(|e| e.to_string())
    })
    .map_err(|e| format!("analysis.warmup: {e}"))
}

/// A warm-up as the command's `--warmup` arguments.
fn warmup_args(warmup: Option<Warmup>) -> Vec<String> {
    match warmup {
        None => Vec::new(),
        Some(Warmup::References(n)) => vec!["--warmup".into(), n.to_string()],
        Some(Warmup::Fraction(x)) => vec!["--warmup".into(), x.to_string()],
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

/// `pagelab` arguments from words.
fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAMES` is every kind the enum has: serde lists the variants in its error for
    /// an unknown kind, and each name reads back as the kind of that name.
    #[test]
    fn the_names_are_the_kinds() {
        let e = Analysis::named("nope").unwrap_err();
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
            let a = Analysis::named(n).unwrap();
            assert_eq!(a.name(), *n);
            assert_eq!(Analysis::from_json(&a.to_json()).unwrap(), a);
        }
    }
}
