//! Hostile input to the surfaces over many runs: sweeps, result databases and
//! repro. Every case ends in a clear error naming the file or key, or in the right
//! results, and never changes or leaves behind a file. docs/testing.md lists the kinds.

mod common;
use common::*;

/// A sweep is bounded before it starts: a grid of 10^7 runs, or of more than 2^64, is
/// refused with its count before any run's configuration is made, and a trace that
/// is a device (endless, or a link to one) is refused before anything reads it. No
/// database appears.
#[test]
fn sweeps_are_bounded_before_they_start() {
    let d = folder("sweep-bounds");
    write(&d, "ok.lackey", LACKEY);
    let grid = |keys: usize| {
        let mut text = String::from("traces = [\"ok.lackey\"]\nmachine = \"skylake\"\n[grid]\n");
        for k in 0..keys {
            let values: Vec<String> = (1..=10).map(|v| v.to_string()).collect();
            text += &format!("\"cost.key{k}\" = [{}]\n", values.join(", "));
        }
        text
    };
    write(&d, "seven.toml", grid(7));
    write(&d, "twenty.toml", grid(20));
    refused(
        &d,
        &["sweep", "seven.toml", "-o", "runs.db"],
        &["seven.toml", "10000000 runs", "max_runs (10000)"],
    );
    refused(
        &d,
        &["sweep", "twenty.toml", "-o", "runs.db"],
        &["twenty.toml", "more than 2^64 runs"],
    );
    // The limit is the file's to raise.
    write(
        &d,
        "raised.toml",
        format!("max_runs = 20000000\n{}", grid(7)),
    );
    refused(
        &d,
        &["sweep", "raised.toml", "-o", "runs.db"],
        &["raised.toml", "cost.key"],
    );
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.plt")).unwrap();
    for (name, trace) in [("dev.toml", "/dev/zero"), ("link.toml", "zero.plt")] {
        write(&d, name, format!("traces = [\"{trace}\"]\n"));
        refused(
            &d,
            &["sweep", name, "-o", "runs.db"],
            &[name, "traces[0]", "not a regular file or a folder"],
        );
    }
}

/// A database that is not pagelab's is refused untouched: a runs table of another
/// schema, tables without a runs table, and a file that is not SQLite.
#[test]
fn a_database_that_is_not_ours_is_refused_untouched() {
    let d = folder("foreign-db");
    write(&d, "ok.lackey", LACKEY);
    write(&d, "sweep.toml", "traces = [\"ok.lackey\"]\n");
    for (name, schema) in [
        (
            "runs.db",
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)",
        ),
        (
            "app.db",
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
        ),
    ] {
        let db = rusqlite::Connection::open(d.join(name)).unwrap();
        db.execute_batch(schema).unwrap();
        drop(db);
        refused(
            &d,
            &["sweep", "sweep.toml", "-o", name],
            &[name, "not a pagelab results database"],
        );
    }
    write(&d, "notes.db", "not SQLite at all, only text\n");
    refused(
        &d,
        &["sweep", "sweep.toml", "-o", "notes.db"],
        &["notes.db", "not a pagelab results database"],
    );
}
