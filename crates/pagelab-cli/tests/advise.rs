//! `pagelab advise` end to end on this machine: randread (one large block read at
//! random) recorded under Valgrind, analysed, and run natively with each category the
//! preload library backs; the large block ranks first and gets its huge pages, the
//! others get none. Needs `make recorder native` (which `make test` runs first) and
//! transparent huge pages in `madvise` mode for the huge-page checks.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn native(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/native")
        .join(name);
    assert!(p.is_file(), "{} is not built: make native", p.display());
    p
}

/// `pagelab advise FLAGS --warmup 0 --quiet --json - -- randread MIB READS`'s JSON,
/// the run having succeeded.
fn advise_randread(flags: &[&str], mib: &str, reads: &str) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .arg("advise")
        .args(flags)
        .args(["--warmup", "0", "--quiet", "--json", "-", "--"])
        .arg(native("randread"))
        .args([mib, reads])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_large_block_ranks_first_and_gets_its_huge_pages() {
    // Standard output is the JSON alone: the program's own lines went elsewhere.
    let v = advise_randread(&["--runs", "1", "--max-seconds", "0"], "64", "20000");
    let m = v["mappings"].as_array().unwrap();
    let of = |name: &str| {
        m.iter()
            .find(|x| x["mapping"] == name)
            .unwrap_or_else(|| panic!("no {name}: {v}"))
    };
    assert_eq!(m[0]["mapping"], "all small");
    let large = of("large-dynamic@2M");
    assert!(large["predicted_pmb"].as_f64().unwrap() > 90.0, "{large}");
    assert!(of("small-dynamic@2M")["predicted_pmb"].as_f64().unwrap() < 10.0);
    assert_eq!(large["runs"].as_array().unwrap().len(), 1);
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[madvise]") {
        assert!(large["anon_huge_mib"].as_f64().unwrap() > 0.0, "{large}");
        assert_eq!(m[0]["anon_huge_mib"].as_f64().unwrap(), 0.0);
    } else {
        eprintln!("skip: transparent huge pages are not in madvise mode here");
    }
}

