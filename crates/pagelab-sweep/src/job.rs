//! A run to execute ([`Job`]), what one run does ([`run_one`]) and what it gave
//! ([`Outcome`]).

use crate::analysis::Analysis;
use pagelab_core::MachineConfig;
use std::path::{Path, PathBuf};

/// A run to execute.
pub struct Job {
    /// The run's place in the sweep.
    pub index: usize,
    pub trace: PathBuf,
    /// What the run computes ([`crate::analysis::Analysis::to_json`]).
    pub analysis: String,
    /// The normalised configuration: what every executor builds the machine from, so
    /// that a run is the same wherever it runs.
    pub config_toml: String,
    /// Further runs of the same trace and analysis, (index, configuration), that
    /// one pass gives with this one (`one_pass.rs`); only for an executor whose
    /// [`crate::Executor::one_pass`] says so.
    pub siblings: Vec<(usize, String)>,
}

impl Job {
    /// The job and its siblings as jobs of their own.
    pub fn separate(&self) -> Vec<Job> {
        let one = |index: usize, config_toml: &str| Job {
            index,
            trace: self.trace.clone(),
            analysis: self.analysis.clone(),
            config_toml: config_toml.to_string(),
            siblings: Vec::new(),
        };
        std::iter::once(one(self.index, &self.config_toml))
            .chain(self.siblings.iter().map(|(i, c)| one(*i, c)))
            .collect()
    }
}

/// A run executed: its report (JSON) and references simulated, or its error.
pub struct Outcome {
    pub index: usize,
    pub result: Result<(String, u64), String>,
    pub seconds: f64,
    /// Whether the run was made in one pass with others (`one_pass.rs`), its
    /// `seconds` a share of the pass's.
    pub shared: bool,
}

/// One run: the machine built from the configuration's TOML runs the analysis (its
/// JSON; empty: a simulation) over the trace; the result as JSON and the references
/// read, or the error as one line. A panic in the core (a bug) is caught and returned
/// as the run's error, so one run cannot take the sweep down, and the Ray path (whose
/// bindings catch it too) records the same.
pub fn run_one(
    trace_path: &Path,
    config_toml: &str,
    analysis: &str,
) -> Result<(String, u64), String> {
    std::panic::catch_unwind(|| {
        let analysis = Analysis::from_json(analysis)?;
        let config = MachineConfig::from_toml(config_toml, "config").map_err(|e| e.to_string())?;
        analysis.run(trace_path, &config)
    })
    .unwrap_or_else(|panic| Err(pagelab_core::internal_error(panic.as_ref())))
}
