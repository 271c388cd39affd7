//! `pagelab sweep FILE -o results.db [--ray ADDRESS]`: every run of a sweep file on
//! the local cores or a Ray cluster, each committed to the results database the
//! moment it finishes (`pagelab_sweep`): a sweep stopped at any moment and started
//! again runs only what the database lacks.

use anyhow::Result;
use pagelab_sweep::{Executor, Local, Ray, TerminalProgress};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The sweep file (TOML: traces, machine or config, [grid], [zip]).
    file: PathBuf,
    /// The results database (SQLite), made if missing; the runs it holds are not run
    /// again.
    #[arg(short, long)]
    output: PathBuf,
    /// Runs at once on this machine. Default: the cores this process may use.
    #[arg(long, short = 'j', conflicts_with = "ray")]
    jobs: Option<usize>,
    /// Run on the Ray cluster at this address ("auto", HOST:PORT or ray://HOST:PORT)
    /// instead: traces are reached by path, so the nodes must share this file system,
    /// and have pagelab's Python package and Ray installed.
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// The Python interpreter that reaches Ray (with pagelab's package). Default:
    /// $PAGELAB_PYTHON, else the repository's .venv, else python3.
    #[arg(long, requires = "ray")]
    python: Option<String>,
    /// Run every configuration on its own. By default, simulations of a trace that
    /// differ only in the sets and ways of the last TLB level run in one pass (the
    /// same results, read off one run of the levels below; see docs/performance.md).
    #[arg(long, conflicts_with = "ray")]
    separate: bool,
    /// No progress on standard error.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: &SweepArgs) -> Result<()> {
    if args.output.as_os_str() == "-" {
        anyhow::bail!(
            "-o -: a results database is a file (SQLite); standard output cannot hold one"
        );
    }
    let mut checking = pagelab_sweep::progress::checking(args.quiet);
    let spec =
        pagelab_sweep::load_observed(&args.file, &mut checking).map_err(anyhow::Error::msg)?;
    let executor: Box<dyn Executor> = match &args.ray {
        Some(address) => Box::new(Ray {
            address: address.clone(),
            python: crate::python::interpreter(args.python.as_deref()),
        }),
        None => Box::new(Local {
            jobs: args.jobs,
            separate: args.separate,
        }),
    };
    let db = args.output.display().to_string();
    let mut progress = TerminalProgress::new(&db, args.quiet);
    let s = pagelab_sweep::run(&spec, &args.output, executor.as_ref(), &mut progress)?;
    if s.failed > 0 {
        anyhow::bail!(
            "{} of {} runs failed (their errors are in {db}: pagelab results export)",
            s.failed,
            s.ran
        );
    }
    Ok(())
}
