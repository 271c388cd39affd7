//! The FIFO `pagelab record` reads the recorder's stream from: made in a private
//! folder, opened when Valgrind opens it (or not, if Valgrind ends first), and the
//! folders of recordings that were killed cleaned up.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

/// A FIFO in a fresh private folder (created exclusively, mode 0700), removed with
/// the folder on drop.
pub struct Fifo {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Fifo {
    /// A FIFO in a private folder `pagelab-record-PID-XXXXXX` of the temporary
    /// directory, removed when dropped. A `pagelab record` killed outright cannot
    /// remove its folder: the next one removes the folders of processes that are gone.
    pub fn new() -> Result<Fifo> {
        remove_stale_folders();
        let dir = tempfile::Builder::new()
            .prefix(&format!("pagelab-record-{}-", std::process::id()))
            .tempdir()
            .context("cannot make a private folder for the recorder's FIFO")?;
        let path = dir.path().join("stream");
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .with_context(|| format!("{}: cannot make a FIFO", path.display()))?;
        Ok(Fifo { _dir: dir, path })
    }
}

/// Remove the FIFO folders of `pagelab record` processes that no longer run (ours, by
/// their owner; best effort).
fn remove_stale_folders() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let uid = nix::unistd::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("pagelab-record-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let ours = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        if ours && gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Open the FIFO for reading once Valgrind opens it for writing; if Valgrind exits
/// first (a bad option, a program that does not exist), say how it ended.
pub fn open_when_written(fifo: &Path, child: &mut Child) -> Result<File> {
    match open_unless_ended(fifo, child)? {
        Ok(file) => Ok(file),
        Err(status) => bail!(
            "valgrind ended ({}) before it started recording; see its messages above",
            describe(status)
        ),
    }
}

/// The FIFO opened for reading once a writer opens it, or how Valgrind ended first.
pub fn open_unless_ended(fifo: &Path, child: &mut Child) -> Result<Result<File, ExitStatus>> {
    let (tx, rx) = mpsc::channel();
    let path = fifo.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(File::open(&path));
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(file) => {
                return file
                    .map(Ok)
                    .with_context(|| format!("{}: cannot open", fifo.display()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(status) = child.try_wait()? {
                    // A writer that opened, wrote and ended since the last look.
                    if let Ok(file) = rx.try_recv() {
                        return file
                            .map(Ok)
                            .with_context(|| format!("{}: cannot open", fifo.display()));
                    }
                    // Release the opener thread (it waits for a writer), then report.
                    let _ = std::fs::OpenOptions::new().write(true).open(fifo);
                    return Ok(Err(status));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("the FIFO opener stopped"),
        }
    }
}

/// How a process ended, for a message.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}
