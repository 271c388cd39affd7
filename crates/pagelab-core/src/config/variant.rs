//! Variants: a configuration that starts with `variant_of = "<preset>"` is that preset
//! with the document's values laid over it. Tables merge key by key; a list of tables
//! whose entries are named (`[[tlb.levels]]`) merges entry by entry by `name` (an
//! entry of a new name is added at the end); any other value replaces the preset's. A
//! table that names another `kind` or `policy` than the preset's replaces it whole
//! (the old kind's fields would not fit the new one).
//!
//! ```toml
//! variant_of = "sandy-bridge"
//! name = "sandy-bridge-rmm"
//! [[tlb.levels]]
//! name = "stlb"
//! [tlb.levels.range]
//! entries = 32
//! ```

use super::ConfigError;
use toml::{Table, Value};

/// The document `text` (from `origin`) with its preset laid under it, as TOML text,
/// or `None` if it names no preset.
pub fn resolve(text: &str, origin: &str) -> Result<Option<String>, ConfigError> {
    if !text.contains("variant_of") {
        return Ok(None);
    }
    let Ok(mut over) = toml::from_str::<Table>(text) else {
        // A syntax error: the plain reading reports it.
        return Ok(None);
    };
    let Some(base) = over.remove("variant_of") else {
        return Ok(None);
    };
    let Value::String(name) = base else {
        return Err(ConfigError(format!(
            "{origin}: variant_of: name a machine preset, as a string"
        )));
    };
    let Some((_, preset)) = super::PRESETS.iter().find(|(n, _)| *n == name) else {
        return Err(ConfigError(format!(
            "{origin}: variant_of: no machine preset is named {name:?} (presets: {})",
            super::PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let mut under: Table = toml::from_str(preset)
        .map_err(|e| ConfigError(format!("machines/{name}.toml: {}", e.message())))?;
    if under.contains_key("variant_of") {
        return Err(ConfigError(format!(
            "{origin}: variant_of: {name:?} is itself a variant; name the preset it varies"
        )));
    }
    merge(&mut under, over);
    Ok(Some(toml::to_string(&under).expect("a table serializes")))
}

fn merge(under: &mut Table, over: Table) {
    for (key, value) in over {
        match (under.get_mut(&key), value) {
            (Some(Value::Table(u)), Value::Table(o)) if same_kind(u, &o) => merge(u, o),
            (Some(Value::Array(u)), Value::Array(o)) if named(u) && named(&o) => {
                for entry in o {
                    let Value::Table(entry) = entry else {
                        unreachable!("named")
                    };
                    let name = entry.get("name").cloned();
                    match u.iter_mut().find(|e| e.get("name") == name.as_ref()) {
                        Some(Value::Table(t)) => merge(t, entry),
                        _ => u.push(Value::Table(entry)),
                    }
                }
            }
            (_, value) => {
                under.insert(key, value);
            }
        }
    }
}

/// Whether `over` keeps the tag (`kind`, `policy`) of `under`, or gives none.
fn same_kind(under: &Table, over: &Table) -> bool {
    ["kind", "policy"]
        .iter()
        .all(|tag| over.get(*tag).map_or(true, |o| under.get(*tag) == Some(o)))
}

/// A list of tables, each with a name.
fn named(list: &[Value]) -> bool {
    list.iter().all(|e| {
        e.as_table()
            .is_some_and(|t| t.get("name").is_some_and(Value::is_str))
    })
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;

    #[test]
    fn a_variant_changes_only_what_it_names() {
        let doc = r#"
variant_of = "sandy-bridge"
name = "mine"
[[tlb.levels]]
name = "stlb"
hit_cycles = 9.0
[cost]
walk_ref_cycles = 20.0
"#;
        let mine = MachineConfig::from_toml(doc, "mine.toml").unwrap();
        let (_, text) = crate::config::PRESETS
            .iter()
            .find(|(n, _)| *n == "sandy-bridge")
            .unwrap();
        let base = MachineConfig::from_toml(text, "sandy-bridge").unwrap();
        assert_eq!(mine.name, "mine");
        let (crate::config::TlbConfig::Hierarchy(a), crate::config::TlbConfig::Hierarchy(b)) =
            (&mine.tlb, &base.tlb)
        else {
            panic!("hierarchies")
        };
        assert_eq!(a.levels.len(), b.levels.len());
        assert_eq!(a.levels[2].hit_cycles, 9.0);
        assert_eq!(a.levels[2].arrays, b.levels[2].arrays);
        assert_eq!(a.levels[0], b.levels[0]);
        let (c, d) = (
            mine.cost.as_simple().unwrap(),
            base.cost.as_simple().unwrap(),
        );
        assert_eq!(c.walk_ref_cycles, 20.0);
        assert_eq!(c.page_fault_cycles, d.page_fault_cycles);
        assert_eq!(mine.walk_caches, base.walk_caches);
    }

    /// Another kind of page table: the preset's radix fields (levels) do not follow.
    #[test]
    fn a_variant_of_another_kind_replaces_the_table() {
        let doc = "variant_of = \"sandy-bridge\"\n[page_table]\nkind = \"hashed\"\n";
        let mine = MachineConfig::from_toml(doc, "mine.toml").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(
                mine.page_table,
                crate::pagetable::PageTableConfig::Hashed(_)
            ),
            "{:?}",
            mine.page_table
        );
    }

    #[test]
    fn an_unknown_preset_is_named() {
        let e = MachineConfig::from_toml("variant_of = \"pentium\"\n", "x.toml").unwrap_err();
        assert!(
            e.0.starts_with("x.toml: variant_of: no machine preset is named \"pentium\""),
            "{e}"
        );
    }
}
