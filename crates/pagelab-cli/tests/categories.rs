//! `pagelab trace info` attributes every reference to one data category
//! (Cașcaval et al., "Multiple Page Size Modeling and Optimization", PACT 2005, §3.3)
//! from the recorded memory map and allocations, and says so when a trace has neither.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn info(name: &str) -> Value {
    info_with(name, &[])
}

fn info_with(name: &str, extra: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name);
    let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(["trace", "info", path.to_str().unwrap(), "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["info"].clone()
}

fn category(i: &Value, name: &str) -> (u64, u64) {
    let c = i["categories"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c[0] == name)
        .unwrap_or_else(|| panic!("no category {name}"));
    (c[1].as_u64().unwrap(), c[2].as_u64().unwrap())
}

#[test]
fn every_reference_has_one_category() {
    let i = info("gups-rec.plt");
    let total: u64 = [
        "static",
        "small-dynamic",
        "large-dynamic",
        "stack",
        "code",
        "other",
    ]
    .iter()
    .map(|c| category(&i, c).0)
    .sum();
    assert_eq!(total, i["references"].as_u64().unwrap());
    // GUPS's 1 GiB table (aligned_alloc) is large dynamic: nearly every page.
    let (refs, pages) = category(&i, "large-dynamic");
    assert!(
        refs > 2_000_000 && pages > 250_000,
        "{refs} refs, {pages} pages"
    );
    assert!(i["categories"]["note"].is_null());
}

#[test]
fn a_trace_without_events_says_what_is_missing() {
    let i = info("xz.plt");
    let note = i["categories"]["note"].as_str().unwrap();
    assert!(
        note.contains("no memory map and no allocation events"),
        "{note}"
    );
    assert_eq!(category(&i, "other").0, i["references"].as_u64().unwrap());
}

#[test]
fn a_user_category_takes_the_blocks_of_its_call_site() {
    let before = info("chess-large-rec.plt");
    // The call site with the most bytes: the engine's hash table.
    let top = &before["categories"]["callsites"][0];
    assert_eq!(top["category"], "large-dynamic");
    let site = top["callsite"].as_str().unwrap().to_string();
    let rules = std::env::temp_dir().join(format!("pagelab-cat-{}.toml", std::process::id()));
    std::fs::write(
        &rules,
        format!("[[category]]\nname = \"hash\"\ncallsites = [\"{site}\"]\n"),
    )
    .unwrap();
    let after = info_with(
        "chess-large-rec.plt",
        &["--categories", rules.to_str().unwrap()],
    );
    let (hash, _) = category(&after, "hash");
    let (large_before, _) = category(&before, "large-dynamic");
    let (large_after, _) = category(&after, "large-dynamic");
    assert!(hash > 0);
    // The references move from large dynamic to the new category, none lost.
    assert_eq!(large_after + hash, large_before);
    assert_eq!(after["categories"]["callsites"][0]["category"], "hash");
}

/// A rule by function that names nothing is refused naming the file and the field.
#[test]
fn a_rule_by_function_must_name_one() {
    let rules = std::env::temp_dir().join(format!("pagelab-fn-{}.toml", std::process::id()));
    for (text, says) in [
        (
            "[[category]]\nname = \"t\"\nfunctions = [\"  \"]\n",
            "category[0].functions",
        ),
        (
            "[[category]]\nname = \"t\"\nfunctions = []\n",
            "give callsites, functions",
        ),
        (
            "[[category]]\nname = \"t\"\nfunctions = \"make_table\"\n",
            "line 3",
        ),
    ] {
        std::fs::write(&rules, text).unwrap();
        let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/xz.plt");
        let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
            .args(["trace", "info", trace.to_str().unwrap(), "--categories"])
            .arg(&rules)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{text}: {err}");
        assert!(
            err.contains(rules.to_str().unwrap()) && err.contains(says),
            "{text}: {err}"
        );
    }
}
