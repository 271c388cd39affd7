//! The lists of names the documentation gives are the code's: every trace format,
//! page table, promotion policy, replacement policy and preset the registries hold is
//! named in docs/formats.md, docs/configuration.md, machines/README.md and the README,
//! so that adding a component and forgetting its documentation fails here.

use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names of `names` that `text` does not mention as `` `name` ``.
fn missing<'a>(text: &str, names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|n| !text.contains(&format!("`{n}`")))
        .collect()
}

fn count_word(n: usize) -> &'static str {
    [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ]
    .get(n)
    .copied()
    .unwrap_or("many")
}

#[test]
fn the_formats_page_has_a_row_and_the_count_of_every_format() {
    let text = read("docs/formats.md");
    let names = pagelab_core::trace::NAMES;
    for n in names {
        assert!(
            text.lines()
                .any(|l| l.starts_with('|') && l.contains(&format!("| `{n}` |"))),
            "docs/formats.md: no table row for the format `{n}`"
        );
    }
    let said = format!("reads {} trace formats", count_word(names.len()));
    assert!(text.contains(&said), "docs/formats.md should say {said:?}");
}

#[test]
fn the_presets_page_names_every_preset() {
    let text = read("machines/README.md");
    let gone = missing(&text, &pagelab_core::presets::names());
    assert!(
        gone.is_empty(),
        "machines/README.md does not name the presets {gone:?}"
    );
}

#[test]
fn the_configuration_reference_and_the_readme_name_every_component() {
    let configuration = read("docs/configuration.md");
    let readme = read("README.md");
    let policies: Vec<&str> = pagelab_core::superpage::NAMES
        .iter()
        .copied()
        .filter(|n| *n != "none")
        .collect();
    let presets = pagelab_core::presets::names();
    for (what, names) in [
        ("page table", pagelab_core::pagetable::NAMES.to_vec()),
        ("promotion policy", policies),
        (
            "replacement policy",
            pagelab_core::replacement::NAMES.to_vec(),
        ),
        ("trace format", pagelab_core::trace::NAMES.to_vec()),
        ("preset", presets),
    ] {
        for (doc, text) in [
            ("docs/configuration.md", &configuration),
            ("README.md", &readme),
        ] {
            if (what == "trace format" || what == "preset") && doc == "docs/configuration.md" {
                continue; // formats are docs/formats.md's, presets machines/README.md's
            }
            let gone = missing(text, &names);
            assert!(gone.is_empty(), "{doc} does not name the {what}s {gone:?}");
        }
    }
}
