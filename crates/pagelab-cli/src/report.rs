//! `pagelab report results.db -o report.html`: one self-contained HTML page of a results
//! database, tables and figures. The figures are matplotlib's, so the page is drawn by
//! pagelab's Python package (`python -m pagelab.report`), the same code as
//! `pagelab.report(...)` in Python.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The results database (pagelab sweep -o), or the JSON of pagelab advise --json.
    db: PathBuf,
    /// The HTML file, written whole or not at all.
    #[arg(short, long)]
    output: PathBuf,
    /// The page's title. Default: "pagelab: " and the database's name.
    #[arg(long)]
    title: Option<String>,
    /// Count zero-fill page faults and eager paging (the cost of first touching
    /// memory) in the figures of overhead and speedup. Default: without them.
    #[arg(long)]
    with_faults: bool,
    /// The Python interpreter with pagelab's package, pandas and matplotlib. Default:
    /// $PAGELAB_PYTHON, else the repository's .venv, else python3.
    #[arg(long)]
    python: Option<String>,
}

pub fn run(args: &ReportArgs) -> Result<()> {
    draw(
        &args.db,
        &args.output,
        args.title.as_deref(),
        args.python.as_deref(),
        args.with_faults,
    )
}

/// Draw the report of `db` into `output` with pagelab's Python package.
pub fn draw(
    db: &Path,
    output: &Path,
    title: Option<&str>,
    python: Option<&str>,
    with_faults: bool,
) -> Result<()> {
    // Said here, before Python starts: the database must exist, and the page is not
    // one of its inputs. (A JSON file, an advise result, Python reads and checks.)
    let json = std::fs::File::open(db)
        .and_then(|mut f| {
            let mut first = [0u8; 1];
            std::io::Read::read(&mut f, &mut first).map(|n| n == 1 && first[0] == b'{')
        })
        .unwrap_or(false);
    if !json {
        pagelab_sweep::db::open_existing(db)?;
    }
    if crate::output::is_stdout(output) {
        bail!("--output: name a file (the report is a whole page)");
    }
    crate::output::check(output, "--output", &[db])?;
    let python = crate::python::interpreter(python);
    let mut command = Command::new(&python);
    command
        // Not `-m pagelab.report`: the package imports the module itself, which runpy
        // would warn of.
        .args([
            "-c",
            "import sys; from pagelab.report import main; sys.exit(main())",
        ])
        .arg(db)
        .arg("-o")
        .arg(output);
    if let Some(t) = title {
        command.args(["--title", t]);
    }
    if with_faults {
        command.arg("--with-faults");
    }
    let out = command
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| {
            format!("cannot start {python} (name the interpreter with --python or $PAGELAB_PYTHON)")
        })?;
    let said = String::from_utf8_lossy(&out.stderr);
    // Status 2: the input was refused, and the report module said why on one line.
    if out.status.code() == Some(2) {
        let why = said.trim().lines().last().unwrap_or_default();
        bail!("{}", why.strip_prefix("pagelab report: ").unwrap_or(why));
    }
    eprint!("{said}");
    if !out.status.success() {
        bail!(
            "{python} -m pagelab.report drew no report ({}); it needs pagelab's Python package \
             with pandas and matplotlib (make python), or name the interpreter with --python",
            out.status
        );
    }
    Ok(())
}
