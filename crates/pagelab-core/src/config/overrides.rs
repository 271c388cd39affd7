//! Overrides of a configuration by dotted keys, as sweeps and `Machine.with_overrides`
//! name them: `"tlb.levels.stlb.ways" = 16`, `"page_table.kind" = "hashed"`,
//! `"tlb.levels.0.sets" = 64`. A segment after an array of tables picks an element by
//! its `name` (TLB levels, cache levels) or by its index; every other segment is a
//! table key; a TLB level's `sets`, `ways`, `replacement` and `page_sizes` are its
//! first array's (`tlb.levels.stlb.ways`). A `kind` (or `promotion.policy`) starts its
//! table afresh with that kind's defaults, before the other overrides. A key that
//! does not exist yet is added, so that an override can set a
//! field left to its default; the result is read back as a whole configuration, so an
//! unknown field or a bad value is the configuration's own one-line error, naming the
//! override.

use super::MachineConfig;
use toml::Value;

/// Why overrides were refused: the override at fault when one is (by itself), and
/// what is wrong, without positions in the document the overrides were applied to
/// (the user never sees it).
#[derive(Clone, Debug, PartialEq)]
pub struct OverrideError {
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for OverrideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{key}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// `base` with each `(dotted key, value)` of `overrides` set, in order.
pub fn apply(base: &MachineConfig, overrides: &[(String, Value)]) -> Result<MachineConfig, String> {
    apply_keyed(base, overrides).map_err(|e| e.to_string())
}

/// A `KEY=VALUE` of the command line (`--set tlb.levels.stlb.ways=16`): the value is
/// read as one TOML value (`16`, `true`, `"lru"`, `["4K", "2M"]`), or taken as a string
/// when it is not one (`--set page_table.kind=hashed`).
pub fn parse_assignment(text: &str) -> Result<(String, Value), String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(format!(
            "{text:?} is not KEY=VALUE (a dotted key as sweeps name them, e.g. tlb.levels.stlb.ways=16)"
        ));
    };
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(format!("{text:?}: {key:?} is not a dotted key"));
    }
    let value = value.trim();
    let one = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .filter(|t| t.len() == 1)
        .and_then(|mut t| t.remove("v"));
    Ok((
        key.to_string(),
        one.unwrap_or_else(|| Value::String(value.to_string())),
    ))
}

/// A kind (or a promotion policy) starts its table afresh.
fn is_tag(key: &str) -> bool {
    key.ends_with(".kind") || key == "kind" || key == "promotion.policy"
}

/// `config` with `overrides` added to its record of settings: a kind (or policy) set
/// anew drops the earlier settings of its table, which it replaced.
fn recorded(mut config: MachineConfig, overrides: &[(String, Value)]) -> MachineConfig {
    for (key, _) in overrides.iter().filter(|(k, _)| is_tag(k)) {
        let table = key.rsplit_once('.').map_or("", |(t, _)| t);
        let prefix = format!("{table}.");
        config
            .settings
            .retain(|k, _| table.is_empty() || !k.starts_with(&prefix));
    }
    for (key, value) in overrides {
        // A table or list set whole replaces the settings inside it, and a field set
        // inside one set before updates what that records only by its own key.
        let inside = format!("{key}.");
        config.settings.retain(|k, _| !k.starts_with(&inside));
        config.settings.insert(key.clone(), value.clone());
    }
    config
}

/// The same, saying which override is at fault.
pub fn apply_keyed(
    base: &MachineConfig,
    overrides: &[(String, Value)],
) -> Result<MachineConfig, OverrideError> {
    if overrides.is_empty() {
        return Ok(base.clone());
    }
    let text = document(base, overrides)?;
    let message = match read_back(&text) {
        Ok(config) => return Ok(recorded(config, overrides)),
        Err(message) => message,
    };
    // The override at fault: the first that is refused by itself (with the kinds the
    // others set, which decide what its table holds), with its own error.
    let alone_error = |o: &(String, Value)| {
        let mut alone: Vec<(String, Value)> = overrides
            .iter()
            .filter(|(k, _)| is_tag(k) && !is_tag(&o.0))
            .cloned()
            .collect();
        alone.push(o.clone());
        match document(base, &alone) {
            Ok(t) => read_back(&t).err(),
            Err(e) => Some(e.message),
        }
    };
    let culprit = overrides
        .iter()
        .find_map(|o| alone_error(o).map(|message| (&o.0, message)));
    let on = format!("(on {})", base.name);
    Err(match culprit {
        Some((key, message)) => {
            // The field named only when it is not the override's own last segment.
            let last = key.rsplit('.').next().unwrap_or(key);
            let message = message
                .strip_prefix(&format!("{last}: "))
                .unwrap_or(&message)
                .to_string();
            // A TLB level's own fields, as serde lists them, leave out the shortcuts
            // to its first array's.
            let parts: Vec<&str> = key.split('.').collect();
            let level = parts.len() == 4 && parts[..2] == ["tlb", "levels"];
            let message = if level && message.starts_with("unknown field") {
                format!(
                    "{message}, or its first array's `sets`, `ways`, `replacement`, `page_sizes`"
                )
            } else {
                message
            };
            OverrideError {
                key: Some(key.clone()),
                message: format!("{message} {on}"),
            }
        }
        None => {
            let keys: Vec<&str> = overrides.iter().map(|(k, _)| k.as_str()).collect();
            OverrideError {
                key: None,
                message: format!("{} together: {message} {on}", keys.join(", ")),
            }
        }
    })
}

