//! The results database: one SQLite table of runs, written with write-ahead logging so
//! a committed run survives the process being killed.

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// One finished run, as stored.
pub struct Record<'a> {
    pub key: &'a str,
    pub trace: &'a str,
    pub trace_id: &'a str,
    /// What the run computed ([`crate::analysis::Analysis::to_json`]; empty for a
    /// simulation).
    pub analysis: &'a str,
    /// The overrides as a JSON object.
    pub overrides: &'a str,
    /// The normalised configuration (TOML).
    pub config: &'a str,
    /// The report (JSON), or the error.
    pub result: Result<&'a str, &'a str>,
    pub seconds: f64,
}

/// The runs table's columns, in order; databases from before analyses lack the last.
const COLUMNS: [&str; 11] = [
    "key",
    "trace",
    "trace_id",
    "overrides",
    "config",
    "version",
    "status",
    "error",
    "report",
    "seconds",
    "analysis",
];

/// SQLite's files beside a database: its write-ahead log, shared memory and rollback
/// journal.
pub(crate) fn side_files(path: &Path) -> [std::path::PathBuf; 3] {
    ["-wal", "-shm", "-journal"].map(|suffix| {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        side.into()
    })
}

/// Open the results database at `path`, making it and its table if missing. A file
/// that is not one (another SQLite database, a runs table of another schema, not
/// SQLite at all) is refused before anything is written to it; so is a database
/// this process may not write. A refused database is left as it was: the files
/// opening it made are removed.
pub fn open(path: &Path) -> Result<Connection> {
    let existed = std::fs::symlink_metadata(path).is_ok();
    let sides = side_files(path).map(|p| (std::fs::symlink_metadata(&p).is_ok(), p));
    open_checked(path).inspect_err(|_| {
        // The connection is closed by now. What it made goes while it is still empty
        // (a file that has something in it meanwhile is someone else's).
        let empty = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() == 0);
        if !existed && empty(path) {
            let _ = std::fs::remove_file(path);
        }
        let [(wal_was, wal), (shm_was, shm), (journal_was, journal)] = &sides;
        if !wal_was && empty(wal) {
            let _ = std::fs::remove_file(wal);
            if !shm_was {
                let _ = std::fs::remove_file(shm);
            }
        }
        if !journal_was && empty(journal) {
            let _ = std::fs::remove_file(journal);
        }
    })
}

fn open_checked(path: &Path) -> Result<Connection> {
    let read_only = |detail: String| {
        anyhow::anyhow!(
            "{}: read-only{detail}: the runs' results could not be recorded in it",
            path.display()
        )
    };
    let is_read_only = |e: &rusqlite::Error| {
        matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
        )
    };
    let db = Connection::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    check_schema(&db).map_err(|e| match e.downcast_ref::<rusqlite::Error>() {
        // Reading a database in write-ahead mode needs its shared memory file.
        Some(sql) if is_read_only(sql) => read_only(format!(" ({sql})")),
        _ => e.context(format!(
            "{}: not a pagelab results database",
            path.display()
        )),
    })?;
    // SQLite opens a file it may not write read-only, silently: found here, before
    // any run, not at the first result.
    if db.is_readonly(rusqlite::DatabaseName::Main)? {
        return Err(read_only(String::new()));
    }
    let cannot_write = |e: rusqlite::Error| {
        if is_read_only(&e) {
            read_only(format!(" ({e})"))
        } else {
            anyhow::anyhow!("{}: cannot write: {e}", path.display())
        }
    };
    db.pragma_update(None, "journal_mode", "WAL")
        .and_then(|()| db.pragma_update(None, "synchronous", "NORMAL"))
        .and_then(|()| {
            db.execute_batch(
                "CREATE TABLE IF NOT EXISTS runs (
                    key TEXT PRIMARY KEY,
                    trace TEXT NOT NULL,
                    trace_id TEXT NOT NULL,
                    overrides TEXT NOT NULL,
                    config TEXT NOT NULL,
                    version TEXT NOT NULL,
                    status TEXT NOT NULL,
                    error TEXT,
                    report TEXT,
                    seconds REAL NOT NULL,
                    analysis TEXT NOT NULL DEFAULT ''
                )",
            )
        })
        .and_then(|()| {
            // A database of simulations only, from before analyses: the column added.
            if !has_analysis_column(&db)? {
                db.execute_batch("ALTER TABLE runs ADD COLUMN analysis TEXT NOT NULL DEFAULT ''")?;
            }
            Ok(())
        })
        .map_err(cannot_write)?;
    Ok(db)
}

/// Refuse a database that already holds something other than pagelab's runs: tables
/// without a `runs` one, or a `runs` table whose columns are not ours. Reads only.
fn check_schema(db: &Connection) -> Result<()> {
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|t| t == "runs") {
        anyhow::bail!("it has tables ({}) and no runs table", tables.join(", "));
    }
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('runs')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if columns != COLUMNS && columns != COLUMNS[..10] {
        anyhow::bail!("its runs table has the columns {}", columns.join(", "));
    }
    Ok(())
}

