//! `pagelab repro` end to end on the quick inputs: every paper's experiments run and
//! every claim judged, with the verdicts that docs/repro/PAPER.md and the README report
//! (generated from full runs by bench/repro.sh: none is written by hand); a repro run
//! again reads its runs back and judges the same.

use std::path::{Path, PathBuf};
use std::process::Command;

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

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

/// A claim as the tables give it: id, class, verdict.
type Row = (String, String, String);

/// Each claim's verdict as a quick repro of `paper` computes it.
fn quick(paper: &str) -> (Vec<Row>, String) {
    let dir = scratch(paper);
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

/// The verdicts docs/repro/PAPER.md reports: its table between the markers. Every
/// claim that differs there gives its cause (after " — " in its last cell).
fn documented(paper: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(repo(&format!("docs/repro/{paper}.md"))).unwrap();
    let start = text
        .find("<!-- verdicts -->")
        .unwrap_or_else(|| panic!("docs/repro/{paper}.md has no verdicts table"));
    let end = text.find("<!-- /verdicts -->").unwrap();
    text[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let id = cells[0]
                .trim_start_matches("| ")
                .trim_matches('`')
                .to_string();
            if cells[5] == "differs" {
                assert!(
                    cells[6].contains(" — "),
                    "docs/repro/{paper}.md: {id} differs without a cause (give cause = \"..\" in repro/{paper}.toml)"
                );
            }
            (id, cells[1].to_string(), cells[5].to_string())
        })
        .collect()
}

/// The counts the README gives for `paper`.
fn readme_counts(paper: &str) -> String {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with(&format!("| `pagelab repro {paper}`")))
        .unwrap_or_else(|| panic!("the README has no row for pagelab repro {paper}"));
    line.to_string()
}

/// Every input and value of the claim file's `[[sensitivity]]` has its row in
/// docs/repro/PAPER.md, in the file's order (the table is a full run's).
fn sensitivity_documented(paper: &str) {
    let def = pagelab_repro::paper(paper).unwrap();
    let file = pagelab_repro::claims::PaperFile::parse(def.text, paper).unwrap();
    let expected: Vec<String> = file
        .sensitivity
        .iter()
        .flat_map(|s| {
            s.values
                .iter()
                .map(|v| format!("| `{}` | {} |", s.key, pagelab_repro::results::text(v)))
        })
        .collect();
    assert!(
        !expected.is_empty(),
        "repro/{paper}.toml has no [[sensitivity]]"
    );
    let text = std::fs::read_to_string(repo(&format!("docs/repro/{paper}.md"))).unwrap();
    let start = text
        .find("<!-- sensitivity -->")
        .expect("sensitivity markers");
    let end = text.find("<!-- /sensitivity -->").unwrap();
    let rows: Vec<&str> = text[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .collect();
    assert_eq!(
        rows.len(),
        expected.len(),
        "docs/repro/{paper}.md: sensitivity rows"
    );
    for (row, head) in rows.iter().zip(&expected) {
        assert!(
            row.starts_with(head.as_str()),
            "docs/repro/{paper}.md: {row} for {head}"
        );
    }
}

fn check(paper: &str) {
    sensitivity_documented(paper);
    let (computed, _) = quick(paper);
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
    let count = |class: &str, o: &str| {
        documented
            .iter()
            .filter(|(_, c, v)| c == class && (o.is_empty() || v == o))
            .count()
    };
    let checks = match count("input check", "") {
        0 => "none".to_string(),
        n => format!("{} of {n} agree", count("input check", "agrees")),
    };
    let counts = format!(
        "{} agree, {} differ | {checks} | {} |",
        count("measured", "agrees"),
        count("measured", "differs"),
        count("not reproducible here", "")
    );
    let row = readme_counts(paper);
    assert!(row.contains(&counts), "README: {row}, computed: {counts}");
}

#[test]
fn fang_verdicts_are_the_documented_ones() {
    check("fang");
}

#[test]
fn vrpt_verdicts_are_the_documented_ones_and_a_rerun_judges_the_same() {
    check("vrpt");
    let (_, first) = quick("vrpt");
    let (_, again) = quick("vrpt");
    assert_eq!(first, again);
}

#[test]
fn navarro_verdicts_are_the_documented_ones() {
    check("navarro");
}

#[test]
fn cpo_verdicts_are_the_documented_ones() {
    check("cpo");
}

#[test]
fn rmm_verdicts_are_the_documented_ones() {
    check("rmm");
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

#[test]
fn the_papers_are_listed_and_an_unknown_one_is_named() {
    let o = Command::new(PAGELAB)
        .args(["repro", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, ["fang", "vrpt", "navarro", "cpo", "rmm"]);
    let o = Command::new(PAGELAB)
        .args(["repro", "nope"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("\"nope\"") && e.contains("fang, vrpt"),
        "{e}"
    );
}
