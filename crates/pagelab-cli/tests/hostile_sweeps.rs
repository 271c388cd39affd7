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

/// Errors in a sweep file are reported at the line and key of that file, not of a
/// document made from it: a mistyped override, a value of the wrong type, a bad
/// preset, zip lists of two lengths, a cost a machine refuses.
#[test]
fn sweep_file_errors_name_the_line_and_key_of_the_users_file() {
    let d = folder("sweep-lines");
    write(&d, "ok.lackey", LACKEY);
    let head = "traces = [\"ok.lackey\"]\nmachine = \"skylake\"\n";
    for (name, text, says) in [
        (
            "way.toml",
            format!("{head}[grid]   # every combination\n\"tlb.levels.stlb.way\" = [4, 8]\n"),
            vec!["way.toml: line 4: tlb.levels.stlb.way: unknown field `way`"],
        ),
        (
            "type.toml",
            "traces = \"ok.lackey\"\n".to_string(),
            vec!["type.toml: line 1: traces: invalid type: string"],
        ),
        (
            "preset.toml",
            "traces = [\"ok.lackey\"]\nmachine = \"nope\"\n".to_string(),
            vec!["preset.toml: line 2: machine: no machine preset is named \"nope\""],
        ),
        (
            "zip.toml",
            format!("{head}[zip]\n\"cost.walk_ref_cycles\" = [1.0, 2.0]\n\"cost.page_fault_cycles\" = [1.0]\n"),
            vec!["zip.toml: line 3: zip: the lists must have one length"],
        ),
        (
            "cost.toml",
            format!("{head}\n[grid]\n\"tlb.levels.stlb.ways\" = [4]\n\"cost.walk_ref_cycles\" = [1.0, -2.0]\n"),
            vec!["cost.toml: line 6: cost.walk_ref_cycles: -2.0 must be a number of cycles"],
        ),
    ] {
        write(&d, name, &text);
        let e = refused(&d, &["sweep", name, "-o", "runs.db"], &says);
        // Every line named is one of the user's file.
        for (i, _) in e.match_indices("line ") {
            let n: usize = e[i + 5..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            assert!(n <= text.lines().count(), "{e}");
        }
    }
}

/// `-` cannot be a results database: refused, no file named `-` made. A sweep that
/// fails before its first run (its executor cannot start) leaves no database.
#[test]
fn a_sweep_that_cannot_record_leaves_nothing_behind() {
    let d = folder("sweep-leftovers");
    write(&d, "ok.lackey", LACKEY);
    write(&d, "s.toml", "traces = [\"ok.lackey\"]\n");
    refused(
        &d,
        &["sweep", "s.toml", "-o", "-"],
        &["-: a results database is a file"],
    );
    refused(
        &d,
        &[
            "sweep",
            "-q",
            "s.toml",
            "-o",
            "runs.db",
            "--ray",
            "auto",
            "--python",
            "/nonexistent/python3",
        ],
        &["python3"],
    );
    assert!(!d.join("-").exists() && !d.join("runs.db").exists());
}

/// A results database this user may not write is refused before any run, left as it
/// was (no write-ahead log or shared-memory file beside it). Root writes any file, so
/// the sweep runs as the unprivileged user `nobody` when the tests run as root.
#[test]
fn a_read_only_database_is_refused_before_any_run() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let d = folder("sweep-read-only");
    write(&d, "ok.lackey", LACKEY);
    write(&d, "s.toml", "traces = [\"ok.lackey\"]\n");
    write(
        &d,
        "s2.toml",
        "traces = [\"ok.lackey\"]\nmachine = \"skylake\"\n",
    );
    let o = run_in(&d, &["sweep", "-q", "s.toml", "-o", "runs.db"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::set_permissions(d.join("runs.db"), std::fs::Permissions::from_mode(0o444)).unwrap();
    for writable_folder in [false, true] {
        let mode = if writable_folder { 0o777 } else { 0o755 };
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        let before = snapshot(&d);
        let mut command = std::process::Command::new(PAGELAB);
        if nix::unistd::geteuid().is_root() {
            // SAFETY: only setgid and setuid, system calls, run between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    nix::unistd::setgid(nix::unistd::Gid::from_raw(65534))?;
                    nix::unistd::setuid(nix::unistd::Uid::from_raw(65534))?;
                    Ok(())
                });
            }
        }
        let o = command
            .args(["sweep", "s2.toml", "-o", "runs.db"])
            .current_dir(&d)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("runs.db: read-only"), "{err}");
        assert!(!err.contains("runs of"), "refused before any run: {err}");
        assert_eq!(
            snapshot(&d),
            before,
            "writable folder {writable_folder}: {err}"
        );
    }
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repro that fails before writing anything leaves no empty output folder.
#[test]
fn a_failed_repro_leaves_no_empty_folder() {
    let d = folder("repro-leftovers");
    refused(
        &d,
        &[
            "repro", "vrpt", "--quick", "-q", "-o", "out/vrpt", "--traces", "missing",
        ],
        &["no such bundled trace"],
    );
    assert!(!d.join("out").exists());
}