/// `base` with `overrides` set, as TOML text; an override that cannot be set is
/// named.
fn document(base: &MachineConfig, overrides: &[(String, Value)]) -> Result<String, OverrideError> {
    let whole = |message: String| OverrideError { key: None, message };
    let mut doc: Value = Value::try_from(base).map_err(|e| whole(format!("{}: {e}", base.name)))?;
    let at = |key: &str| {
        let key = key.to_string();
        move |message: String| OverrideError {
            key: Some(key),
            message,
        }
    };
    // A new kind (`page_table.kind`, `promotion.policy`) starts its table afresh, with
    // that kind's defaults: first, so that the other overrides land in it.
    for (key, value) in overrides.iter().filter(|(k, _)| is_tag(k)) {
        let (table, tag) = key.rsplit_once('.').unwrap_or(("", key));
        let mut fresh = toml::Table::new();
        fresh.insert(tag.to_string(), value.clone());
        if table.is_empty() {
            set(&mut doc, key, value.clone()).map_err(at(key))?;
        } else {
            set(&mut doc, table, Value::Table(fresh)).map_err(at(key))?;
        }
    }
    for (key, value) in overrides.iter().filter(|(k, _)| !is_tag(k)) {
        set(&mut doc, key, value.clone()).map_err(at(key))?;
    }
    toml::to_string(&doc).map_err(|e| whole(e.to_string()))
}

/// The configuration a document of overrides makes, or its error as "field: what",
/// without a line of the document. A `variant_of` set by an override is resolved as
/// in a configuration file.
fn read_back(text: &str) -> Result<MachineConfig, String> {
    if let Some(merged) = super::variant::resolve(text, "the overrides").map_err(|e| e.0)? {
        return read_back(&merged);
    }
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let message = e.message().trim().replace('\n', " ");
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count());
        match line.and_then(|l| super::field_at_fault(text, l, e.message()).1) {
            Some(field) => format!("{field}: {message}"),
            None => message,
        }
    })
}

