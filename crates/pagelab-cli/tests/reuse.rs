//! `pagelab analyze reuse` end to end: the miss curve it predicts from one pass is what
//! `pagelab simulate` measures with a fully associative LRU TLB of that size, and the
//! outputs and errors are what a user is told.

use serde_json::Value;
use std::path::Path;
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

fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_predicted_curve_is_what_simulation_measures() {
    let t = trace("bunzip2-rec.plt");
    let r = ok_json(&pagelab(&[
        "analyze",
        "reuse",
        "--trace",
        &t,
        "--page-size",
        "4K,2M",
        "--json",
        "-",
        "--quiet",
    ]));
    assert_eq!(r["exact"], true);
    let sizes = r["page_sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2);
    let curve = sizes[0]["curve"].as_array().unwrap();
    let misses_at = |n: u64| {
        curve
            .iter()
            .find(|c| c[0].as_u64() == Some(n))
            .unwrap_or_else(|| panic!("no point at {n}"))[1]
            .as_u64()
            .unwrap()
    };
    for n in [16u64, 64] {
        let config =
            std::env::temp_dir().join(format!("pagelab-reuse-fa{n}-{}.toml", std::process::id()));
        std::fs::write(
            &config,
            format!(
                "[tlb]\nkind = \"set-associative\"\nsets = 1\nways = {n}\nreplacement = \"lru\"\n"
            ),
        )
        .unwrap();
        let sim = ok_json(&pagelab(&[
            "simulate",
            "--config",
            config.to_str().unwrap(),
            "--trace",
            &t,
            "--json",
            "-",
            "--quiet",
        ]));
        assert_eq!(
            sim["report"]["levels"][0]["misses"].as_u64().unwrap(),
            misses_at(n),
            "{n} entries"
        );
    }
    // 2M pages: fewer distinct pages, every first reference a miss.
    assert!(sizes[1]["distinct_pages"].as_u64() < sizes[0]["distinct_pages"].as_u64());
}

#[test]
fn the_table_and_csv_are_written() {
    let t = trace("xz.plt");
    let o = pagelab(&["analyze", "reuse", "--trace", &t, "--csv", "-", "--quiet"]);
    assert!(o.status.success());
    let csv = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        csv.lines().next(),
        Some("page_size,entries,misses,miss_ratio,exact,sample_rate")
    );
    assert!(csv.lines().any(|l| l.starts_with("4K,64,")), "{csv}");
    let o = pagelab(&["analyze", "reuse", "--trace", &t, "--quiet"]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("(exact)") && table.contains("4096"),
        "{table}"
    );
}

#[test]
fn a_bad_page_size_is_named() {
    let o = pagelab(&[
        "analyze",
        "reuse",
        "--trace",
        &trace("xz.plt"),
        "--page-size",
        "4K,3M",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--page-size") && err.contains("3M"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
