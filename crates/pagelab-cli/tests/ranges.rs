//! Range translations from the command line, on the bundled recording of the GUPS
//! kernel (1 GiB table, random updates): `analyze contiguity` finds a handful of
//! ranges where 4K pages need a quarter of a million entries, and `compare
//! translation` shows RMM removing the page walks, in every output form.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pagelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(args)
        .output()
        .expect("pagelab runs")
}

fn trace(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name)
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-ranges-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Entries that map `percent` of the footprint with the mapping named `name`.
fn entries(c: &Value, name: &str, percent: f64) -> u64 {
    let m = c["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no mapping {name}"));
    m["curve"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0].as_f64() == Some(percent))
        .unwrap()[1]
        .as_u64()
        .unwrap()
}

#[test]
fn contiguity_of_gups_needs_few_ranges() {
    let gups = trace("gups-rec.plt");
    let c = json_of(&pagelab(&[
        "analyze",
        "contiguity",
        "--trace",
        &gups,
        "--json",
        "-",
        "--quiet",
    ]));
    assert!(c["footprint_pages"].as_u64().unwrap() > 250_000);
    assert!(entries(&c, "4K pages", 99.0) > 250_000);
    assert!(entries(&c, "2M pages", 99.0) > 500);
    assert!(entries(&c, "ideal ranges", 99.0) <= 2);
    assert!(entries(&c, "eager ranges", 99.0) <= 4);
    // Every curve rises to the whole footprint.
    for m in c["mappings"].as_array().unwrap() {
        let curve = m["curve"].as_array().unwrap();
        assert_eq!(curve.len(), 101);
        assert_eq!(curve.last().unwrap()[1], m["entries"]);
        let n: Vec<u64> = curve.iter().map(|p| p[1].as_u64().unwrap()).collect();
        assert!(n.windows(2).all(|w| w[0] <= w[1]), "{}", m["name"]);
    }

    // The CSV: one row per mapping and share, the same numbers.
    let csv = scratch("gups-contiguity.csv");
    let o = pagelab(&[
        "analyze",
        "contiguity",
        "--trace",
        &gups,
        "--csv",
        csv.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().next(), Some("mapping,percent,entries"));
    assert_eq!(text.lines().count(), 1 + 5 * 101);
    let row = format!("4K pages,99,{}", entries(&c, "4K pages", 99.0));
    assert!(text.lines().any(|l| l == row), "{row}");
    // And the table on standard output.
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(table.contains("eager ranges"), "{table}");
}

/// A trace without allocation events: eager paging makes no ranges, and says how to
/// give it the regions.
#[test]
fn contiguity_without_events_says_so() {
    let o = pagelab(&[
        "analyze",
        "contiguity",
        "--trace",
        &trace("xz.plt"),
        "--quiet",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("--region"), "{out}");
}

#[test]
fn rmm_removes_the_page_walks_of_gups() {
    let o = pagelab(&[
        "compare",
        "translation",
        "--trace",
        &trace("gups-rec.plt"),
        "--json",
        "-",
        "--quiet",
    ]);
    let r = json_of(&o);
    let rows = r["schemes"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|s| s["scheme"].as_str().unwrap()).collect();
    assert_eq!(names, ["4K", "THP 2M", "1G", "DS", "RMM"]);
    let row = |name: &str| rows.iter().find(|s| s["scheme"] == name).unwrap();
    let (base, rmm) = (row("4K"), row("RMM"));
    // The same trace for every scheme.
    assert!(rows.iter().all(|s| s["references"] == base["references"]));
    assert!(base["mpki"].as_f64().unwrap() > 100.0);
    assert_eq!(base["bloat_bytes"], 0);
    assert!(rmm["walk_cycles_removed_percent"].as_f64().unwrap() >= 95.0);
    assert!(rmm["range_hits"].as_u64().unwrap() > 1_000_000);
    // Eager paging maps the table at once: no faults, and memory never touched.
    assert_eq!(rmm["page_faults"], 0);
    assert!(rmm["bloat_bytes"].as_i64().unwrap() > 0);
}

#[test]
fn compare_translation_refuses_to_overwrite_its_trace() {
    let copy = scratch("copy.plt");
    std::fs::copy(trace("xz.plt"), &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let o = pagelab(&[
        "compare",
        "translation",
        "--trace",
        copy.to_str().unwrap(),
        "--csv",
        copy.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--csv") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), before);
}

#[test]
fn coalescing_schemes_say_when_a_machine_cannot_run_them() {
    // A page table without 2M pages has no huge page for mTHP's folios to fall
    // under: the scheme is not run, and the reason is given; PTE coalescing runs.
    let o = pagelab(&[
        "compare",
        "translation",
        "--coalescing",
        "--machine",
        "mips-r4x00",
        "--trace",
        &trace("xz.plt"),
        "--json",
        "-",
        "--quiet",
    ]);
    let r = json_of(&o);
    let names: Vec<&str> = r["schemes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scheme"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["4K", "PTE coalescing", "DS", "RMM"]);
    let skipped: Vec<&str> = r["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("mTHP 64K: promotion.sizes")),
        "{skipped:?}"
    );
}

#[test]
fn contiguity_on_a_machine_without_eager_paging_leaves_its_regions_alone() {
    // Regions are eager paging's: a demand-paged machine runs without them, and the
    // coalescable footprint is still read from its frames.
    let o = pagelab(&[
        "analyze",
        "contiguity",
        "--machine",
        "sandy-bridge",
        "--region",
        "0x400000+4M",
        "--trace",
        &trace("xz.plt"),
        "--json",
        "-",
        "--quiet",
    ]);
    let r = json_of(&o);
    assert!(r.get("eager_ranges").is_none(), "{r}");
    assert_eq!(r["coalescable"].as_array().unwrap().len(), 9);
}
