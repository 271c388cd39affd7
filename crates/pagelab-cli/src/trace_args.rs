//! The options `analyze contiguity` and `compare translation` share: one trace, the
//! regions eager paging allocates before it, and where the results go.

use anyhow::Result;
use pagelab_core::trace::{self, TraceReader};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct TraceRunArgs {
    /// The trace.
    #[arg(long)]
    pub trace: PathBuf,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    pub format: Option<String>,
    /// A region eager paging allocates before the trace starts, "0xSTART-0xEND" or
    /// "0xSTART+SIZE" (repeatable): for traces without allocation events.
    #[arg(long = "region", value_name = "SPAN")]
    pub regions: Vec<String>,
    /// Also write the results as JSON to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write the results as CSV to this file ("-" for standard output, instead of the table).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

impl TraceRunArgs {
    /// Check, before the run, that the outputs can be written and overwrite no input
    /// (the trace, the machine's `config` file).
    pub fn check_outputs(&self, config: Option<&Path>) -> Result<()> {
        let mut inputs: Vec<&Path> = vec![&self.trace];
        inputs.extend(config);
        for (path, what) in [(&self.json, "--json"), (&self.csv, "--csv")] {
            if let Some(p) = path {
                crate::output::check(p, what, &inputs)?;
            }
        }
        Ok(())
    }

    /// A reader of the trace, from its start.
    pub fn open(&self) -> Result<Box<dyn TraceReader>> {
        let format = crate::parse_format(&self.format)?;
        Ok(trace::open(&self.trace, format)?)
    }
}