/// Set the dotted `key` of `doc` to `value`.
fn set(doc: &mut Value, key: &str, value: Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("not a dotted key (an empty segment)".to_string());
    }
    let mut at = doc;
    for (i, part) in parts.iter().enumerate() {
        let path = parts[..=i].join(".");
        let last = i + 1 == parts.len();
        at = match at {
            Value::Table(t) => {
                if last {
                    // A TLB level's sets, ways, replacement or page sizes are those of
                    // its first array (the one that holds base pages).
                    let own = t.contains_key(*part);
                    let first_array = t
                        .get_mut("arrays")
                        .and_then(Value::as_array_mut)
                        .and_then(|a| a.first_mut())
                        .and_then(Value::as_table_mut)
                        .filter(|a| !own && a.contains_key(*part));
                    match first_array {
                        Some(array) => array.insert(part.to_string(), value),
                        None => t.insert(part.to_string(), value),
                    };
                    return Ok(());
                }
                t.entry(part.to_string())
                    .or_insert_with(|| Value::Table(Default::default()))
            }
            Value::Array(items) => {
                let found = match part.parse::<usize>() {
                    Ok(n) => n,
                    Err(_) => items
                        .iter()
                        .position(|v| v.get("name").and_then(Value::as_str) == Some(part))
                        .ok_or_else(|| {
                            let names: Vec<&str> = items
                                .iter()
                                .filter_map(|v| v.get("name").and_then(Value::as_str))
                                .collect();
                            format!(
                                "no element of {} is named {part:?} (there are {})",
                                parts[..i].join("."),
                                if names.is_empty() {
                                    format!("{} unnamed, by index", items.len())
                                } else {
                                    names.join(", ")
                                }
                            )
                        })?,
                };
                let len = items.len();
                let item = items
                    .get_mut(found)
                    .ok_or_else(|| format!("{path} is past the end ({len} elements)"))?;
                if last {
                    *item = value;
                    return Ok(());
                }
                item
            }
            _ => return Err(format!("{} is a value, not a table", parts[..i].join("."))),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skylake preset, from its text (the configuration module does not use
    /// `crate::presets`, which uses it).
    fn skylake() -> MachineConfig {
        let (_, text) = super::super::preset_texts::PRESETS
            .iter()
            .find(|(n, _)| *n == "skylake")
            .unwrap();
        MachineConfig::from_toml(text, "skylake").unwrap()
    }

    fn ov(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn the_settings_are_recorded_and_a_new_kind_drops_its_tables_old_ones() {
        let sky = skylake();
        assert!(sky.settings.is_empty());
        let once = apply(
            &sky,
            &ov(&[
                ("tlb.levels.stlb.ways", Value::Integer(16)),
                ("page_table.levels", Value::Integer(5)),
            ]),
        )
        .unwrap();
        let keys = |c: &MachineConfig| c.settings.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&once), ["page_table.levels", "tlb.levels.stlb.ways"]);
        // Through TOML and back, as a file or a Python Machine carries it.
        let read = MachineConfig::from_toml(&once.to_toml(), "t").unwrap();
        assert_eq!(read, once);
        let twice = apply(
            &read,
            &ov(&[("page_table.kind", Value::String("hashed".into()))]),
        )
        .unwrap();
        assert_eq!(keys(&twice), ["page_table.kind", "tlb.levels.stlb.ways"]);
    }

    #[test]
    fn dotted_keys_reach_levels_by_name_and_index() {
        let sky = skylake();
        let c = apply(
            &sky,
            &ov(&[
                ("tlb.levels.stlb.ways", Value::Integer(16)),
                ("tlb.levels.0.arrays.0.sets", Value::Integer(8)),
                ("cost.page_fault_cycles", Value::Float(1234.0)),
            ]),
        )
        .unwrap();
        let crate::config::TlbConfig::Hierarchy(h) = &c.tlb else {
            panic!("a hierarchy")
        };
        let stlb = h.levels.iter().find(|l| l.name == "stlb").unwrap();
        assert_eq!(stlb.arrays[0].ways, 16);
        assert_eq!(h.levels[0].arrays[0].sets, 8);
        let cost = c.cost.as_simple().unwrap();
        assert_eq!(cost.page_fault_cycles, 1234.0);
        // Untouched: the rest of the machine.
        assert_eq!(apply(&sky, &[]).unwrap(), sky);
    }

    #[test]
    fn assignments_read_toml_values_or_else_strings() {
        let p = |t: &str| parse_assignment(t).unwrap();
        assert_eq!(
            p("tlb.levels.stlb.ways=16"),
            ("tlb.levels.stlb.ways".into(), Value::Integer(16))
        );
        assert_eq!(
            p(" page_table.kind = hashed "),
            ("page_table.kind".into(), Value::String("hashed".into()))
        );
        assert_eq!(
            p("a.b=\"lru\""),
            ("a.b".into(), Value::String("lru".into()))
        );
        assert_eq!(p("a=1.5"), ("a".into(), Value::Float(1.5)));
        assert_eq!(
            p("a=[\"4K\", \"2M\"]").1,
            Value::Array(vec![Value::String("4K".into()), Value::String("2M".into())])
        );
        // A value that would smuggle a second key in stays one string.
        assert_eq!(p("a=1\nb = 2").1, Value::String("1\nb = 2".into()));
        for bad in ["ways", "=16", "a..b=1", ".a=1"] {
            let e = parse_assignment(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn a_bad_override_is_a_one_line_error_naming_it() {
        let sky = skylake();
        for (key, value, says) in [
            (
                "tlb.levels.l9.ways",
                Value::Integer(2),
                "no element of tlb.levels is named \"l9\"",
            ),
            (
                "tlb.levels.stlb.wayz",
                Value::Integer(2),
                "first array's `sets`, `ways`",
            ),
            (
                "tlb.levels.stlb.ways",
                Value::String("x".into()),
                "tlb.levels.stlb.ways",
            ),
            ("name.first", Value::Integer(1), "is a value"),
            ("tlb..ways", Value::Integer(1), "empty segment"),
            ("tlb.levels.99.ways", Value::Integer(1), "past the end"),
        ] {
            let e = apply(&sky, &ov(&[(key, value)])).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{key}: {e}");
        }
    }
}
