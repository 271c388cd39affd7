//! A simulation's report as flat columns: one name per number, the same in
//! `results export` (CSV, Parquet), `pagelab.results`, `pagelab.flatten_report` and
//! every `to_frame`. It reads the report's JSON, so a report stored by an older build
//! flattens too.
//!
//! Names:
//! - the counts without their `counts` prefix (`references`, `walks`, `walk_refs`,
//!   `page_faults`), references by kind as `loads`, `stores`, `fetches`, `modifies`;
//! - nested tables join their keys with `_` (`cycles_walks`, `baseline_speedup`);
//! - each TLB level's fields prefixed with its name (`stlb_hits`, `stlb_misses`,
//!   `stlb_miss_ratio`, `stlb_mpki`), its counts by page size with the size too
//!   (`stlb_2M_misses`); `miss_ratio` and `mpki` are the last level's (whose misses
//!   walk);
//! - each walk cache's fields with its table level (`walk_cache_l2_hits`);
//! - the policy's own counts as `policy_<name>` (spaces as `_`);
//! - of the free-memory samples, the last: `free_frames`, `free_usable_<size>`;
//! - each data-cache level's fields as `cache_<name>_…` (`cache_l1d_misses_data`), the
//!   caches' totals as `cache_…`;
//! - the pager's report as `paging_…` (`paging_daemon_wakes`).
//!
//! - the settings the machine was made with (`--set`, `with_overrides`, a sweep's
//!   keys) by their dotted keys (`tlb.levels.stlb.ways`), a list as its JSON text.
//!
//! Columns come in a fixed order: [`HEADLINE`] first (the settings after `machine`),
//! then the rest by name.

use serde_json::Value;

/// The columns first in every table, in this order, where the report has them.
pub const HEADLINE: [&str; 10] = [
    "machine",
    "references",
    "walks",
    "page_faults",
    "miss_ratio",
    "mpki",
    "translation_overhead_percent",
    "tlb_overhead_percent",
    "cycles_total",
    "walk_refs",
];

/// The names of the four kinds of reference, in the order of `counts.by_kind`.
pub const KIND_COLUMNS: [&str; 4] = ["loads", "stores", "fetches", "modifies"];

/// The report's columns: scalar values only (numbers, strings, booleans, null), in
/// the order of [`HEADLINE`], then by name.
pub fn columns(report: &Value) -> Vec<(String, Value)> {
    let mut row = Vec::new();
    if let Some(fields) = report.as_object() {
        for (key, value) in fields {
            field(&mut row, report, key, value);
        }
    }
    order(row)
}

/// The order of columns: [`HEADLINE`] first (the settings, dotted, after `machine`),
/// the rest by name.
pub fn column_order(a: &str, b: &str) -> std::cmp::Ordering {
    let rank = |name: &str| match HEADLINE.iter().position(|h| *h == name) {
        Some(i) => 2 * i,
        None if name.contains('.') => 1,
        None => 2 * HEADLINE.len(),
    };
    rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
}

/// `columns` in the fixed order.
fn order(mut row: Vec<(String, Value)>) -> Vec<(String, Value)> {
    row.sort_by(|(a, _), (b, _)| column_order(a, b));
    row.dedup_by(|a, b| a.0 == b.0);
    row
}

/// Every scalar of `value` under `prefix`, nested keys joined with `_`.
fn put(row: &mut Vec<(String, Value)>, prefix: &str, value: &Value) {
    match value {
        Value::Object(fields) => {
            for (k, v) in fields {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}_{k}")
                };
                put(row, &name, v);
            }
        }
        // A list of numbers the report does not name (e.g. per-size totals) is kept by
        // position.
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                put(row, &format!("{prefix}_{i}"), v);
            }
        }
        v => row.push((prefix.to_string(), v.clone())),
    }
}

/// A string field of an object, if it has one.
fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `value` without the field `key` (a copy).
fn without(value: &Value, keys: &[&str]) -> Value {
    let mut v = value.clone();
    if let Some(o) = v.as_object_mut() {
        for k in keys {
            o.remove(*k);
        }
    }
    v
}