/// Whether the runs table has the analysis column (added after the first databases).
pub fn has_analysis_column(db: &Connection) -> rusqlite::Result<bool> {
    let n: i64 = db.query_row(
        "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'analysis'",
        [],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}

/// Open an existing results database to read it: read-only, so an export or a report
/// never changes (or makes) one; a file without a `runs` table is said to be no
/// results database.
pub fn open_existing(path: &Path) -> Result<Connection> {
    if !path.is_file() {
        anyhow::bail!("{}: no such results database", path.display());
    }
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("{}: cannot open", path.display()))?;
    let tables: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
            [],
            |r| r.get(0),
        )
        .with_context(|| format!("{}: not a pagelab results database", path.display()))?;
    if tables == 0 {
        anyhow::bail!(
            "{}: not a pagelab results database (no runs table)",
            path.display()
        );
    }
    Ok(db)
}

/// The content id of a trace: the SHA-256 of its bytes; of a folder (a drmemtrace of
/// several threads), of the names and bytes of the files in the folder its reader
/// reads (its `trace/` when it has one), in name order.
pub fn content_id(path: &Path) -> Result<String> {
    let mut h = Sha256::new();
    if let Some(spec) = crate::inputs::synthetic(path) {
        // A synthetic workload is its description.
        h.update(crate::inputs::SYNTHETIC.as_bytes());
        h.update(spec.as_bytes());
    } else if let Some(name) = crate::inputs::layout(path) {
        // So is a page-table layout.
        h.update(crate::inputs::LAYOUT.as_bytes());
        h.update(name.as_bytes());
    } else if path.is_dir() {
        let root = if path.join("trace").is_dir() {
            path.join("trace")
        } else {
            path.to_path_buf()
        };
        let mut files = Vec::new();
        collect(&root, &mut files)?;
        files.sort();
        for (name, file) in files {
            h.update((name.len() as u64).to_le_bytes());
            h.update(name.as_bytes());
            hash_file(&file, &mut h)?;
        }
    } else {
        hash_file(path, &mut h)?;
    }
    Ok(format!("{:x}", h.finalize()))
}

/// The regular files in `dir`, with their names.
fn collect(dir: &Path, out: &mut Vec<(String, std::path::PathBuf)>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
    for entry in entries {
        let p = entry
            .with_context(|| format!("{}: cannot list", dir.display()))?
            .path();
        if p.is_file() {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            out.push((name, p));
        }
    }
    Ok(())
}

fn hash_file(path: &Path, h: &mut Sha256) -> Result<()> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(())
}

/// A run's key: the hash of its trace's content id, its normalised configuration,
/// pagelab's version and, for a run other than a simulation, its analysis, each
/// length-prefixed.
pub fn key(trace_id: &str, config_toml: &str, analysis: &str) -> String {
    let mut h = Sha256::new();
    for part in [trace_id, config_toml, crate::VERSION] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    if !analysis.is_empty() {
        h.update((analysis.len() as u64).to_le_bytes());
        h.update(analysis.as_bytes());
    }
    format!("{:x}", h.finalize())
}

/// Whether the database holds the run `key`, finished. A run recorded as failed is
/// run again (a failure may have been passing: a worker lost, a file unreadable for a
/// moment); its row is then replaced, never doubled.
pub fn has(db: &Connection, key: &str) -> Result<bool> {
    Ok(db
        .query_row(
            "SELECT 1 FROM runs WHERE key = ?1 AND status = 'ok'",
            [key],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// How many runs of other pagelab versions the database holds.
pub fn other_versions(db: &Connection) -> Result<u64> {
    Ok(db.query_row(
        "SELECT COUNT(*) FROM runs WHERE version != ?1",
        [crate::VERSION],
        |r| r.get(0),
    )?)
}

/// Commit one run.
pub fn insert(db: &Connection, r: &Record) -> Result<()> {
    let (status, error, report) = match r.result {
        Ok(report) => ("ok", None, Some(report)),
        Err(e) => ("error", Some(e), None),
    };
    db.execute(
        "INSERT OR REPLACE INTO runs (key, trace, trace_id, overrides, config, version, status, error, report, seconds, analysis)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            r.key,
            r.trace,
            r.trace_id,
            r.overrides,
            r.config,
            crate::VERSION,
            status,
            error,
            report,
            r.seconds,
            r.analysis
        ],
    )?;
    Ok(())
}

/// The result of the run `key`: its JSON text, or its error; None if it is not in the
/// database.
pub fn result(db: &Connection, key: &str) -> Result<Option<Result<String, String>>> {
    Ok(db
        .query_row(
            "SELECT status, error, report FROM runs WHERE key = ?1",
            [key],
            |r| {
                let (status, error, report): (String, Option<String>, Option<String>) =
                    (r.get(0)?, r.get(1)?, r.get(2)?);
                Ok(match (status.as_str(), report) {
                    ("ok", Some(report)) => Ok(report),
                    _ => Err(error.unwrap_or_else(|| "failed".into())),
                })
            },
        )
        .optional()?)
}
