//! The papers' pages and the README's table of them, without running a paper (the
//! quick runs are repro.rs's): every paper `pagelab repro` has (found by the build from
//! `repro/*.toml`) has its page, docs/repro/PAPER.md, whose verdicts table has a row
//! per claim of its claim file and whose sensitivity table a row per input and value;
//! the README's table is generated from the claim files and the pages:
//!
//! ```text
//! PAGELAB_BLESS=1 cargo test --profile ci -p pagelab-cli --test repro_docs
//! ```

#[path = "common/papers.rs"]
mod papers;

use papers::{counts, documented, marked, repo};
use std::process::Command;

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn claim_file(paper: &str) -> pagelab_repro::claims::PaperFile {
    let def = pagelab_repro::paper(paper).unwrap();
    pagelab_repro::claims::PaperFile::parse(def.text, paper).unwrap()
}

#[test]
fn every_paper_has_its_page_with_a_row_per_claim_and_per_sensitivity_value() {
    for def in &pagelab_repro::PAPERS {
        let paper = def.id;
        let file = claim_file(paper);
        let ids: Vec<String> = documented(paper).into_iter().map(|r| r.0).collect();
        let claims: Vec<String> = file.claim.iter().map(|c| c.id.clone()).collect();
        assert_eq!(
            ids, claims,
            "docs/repro/{paper}.md: the verdicts table's claims"
        );
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
        let table = marked(paper, "sensitivity");
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| `")).collect();
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
        let time = marked(paper, "time");
        assert!(
            time.split(" s on ").count() == 2,
            "docs/repro/{paper}.md: the full run's time is \"N s on DATE\", not {time:?}"
        );
    }
}

/// The README's table: a row per paper, from its claim file and its page.
fn readme_table() -> String {
    let mut s = String::from(
        "| command | paper | time | measured claims | input checks | not reproducible | what differs and why |\n|---|---|---|---|---|---|---|\n",
    );
    for def in &pagelab_repro::PAPERS {
        let p = claim_file(def.id).paper;
        let time = marked(def.id, "time");
        let secs = time.split(" on ").next().unwrap();
        s.push_str(&format!(
            "| `pagelab repro {id}` | *{title}*, {cite} | {secs} | {counts} | [docs/repro/{id}.md](docs/repro/{id}.md) |\n",
            id = def.id,
            title = p.title,
            cite = p.cite,
            counts = counts(def.id),
        ));
    }
    s
}

#[test]
fn the_readme_table_is_the_papers_pages() {
    let path = repo("README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (open, close) = ("<!-- generated: repro -->\n", "<!-- /generated: repro -->");
    let a = text.find(open).expect("README.md: no repro table markers") + open.len();
    let b = a + text[a..]
        .find(close)
        .expect("README.md: repro table not closed");
    let want = format!("{}{}{}", &text[..a], readme_table(), &text[b..]);
    if want != text {
        if std::env::var_os("PAGELAB_BLESS").is_some() {
            std::fs::write(&path, want).unwrap();
        } else {
            panic!(
                "README.md's repro table differs from the papers' pages: regenerate it with \
                 PAGELAB_BLESS=1 cargo test --profile ci -p pagelab-cli --test repro_docs"
            );
        }
    }
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
    let papers: Vec<&str> = pagelab_repro::PAPERS.iter().map(|p| p.id).collect();
    assert_eq!(ids, papers);
    let o = Command::new(PAGELAB)
        .args(["repro", "nope"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("\"nope\"") && e.contains(&papers.join(", ")),
        "{e}"
    );
}