fn field(row: &mut Vec<(String, Value)>, report: &Value, key: &str, value: &Value) {
    match (key, value) {
        ("counts", Value::Object(_)) => {
            if let Some(Value::Array(by_kind)) = value.get("by_kind") {
                for (name, n) in KIND_COLUMNS.iter().zip(by_kind) {
                    row.push((name.to_string(), n.clone()));
                }
            }
            put(row, "", &without(value, &["by_kind"]));
        }
        ("levels", Value::Array(levels)) => {
            for (i, level) in levels.iter().enumerate() {
                let name = text(level, "name").map_or_else(|| format!("level{i}"), str::to_string);
                if let Some(Value::Array(sizes)) = level.get("by_size") {
                    for s in sizes {
                        let size = text(s, "size").unwrap_or("size");
                        put(row, &format!("{name}_{size}"), &without(s, &["size"]));
                    }
                }
                put(row, &name, &without(level, &["name", "by_size"]));
            }
            if let Some(last) = levels.last() {
                for k in ["miss_ratio", "mpki"] {
                    row.push((k.to_string(), last.get(k).cloned().unwrap_or_default()));
                }
            }
        }
        ("walk_caches", Value::Array(caches)) => {
            for c in caches {
                let level = c.get("level").map_or_else(String::new, |l| l.to_string());
                put(
                    row,
                    &format!("walk_cache_l{level}"),
                    &without(c, &["level"]),
                );
            }
        }
        ("policy_stats", Value::Object(stats)) => {
            for (k, v) in stats {
                put(row, &format!("policy_{}", k.replace(' ', "_")), v);
            }
        }
        ("settings", Value::Object(settings)) => {
            for (k, v) in settings {
                let v = match v {
                    Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
                    v => v.clone(),
                };
                row.push((k.clone(), v));
            }
        }
        ("fragmentation_sizes", _) => {}
        ("fragmentation", Value::Array(samples)) => {
            if let Some(last) = samples.last() {
                row.push((
                    "free_frames".into(),
                    last.get("free_frames").cloned().unwrap_or_default(),
                ));
                let sizes = report.get("fragmentation_sizes").and_then(Value::as_array);
                let shares = last.get("usable_share").and_then(Value::as_array);
                if let (Some(sizes), Some(shares)) = (sizes, shares) {
                    for (size, share) in sizes.iter().zip(shares) {
                        let size = size
                            .as_str()
                            .map_or_else(|| size.to_string(), str::to_string);
                        row.push((format!("free_usable_{size}"), share.clone()));
                    }
                }
            }
        }
        ("cache", Value::Object(_)) => {
            if let Some(Value::Array(levels)) = value.get("levels") {
                for l in levels {
                    let name = text(l, "name").unwrap_or("level");
                    put(row, &format!("cache_{name}"), &without(l, &["name"]));
                }
            }
            put(row, "cache", &without(value, &["levels"]));
        }
        _ => put(row, key, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_flattens_to_named_scalars_headline_first() {
        let report = json!({
            "machine": "m",
            "settings": {"tlb.levels.stlb.ways": 16, "tlb.levels.stlb.page_sizes": ["4K", "2M"]},
            "counts": {"references": 6, "walks": 5, "page_faults": 3, "by_kind": [2, 1, 2, 1]},
            "levels": [
                {"name": "l1", "hits": 1, "misses": 5, "miss_ratio": 0.8, "mpki": 800.0,
                 "by_size": [{"size": "4K", "hits": 1, "misses": 5}]},
                {"name": "stlb", "hits": 2, "misses": 3, "miss_ratio": 0.6, "mpki": 500.0,
                 "by_size": []},
            ],
            "walk_caches": [{"level": 2, "hits": 7}],
            "policy_stats": {"candidates seen": 4},
            "cycles": {"walks": 10.0, "total": 99.0},
            "fragmentation_sizes": ["64K", "2M"],
            "fragmentation": [{"free_frames": 1, "usable_share": [0.0, 0.0]},
                              {"free_frames": 9, "usable_share": [0.5, 0.25]}],
            "cache": {"levels": [{"name": "l1d", "hits_data": 3}], "cycles": {"walk": 2.0}},
            "translation_overhead_percent": 12.5,
        });
        let row = columns(&report);
        let get = |k: &str| row.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let names: Vec<&str> = row.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names[..10],
            [
                "machine",
                "tlb.levels.stlb.page_sizes",
                "tlb.levels.stlb.ways",
                "references",
                "walks",
                "page_faults",
                "miss_ratio",
                "mpki",
                "translation_overhead_percent",
                "cycles_total"
            ]
        );
        for (k, v) in [
            ("tlb.levels.stlb.ways", json!(16)),
            ("tlb.levels.stlb.page_sizes", json!("[\"4K\",\"2M\"]")),
            ("loads", json!(2)),
            ("modifies", json!(1)),
            ("l1_hits", json!(1)),
            ("l1_4K_misses", json!(5)),
            ("stlb_miss_ratio", json!(0.6)),
            ("miss_ratio", json!(0.6)),
            ("mpki", json!(500.0)),
            ("walk_cache_l2_hits", json!(7)),
            ("policy_candidates_seen", json!(4)),
            ("cycles_walks", json!(10.0)),
            ("free_frames", json!(9)),
            ("free_usable_2M", json!(0.25)),
            ("cache_l1d_hits_data", json!(3)),
            ("cache_cycles_walk", json!(2.0)),
        ] {
            assert_eq!(get(k), Some(v), "{k}");
        }
        assert!(row.iter().all(|(_, v)| !v.is_object() && !v.is_array()));
        let rest = &names[10..];
        assert!(rest.windows(2).all(|w| w[0] < w[1]), "by name: {rest:?}");
    }

    #[test]
    fn what_is_not_a_report_gives_no_columns() {
        assert!(columns(&json!(null)).is_empty());
        assert!(columns(&json!([1, 2])).is_empty());
    }
}
