//! `pagelab sweep` end to end: a sweep of 24 runs over two recordings, killed with
//! SIGKILL halfway and started again, ends with every run present once and results
//! identical to a sweep never interrupted; bad sweep files are refused before any run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pagelab-sweep-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn trace(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name)
        .display()
        .to_string()
}

fn sweep_file() -> PathBuf {
    let p = scratch("sweep.toml");
    std::fs::write(
        &p,
        format!(
            "traces = [{:?}, {:?}]\nmachine = \"skylake\"\n[grid]\n\"tlb.levels.stlb.ways\" = [4, 8, 12]\n\"tlb.levels.dtlb.replacement\" = [\"lru\", \"fifo\"]\n[zip]\n\"cost.walk_ref_cycles\" = [8.0, 12.0]\n",
            trace("chess-large-rec.plt"),
            trace("gups-rec.plt")
        ),
    )
    .unwrap();
    p
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The runs of a database, one line each, without the time they took (column 7).
fn runs(db: &Path) -> Vec<String> {
    let csv = ok(Command::new(PAGELAB)
        .args(["results", "export"])
        .arg(db)
        .args(["--csv", "-"])
        .output()
        .unwrap());
    let mut lines: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(6);
            f.join(",")
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_sweep_killed_halfway_and_restarted_has_every_run_once() {
    let file = sweep_file();
    let whole = scratch("whole.db");
    ok(Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(&whole)
        .arg("--quiet")
        .output()
        .unwrap());
    let expected = runs(&whole);
    assert_eq!(expected.len(), 24);
    assert!(expected.iter().all(|l| l.contains(",ok,")), "{expected:?}");

    // One run at a time, killed once 6 runs are in.
    let cut = scratch("cut.db");
    let mut child = Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(&cut)
        .args(["--quiet", "-j", "1"])
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The runs committed so far: none while the database is being created (the file
    // may exist before its tables do).
    let committed = |db: &Path| {
        let o = Command::new(PAGELAB)
            .args(["results", "export"])
            .arg(db)
            .args(["--csv", "-"])
            .output()
            .unwrap();
        match o.status.success() {
            true => String::from_utf8_lossy(&o.stdout).lines().skip(1).count(),
            false => 0,
        }
    };
    loop {
        let done = committed(&cut);
        if done >= 6 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the sweep made no progress"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let partial = runs(&cut);
    assert!(partial.len() < 24, "the sweep ended before it was killed");
    let out = Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(&cut)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("{} already in", partial.len())),
        "{said}"
    );
    // Every run once, the same numbers as the sweep never interrupted.
    assert_eq!(runs(&cut), expected);
}

#[test]
fn bad_sweeps_are_refused_before_any_run() {
    for (name, text, says) in [
        (
            "unknown",
            "traces = [\"T\"]\n[grid]\n\"tlb.wayz\" = [1]\n",
            "wayz",
        ),
        (
            "missing",
            "traces = [\"/nonexistent/t.plt\"]\n",
            "no such file",
        ),
        (
            "empty",
            "traces = [\"T\"]\n[grid]\n\"tlb.ways\" = []\n",
            "empty axis",
        ),
        (
            "bad-synthetic",
            "traces = [\"synthetic:column-walk:iterationz=4\"]\n",
            "traces[0]",
        ),
    ] {
        let file = scratch(&format!("{name}.toml"));
        std::fs::write(&file, text.replace('T', &trace("xz.plt"))).unwrap();
        let db = scratch(&format!("{name}.db"));
        let o = Command::new(PAGELAB)
            .arg("sweep")
            .arg(&file)
            .arg("-o")
            .arg(&db)
            .output()
            .unwrap();
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(says) && e.trim().lines().count() == 1,
            "{name}: {e}"
        );
        assert!(!db.exists(), "{name}: the database was made");
    }
}

#[test]
fn a_synthetic_workload_is_a_trace_of_a_sweep() {
    // The promotion paper's microbenchmark at two repetition counts, with and without
    // asap: each run as `simulate --synthetic` gives it.
    let file = scratch("synthetic.toml");
    std::fs::write(
        &file,
        "traces = [\"synthetic:column-walk:iterations=4\", \"synthetic:column-walk:iterations=16\"]\nmachine = \"pa-risc-32\"\n[grid]\n\"promotion.policy\" = [\"none\", \"asap\"]\n",
    )
    .unwrap();
    let db = scratch("synthetic.db");
    sweep_quietly(&file, &db);
    let rows = runs(&db);
    assert_eq!(rows.len(), 4);
    let report: serde_json::Value = serde_json::from_str(&ok(Command::new(PAGELAB)
        .args([
            "simulate",
            "--machine",
            "pa-risc-32",
            "--policy",
            "asap",
            "--quiet",
        ])
        .args(["--synthetic", "column-walk:iterations=16", "--json", "-"])
        .output()
        .unwrap()))
    .unwrap();
    let walks = report["report"]["counts"]["walks"].to_string();
    let row = rows
        .iter()
        .find(|r| r.contains("iterations=16") && r.contains("asap"))
        .unwrap();
    // key, trace, analysis, version, status, error, promotion.policy, machine,
    // references, walks (without the seconds).
    assert_eq!(row.split(',').nth(9), Some(walks.as_str()), "{row}");
}

/// Run the sweep `file` into `db`, without progress; its standard output.
fn sweep_quietly(file: &Path, db: &Path) -> String {
    ok(Command::new(PAGELAB)
        .arg("sweep")
        .arg(file)
        .arg("-o")
        .arg(db)
        .arg("--quiet")
        .output()
        .unwrap())
}

/// A stored result of the database (JSON): the first whose `column` satisfies `pick`.
fn stored_where(db: &Path, column: &str, pick: impl Fn(&str) -> bool) -> serde_json::Value {
    let csv = ok(Command::new(PAGELAB)
        .args(["results", "export"])
        .arg(db)
        .args(["--whole", "--csv", "-"])
        .output()
        .unwrap());
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let row = reader
        .records()
        .map(Result::unwrap)
        .find(|r| pick(&r[at(column)]))
        .unwrap_or_else(|| panic!("no such run in {}", db.display()));
    serde_json::from_str(&row[at("report")]).unwrap()
}

/// A stored result of the database, by its trace's name (JSON).
fn stored(db: &Path, trace_ends: &str) -> serde_json::Value {
    stored_where(db, "trace", |t| t.ends_with(trace_ends))
}

#[test]
fn an_analysis_sweep_stores_what_its_command_writes() {
    // Page tables over the three layouts: each run's result is the command's --json
    // (less the page tables' lookup rate, a timing).
    let file = scratch("analyses.toml");
    std::fs::write(
        &file,
        "traces = [\"layout:dense\", \"layout:sparse\", \"layout:shared\"]\nanalysis = \"pagetables\"\n",
    )
    .unwrap();
    let db = scratch("analyses.db");
    let sweep = |file: &Path| {
        ok(Command::new(PAGELAB)
            .arg("sweep")
            .arg(file)
            .arg("-o")
            .arg(&db)
            .arg("--quiet")
            .output()
            .unwrap())
    };
    sweep(&file);
    let untimed = |mut v: serde_json::Value| {
        for row in v["structures"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("lookups_per_second");
        }
        v["structures"].clone()
    };
    for layout in ["dense", "sparse", "shared"] {
        let direct: serde_json::Value = serde_json::from_str(&ok(Command::new(PAGELAB)
            .args(["pagetables", "compare", "--layout", layout, "--json", "-"])
            .output()
            .unwrap()))
        .unwrap();
        assert_eq!(
            untimed(stored(&db, &format!("layout:{layout}"))),
            untimed(direct),
            "{layout}"
        );
    }
    // A layout is an input of page tables only, said before any run.
    std::fs::write(&file, "traces = [\"layout:dense\"]\n").unwrap();
    let o = Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(scratch("never.db"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("\"pagetables\" only"),
        "{e}"
    );
    assert!(!scratch("never.db").exists());
}

/// Every kind a sweep file can name (the registry's `NAMES`), with its default
/// options, stores what its command (`Kind::command`) writes with `--json`, less where
/// the trace is and how long the run took, which are the run's own.
#[test]
fn every_analysis_sweep_stores_what_its_command_writes() {
    let db = scratch("every-analysis.db");
    let file = scratch("every-analysis.toml");
    let path = trace("sqlite-rec.plt");
    /// `v` without its timings and the trace's path, at any depth.
    fn comparable(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for key in [
                    "trace",
                    "source",
                    "seconds",
                    "salvaged",
                    "lookups_per_second",
                ] {
                    map.remove(key);
                }
                map.values_mut().for_each(comparable);
            }
            serde_json::Value::Array(list) => list.iter_mut().for_each(comparable),
            _ => {}
        }
    }
    for name in pagelab_sweep::Analysis::NAMES {
        let analysis = pagelab_sweep::Analysis::named(name).unwrap();
        std::fs::write(
            &file,
            format!("traces = [{path:?}]\nmachine = \"zen4\"\nanalysis = {name:?}\n"),
        )
        .unwrap();
        sweep_quietly(&file, &db);
        let command = analysis.kind().command(&path, "zen4");
        let mut direct: serde_json::Value = serde_json::from_str(&ok(Command::new(PAGELAB)
            .args(&command)
            .args(["--json", "-"])
            .output()
            .unwrap()))
        .unwrap_or_else(|e| panic!("{name}: {command:?}: {e}"));
        if let Some(member) = analysis.kind().stored_member() {
            direct = direct[member].take();
        }
        let mut stored = stored_where(&db, "analysis", |a| a == *name);
        comparable(&mut stored);
        comparable(&mut direct);
        assert_eq!(stored, direct, "{name}: {command:?}");
    }
}
