//! Reading module paths out of Rust source, for `structure.rs`: comments dropped,
//! `crate::` and `super::` paths resolved to the modules they name, through the items
//! a module re-exports from its submodules.

use std::collections::{BTreeMap, BTreeSet};

/// For each module path, each name it re-exports and the submodule it comes from.
pub type Reexports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

/// The text of a file without its comments (line comments, doc comments and block
/// comments), strings left in place: good enough to find `crate::` paths.
pub fn code_of(text: &str) -> String {
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

pub fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every path that starts with `crate::`, groups included
/// (`crate::{a, b::c}` names `a` and `b`).
pub fn crate_paths(code: &str) -> BTreeSet<String> {
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

/// The modules a file's code names by `crate::` or `super::` paths, each as a full
/// module path (the path's segments while they name modules of `modules`; an item a
/// module re-exports names the submodule it comes from). The file's inline test
/// modules, where `super::` means the file itself, are left out.
pub fn named_modules(
    code: &str,
    at: &[String],
    modules: &BTreeSet<Vec<String>>,
    reexports: &Reexports,
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
                // An item: the submodule that defines it, if the module re-exports it
                // (through as many re-exports as there are).
                for _ in 0..8 {
                    match reexports.get(&path).and_then(|r| r.get(name)) {
                        Some(child) => path = child.clone(),
                        None => break,
                    }
                }
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
pub fn without_test_modules(code: &str) -> String {
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
pub fn group_items(group: &str) -> Vec<&str> {
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

/// What each module re-exports from its submodules: for every module path, each name
/// a `pub use child::…` makes public there (an alias by its alias; `*` for a glob)
/// and the child module it comes from. A path to such a name (`super::Item`) then
/// names the child that defines it, not the parent.
pub fn reexports(
    codes: &BTreeMap<Vec<String>, String>,
    modules: &BTreeSet<Vec<String>>,
) -> Reexports {
    let mut out = Reexports::new();
    for (at, code) in codes {
        let code = without_test_modules(code);
        for start in ["pub use ", "pub(crate) use ", "pub(super) use "] {
            for (i, _) in code.match_indices(start) {
                let statement = &code[i + start.len()..];
                let statement = &statement[..statement.find(';').unwrap_or(statement.len())];
                let path = statement.trim_start();
                let path = path.strip_prefix("self::").unwrap_or(path);
                let child_name = ident_at(path);
                let mut child = at.clone();
                child.push(child_name.to_string());
                if child_name.is_empty() || !modules.contains(&child) {
                    continue;
                }
                let rest = path[child_name.len()..].trim_start();
                let Some(rest) = rest.strip_prefix("::") else {
                    continue; // `pub use child;`: the module itself
                };
                let rest = rest.trim_start();
                let items: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group_items(group),
                    None => vec![rest],
                };
                for item in items {
                    out.entry(at.clone())
                        .or_default()
                        .insert(exported_name(item), child.clone());
                }
            }
        }
    }
    out
}

/// The name a `use` item makes: its alias, else its last segment (`*` for a glob).
fn exported_name(item: &str) -> String {
    let end = item.find([',', '}']).unwrap_or(item.len());
    let item = item[..end].trim();
    if let Some((_, alias)) = item.rsplit_once(" as ") {
        return alias.trim().to_string();
    }
    item.rsplit("::").next().unwrap_or(item).trim().to_string()
}
