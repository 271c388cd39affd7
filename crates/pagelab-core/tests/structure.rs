//! The shape of the source tree, as docs/EXTENDING.md promises it: no import cycle
//! between modules (the top-level modules of a library crate, the files of a binary
//! crate, the submodules of every module; re-exported items count for the module
//! that defines them), no source file over 600 lines, and papers cited by reference, never by a
//! path to a copy users do not have.

#[path = "structure/paths.rs"]
mod paths;

use paths::{code_of, crate_paths, named_modules, reexports, Reexports};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut all = Vec::new();
    text_files(dir, &mut all);
    out.extend(
        all.into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs")),
    );
}

/// Every crate's `src` folder.
fn source_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 3,
        "expected the core, CLI and Python crates: {dirs:?}"
    );
    dirs
}

/// A cycle in `graph`, if there is one, as the modules along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|m| m == next).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node) {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Every module of the crate at `src`, its path and its code without comments; the
/// modules' paths; and what each module re-exports.
fn crate_modules(src: &Path) -> (Vec<(Vec<String>, String)>, BTreeSet<Vec<String>>, Reexports) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let codes: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| {
            let code = code_of(&std::fs::read_to_string(f).unwrap());
            (module_path(src, f), code)
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = codes.keys().cloned().collect();
    let reexported = reexports(&codes, &modules);
    (codes.into_iter().collect(), modules, reexported)
}

/// Which top-level modules of the crate at `src` name which others (an item the crate
/// root re-exports, `crate::Machine`, names the module that defines it).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let (codes, modules, reexported) = crate_modules(src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (at, code) in &codes {
        // The crate root declares and re-exports every module; a binary's files are
        // its modules.
        let Some(from) = at.first() else { continue };
        for to in named_modules(code, at, &modules, &reexported) {
            match to.first() {
                Some(to) if to != from => {
                    graph.entry(from.clone()).or_default().insert(to.clone());
                }
                _ => {}
            }
        }
    }
    graph
}

/// A file's module path under `src` (`machine/decoupled.rs` is `machine::decoupled`,
/// `machine/mod.rs` is `machine`, the crate root is empty).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// For every module with submodules, which of its submodules name which others
/// (by `crate::` or `super::` paths, at any depth; an item a module re-exports names
/// the submodule that defines it).
fn nested_graphs(src: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let (codes, modules, reexported) = crate_modules(src);
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, code) in &codes {
        for to in named_modules(code, from, &modules, &reexported) {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() && !from[..common].is_empty() {
                graphs
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .insert(to[common].clone());
            }
        }
    }
    graphs
}

#[test]
fn no_import_cycle_between_submodules() {
    let mut edges = 0;
    for src in source_dirs() {
        for (parent, graph) in nested_graphs(&src) {
            edges += graph.values().map(BTreeSet::len).sum::<usize>();
            if let Some(cycle) = find_cycle(&graph) {
                panic!(
                    "{}: the submodules of {} import each other in a cycle: {}",
                    src.display(),
                    parent.join("::"),
                    cycle.join(" → ")
                );
            }
        }
    }
    // The checker sees the submodules' paths (55 edges at this writing).
    assert!(edges > 30, "{edges} edges between submodules");
}

#[test]
fn no_import_cycle_between_modules() {
    for src in source_dirs() {
        let graph = module_graph(&src);
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "{}: the modules import each other in a cycle: {}",
                src.display(),
                cycle.join(" → ")
            );
        }
    }
}

