//! The shape of the source tree, as docs/EXTENDING.md promises it: no import cycle
//! between modules (the top-level modules of a library crate, the files of a binary
//! crate), no source file over 600 lines, and papers cited by reference, never by a
//! path to a copy users do not have.

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

/// The text of a file without its comments (line comments, doc comments and block
/// comments), strings left in place: good enough to find `crate::` paths.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut depth = 0;
    while let Some(c) = chars.next() {
        if depth > 0 {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                depth -= 1;
            } else if c == '/' && chars.peek() == Some(&'*') {
                chars.next();
                depth += 1;
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            for c in chars.by_ref() {
                if c == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            depth = 1;
        } else {
            out.push(c);
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every path that starts with `crate::`, groups included
/// (`crate::{a, b::c}` names `a` and `b`).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `pagelab_crate::`
        }
        let r = rest.trim_start();
        if let Some(group) = r.strip_prefix('{') {
            for item in group_items(group) {
                let name = ident_at(item);
                if !name.is_empty() {
                    names.insert(name.to_string());
                }
            }
        } else {
            let name = ident_at(r);
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The module a file belongs to: its first path component under `src`, without `.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
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

/// Which modules of the crate at `src` name which others.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = module_of(src, f);
        if from == "lib" || from == "main" {
            continue; // the crate root declares and re-exports every module
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for to in crate_paths(&code) {
            if to != from && modules.contains(&to) {
                graph.entry(from.clone()).or_default().insert(to);
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

/// The modules a file's code names by `crate::` or `super::` paths, each as a full
/// module path (the path's segments while they name modules of `modules`). The
/// file's own tests (from `#[cfg(test)]` on, where `super::` means the file itself)
/// are left out.
fn named_modules(
    code: &str,
    at: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeSet<Vec<String>> {
    let code = &without_test_modules(code);
    let mut found = BTreeSet::new();
    let mut resolve = |mut path: Vec<String>, rest: &str| {
        let mut rest = rest;
        loop {
            let name = ident_at(rest);
            if name.is_empty() {
                break;
            }
            let mut next = path.clone();
            next.push(name.to_string());
            if !modules.contains(&next) {
                break;
            }
            path = next;
            rest = &rest[name.len()..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        found.insert(path);
    };
    // Each path's start, after its `crate::` or `super::`s: a group's items each.
    let mut starts: Vec<(Vec<String>, &str)> = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `pagelab_crate::`
        }
        starts.push((Vec::new(), &code[i + "crate::".len()..]));
    }
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("super::")
            || code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            continue; // counted from the first `super::`
        }
        let mut up = at.len();
        let mut rest = &code[i..];
        while let Some(r) = rest.strip_prefix("super::") {
            up = up.saturating_sub(1);
            rest = r;
        }
        starts.push((at[..up].to_vec(), rest));
    }
    for (base, rest) in starts {
        match rest.trim_start().strip_prefix('{') {
            Some(group) => {
                for item in group_items(group) {
                    resolve(base.clone(), item);
                }
            }
            None => resolve(base, rest.trim_start()),
        }
    }
    found
}

/// `code` without its inline `#[cfg(test)] mod … { … }` blocks, where `super::` means
/// the file's own module (the rest of the file, tests declared as files included, is
/// kept).
fn without_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        let inline = item.starts_with("mod ")
            && item
                .find('{')
                .is_some_and(|b| item.find(';').is_none_or(|s| b < s));
        if !inline {
            rest = after;
            continue;
        }
        let open = item.find('{').unwrap();
        let mut depth = 0;
        let mut end = item.len();
        for (k, c) in item[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The starts of the items of a `{…}` group (its text after the `{`), at its top level.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 1;
    let mut item_start = true;
    for (k, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => item_start = true,
            c if item_start && depth == 1 && !c.is_whitespace() => {
                item_start = false;
                items.push(&group[k..]);
            }
            _ => {}
        }
    }
    items
}

/// For every module with submodules, which of its submodules name which others
/// (by `crate::` or `super::` paths, at any depth). A path to an item a parent
/// re-exports (`super::Item` for `pub use child::Item`) and a glob (`super::*`) name
/// the parent, not the child that defines the item: such edges are not seen.
fn nested_graphs(src: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let from = module_path(src, f);
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for to in named_modules(&code, &from, &modules) {
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
    let named: Vec<_> = named_modules(&code, &m(&["x", "a"]), &modules)
        .into_iter()
        .collect();
    assert_eq!(
        named,
        [m(&["x"]), m(&["x", "b"]), m(&["x", "c"]), m(&["y"])]
    );
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
            if !name.starts_with('.') && name != "target" && name != "__pycache__" {
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
