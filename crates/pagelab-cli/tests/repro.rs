//! `pagelab repro` end to end on the quick inputs: every paper's experiments run and
//! every claim judged, with the verdicts that docs/repro/PAPER.md reports (generated
//! from full runs by bench/repro.sh: none is written by hand; the README's table is
//! made from the pages, repro_docs.rs); a repro run again reads its runs back and
//! judges the same.

#[path = "common/papers.rs"]
mod papers;

use papers::{documented, repo, Row};
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pagelab-repro-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `pagelab repro PAPER` into `dir` with `more` options, the bundled traces, no report:
/// its output, after checking it succeeded.
fn repro(paper: &str, dir: &Path, more: &[&str]) -> std::process::Output {
    let o = Command::new(PAGELAB)
        .args(["repro", paper, "--no-report", "--quiet", "--traces"])
        .arg(repo("data/traces"))
        .arg("-o")
        .arg(dir)
        .args(more)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Each claim's verdict as a quick repro of `paper` computes it.
fn quick(paper: &str, folder: &str) -> (Vec<Row>, String) {
    let dir = scratch(folder);
    repro(paper, &dir, &["--quick"]);
    let json = std::fs::read_to_string(dir.join("verdicts.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut out = Vec::new();
    for c in v["claims"].as_array().unwrap() {
        let detail = c["detail"].as_str().unwrap();
        assert!(!detail.contains("a bug"), "{paper}: {c}");
        let outcome = match c["outcome"].as_str().unwrap() {
            "not-reproducible" => "not reproducible here",
            "not-run" => "not run",
            o => o,
        };
        let class = match c["class"].as_str().unwrap() {
            "input-check" => "input check",
            "not-reproducible" => "not reproducible here",
            o => o,
        };
        out.push((
            c["id"].as_str().unwrap().to_string(),
            class.to_string(),
            outcome.to_string(),
        ));
    }
    (out, json)
}

fn check(paper: &str) {
    let (computed, _) = quick(paper, paper);
    let documented = documented(paper);
    assert_eq!(
        computed.len(),
        documented.len(),
        "docs/repro/{paper}.md: claims"
    );
    // A claim that needs a native measurement or the papers' recorded kernels is not
    // run on the quick inputs; the documented full run measured it.
    let judged: Vec<Row> = computed
        .iter()
        .zip(&documented)
        .map(|(q, d)| match q.2.as_str() {
            "not run" => {
                assert!(
                    d.2 != "not run" && q.0 == d.0,
                    "docs/repro/{paper}.md: {d:?}"
                );
                d.clone()
            }
            _ => q.clone(),
        })
        .collect();
    assert_eq!(judged, documented, "docs/repro/{paper}.md");
}

/// Every paper (the registry's, found by the build), each on a thread of its own.
#[test]
fn every_papers_quick_verdicts_are_the_documented_ones() {
    std::thread::scope(|s| {
        let runs: Vec<_> = pagelab_repro::PAPERS
            .iter()
            .map(|p| (p.id, s.spawn(move || check(p.id))))
            .collect();
        let failed: Vec<&str> = runs
            .into_iter()
            .filter_map(|(id, run)| run.join().is_err().then_some(id))
            .collect();
        assert!(
            failed.is_empty(),
            "papers whose verdicts differ: {failed:?}"
        );
    });
}

#[test]
fn a_rerun_judges_the_same() {
    let (_, first) = quick("vrpt", "vrpt-again");
    let (_, again) = quick("vrpt", "vrpt-again");
    assert_eq!(first, again);
}

/// A full repro runs each `[[sensitivity]]` input at each value: RMM's (a few seconds)
/// gives exactly the table docs/repro/rmm.md holds, in verdicts.json too.
#[test]
fn a_full_repro_runs_its_sensitivity_inputs_as_documented() {
    let dir = scratch("rmm-full");
    let o = repro("rmm", &dir, &[]);
    let table = std::fs::read_to_string(dir.join("sensitivity.md")).unwrap();
    let docs = std::fs::read_to_string(repo("docs/repro/rmm.md")).unwrap();
    let start = docs.find("<!-- sensitivity -->\n").unwrap() + "<!-- sensitivity -->\n".len();
    let end = docs.find("<!-- /sensitivity -->").unwrap();
    assert_eq!(table, &docs[start..end]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdicts.json")).unwrap()).unwrap();
    assert_eq!(json["sensitivity"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&o.stdout).contains("cost.walk_ref_cycles = 40:"));
}
