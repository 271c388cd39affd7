//! What docs/repro/PAPER.md reports of a paper: its verdicts table and its time, both
//! written by bench/repro.sh from a full run (shared by repro.rs and repro_docs.rs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// A claim as the tables give it: id, class, verdict.
pub type Row = (String, String, String);

pub fn page(paper: &str) -> String {
    std::fs::read_to_string(repo(&format!("docs/repro/{paper}.md")))
        .unwrap_or_else(|e| panic!("docs/repro/{paper}.md: {e}"))
}

/// The text between `<!-- name -->` and `<!-- /name -->` of the paper's page.
pub fn marked(paper: &str, name: &str) -> String {
    let text = page(paper);
    let open = format!("<!-- {name} -->");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("docs/repro/{paper}.md has no {open}"))
        + open.len();
    let end = text[start..]
        .find(&format!("<!-- /{name} -->"))
        .unwrap_or_else(|| panic!("docs/repro/{paper}.md: {open} is not closed"));
    text[start..start + end].to_string()
}

/// The verdicts docs/repro/PAPER.md reports: its table between the markers. Every
/// claim that differs there gives its cause (after " — " in its last cell).
pub fn documented(paper: &str) -> Vec<Row> {
    marked(paper, "verdicts")
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

/// The page's counts as the README's table gives them: measured claims, input checks,
/// not reproducible.
pub fn counts(paper: &str) -> String {
    let documented = documented(paper);
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
    format!(
        "{} agree, {} differ | {checks} | {}",
        count("measured", "agrees"),
        count("measured", "differs"),
        count("not reproducible here", "")
    )
}
