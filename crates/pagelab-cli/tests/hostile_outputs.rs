//! Hostile input to what pagelab writes: outputs that are inputs, directories or
//! guessable symlinks, two writers at once, a full disk, `-`, and recordings that
//! cannot start. Every case ends in a clear error or the right output, and never
//! changes or leaves behind a file. docs/testing.md lists the kinds.

mod common;
use common::*;
use std::process::Command;

#[test]
fn no_output_overwrites_an_input() {
    let d = folder("output-is-input");
    copy_trace(&d, "t.plt");
    write(&d, "m.toml", "name = \"m\"\n");
    refused(
        &d,
        &["simulate", "-q", "--trace", "t.plt", "--json", "t.plt"],
        &["t.plt", "--json"],
    );
    refused(
        &d,
        &[
            "pagetables",
            "compare",
            "--trace",
            "t.plt",
            "--csv",
            "./t.plt",
        ],
        &["t.plt", "--csv"],
    );
    refused(
        &d,
        &[
            "simulate", "-q", "--trace", "t.plt", "--config", "m.toml", "--json", "m.toml",
        ],
        &["m.toml"],
    );
    refused(
        &d,
        &["trace", "convert", "-q", "t.plt", "./t.plt"],
        &["t.plt"],
    );
    std::fs::copy("/bin/true", d.join("prog")).unwrap();
    refused(
        &d,
        &["record", "-q", "-o", "prog", "--", "./prog"],
        &["prog", "-o"],
    );
}

#[test]
fn outputs_are_checked_before_the_run() {
    let d = folder("outputs");
    write(&d, "ok.lackey", LACKEY);
    std::fs::create_dir_all(d.join("dir")).unwrap();
    refused(
        &d,
        &["trace", "convert", "-q", "ok.lackey", "dir"],
        &["dir", "directory"],
    );
    refused(
        &d,
        &[
            "simulate",
            "-q",
            "--trace",
            "ok.lackey",
            "--json",
            "missing/r.json",
        ],
        &["missing/r.json", "no directory"],
    );
}

#[test]
fn a_symlink_at_a_guessable_name_is_never_followed() {
    let d = folder("symlink");
    write(&d, "ok.lackey", LACKEY);
    write(&d, "victim", "precious\n");
    std::os::unix::fs::symlink(d.join("victim"), d.join("out.plt.partial")).unwrap();
    let o = run_in(
        &d,
        &["trace", "convert", "-q", "ok.lackey", "out.plt"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.join("victim")).unwrap(),
        "precious\n"
    );
    let o = run_in(&d, &["trace", "info", "--json", "out.plt"], None);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn two_conversions_to_one_output_leave_a_whole_file() {
    let d = folder("concurrent");
    copy_trace(&d, "t.plt");
    let spawn = || {
        let mut command = Command::new(PAGELAB);
        within_100_mb(&mut command);
        command
            .args(["trace", "convert", "-q", "t.plt", "same.plt"])
            .current_dir(&d)
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let o = run_in(&d, &["trace", "info", "--json", "same.plt"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let leftovers: Vec<_> = snapshot(&d)
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A file-size limit stands in for a full disk (SIGXFSZ ignored, as a shell's
/// `trap` does, so that the write fails with EFBIG instead of killing the process).
#[test]
fn a_full_disk_leaves_the_previous_results_whole() {
    let d = folder("full-disk");
    copy_trace(&d, "t.plt");
    write(&d, "results.json", "{\"previous\": true}\n");
    let before = snapshot(&d);
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 1; ulimit -d 102400; exec {PAGELAB} simulate -q --trace t.plt --json results.json"
        ))
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("results.json"), "{}", stderr(&o));
    assert_eq!(snapshot(&d), before, "the results file is as it was");
}

#[test]
fn a_dash_is_standard_output_everywhere() {
    let d = folder("dash");
    copy_trace(&d, "t.plt");
    let o = run_in(&d, &["trace", "convert", "-q", "t.plt", "-"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.starts_with(b"PGLTRACE"));
    assert!(!d.join("-").exists(), "no file named -");
    let o = run_in(
        &d,
        &["trace", "convert", "-q", "--to", "lackey", "t.plt", "-"],
        None,
    );
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("I  ") || stdout(&o).starts_with(" "));
    let o = run_in(
        &d,
        &["pagetables", "compare", "--layout", "dense", "--csv", "-"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("-").exists());
    // Where standard output cannot hold the output, `-` is refused, never a file or
    // folder named `-`.
    write(&d, "s.toml", "traces = [\"t.plt\"]\n");
    refused(
        &d,
        &["sweep", "s.toml", "-o", "-"],
        &["-o -", "results database"],
    );
    refused(
        &d,
        &["repro", "vrpt", "--quick", "-o", "-"],
        &["-o -", "folder"],
    );
    refused(
        &d,
        &["advise", "--keep-trace", "-", "--", "true"],
        &["--keep-trace -"],
    );
    assert!(!d.join("-").exists());
}

/// Recording a program that does not exist is refused before Valgrind starts, and
/// leaves no partial trace.
#[test]
fn recording_a_missing_program_leaves_no_partial_trace() {
    let d = folder("record-missing");
    refused(
        &d,
        &["record", "-o", "r.plt", "--", "./no-such-program"],
        &["./no-such-program: no such program"],
    );
    refused(
        &d,
        &["record", "-o", "r.plt", "--", "no-such-program-in-path"],
        &["no-such-program-in-path: no such program"],
    );
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
