//! `pagelab trace info` attributes every reference to one data category
//! (papers/multiple-page-size-modeling-cpo.md §3.3) from the recorded memory map and
//! allocations, and says so when a trace has neither.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn info(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name);
    let o = Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(["trace", "info", path.to_str().unwrap(), "--json"])
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
