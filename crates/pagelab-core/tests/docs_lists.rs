//! The lists of components the documentation gives are generated from the registries:
//! the trace formats' table of docs/formats.md (name, extensions and the registry's doc
//! line), the sweeps' analyses of docs/configuration.md (name and doc line of
//! pagelab-sweep's registry) and the value lists of `page_table.kind`,
//! `promotion.policy`, `tlb.replacement`, `paging.daemon` and `tlb.levels[].range.kind`
//! there sit between
//! `<!-- generated: … -->` markers, and this test fails when they differ from the code's. Adding a component
//! regenerates them rather than editing them by hand:
//!
//! ```text
//! PAGELAB_BLESS=1 cargo test --profile ci -p pagelab-core --test docs_lists
//! ```
//!
//! machines/README.md, whose rows are the presets' sources, must name every preset.

use std::path::{Path, PathBuf};

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn read(rel: &str) -> String {
    let p = path(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `` `a`, `b`, `c` ``.
fn names(list: &[&str]) -> String {
    list.iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A registry as its macro lists it: (name, the rest of its line, doc line), read
/// from `macro_rules! <name>` in `file`, whose doc lines describe the components.
fn registry(file: &str, name: &str) -> Vec<(String, String, String)> {
    let text = read(file);
    let start = text
        .find(&format!("macro_rules! {name}"))
        .unwrap_or_else(|| panic!("{file}: {name}!"));
    let mut out = Vec::new();
    let mut doc = Vec::new();
    for line in text[start..].lines().skip(1) {
        let line = line.trim();
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim().to_string());
        } else if let Some(rest) = line.strip_prefix('"') {
            let end = rest.find('"').unwrap();
            out.push((
                rest[..end].to_string(),
                rest[end + 1..].to_string(),
                doc.join(" "),
            ));
            doc.clear();
        } else if line.starts_with('}') && !out.is_empty() {
            break;
        }
    }
    out
}

/// The trace formats as the registry lists them: (name, extensions, doc line), read
/// from `for_each_trace_format!` in trace/mod.rs, whose doc lines are the formats'
/// descriptions.
fn formats() -> Vec<(String, Vec<String>, String)> {
    registry(
        "crates/pagelab-core/src/trace/mod.rs",
        "for_each_trace_format",
    )
    .into_iter()
    .map(|(name, line, doc)| {
        let list = &line[line.rfind('[').unwrap() + 1..line.rfind(']').unwrap()];
        let exts = list
            .split(',')
            .map(|e| format!(".{}", e.trim().trim_matches('"')))
            .collect();
        (name, exts, doc)
    })
    .collect()
}

/// The analyses a sweep can run (`for_each_analysis!` of pagelab-sweep): their table,
/// the doc line's first sentence the command and what it gives, the rest its options.
fn analyses_table() -> String {
    let mut s = String::from("| analysis | the command, and its options |\n|---|---|\n");
    for (name, _, doc) in registry(
        "crates/pagelab-sweep/src/analysis/mod.rs",
        "for_each_analysis",
    ) {
        s.push_str(&format!("| \"{name}\" | {doc} |\n"));
    }
    s
}

/// The formats' table.
fn formats_table() -> String {
    let mut s = String::from("| `--format` | names | what it is |\n|---|---|---|\n");
    for (name, exts, doc) in formats() {
        s.push_str(&format!(
            "| `{name}` | {} | {doc} |\n",
            exts.iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}

/// Every generated block: (file, block name, its text).
fn blocks() -> Vec<(&'static str, &'static str, String)> {
    let policies: Vec<&str> = pagelab_core::superpage::NAMES.to_vec();
    let range_units: Vec<&str> = pagelab_core::config::RangeUnitKind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    vec![
        ("docs/formats.md", "formats", formats_table()),
        (
            "docs/configuration.md",
            "page tables",
            names(pagelab_core::pagetable::NAMES),
        ),
        (
            "docs/configuration.md",
            "promotion policies",
            names(&policies),
        ),
        (
            "docs/configuration.md",
            "replacement policies",
            names(pagelab_core::replacement::NAMES),
        ),
        ("docs/configuration.md", "analyses", analyses_table()),
        (
            "docs/configuration.md",
            "daemons",
            names(pagelab_core::pressure::DaemonKind::NAMES),
        ),
        ("docs/configuration.md", "range units", names(&range_units)),
    ]
}

/// `text` with the block `name` replaced by `content`; an error if it has no such
/// block.
fn with_block(text: &str, name: &str, content: &str) -> Result<String, String> {
    let open = format!("<!-- generated: {name} -->");
    let close = format!("<!-- /generated: {name} -->");
    let a = text
        .find(&open)
        .ok_or_else(|| format!("no {open} marker"))?;
    let b = text[a..]
        .find(&close)
        .map(|b| a + b)
        .ok_or_else(|| format!("no {close} after {open}"))?;
    // A table block stands on lines of its own; a list sits in a table cell.
    let inner = if content.ends_with('\n') {
        format!("\n{content}")
    } else {
        content.to_string()
    };
    Ok(format!("{}{open}{inner}{}", &text[..a], &text[b..]))
}

#[test]
fn the_generated_lists_are_the_registries() {
    let bless = std::env::var_os("PAGELAB_BLESS").is_some();
    let mut stale = Vec::new();
    for (file, name, content) in blocks() {
        let text = read(file);
        let want = with_block(&text, name, &content).unwrap_or_else(|e| panic!("{file}: {e}"));
        if want != text {
            if bless {
                std::fs::write(path(file), &want).unwrap();
            } else {
                stale.push(format!("{file} ({name})"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "the generated lists of {} differ from the registries: regenerate them with \
         PAGELAB_BLESS=1 cargo test --profile ci -p pagelab-core --test docs_lists",
        stale.join(", ")
    );
}

#[test]
fn the_formats_table_has_every_format_with_its_description() {
    let table = formats_table();
    assert_eq!(formats().len(), pagelab_core::trace::NAMES.len());
    for (name, (listed, exts, doc)) in pagelab_core::trace::NAMES.iter().zip(formats()) {
        assert_eq!(*name, listed, "the registry's order");
        assert!(
            !exts.is_empty() && !doc.is_empty(),
            "{name}: {exts:?} {doc:?}"
        );
        assert!(table.contains(&format!("| `{name}` |")));
    }
    // A block out of place is refused, not appended.
    assert!(with_block("no markers", "formats", "x").is_err());
    let once = with_block(
        "a <!-- generated: x -->old<!-- /generated: x --> b",
        "x",
        "new",
    );
    assert_eq!(
        once.unwrap(),
        "a <!-- generated: x -->new<!-- /generated: x --> b"
    );
}

#[test]
fn the_presets_page_names_every_preset() {
    let text = read("machines/README.md");
    let gone: Vec<&str> = pagelab_core::presets::names()
        .into_iter()
        .filter(|n| !text.contains(&format!("`{n}`")))
        .collect();
    assert!(
        gone.is_empty(),
        "machines/README.md does not name the presets {gone:?}"
    );
}
