//! Where commands write their results: `-` is standard output everywhere; a file is
//! written whole or not at all. Before a run, every output is checked: not the same
//! file as an input, not a directory, in a directory we can create files in. The file
//! is written to a temporary file created exclusively beside it (no symlink followed,
//! no name another process can guess), flushed to disk and renamed over the target
//! only when complete; an error, a full disk or an interrupt leaves the target as it
//! was.

use anyhow::{bail, Context, Result};
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

/// The directory a file `path` goes in.
fn directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

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

/// A file being written: a temporary file beside the target until [`Pending::commit`].
pub struct Pending {
    file: tempfile::NamedTempFile,
    target: PathBuf,
}

impl Pending {
    pub fn create(target: &Path) -> Result<Pending> {
        let dir = directory(target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .tempfile_in(&dir)
            .with_context(|| {
                format!(
                    "{}: cannot create a file in {}",
                    target.display(),
                    dir.display()
                )
            })?;
        Ok(Pending {
            file,
            target: target.to_path_buf(),
        })
    }

    /// Whether nothing has been written (an error before the first byte: nothing to
    /// keep).
    pub fn is_empty(&self) -> bool {
        self.file.as_file().metadata().is_ok_and(|m| m.len() == 0)
    }

    /// The open file, to write into.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.file.as_file_mut()
    }

    /// Flush the file to disk and put it in the target's place, with the permissions
    /// a newly created file gets (or the target's, if it existed).
    pub fn commit(self) -> Result<()> {
        let shown = self.target.display().to_string();
        let file = self.file.as_file();
        file.sync_all()
            .with_context(|| format!("{shown}: cannot write"))?;
        let mode = match std::fs::metadata(&self.target) {
            Ok(m) => m.mode() & 0o7777,
            Err(_) => 0o666 & !umask(),
        };
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("{shown}: cannot set permissions"))?;
        self.file
            .persist(&self.target)
            .map_err(|e| e.error)
            .with_context(|| format!("{shown}: cannot replace"))?;
        Ok(())
    }
}

impl Pending {
    /// Keep what was written under the temporary file's name (after an error, for
    /// `--salvage`); that name.
    pub fn keep(self) -> Result<PathBuf> {
        let (_, path) = self
            .file
            .keep()
            .map_err(|e| e.error)
            .context("cannot keep the partial file")?;
        Ok(path)
    }
}

/// The process's file-creation mask (read by setting it and setting it back).
fn umask() -> u32 {
    use nix::sys::stat::{umask, Mode};
    let old = umask(Mode::empty());
    umask(old);
    old.bits()
}

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
    let mut pending = Pending::create(path)?;
    pending
        .file()
        .write_all(bytes)
        .with_context(|| format!("{}: cannot write", path.display()))?;
    pending.commit()
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
