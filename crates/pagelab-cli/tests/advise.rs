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

#[test]
fn the_large_block_ranks_first_and_gets_its_huge_pages() {
    let randread = native("randread");
    let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args([
            "advise", "--runs", "1", "--warmup", "0", "--quiet", "--json", "-", "--",
        ])
        .arg(&randread)
        .args(["64", "20000"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Standard output is the JSON alone: the program's own lines went elsewhere.
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
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
                "advise", "--runs", "1", "--warmup", "0", "--quiet", "--json", "-",
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
