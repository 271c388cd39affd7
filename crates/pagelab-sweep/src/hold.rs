//! A sweep's hold on its results database: a shared advisory lock on the file
//! (`flock`, apart from SQLite's own locks) from before its first write to its end.
//! A sweep that made the database and fails before its first run removes it, but
//! only when it can take the lock alone (no other sweep is using the file), the path
//! still names the file it made, and the file holds no run: never another sweep's
//! database or anyone's results.

use anyhow::{Context, Result};
use rusqlite::Connection;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The hold, and what opening the database made.
pub struct Hold {
    file: File,
    path: PathBuf,
    /// The database file did not exist before: this sweep made it.
    made: bool,
    /// SQLite's files beside it that did not exist before.
    new_sides: Vec<PathBuf>,
}

/// Open the results database at `path` as [`crate::db::open`] does, and hold it.
/// Should the file be replaced or removed while it is being opened (another sweep
/// removing the one it made), it is opened again.
pub fn open_held(path: &Path) -> Result<(Connection, Hold)> {
    for _ in 0..3 {
        let made = std::fs::symlink_metadata(path).is_err();
        let new_sides: Vec<PathBuf> = crate::db::side_files(path)
            .into_iter()
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        let conn = crate::db::open(path)?;
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        file.lock_shared()
            .with_context(|| format!("{}: cannot lock", path.display()))?;
        if same_file(&file, path) {
            let hold = Hold {
                file,
                path: path.to_path_buf(),
                made,
                new_sides,
            };
            return Ok((conn, hold));
        }
    }
    anyhow::bail!(
        "{}: replaced three times while being opened (another sweep?)",
        path.display()
    )
}

/// Whether `path` still names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Hold {
    /// After a failure before the first run (the sweep's connection closed): remove
    /// the database if this sweep made it, no other sweep holds it, and it holds no
    /// run; with the files beside it that opening it made.
    pub fn remove_if_unused(self) {
        if !self.made || self.file.try_lock().is_err() || !same_file(&self.file, &self.path) {
            return;
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        let empty = Connection::open_with_flags(&self.path, flags)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get::<_, i64>(0)))
            .is_ok_and(|n| n == 0);
        if !empty {
            return;
        }
        let _ = std::fs::remove_file(&self.path);
        for side in &self.new_sides {
            let _ = std::fs::remove_file(side);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unused_empty_database_this_sweep_made_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        // Made here and unused: removed, with its write-ahead log and shared memory.
        let (conn, hold) = open_held(&path).unwrap();
        drop(conn);
        hold.remove_if_unused();
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        // Made here while another sweep holds it: kept.
        let (conn, hold) = open_held(&path).unwrap();
        let (_other_conn, _other) = open_held(&path).unwrap();
        drop(conn);
        hold.remove_if_unused();
        assert!(path.exists());
        drop((_other_conn, _other));
        std::fs::remove_file(&path).unwrap();
        // Made here and holding a run (another sweep's, committed): kept.
        let (conn, hold) = open_held(&path).unwrap();
        conn.execute(
            "INSERT INTO runs (key, trace, trace_id, overrides, config, version, status, seconds)
             VALUES ('k', 't', 'i', '{}', '', 'v', 'ok', 0)",
            [],
        )
        .unwrap();
        drop(conn);
        hold.remove_if_unused();
        assert!(path.exists());
        // Not made here: kept.
        let (conn, hold) = open_held(&path).unwrap();
        conn.execute("DELETE FROM runs", []).unwrap();
        drop(conn);
        hold.remove_if_unused();
        assert!(path.exists());
    }
}