#[test]
fn a_missing_program_or_both_forms_are_refused_in_one_line() {
    let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(["advise", "--workload", "randread", "--", "true"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("one of them") && e.trim().lines().count() == 1,
        "{e}"
    );
}

/// The program reads advise's standard input, in the recording as in the native runs:
/// `sort -n` of 20,000 numbers makes far more references than of none.
#[test]
fn the_program_reads_advises_standard_input() {
    let dir = std::env::temp_dir().join(format!("pagelab-advise-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let references = |input: &[u8], name: &str| {
        let kept = dir.join(name);
        let mut child = Command::new(env!("CARGO_BIN_EXE_pagelab"))
            .args([
                "advise",
                "--runs",
                "1",
                "--max-seconds",
                "0",
                "--warmup",
                "0",
                "--quiet",
                "--json",
                "-",
            ])
            .arg("--keep-trace")
            .arg(&kept)
            .args(["--", "sort", "-n"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let bytes = input.to_vec();
        let writer = std::thread::spawn(move || pipe.write_all(&bytes));
        let o = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = Command::new(env!("CARGO_BIN_EXE_pagelab"))
            .args(["simulate", "--quiet", "--json", "-", "--trace"])
            .arg(&kept)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&s.stdout).unwrap();
        v["report"]["counts"]["references"].as_u64().unwrap()
    };
    let numbers: String = (0..20_000).rev().map(|i| format!("{i}\n")).collect();
    let with = references(numbers.as_bytes(), "with.plt");
    let without = references(b"", "without.plt");
    assert!(
        with > 3 * without,
        "{with} references with the input, {without} without"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The processes whose command line holds `marker`, other than `except`.
fn running_with(marker: &str, except: &std::path::Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let exe = std::fs::read_link(entry.path().join("exe")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) && exe != except {
            found.push(pid);
        }
    }
    found
}

/// Interrupted by a signal to its own process alone, while it records the program
/// and while it runs it natively, advise stops what it started, removes its
/// temporary files (the kept standard input, the recording) and exits as a shell
/// reports the signal; nothing it started runs on.
#[test]
fn an_interrupted_advise_ends_its_programs_and_leaves_no_file() {
    let pagelab = std::path::Path::new(env!("CARGO_BIN_EXE_pagelab"))
        .canonicalize()
        .unwrap();
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/xz.plt");
    for (phase, given) in [("recording", None), ("native", Some(&trace))] {
        let tmp = std::env::temp_dir().join(format!(
            "pagelab-advise-signal-{}-{phase}",
            std::process::id()
        ));
        std::fs::create_dir_all(&tmp).unwrap();
        // A sleep of a length no other process has.
        let marker = format!("{}.{}", 300 + std::process::id() % 600, phase.len());
        let mut cmd = Command::new(&pagelab);
        cmd.args([
            "advise",
            "--runs",
            "1",
            "--max-seconds",
            "0",
            "--warmup",
            "0",
            "--quiet",
        ]);
        if let Some(t) = given {
            cmd.arg("--trace").arg(t);
        }
        let mut advise = cmd
            .args(["--", "sleep", &marker])
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The program under way (under Valgrind, or natively).
        let start = std::time::Instant::now();
        while running_with(&marker, &pagelab).is_empty() {
            assert!(
                start.elapsed().as_secs() < 60,
                "{phase}: the program never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(advise.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = advise.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut advise.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(128 + 15), "{phase}: {err}");
        assert!(err.contains("interrupted by SIGTERM"), "{phase}: {err}");
        // Nothing it started runs on (given a moment to be reaped).
        let start = std::time::Instant::now();
        while !running_with(&marker, std::path::Path::new("")).is_empty() {
            assert!(
                start.elapsed().as_secs() < 5,
                "{phase}: still running: {:?}",
                running_with(&marker, std::path::Path::new(""))
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{phase}: left behind: {left:?}");
        let _ = std::fs::remove_dir(&tmp);
    }
}

/// More rounds run while an interval holds 1.0; each mapping's interval is Student's t
/// on its rounds' paired speedups, and `measurable` says whether it leaves out 1.0.
#[test]
fn rounds_go_on_until_settled_or_the_limit_and_give_intervals() {
    let v = advise_randread(&["--runs", "2", "--max-runs", "3"], "16", "2000");
    let rounds = v["rounds"].as_u64().unwrap();
    assert!((2..=3).contains(&rounds), "{v}");
    let m = v["mappings"].as_array().unwrap();
    assert_eq!(m[0]["rounds"].as_u64().unwrap(), rounds);
    for a in m {
        let n = a["rounds"].as_u64().unwrap();
        assert!((2..=rounds).contains(&n), "{a}");
        assert_eq!(a["runs"].as_array().unwrap().len() as u64, n);
        let (low, high) = (
            a["measured_low"].as_f64().unwrap(),
            a["measured_high"].as_f64().unwrap(),
        );
        let s = a["measured_speedup"].as_f64().unwrap();
        assert!(low <= s && s <= high, "{a}");
        assert_eq!(a["measurable"].as_bool().unwrap(), low > 1.0 || high < 1.0);
    }
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with(&format!("{rounds} rounds: "))),
        "{notes:?}"
    );
}

#[test]
fn bad_round_settings_are_refused_naming_the_flag() {
    for (args, flag) in [
        (&["--runs", "5", "--max-runs", "3"][..], "--max-runs 3"),
        (&["--max-seconds", "-1"][..], "--max-seconds"),
        (&["--max-seconds", "NaN"][..], "--max-seconds"),
        (&["--confidence", "1.5"][..], "--confidence"),
        (&["--confidence", "0"][..], "--confidence"),
        (&["--resolution", "-0.1"][..], "--resolution"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
            .arg("advise")
            .args(args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(flag) && e.trim().lines().count() == 1,
            "{args:?}: {e}"
        );
    }
}
