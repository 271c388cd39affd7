//! `pagelab sweep` over the last TLB level's geometry: run in one pass by default,
//! the same results as `--separate` (every run on its own), byte for byte; a sweep one
//! pass cannot follow (data caches) runs each configuration alone, with the same
//! results too; `--separate` with `--ray` is refused before anything is made.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pagelab-one-pass-test-{}", std::process::id()));
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

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// How many different times `seconds` holds: a pass shares its time among its runs.
fn distinct(seconds: &[String]) -> usize {
    seconds
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The runs of a database (key first), sorted, with the seconds each took apart.
fn runs(db: &Path) -> (Vec<String>, Vec<String>) {
    let csv = ok(Command::new(PAGELAB)
        .args(["results", "export"])
        .arg(db)
        .args(["--whole", "--csv", "-"])
        .output()
        .unwrap());
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = headers.iter().position(|h| h == "seconds").unwrap();
    let mut rows: Vec<(String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let rest: Vec<&str> = r
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, f)| f)
                .collect();
            (rest.join("\u{1f}"), r[at].to_string())
        })
        .collect();
    rows.sort();
    rows.into_iter().unzip()
}

fn sweep(name: &str, grid: &str, extra: &[&str]) -> PathBuf {
    let file = scratch(&format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "traces = [{:?}, {:?}]\nmachine = \"skylake\"\n{grid}",
            trace("gups-rec.plt"),
            trace("sqlite-rec.plt")
        ),
    )
    .unwrap();
    let db = scratch(&format!("{name}.db"));
    let _ = std::fs::remove_file(&db);
    ok(Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(&db)
        .arg("--quiet")
        .args(extra)
        .output()
        .unwrap());
    db
}

const GEOMETRIES: &str = "[grid]\n\"tlb.levels.stlb.sets\" = [16, 100, 128]\n\"tlb.levels.stlb.ways\" = [1, 6, 12]\n\
    [zip]\n\"tlb.levels.stlb.replacement\" = [\"lru\"]\n\"walk_caches\" = [[]]\n\"cache.levels\" = [[]]\n";

#[test]
fn one_pass_gives_what_separate_runs_give() {
    let (one, one_seconds) = runs(&sweep("one", GEOMETRIES, &[]));
    let (apart, apart_seconds) = runs(&sweep("apart", GEOMETRIES, &["--separate"]));
    assert_eq!(one.len(), 18);
    assert_eq!(one, apart);
    // A pass shares its time among its runs: one figure per trace.
    assert_eq!(distinct(&one_seconds), 2, "{one_seconds:?}");
    assert!(distinct(&apart_seconds) > 2, "{apart_seconds:?}");
}

#[test]
fn one_pass_with_the_presets_walk_caches_gives_what_separate_runs_give() {
    let grid = GEOMETRIES.replace("\"walk_caches\" = [[]]\n", "");
    let (one, one_seconds) = runs(&sweep("walk-caches", &grid, &[]));
    let (apart, _) = runs(&sweep("walk-caches-apart", &grid, &["--separate"]));
    assert_eq!(one.len(), 18);
    assert_eq!(one, apart);
    assert_eq!(distinct(&one_seconds), 2, "{one_seconds:?}");
}

#[test]
fn a_sweep_one_pass_cannot_follow_runs_each_alone() {
    // Data caches hold the data and the walks of each geometry: one pass would be wrong.
    let grid = "[grid]\n\"tlb.levels.stlb.sets\" = [64, 128]\n[zip]\n\"tlb.levels.stlb.replacement\" = [\"lru\"]\n";
    let (one, one_seconds) = runs(&sweep("data-caches", grid, &[]));
    let (apart, _) = runs(&sweep("data-caches-apart", grid, &["--separate"]));
    assert_eq!(one, apart);
    assert_eq!(distinct(&one_seconds), 4, "{one_seconds:?}");
}

#[test]
fn separate_with_ray_is_refused_before_anything_is_made() {
    let file = scratch("refused.toml");
    std::fs::write(&file, format!("traces = [{:?}]\n", trace("xz.plt"))).unwrap();
    let db = scratch("refused.db");
    let o = Command::new(PAGELAB)
        .arg("sweep")
        .arg(&file)
        .arg("-o")
        .arg(&db)
        .args(["--separate", "--ray", "auto"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--separate") && err.contains("--ray"), "{err}");
    assert!(!db.exists());
}
