//! Sweeps: many runs of the simulator, traces × configuration overrides, named by a
//! sweep file ([`spec`]).

pub mod spec;

pub use spec::{
    describe, expand, load, open_trace, parse, synthetic, Run, Sweep, SweepFile, SYNTHETIC,
};
