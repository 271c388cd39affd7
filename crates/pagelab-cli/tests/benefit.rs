//! `pagelab analyze benefit` end to end: the ranking of a program with one large
//! random-access block, the outputs agreeing with each other, the simulation beside
//! the prediction, and the one-line errors a user gets for bad input.

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

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn one_line_error(o: &Output) -> String {
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

#[test]
fn a_large_random_block_ranks_first_and_the_outputs_agree() {
    let t = trace("gups-rec.plt");
    let base = [
        "analyze",
        "benefit",
        "--trace",
        &t,
        "--page-size",
        "2M",
        "--quiet",
    ];
    let json: Value = serde_json::from_str(&ok(&pagelab(
        &[&base[..], &["--simulate", "--budget", "512", "--json", "-"]].concat(),
    )))
    .unwrap();
    let rows = json["rows"].as_array().unwrap();
    let rank = |m: &str| {
        rows.iter()
            .find(|r| r["mapping"] == m)
            .unwrap_or_else(|| panic!("no {m}"))["rank"]
            .as_u64()
            .unwrap()
    };
    assert!(rank("large-dynamic@2M") < rank("stack@2M"));
    assert!(rank("large-dynamic@2M") <= 2);
    assert_eq!(rows[0]["mapping"], "all small");
    assert_eq!(json["significance"]["passes"], true);
    // The table's 1 GiB block needs 512 large pages: the budget holds it.
    assert_eq!(json["choice"]["mapping"], "large-dynamic@2M");
    let v = &json["validation"];
    assert_eq!(v["rows"].as_array().unwrap().len(), rows.len());
    assert!(v["ranking_error"].as_f64().unwrap() < 10.0, "{v}");
    // The CSV has the same mappings and numbers.
    let csv = ok(&pagelab(&[&base[..], &["--csv", "-"]].concat()));
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("mapping,page_size,categories,translations,tlb_misses"));
    assert_eq!(lines.len(), rows.len() + 1);
    for (line, row) in lines[1..].iter().zip(rows) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f[0], row["mapping"].as_str().unwrap());
        assert_eq!(f[4], row["tlb_misses"].to_string());
    }
    // The table names the agent's choice and the ranking.
    let table = ok(&pagelab(&base));
    assert!(
        table.contains("agent: ") && table.contains("large-dynamic@2M"),
        "{table}"
    );
}

#[test]
fn a_trace_without_allocation_events_is_told_what_is_missing() {
    let out = ok(&pagelab(&[
        "analyze",
        "benefit",
        "--trace",
        &trace("xz.plt"),
        "--page-size",
        "2M",
        "--quiet",
    ]));
    assert!(out.contains("note: the trace has no"), "{out}");
    assert!(!out.contains("large-dynamic@"), "{out}");
}

#[test]
fn bad_input_gets_one_line_errors_naming_it() {
    let t = trace("gups-rec.plt");
    let rules = std::env::temp_dir().join(format!("pagelab-rules-{}.toml", std::process::id()));
    std::fs::write(&rules, "[[category]]\nname = \"static\"\nmin_size = 1\n").unwrap();
    let rules = rules.display().to_string();
    for (extra, says) in [
        (vec!["--budget", "-5"], "--budget -5"),
        (vec!["--tlb-miss-cycles", "-1"], "C_TLBmiss"),
        (vec!["--page-fault-cycles", "-3"], "C_PF"),
        (vec!["--seconds", "0"], "--seconds"),
        (vec!["--page-size", "64K"], "--page-size 64K"),
        (vec!["--categories", &rules], "is already a category"),
    ] {
        let args = [
            &["analyze", "benefit", "--trace", &t, "--quiet"][..],
            &extra,
        ]
        .concat();
        let e = one_line_error(&pagelab(&args));
        assert!(e.contains(says), "{extra:?}: {e}");
    }
}
