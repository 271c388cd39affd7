//! `--warmup`: the steady state from the command line (simulate, its baseline,
//! `analyze reuse`, a sweep's simulations), the same numbers each way, and the
//! warm-ups it refuses (docs/testing.md lists the kinds).

mod common;
use common::*;
use serde_json::Value;

fn json(d: &std::path::Path, args: &[&str]) -> Value {
    let o = run_in(d, args, None);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn simulate_leaves_the_warmup_out_and_reports_it_apart() {
    let d = folder("warmup-simulate");
    copy_trace(&d, "t.plt");
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "-q",
            "--trace",
            "t.plt",
            "--machine",
            "skylake",
            "--json",
            "-",
        ];
        args.extend(extra);
        json(&d, &args)
    };
    let whole = sim(&[]);
    let total = whole["report"]["counts"]["references"].as_u64().unwrap();
    let n = total / 4;
    let steady = sim(&["--warmup", &n.to_string(), "--baseline"]);
    let r = &steady["report"];
    assert_eq!(r["counts"]["references"].as_u64(), Some(total - n));
    assert_eq!(r["warmup"]["references"].as_u64(), Some(n));
    let faults = |v: &Value| v["counts"]["page_faults"].as_u64().unwrap();
    assert_eq!(
        faults(r) + r["warmup"]["page_faults"].as_u64().unwrap(),
        faults(&whole["report"]),
        "every fault is in the steady state or the warm-up"
    );
    assert!(steady["baseline"]["speedup"].as_f64().is_some());
    // A share of the input is the same warm-up, counted.
    let share = sim(&["--warmup", "25%"]);
    assert_eq!(share["report"]["warmup"]["references"].as_u64(), Some(n));
    // The table says so.
    let o = run_in(
        &d,
        &["simulate", "-q", "--trace", "t.plt", "--warmup", "0.25"],
        None,
    );
    let text = stdout(&o);
    assert!(
        text.contains(&format!("after a warm-up of {n} references"))
            && text.contains("warm-up: page faults"),
        "{text}"
    );
}

#[test]
fn reuse_counts_only_what_follows_the_warmup() {
    let d = folder("warmup-reuse");
    copy_trace(&d, "t.plt");
    let reuse = |extra: &[&str]| {
        let mut args = vec!["analyze", "reuse", "-q", "--trace", "t.plt", "--json", "-"];
        args.extend(extra);
        json(&d, &args)
    };
    let whole = reuse(&[]);
    let steady = reuse(&["--warmup", "50%"]);
    let total = whole["references"].as_u64().unwrap();
    assert_eq!(
        steady["references"].as_u64().unwrap() + steady["warmup_references"].as_u64().unwrap(),
        total
    );
    let cold = |v: &Value| v["page_sizes"][0]["cold"].as_u64().unwrap();
    assert!(
        cold(&steady) < cold(&whole),
        "the warm-up's pages are known after it"
    );
}

#[test]
fn a_sweeps_simulations_take_a_warmup_and_equal_the_command() {
    let d = folder("warmup-sweep");
    copy_trace(&d, "t.plt");
    write(
        &d,
        "s.toml",
        "traces = [\"t.plt\"]\nmachine = \"skylake\"\nanalysis = { kind = \"simulate\", warmup = \"10%\" }\n[grid]\n\"tlb.levels.stlb.ways\" = [4, 12]\n",
    );
    let o = run_in(&d, &["sweep", "-q", "s.toml", "-o", "r.db"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(&d, &["results", "export", "r.db", "--csv", "r.csv"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (ways, refs, warm) = (
        col("tlb.levels.stlb.ways"),
        col("references"),
        col("warmup_references"),
    );
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let cli = json(
            &d,
            &[
                "simulate",
                "-q",
                "--trace",
                "t.plt",
                "--machine",
                "skylake",
                "--set",
                &format!("tlb.levels.stlb.ways={}", f[ways]),
                "--warmup",
                "0.1",
                "--json",
                "-",
            ],
        );
        assert_eq!(cli["report"]["counts"]["references"].to_string(), f[refs]);
        assert_eq!(cli["report"]["warmup"]["references"].to_string(), f[warm]);
    }
}

#[test]
fn bad_warmups_are_refused_naming_them() {
    let d = folder("warmup-hostile");
    write(&d, "ok.lackey", LACKEY);
    for bad in ["ten", "100%", "1.5", "-3"] {
        let option = format!("--warmup={bad}");
        usage_refused(
            &d,
            &["simulate", "--trace", "ok.lackey", &option],
            "--warmup",
        );
    }
    usage_refused(
        &d,
        &["analyze", "reuse", "--trace", "ok.lackey", "--warmup", "x"],
        "--warmup",
    );
    // Longer than the input: nothing would be measured.
    for args in [
        &["simulate", "--trace", "ok.lackey", "--warmup", "2"][..],
        &["analyze", "reuse", "--trace", "ok.lackey", "--warmup", "5"],
    ] {
        refused(&d, args, &["ok.lackey", "warm-up of", "holds 2"]);
    }
    // A share needs the input's length: a pipe cannot be read twice.
    let o = run_in(
        &d,
        &["simulate", "--trace", "/dev/stdin", "--warmup", "10%"],
        Some(LACKEY.as_bytes()),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--warmup") && stderr(&o).contains("not a regular file"),
        "{}",
        stderr(&o)
    );
    // In a sweep file: named as the file's key, before any run.
    write(
        &d,
        "s.toml",
        "traces = [\"ok.lackey\"]\nanalysis = { kind = \"simulate\", warmup = \"lots\" }\n",
    );
    refused(&d, &["sweep", "s.toml", "-o", "r.db"], &["s.toml", "warm"]);
}
