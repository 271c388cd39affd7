//! Where runs execute: the [`Executor`] interface, what one run does ([`simulate`]),
//! and the local executor (threads on this machine's cores).

use crate::analysis::Analysis;
use anyhow::Result;
use pagelab_core::MachineConfig;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};

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
    /// [`Executor::one_pass`] says so.
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
}

/// Executes jobs, handing each outcome to `done` as it arrives (on the calling
/// thread). An error from `done` stops the executor and is returned.
pub trait Executor {
    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()>;

    /// Whether jobs may carry siblings: simulations of one trace that differ only in
    /// the last TLB level's geometry, run in one pass.
    fn one_pass(&self) -> bool {
        false
    }
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

/// Threads on this machine: `jobs` runs at once (default: the cores this process may
/// use); simulations that differ only in the last TLB level's geometry in one pass
/// unless `separate`.
pub struct Local {
    pub jobs: Option<usize>,
    pub separate: bool,
}

impl Executor for Local {
    fn one_pass(&self) -> bool {
        !self.separate
    }

    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()> {
        let threads = self
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, jobs.len().max(1));
        // Side by side on every core, no machine adds a thread of its own (until the
        // sweep ends).
        let alone = pagelab_core::machine::set_second_core_default(threads <= 1);
        let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
        let (tx, rx) = mpsc::channel::<Outcome>();
        let run = std::thread::scope(|s| {
            for _ in 0..threads {
                let (queue, tx) = (&queue, tx.clone());
                s.spawn(move || loop {
                    // The lock is released before the run (the guard ends with the
                    // closure); a poisoned queue would mean a bug here: stop too.
                    let Some(job) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                        break;
                    };
                    for outcome in crate::one_pass::run(&job) {
                        if tx.send(outcome).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for outcome in rx {
                if let Err(e) = done(outcome) {
                    // Workers stop at their next job.
                    if let Ok(mut q) = queue.lock() {
                        q.clear();
                    }
                    return Err(e);
                }
            }
            Ok(())
        });
        pagelab_core::machine::set_second_core_default(alone);
        run
    }
}
