//! docs/configuration.md cannot drift from the code: every field the configuration
//! accepts, in every kind of every section, appears there as a dotted key in backticks
//! (`` `page_table.buckets` ``, `` `tlb.levels[].sets` ``), and every key written there
//! is one the code accepts.
//!
//! The fields come from the code itself: each table of a configuration of every kind is
//! handed an unknown field, and the deserializer's error lists the fields it expected;
//! tables within tables (levels, walk caches, regions) are found in the serialized
//! configuration and asked the same way.

use pagelab_core::{presets, MachineConfig};
use std::collections::BTreeSet;
use std::path::Path;
use toml::Value;

const PROBE: &str = "__probe_field";

/// One configuration of every kind of every tagged section.
fn configurations() -> Vec<MachineConfig> {
    let mut all = vec![MachineConfig::default()];
    all.extend(
        presets::names()
            .into_iter()
            .map(|n| presets::load(n).unwrap()),
    );
    let with = |doc: &str| MachineConfig::from_toml(doc, "kinds").unwrap_or_else(|e| panic!("{e}"));
    for name in pagelab_core::pagetable::NAMES {
        all.push(with(&format!("[page_table]\nkind = {name:?}\n")));
    }
    for name in pagelab_core::superpage::NAMES {
        all.push(with(&format!("[promotion]\npolicy = {name:?}\n")));
    }
    all.push(with(
        "[promotion]\npolicy = \"static\"\n[[promotion.regions]]\nstart = 0\nbytes = \"2M\"\npage_size = \"2M\"\n",
    ));
    for kind in pagelab_core::superpage::mechanism::MechanismConfig::NAMES {
        all.push(with(&format!("[mechanism]\nkind = {kind:?}\n")));
    }
    for kind in pagelab_core::frames::FramesConfig::NAMES {
        all.push(with(&format!("[frames]\nkind = {kind:?}\n")));
    }
    for kind in pagelab_core::cost::CostConfig::NAMES {
        all.push(with(&format!("[cost]\nkind = {kind:?}\n")));
    }
    all.push(with("[paging]\nresident_limit = \"64M\"\n"));
    all.push(with(
        "[tlb]\nkind = \"hierarchy\"\n[[tlb.levels]]\nname = \"tlb\"\n[[tlb.levels.arrays]]\n\
         [tlb.levels.range]\n[frames]\nkind = \"buddy\"\n[ranges]\nallocation = \"eager\"\n",
    ));
    all.push(with(
        "[virtualization]\nnested_tlb = {}\nhost_walk_caches = [{}]\n\
         host_frames = { kind = \"buddy\" }\n",
    ));
    all.push(with(
        "[tlb]\nkind = \"set-associative\"\npage_sizes = [\"4K\", \"64K\"]\n\
         [coalescing]\nkind = \"colt\"\n",
    ));
    let mut cached = MachineConfig::default();
    cached.cache = pagelab_core::cache::CacheConfig::typical();
    all.push(cached);
    all
}

/// The field names an error lists after "expected".
fn expected_fields(message: &str) -> Vec<String> {
    let Some((_, list)) = message.split_once("expected") else {
        return Vec::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The table at `path` (object keys; `[]` steps into the first element of an array).
fn table_at<'v>(doc: &'v mut Value, path: &[String]) -> &'v mut toml::Table {
    let mut at = doc;
    for step in path {
        at = if step == "[]" {
            &mut at.as_array_mut().unwrap()[0]
        } else {
            at.get_mut(step.as_str()).unwrap()
        };
    }
    at.as_table_mut().unwrap()
}

fn dotted(path: &[String], field: &str) -> String {
    let mut s = String::new();
    for step in path {
        if step == "[]" {
            s.push_str("[]");
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(step);
        }
    }
    if !s.is_empty() {
        s.push('.');
    }
    s + field
}

/// Every key the configuration `config` accepts, as dotted paths, into `out`; those
/// that hold tables (sections, arrays of tables) also into `sections`.
fn accepted_keys(
    config: &MachineConfig,
    out: &mut BTreeSet<String>,
    sections: &mut BTreeSet<String>,
) {
    let doc = Value::try_from(config).unwrap();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let mut probed = doc.clone();
        table_at(&mut probed, &path).insert(PROBE.into(), Value::Integer(1));
        let text = toml::to_string(&probed).unwrap();
        let err = MachineConfig::from_toml(&text, "probe")
            .err()
            .unwrap_or_else(|| panic!("{} is accepted", dotted(&path, PROBE)))
            .to_string();
        assert!(err.contains(PROBE), "{}: {err}", dotted(&path, "?"));
        let mut fields: BTreeSet<String> = expected_fields(&err).into_iter().collect();
        // The tag of a tagged section is not listed by the variant's fields.
        let here = table_at(&mut doc.clone(), &path).clone();
        for tag in ["kind", "policy"] {
            if here.contains_key(tag) {
                fields.insert(tag.into());
            }
        }
        for field in fields {
            out.insert(dotted(&path, &field));
            let mut sub = path.clone();
            sub.push(field.clone());
            match here.get(&field) {
                Some(Value::Table(_)) => {
                    sections.insert(dotted(&path, &field));
                    todo.push(sub);
                }
                Some(Value::Array(a)) if a.first().is_some_and(Value::is_table) => {
                    sections.insert(dotted(&path, &field));
                    sub.push("[]".into());
                    todo.push(sub);
                }
                _ => {}
            }
        }
    }
}

/// The keys docs/configuration.md writes as the first cell of a table row.
fn documented_keys(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(key, _)| key.to_string())
        .collect()
}

#[test]
fn the_configuration_reference_lists_every_field_the_code_accepts() {
    let (mut accepted, mut sections) = (BTreeSet::new(), BTreeSet::new());
    for config in configurations() {
        accepted_keys(&config, &mut accepted, &mut sections);
    }
    assert!(
        accepted.contains("page_table.buckets") && accepted.contains("tlb.levels[].arrays[].sets")
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let documented = documented_keys(&text);
    // Sections are documented by their fields (a row of their own is allowed).
    let missing: Vec<_> = accepted
        .difference(&documented)
        .filter(|k| !sections.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "{} does not document these fields (a table row starting | `key` |): {missing:?}",
        path.display()
    );
    let unknown: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        unknown.is_empty(),
        "{} documents fields the code does not accept: {unknown:?}",
        path.display()
    );
}

#[test]
fn the_probe_reads_the_fields_of_an_error() {
    assert_eq!(
        expected_fields("unknown field `x`, expected one of `a`, `b`, `c`"),
        ["a", "b", "c"]
    );
    assert_eq!(
        expected_fields("unknown field `x`, expected `a` or `b`"),
        ["a", "b"]
    );
    assert_eq!(
        dotted(&["tlb".into(), "levels".into(), "[]".into()], "sets"),
        "tlb.levels[].sets"
    );
}