#[test]
fn no_source_file_over_600_lines() {
    let mut long = Vec::new();
    let root = crates_dir().join("..");
    let mut dirs = source_dirs();
    // The tests and the Python sources too.
    dirs.extend(source_dirs().iter().map(|s| s.with_file_name("tests")));
    dirs.extend(["crates/pagelab-py/python", "tools", "bench"].map(|d| root.join(d)));
    for src in dirs {
        let mut files = Vec::new();
        text_files(&src, &mut files);
        files.retain(|f| f.extension().is_some_and(|e| e == "rs" || e == "py"));
        for f in files {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            if n > MAX_LINES {
                long.push(format!("{} ({n} lines)", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by concept (at most {MAX_LINES} lines a file):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_checker_finds_cycles_and_paths() {
    let code = code_of(
        "use crate::{a, b::{c, d}, e};\n// crate::commented\nlet x = crate::f::g; /* crate::h */",
    );
    let names: Vec<_> = crate_paths(&code).into_iter().collect();
    assert_eq!(names, ["a", "b", "e", "f"]);
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("x".to_string(), ["y".to_string()].into()),
        ("y".to_string(), ["z".to_string()].into()),
        ("z".to_string(), ["x".to_string()].into()),
    ]
    .into();
    assert_eq!(find_cycle(&graph).unwrap(), ["x", "y", "z", "x"]);
    let acyclic: BTreeMap<String, BTreeSet<String>> =
        [("x".to_string(), ["y".to_string()].into())].into();
    assert_eq!(find_cycle(&acyclic), None);
    // `super::` and nested `crate::` paths name submodules at any depth.
    let m = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let modules: BTreeSet<Vec<String>> = [
        m(&["x"]),
        m(&["x", "a"]),
        m(&["x", "b"]),
        m(&["x", "c"]),
        m(&["y"]),
    ]
    .into();
    let code = code_of(
        "#[cfg(test)]\nmod tests;\nuse super::b::Thing;\n#[cfg(test)]\nmod t {\n use super::a;\n}\nuse super::{c, Other};\nuse crate::y::z;",
    );
    let named: Vec<_> = named_modules(&code, &m(&["x", "a"]), &modules, &Reexports::new())
        .into_iter()
        .collect();
    assert_eq!(
        named,
        [m(&["x"]), m(&["x", "b"]), m(&["x", "c"]), m(&["y"])]
    );
    // An item the parent re-exports names the submodule that defines it.
    let codes: BTreeMap<Vec<String>, String> = [(
        m(&["x"]),
        code_of("mod a;\npub use b::{Thing, Other as Renamed};\npub use self::c::*;"),
    )]
    .into();
    let reexported = reexports(&codes, &modules);
    let code = code_of("use super::{Renamed, Unknown};\nfn f() -> super::Thing {}");
    let named: Vec<_> = named_modules(&code, &m(&["x", "a"]), &modules, &reexported)
        .into_iter()
        .collect();
    assert_eq!(named, [m(&["x"]), m(&["x", "b"])]);
}

/// Every text file of the repository's folders that users read (sources, tests,
/// claims, docs, presets, benchmarks), recursively.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if p.is_dir() {
            // Not build output, nor what the benchmarks write and install (bench/out,
            // git-ignored: traces, a virtual environment of the peer's package).
            let generated = name == "target"
                || name == "__pycache__"
                || (name == "out" && dir.ends_with("bench"))
                || p.join("pyvenv.cfg").exists();
            if !name.starts_with('.') && !generated {
                text_files(&p, out);
            }
        } else if [
            "rs", "md", "toml", "py", "pyi", "sh", "c", "h", "txt", "cfg",
        ]
        .iter()
        .any(|e| p.extension().is_some_and(|x| x == *e))
        {
            out.push(p);
        }
    }
}

/// Papers are cited by authors, title, venue and year (docs/papers.md has the full
/// references), never by a path to a copy that users do not have; nor is anything
/// else outside the repository pointed to.
#[test]
fn papers_are_cited_not_pointed_to_by_path() {
    let root = crates_dir().join("..");
    let mut files = Vec::new();
    for dir in ["crates", "repro", "docs", "machines", "bench", "tools"] {
        text_files(&root.join(dir), &mut files);
    }
    files.push(root.join("README.md"));
    assert!(files.len() > 100, "{} files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            // (The names are spelt in two so that this line does not match.)
            let by_path = line.contains(concat!("../", "shared/"))
                || line.contains(concat!("/work/", "shared"))
                || line.contains(concat!("shared/", "papers"))
                || line.contains(concat!("shared/", "bench"))
                || line.match_indices("papers/").any(|(at, _)| {
                    let rest = &line[at + "papers/".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '-' || *c == '*')
                        .collect();
                    !name.is_empty() && rest[name.len()..].starts_with(".md")
                });
            if by_path {
                found.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(found.is_empty(), "cited by path:\n{}", found.join("\n"));
}
