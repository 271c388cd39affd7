//! Sweeps: many runs of the simulator or of an analysis, traces × configuration
//! overrides, named by a sweep file ([`spec`]); what each run computes ([`analysis`]).

pub mod analysis;
pub mod spec;

pub use analysis::{layout, Analysis, LAYOUT};
pub use spec::{
    describe, expand, expand_observed, load, load_observed, open_trace, parse, synthetic, Run,
    Sweep, SweepFile, SYNTHETIC,
};
