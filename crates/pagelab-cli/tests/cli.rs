//! The command line end to end: bad input gives one line naming the file and offset,
//! conversions round-trip, and simulation of a bundled real trace works.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pagelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pagelab"))
        .args(args)
        .output()
        .expect("pagelab runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exactly one line, starting "pagelab: error:", naming the file and an offset.
fn assert_one_line_error(o: &Output, file: &Path) {
    assert!(!o.status.success(), "should fail");
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("pagelab: error: "), "{err}");
    assert!(
        err.contains(&file.display().to_string()),
        "names the file: {err}"
    );
    assert!(err.contains("offset "), "names the offset: {err}");
}

#[test]
fn truncated_native_trace_is_one_line_with_offset() {
    let whole = std::fs::read(repo().join("data/traces/xz.plt")).unwrap();
    for cut in [10, 100, whole.len() / 2, whole.len() - 1] {
        let path = scratch(&format!("cut{cut}.plt"));
        std::fs::write(&path, &whole[..cut]).unwrap();
        assert_one_line_error(&pagelab(&["trace", "info", path.to_str().unwrap()]), &path);
    }
}

#[test]
fn random_bytes_are_one_line_with_offset() {
    // A fixed pseudo-random sequence (xorshift), not valid in any format.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for name in ["random.bin", "random.plt", "random"] {
        let path = scratch(name);
        std::fs::write(&path, &bytes).unwrap();
        let o = pagelab(&["trace", "info", path.to_str().unwrap()]);
        assert_one_line_error(&o, &path);
        assert!(stderr(&o).contains("offset 0"), "{}", stderr(&o));
    }
}

