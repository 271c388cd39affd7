//! `pagelab report results.db -o report.html`: one self-contained HTML page of a results
//! database, tables and figures. The figures are matplotlib's, so the page is drawn by
//! pagelab's Python package (`python -m pagelab.report`), the same code as
//! `pagelab.report(...)` in Python.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The results database (pagelab sweep -o).
    db: PathBuf,
    /// The HTML file, written whole or not at all.
    #[arg(short, long)]
    output: PathBuf,
    /// The page's title. Default: "pagelab: " and the database's name.
    #[arg(long)]
    title: Option<String>,
    /// The Python interpreter with pagelab's package, pandas and matplotlib. Default:
    /// $PAGELAB_PYTHON, else the repository's .venv, else python3.
    #[arg(long)]
    python: Option<String>,
}

pub fn run(args: &ReportArgs) -> Result<()> {
    // Said here, before Python starts: the database must exist, and the page is not
    // one of its inputs.
    pagelab_sweep::db::open_existing(&args.db)?;
    if crate::output::is_stdout(&args.output) {
        bail!("--output: name a file (the report is a whole page)");
    }
    crate::output::check(&args.output, "--output", &[args.db.as_path()])?;
    let python = crate::python::interpreter(args.python.as_deref());
    let mut command = Command::new(&python);
    command
        .args(["-m", "pagelab.report"])
        .arg(&args.db)
        .arg("-o")
        .arg(&args.output);
    if let Some(t) = &args.title {
        command.args(["--title", t]);
    }
    let status = command.status().with_context(|| {
        format!("cannot start {python} (name the interpreter with --python or $PAGELAB_PYTHON)")
    })?;
    if !status.success() {
        bail!(
            "{python} -m pagelab.report drew no report ({status}); it needs pagelab's Python package \
             with pandas and matplotlib (make python), or name the interpreter with --python"
        );
    }
    Ok(())
}
