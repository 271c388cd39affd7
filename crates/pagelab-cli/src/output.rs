//! Where commands write their results: `-` is standard output everywhere; a file is
//! written whole or not at all. Before a run, every output is checked: not the same
//! file as an input, not a directory, in a directory we can create files in. The file
//! is written through `pagelab_core::whole_file`: an error, a full disk or an
//! interrupt leaves the target as it was.

use anyhow::{bail, Result};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Whether `path` means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The (device, inode) of an existing file.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

use pagelab_core::whole_file::directory;

/// Check, before a run, that `output` can be written and is none of `inputs` (the
/// files the run reads: traces, configurations, a recorded program). `what` names the
/// option in errors ("--json").
pub fn check(output: &Path, what: &str, inputs: &[&Path]) -> Result<()> {
    if is_stdout(output) {
        return Ok(());
    }
    let shown = output.display();
    if let Some(out) = identity(output) {
        if let Some(input) = inputs.iter().find(|i| identity(i) == Some(out)) {
            bail!(
                "{shown}: {what} would overwrite {}, an input of this run",
                input.display()
            );
        }
    }
    if output.is_dir() {
        bail!("{shown}: {what} names a directory, not a file");
    }
    let dir = directory(output);
    if !dir.is_dir() {
        bail!("{shown}: {what}: there is no directory {}", dir.display());
    }
    // A file created and removed at once: the one sure test that we may write there.
    if let Err(e) = tempfile::Builder::new()
        .prefix(".pagelab-check-")
        .tempfile_in(&dir)
    {
        bail!(
            "{shown}: {what} cannot be written in {}: {}",
            dir.display(),
            std::io::Error::from(e.kind())
        );
    }
    Ok(())
}

pub use pagelab_core::whole_file::Pending;

/// Write `text` to `path` whole (standard output for `-`).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    write_bytes(path, text.as_bytes())
}

/// Write `bytes` to `path` whole (standard output for `-`).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    if is_stdout(path) {
        std::io::stdout().write_all(bytes)?;
        return Ok(());
    }
    Ok(pagelab_core::whole_file::write(path, bytes)?)
}

/// Write a command's results: each text to its file where one is given (`--json F`,
/// `--csv F`); the table to standard output unless one of them is standard output.
pub fn emit(outputs: &[(Option<&PathBuf>, String)], table: impl FnOnce() -> String) -> Result<()> {
    let mut stdout_taken = false;
    for (path, text) in outputs {
        if let Some(p) = path {
            write_text(p, text)?;
            stdout_taken |= is_stdout(p);
        }
    }
    if !stdout_taken {
        std::io::stdout().write_all(table().as_bytes())?;
    }
    Ok(())
}
