//! The papers of `pagelab repro`, found rather than listed: every claim file
//! `repro/<id>.toml` of the repository with its module `src/papers/<id>.rs`, which
//! computes the measures its claims name. This writes the modules' declarations and
//! `PAPERS` (in the order of their ids) for `src/papers/mod.rs` to include, and refuses
//! a claim file without its module or a module without its claim file.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn ids(dir: &Path, ext: &str) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|id| id != "mod")
        .collect();
    ids.sort();
    ids
}

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo's manifest dir"));
    let claims = manifest.join("../../repro");
    let modules = manifest.join("src/papers");
    println!("cargo:rerun-if-changed={}", claims.display());
    println!("cargo:rerun-if-changed={}", modules.display());
    let papers = ids(&claims, "toml");
    let measured = ids(&modules, "rs");
    for id in &papers {
        assert!(
            measured.contains(id),
            "repro/{id}.toml has no module crates/pagelab-repro/src/papers/{id}.rs (docs/EXTENDING.md, \"A paper for pagelab repro\")"
        );
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "repro/{id}.toml: a paper's id is its module's name: lower-case letters, digits and _"
        );
    }
    for id in &measured {
        assert!(
            papers.contains(id),
            "crates/pagelab-repro/src/papers/{id}.rs has no claim file repro/{id}.toml"
        );
    }
    let mut out = String::new();
    for id in &papers {
        let path = modules.join(format!("{id}.rs"));
        writeln!(out, "#[path = {:?}]\nmod {id};", path.display().to_string()).unwrap();
    }
    writeln!(out, "\n/// Every paper, in the order of their ids.").unwrap();
    writeln!(
        out,
        "pub const PAPERS: [crate::PaperDef; {}] = [",
        papers.len()
    )
    .unwrap();
    for id in &papers {
        let text = claims.join(format!("{id}.toml"));
        writeln!(
            out,
            "    crate::PaperDef {{ id: {id:?}, text: include_str!({:?}), measure: {id}::measure }},",
            text.display().to_string()
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo's OUT_DIR")).join("papers.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
