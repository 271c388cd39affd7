//! Files written whole or not at all. The bytes go to a temporary file created
//! exclusively beside the target (no symlink followed, no name another process can
//! guess), flushed to disk and renamed over the target only when complete: an error, a
//! full disk or an interrupt leaves the target as it was. Every output of pagelab (the
//! command line's, the Python package's, a reproduction's verdicts) is written so.

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory a file `path` goes in.
pub fn directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `e` with `path` and what failed in its message, its kind kept.
fn failed(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
}

/// A file being written: a temporary file beside the target until [`Pending::commit`].
pub struct Pending {
    file: tempfile::NamedTempFile,
    target: PathBuf,
}

impl Pending {
    pub fn create(target: &Path) -> io::Result<Pending> {
        let dir = directory(target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .tempfile_in(&dir)
            .map_err(|e| {
                failed(
                    target,
                    &format!("cannot create a file in {}", dir.display()),
                    e,
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
    pub fn commit(self) -> io::Result<()> {
        let target = self.target;
        let file = self.file.as_file();
        file.sync_all()
            .map_err(|e| failed(&target, "cannot write", e))?;
        let mode = match std::fs::metadata(&target) {
            Ok(m) => m.mode() & 0o7777,
            Err(_) => 0o666 & !umask(),
        };
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| failed(&target, "cannot set permissions", e))?;
        self.file
            .persist(&target)
            .map_err(|e| failed(&target, "cannot replace", e.error))?;
        Ok(())
    }

    /// Keep what was written under the temporary file's name (after an error, for
    /// `--salvage`); that name.
    pub fn keep(self) -> io::Result<PathBuf> {
        let target = self.target;
        let (_, path) = self
            .file
            .keep()
            .map_err(|e| failed(&target, "cannot keep the partial file", e.error))?;
        Ok(path)
    }
}

/// The process's file-creation mask (read by setting it and setting it back).
fn umask() -> u32 {
    // SAFETY: umask has no memory effects; it is set back at once.
    let old = unsafe { libc::umask(0) };
    unsafe { libc::umask(old) };
    old as u32
}

/// Write `bytes` to `path` whole.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut pending = Pending::create(path)?;
    pending
        .file()
        .write_all(bytes)
        .map_err(|e| failed(path, "cannot write", e))?;
    pending.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_a_failed_write_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write(&path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        // Dropped before commit: the target keeps its bytes, no temporary file stays.
        let mut pending = Pending::create(&path).unwrap();
        pending
            .file()
            .write_all(b"second, never committed")
            .unwrap();
        drop(pending);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write(&path, b"third").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"third");
    }

    #[test]
    fn a_missing_folder_is_named() {
        let err = write(Path::new("/nonexistent-pagelab/x.txt"), b"x").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "/nonexistent-pagelab/x.txt: cannot create a file in /nonexistent-pagelab"
            ),
            "{err}"
        );
    }
}
