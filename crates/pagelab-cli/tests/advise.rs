//! `pagelab advise` end to end on this machine: randread (one large block read at
//! random) recorded under Valgrind, analysed, and run natively with each category the
//! preload library backs; the large block ranks first and gets its huge pages, the
//! others get none. Needs `make recorder native` (which `make test` runs first) and
//! transparent huge pages in `madvise` mode for the huge-page checks.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

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
