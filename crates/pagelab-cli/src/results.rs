//! `pagelab results export results.db --csv F | --parquet F`: the runs of a results
//! database as one table (`pagelab_sweep::export`).

use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum ResultsCommand {
    /// Write the runs as one table: a row per run, a column per override key, the
    /// run's status, error and seconds, and every number of a simulation's report
    /// (per TLB level and page size: hits, misses, miss ratio, MPKI; walks, faults,
    /// cycles, overheads), sorted by trace and each key's value.
    Export {
        /// The results database.
        db: PathBuf,
        /// The CSV file ("-" for standard output).
        #[arg(long, required_unless_present = "parquet")]
        csv: Option<PathBuf>,
        /// The Parquet file.
        #[arg(long)]
        parquet: Option<PathBuf>,
        /// Two more columns: each run's configuration (TOML) and its whole result
        /// (JSON: a simulation's report, or an analysis's output).
        #[arg(long)]
        whole: bool,
    },
}

pub fn run(command: &ResultsCommand) -> Result<()> {
    let ResultsCommand::Export {
        db,
        csv,
        parquet,
        whole,
    } = command;
    if let (Some(c), Some(p)) = (csv, parquet) {
        if crate::output::is_stdout(c) && crate::output::is_stdout(p) || c == p {
            anyhow::bail!("--csv and --parquet name the same output");
        }
    }
    for (path, flag) in [(csv, "--csv"), (parquet, "--parquet")] {
        if let Some(p) = path {
            crate::output::check(p, flag, &[db.as_path()])?;
        }
    }
    let table = pagelab_sweep::export::table(db, *whole)?;
    if let Some(p) = csv {
        let bytes = pagelab_sweep::export::csv(&table)?;
        crate::output::write_bytes(p, &bytes)?;
    }
    if let Some(p) = parquet {
        let bytes = pagelab_sweep::export::parquet(&table)?;
        crate::output::write_bytes(p, &bytes)?;
    }
    Ok(())
}