#[test]
fn malformed_lackey_names_the_line() {
    let path = scratch("bad.lackey");
    std::fs::write(
        &path,
        "==1== header\nI  0401000,3\n L 7ff000,8\n L 7ff000;8\n",
    )
    .unwrap();
    let o = pagelab(&["trace", "info", path.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("line 4"), "{}", stderr(&o));
}

#[test]
fn lackey_round_trips_through_native() {
    let lackey = scratch("small.lackey");
    std::fs::write(
        &lackey,
        "I  0401000,3\n L 7ff000,8\n S 7ff010,4\n M 1234,16\nI  0401003,2\n",
    )
    .unwrap();
    let native = scratch("small.plt");
    let back = scratch("back.lackey");
    assert!(pagelab(&[
        "trace",
        "convert",
        "-q",
        lackey.to_str().unwrap(),
        native.to_str().unwrap()
    ])
    .status
    .success());
    assert!(pagelab(&[
        "trace",
        "convert",
        "-q",
        native.to_str().unwrap(),
        back.to_str().unwrap()
    ])
    .status
    .success());
    assert_eq!(
        std::fs::read_to_string(&back).unwrap(),
        "I  00401000,3\n L 007ff000,8\n S 007ff010,4\n M 00001234,16\nI  00401003,2\n"
    );
}

#[test]
fn simulate_bundled_trace_table_and_json() {
    let trace = repo().join("data/traces/xz.plt");
    let o = pagelab(&["simulate", "-q", "--trace", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    for row in [
        "references",
        "tlb misses",
        "misses / 1000 refs",
        "walk memory references",
        "page faults",
        "translation overhead",
    ] {
        assert!(table.contains(row), "missing {row}: {table}");
    }
    let o = pagelab(&[
        "simulate",
        "-q",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        "-",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let counts = &json["report"]["counts"];
    assert_eq!(counts["references"], 3_463_872);
    let tlb = &json["report"]["levels"][0];
    assert_eq!(tlb["name"], "tlb");
    let (hits, misses) = (
        tlb["hits"].as_u64().unwrap(),
        tlb["misses"].as_u64().unwrap(),
    );
    assert_eq!(hits + misses, counts["translations"].as_u64().unwrap());
    assert!(counts["page_faults"].as_u64().unwrap() > 100);
}

#[test]
fn config_errors_name_the_field() {
    let config = scratch("bad.toml");
    std::fs::write(
        &config,
        "[tlb]\nkind = \"set-associative\"\nsets = 16\nwayz = 4\n",
    )
    .unwrap();
    let o = pagelab(&["config", "--config", config.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("wayz") && err.contains("bad.toml"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    std::fs::write(&config, "[tlb]\nkind = \"set-associative\"\nsets = 0\n").unwrap();
    let err = stderr(&pagelab(&["config", "--config", config.to_str().unwrap()]));
    assert!(err.contains("tlb.sets"), "{err}");
}

/// Range translations refuse what cannot work, in one line naming the field: a range
/// TLB without a physical-memory model to make ranges in, of no entries, a
/// fragmentation threshold outside [0, 1].
#[test]
fn range_config_errors_name_the_field() {
    let config = scratch("bad-ranges.toml");
    let level =
        "[tlb]\nkind = \"hierarchy\"\n[[tlb.levels]]\nname = \"l2\"\n[[tlb.levels.arrays]]\n";
    let cases = [
        (
            format!("{level}[tlb.levels.range]\n[ranges]\nallocation = \"eager\"\n"),
            "frames.kind",
        ),
        (
            format!("{level}[tlb.levels.range]\nentries = 0\n[frames]\nkind = \"buddy\"\n[ranges]\nallocation = \"eager\"\n"),
            "tlb.levels[0].range.entries",
        ),
        (
            "[frames]\nkind = \"buddy\"\n[ranges]\nallocation = \"eager\"\nfragmentation_threshold = 1.5\n".to_string(),
            "ranges.fragmentation_threshold",
        ),
        (
            "[ranges]\nfragmentation_threshold = -0.1\n".to_string(),
            "ranges.fragmentation_threshold",
        ),
    ];
    for (text, field) in cases {
        std::fs::write(&config, &text).unwrap();
        let o = pagelab(&["config", "--config", config.to_str().unwrap()]);
        assert!(!o.status.success(), "{text} is accepted");
        let err = stderr(&o);
        assert!(err.contains(field), "{field} not named: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn converting_a_file_onto_itself_refuses_and_keeps_it() {
    let trace = scratch("self.plt");
    std::fs::copy(repo().join("data/traces/xz.plt"), &trace).unwrap();
    let before = std::fs::read(&trace).unwrap();
    let dir = trace.parent().unwrap();
    let other_spelling = dir.join(".").join("self.plt");
    let o = pagelab(&[
        "trace",
        "convert",
        "-q",
        trace.to_str().unwrap(),
        other_spelling.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("would overwrite"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        before,
        "the input is intact"
    );
}

/// The machine file the README shows is one pagelab accepts, and simulates with.
#[test]
fn the_readme_machine_example_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("```toml\n")
        .expect("the README shows a TOML machine")
        + 8;
    let toml = &readme[start..start + readme[start..].find("```").unwrap()];
    let config = scratch("readme-machine.toml");
    std::fs::write(&config, toml).unwrap();
    let trace = repo().join("data/traces/xz.plt");
    let o = pagelab(&[
        "simulate",
        "--config",
        config.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The rows of a `pagetables compare` table: the lines after its header.
fn compare_rows(o: &Output) -> Vec<String> {
    assert!(o.status.success(), "{}", stderr(o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = out.lines().skip_while(|l| !l.starts_with("structure"));
    lines.next().expect("a header");
    lines
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn pagetables_compare_on_a_trace_and_a_layout() {
    let trace = repo().join("data/traces/xz.plt");
    let json = scratch("compare.json");
    let csv = scratch("compare.csv");
    let o = pagelab(&[
        "pagetables",
        "compare",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let rows = compare_rows(&o);
    let names = pagelab_core::pagetable::NAMES;
    assert_eq!(rows.len(), names.len(), "{rows:?}");
    for (row, name) in rows.iter().zip(names) {
        assert!(row.starts_with(name), "{row} is not {name}");
    }
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let structures = value["structures"].as_array().unwrap();
    assert_eq!(structures.len(), names.len());
    for s in structures {
        for field in [
            "refs_mean",
            "refs_p99",
            "lines_mean",
            "footprint_bytes",
            "map_refs_mean",
        ] {
            assert!(s[field].is_number(), "{field} in {s}");
        }
        for update in ["map", "protect", "promote", "demote", "unmap"] {
            assert!(
                s["segment"][update].as_u64().unwrap() > 0,
                "{update} in {s}"
            );
        }
        // Every reference of the trace is one lookup in every structure.
        assert_eq!(s["lookups"], structures[0]["lookups"]);
        assert!(s["refs_mean"].as_f64().unwrap() >= 1.0, "{s}");
    }
    let csv_lines = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(csv_lines, names.len() + 1);
    assert!(String::from_utf8_lossy(&o.stdout).contains("update one 2 MiB segment"));

    let o = pagelab(&["pagetables", "compare", "--layout", "sparse", "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let value: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(value["source"], "layout sparse");
    assert_eq!(value["structures"].as_array().unwrap().len(), names.len());
    assert_eq!(
        compare_rows(&pagelab(&["pagetables", "compare", "--layout", "sparse"])).len(),
        names.len()
    );

    // An unwritable output names its file.
    let bad = Path::new("/nonexistent/dir/out.csv");
    let o = pagelab(&[
        "pagetables",
        "compare",
        "--layout",
        "dense",
        "--csv",
        bad.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("/nonexistent/dir/out.csv"),
        "{}",
        stderr(&o)
    );
}

/// The microbenchmark with a policy and mechanism named on the command line, against
/// base pages: superpages remove nearly every miss and the report says so; a wrong
/// name is an error naming the option.
#[test]
fn a_policy_against_base_pages_on_the_microbenchmark() {
    let o = pagelab(&[
        "simulate",
        "-q",
        "--machine",
        "pa-risc-128",
        "--policy",
        "asap",
        "--mechanism",
        "remap",
        "--synthetic",
        "column-walk:iterations=64",
        "--baseline",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &v["baseline"];
    assert_eq!(b["base_walks"], 4096 * 64);
    assert!(b["walks_removed"].as_f64().unwrap() > 0.9, "{b}");
    assert!(b["speedup"].as_f64().unwrap() > 1.0, "{b}");
    assert!(v["report"]["counts"]["promotions"].as_u64().unwrap() > 0);
    let table = pagelab(&[
        "simulate",
        "-q",
        "--machine",
        "pa-risc-128",
        "--policy",
        "asap",
        "--synthetic",
        "column-walk:iterations=2",
        "--baseline",
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("against base pages") && text.contains("speedup"),
        "{text}"
    );
    let bad = pagelab(&["simulate", "--policy", "asp", "--synthetic", "column-walk"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("--policy") && stderr(&bad).contains("asap"),
        "{}",
        stderr(&bad)
    );
}

/// Every preset runs every promotion policy from the command line, with the policy's
/// defaults: its superpage sizes come from what the preset's TLB and page table hold.
/// A preset with eager paging runs `none` and refuses the others, saying why; one
/// that coalesces refuses the policies that follow the TLB's entries, saying why.
#[test]
fn every_preset_runs_every_policy() {
    let mut failed = Vec::new();
    for machine in pagelab_core::presets::names() {
        let preset = pagelab_core::presets::load(machine).unwrap();
        let eager = preset.ranges.allocation == pagelab_core::config::Allocation::Eager;
        let coalesces = preset.coalescing.is_some();
        for policy in pagelab_core::superpage::NAMES {
            let o = pagelab(&[
                "simulate",
                "-q",
                "--machine",
                machine,
                "--policy",
                policy,
                "--synthetic",
                "column-walk:iterations=4",
            ]);
            if coalesces && stderr(&o).contains("which coalescing widens") {
                if !["online", "approx-online"].contains(policy) {
                    failed.push(format!("{machine} {policy}: refused for coalescing"));
                }
                continue;
            }
            let refused = stderr(&o).contains("eager paging with a promotion policy");
            let expected = !eager || *policy == "none";
            if o.status.success() != expected || (!expected && !refused) {
                failed.push(format!("{machine} {policy}: {}", stderr(&o).trim_end()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `--set` is the edit a user would make to the printed configuration: the machine
/// `config --set` prints, simulated from its file, counts what `simulate --set` counts.
#[test]
fn a_setting_equals_editing_the_configuration() {
    let set = [
        "--set",
        "tlb.levels.stlb.ways=16",
        "--set",
        "tlb.levels.dtlb.replacement=fifo",
    ];
    let mut config = vec!["config", "--machine", "skylake"];
    config.extend(set);
    let printed = pagelab(&config);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(text.contains("ways = 16"), "{text}");
    let file = scratch("set.toml");
    std::fs::write(&file, &text).unwrap();
    let trace = repo().join("data/traces/xz.plt");
    // The report of a simulation of `machine` (its counts and levels).
    let run = |machine: &[&str]| {
        let mut args = vec![
            "simulate",
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            "-",
        ];
        args.extend(machine);
        let o = pagelab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["report"]["counts"].clone(), v["report"]["levels"].clone())
    };
    let mut set_on_skylake = vec!["--machine", "skylake"];
    set_on_skylake.extend(set);
    let direct = run(&set_on_skylake);
    assert_eq!(direct, run(&["--config", file.to_str().unwrap()]));
    assert_ne!(
        run(&["--machine", "skylake"]),
        direct,
        "the settings change the run"
    );
}
