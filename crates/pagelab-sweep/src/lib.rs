//! Sweeps of pagelab runs, one implementation for the command line and Python.
//!
//! A sweep file ([`spec`]) names traces ([`inputs`]) × configuration overrides and
//! what each run computes ([`analysis`]); it is expanded into runs; [`run`] runs the ones its
//! results database ([`db`]) lacks on an [`Executor`] — threads on the local cores
//! ([`Local`]) or tasks on a Ray cluster ([`Ray`]) — and commits each run the moment
//! it finishes, keyed by a hash of the trace's content, the normalised configuration
//! and pagelab's version. A sweep stopped at any moment and started again runs only
//! what is missing; results of another version are never taken for this one's; a run
//! that fails is recorded with its error and the others go on. [`export`] writes a
//! database's runs as one table (CSV or Parquet).

pub mod analysis;
pub mod db;
mod execute;
pub mod export;
mod hold;
pub mod inputs;
mod job;
pub mod one_pass;
pub mod progress;
mod ray;
mod run;
pub mod spec;

pub use analysis::Analysis;
pub use execute::{Executor, Local};
pub use inputs::{layout, open_trace, synthetic, LAYOUT, SYNTHETIC};
pub use job::{run_one, Job, Outcome};
pub use progress::TerminalProgress;
pub use ray::Ray;
pub use run::{keys, run, Observer, Summary};
pub use spec::{
    describe, expand, expand_observed, load, load_observed, parse, Run, Sweep, SweepFile,
};

/// pagelab's version and, when built from a git checkout, its commit
/// (`0.1.0+0123456789ab`): part of every run's key, so a change to the code never
/// reuses results of the code before it.
pub const VERSION: &str = env!("PAGELAB_BUILD");
