//! Hostile input, as a careless or hostile user gives it: every case must end in a
//! clear one-line error naming the file or the field (or, where the input is fine,
//! the right numbers), never abort, never exit 0 with a wrong number, and never change
//! an input file. Every run has at most 100 MB of data memory.
//!
//! Add a case here for every kind of bad input found; docs/testing.md lists the kinds.

mod common;
use common::*;
use std::io::Write;

#[test]
fn an_access_past_the_top_of_the_address_space_is_an_error() {
    let d = folder("wrap");
    write(&d, "w.lackey", " L fffffffffffffff0,100\n");
    refused(
        &d,
        &["simulate", "--trace", "w.lackey"],
        &["w.lackey", "past the top of the address space"],
    );
}

#[test]
fn pipes_are_read_once_and_detected_from_what_was_read() {
    let d = folder("pipes");
    let o = run_in(
        &d,
        &["trace", "info", "--json", "/dev/stdin"],
        Some(LACKEY.as_bytes()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["info"]["references"], 2, "{}", stdout(&o));
    let o = run_in(
        &d,
        &[
            "trace",
            "convert",
            "-q",
            "--from",
            "addrs",
            "/dev/stdin",
            "out.addrs",
        ],
        Some(b"R 0x1000 8\nW 0x2000 4\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = std::fs::read_to_string(d.join("out.addrs")).unwrap();
    assert_eq!(out.lines().count(), 2, "no line lost: {out}");
    // Detected, not told: the first bytes are replayed to the reader.
    let o = run_in(
        &d,
        &["simulate", "-q", "--trace", "/dev/stdin"],
        Some(LACKEY.as_bytes()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("references                                        2"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_endless_line_is_an_error_at_its_line() {
    let d = folder("long-line");
    let mut line = b" L 10,".to_vec();
    line.resize(32 << 20, b'1');
    write(
        &d,
        "long.lackey.zst",
        zstd::encode_all(&line[..], 19).unwrap(),
    );
    refused(
        &d,
        &["simulate", "--trace", "long.lackey.zst"],
        &["long.lackey.zst", "line 1", "longer than"],
    );
}

#[test]
fn huge_references_are_refused_and_never_queued_whole() {
    let d = folder("huge-refs");
    write(&d, "big.lackey", " L 10000000,4294967295\n".repeat(400));
    refused(
        &d,
        &["simulate", "--machine", "skylake", "--trace", "big.lackey"],
        &["big.lackey", "max_reference"],
    );
}

#[test]
fn machines_too_large_for_memory_are_refused_before_they_are_built() {
    let d = folder("too-large");
    write(&d, "ok.lackey", LACKEY);
    write(
        &d,
        "hashed.toml",
        "[page_table]\nkind = \"hashed\"\nbuckets = 1073741824\n",
    );
    write(
        &d,
        "clustered.toml",
        "[page_table]\nkind = \"clustered\"\nbuckets = 1073741824\n",
    );
    let mut levels = String::from("[tlb]\nkind = \"hierarchy\"\n");
    for i in 0..40 {
        levels += &format!("[[tlb.levels]]\nname = \"l{i}\"\n");
        if i < 39 {
            levels += &format!("parent = \"l{}\"\n", i + 1);
        }
        levels += "[[tlb.levels.arrays]]\nsets = 1048576\nways = 64\n";
    }
    write(&d, "levels.toml", levels);
    let mut caches = String::from("[cache]\n");
    for i in 0..16 {
        caches += &format!("[[cache.levels]]\nname = \"c{i}\"\nsets = 4194304\nways = 16\n");
    }
    write(&d, "caches.toml", caches);
    for (file, field) in [
        ("hashed.toml", "page_table.buckets"),
        ("clustered.toml", "page_table.buckets"),
        ("levels.toml", "tlb.levels["),
        ("caches.toml", "cache.levels["),
    ] {
        refused(
            &d,
            &["simulate", "--trace", "ok.lackey", "--config", file],
            &[file, field, "max_memory"],
        );
    }
}

#[test]
fn a_name_that_contradicts_the_content_is_an_error_naming_the_content() {
    let d = folder("wrong-name");
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 0);
    xz.write_all(&[0x5au8; 4096]).unwrap();
    write(&d, "x.u64", xz.finish().unwrap());
    write(&d, "text.plt", LACKEY);
    let mut lackey_xz = xz2::write::XzEncoder::new(Vec::new(), 0);
    lackey_xz.write_all(LACKEY.as_bytes()).unwrap();
    write(&d, "l.u64", lackey_xz.finish().unwrap());
    write(&d, "empty.plt", "");
    refused(
        &d,
        &["simulate", "--trace", "x.u64"],
        &["x.u64", "xz-compressed"],
    );
    refused(
        &d,
        &["simulate", "--trace", "text.plt"],
        &["text.plt", "lackey text"],
    );
    refused(
        &d,
        &["simulate", "--trace", "l.u64"],
        &["l.u64", "lackey text"],
    );
    refused(
        &d,
        &["simulate", "--trace", "empty.plt"],
        &["empty.plt", "empty"],
    );
}

#[test]
fn configuration_errors_name_the_file_and_the_field() {
    let d = folder("config");
    write(&d, "ok.lackey", LACKEY);
    write(
        &d,
        "cost.toml",
        "[cost]\nkind = \"simple\"\npage_fault_cycles = 1e308\n",
    );
    write(
        &d,
        "sets.toml",
        "[tlb]\nkind = \"set-associative\"\nsets = 0\n",
    );
    write(&d, "type.toml", "seed = \"many\"\n");
    write(
        &d,
        "tagged.toml",
        "[page_table]\nkind = \"hashed\"\n\nbuckets = \"many\"\n",
    );
    write(&d, "maxref.toml", "max_reference = \"1K\"\n");
    write(
        &d,
        "clear.toml",
        "[cost]\nkind = \"simple\"\nlarge_fault_cycles_per_page = -1\n",
    );
    refused(
        &d,
        &["simulate", "--trace", "ok.lackey", "--config", "clear.toml"],
        &["clear.toml", "cost.large_fault_cycles_per_page"],
    );
    refused(
        &d,
        &["simulate", "--trace", "ok.lackey", "--config", "cost.toml"],
        &["cost.toml", "cost.page_fault_cycles"],
    );
    refused(
        &d,
        &["simulate", "--trace", "ok.lackey", "--config", "sets.toml"],
        &["sets.toml", "tlb.sets"],
    );
    refused(
        &d,
        &["simulate", "--trace", "ok.lackey", "--config", "type.toml"],
        &["type.toml", "line 1: seed"],
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "ok.lackey",
            "--config",
            "tagged.toml",
        ],
        &["tagged.toml", "line 4: buckets"],
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "ok.lackey",
            "--config",
            "maxref.toml",
        ],
        &["maxref.toml", "max_reference"],
    );
    write(
        &d,
        "bucket.toml",
        "[page_table]\nkind = \"clustered\"\nbucket = \"tag\"\n",
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "ok.lackey",
            "--config",
            "bucket.toml",
        ],
        &["bucket.toml", "bucket", "pointer"],
    );
    // Another program's file cache: a share of buddy memory, with the wired frames.
    for (name, frames) in [
        ("cached-big.toml", "kind = \"buddy\"\ncached = 1.5\n"),
        ("cached-nan.toml", "kind = \"buddy\"\ncached = nan\n"),
        (
            "cached-wired.toml",
            "kind = \"buddy\"\ncached = 0.6\nwired = 0.6\n",
        ),
        ("cached-simple.toml", "kind = \"simple\"\ncached = 0.5\n"),
    ] {
        write(&d, name, format!("[frames]\nmemory = \"64M\"\n{frames}"));
        refused(
            &d,
            &["simulate", "--trace", "ok.lackey", "--config", name],
            &[name, "cached"],
        );
    }
}

/// `pagelab repro`'s trace cache, where the papers' kernels are recorded: a cache
/// that is a file is refused, naming it, before anything runs or is written.
#[test]
fn a_trace_cache_that_cannot_be_made_is_refused_before_any_run() {
    let d = folder("cache");
    write(&d, "cache", "not a folder\n");
    refused(
        &d,
        &[
            "repro",
            "fang",
            "--no-report",
            "-o",
            "out",
            "--cache",
            "cache",
        ],
        &["cache", "trace cache"],
    );
    assert!(!d.join("out").join("results.db").exists());
}

#[test]
fn options_are_held_to_their_ranges() {
    let d = folder("ranges");
    write(&d, "ok.lackey", LACKEY);
    usage_refused(
        &d,
        &["trace", "convert", "--level", "99", "ok.lackey", "o.plt"],
        "--level",
    );
    usage_refused(
        &d,
        &[
            "trace",
            "convert",
            "--chunk-refs",
            "0",
            "ok.lackey",
            "o.plt",
        ],
        "--chunk-refs",
    );
    usage_refused(
        &d,
        &["record", "--sample", "0", "-o", "r.plt", "--", "true"],
        "--sample",
    );
    usage_refused(
        &d,
        &[
            "record",
            "--no-follow-exec",
            "--skip-exec",
            "/usr/*",
            "-o",
            "r.plt",
            "--",
            "true",
        ],
        "--skip-exec",
    );
}

#[test]
fn a_recorder_stream_cut_short_is_an_error_unless_salvaged() {
    let d = folder("pgrec");
    // The header, two reference words, and no END record.
    let mut bytes = b"PGLREC01".to_vec();
    bytes.extend_from_slice(&(1u64 | 1 << 8 | 1 << 16).to_le_bytes());
    for addr in [0x1000u64, 0x2000] {
        bytes.extend_from_slice(&(addr | 8 << 48).to_le_bytes());
    }
    write(&d, "cut.pgrec", &bytes);
    refused(
        &d,
        &["trace", "info", "cut.pgrec"],
        &["cut.pgrec", "--salvage"],
    );
    let o = run_in(
        &d,
        &["trace", "info", "--json", "--salvage", "cut.pgrec"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["info"]["references"], 2);
    assert!(v["salvaged"]
        .as_str()
        .unwrap()
        .contains("without its END record"));
    let o = run_in(
        &d,
        &[
            "simulate",
            "-q",
            "--salvage",
            "--trace",
            "cut.pgrec",
            "--json",
            "-",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["salvaged"].is_string(), "{v}");
}

#[test]
fn a_trace_of_no_references_is_an_error() {
    let d = folder("empty");
    write(&d, "none.lackey", "==1== just valgrind's chatter\n");
    refused(
        &d,
        &["simulate", "--trace", "none.lackey"],
        &["none.lackey", "no references"],
    );
    // Every analysis refuses it too, writing nothing.
    refused(
        &d,
        &[
            "analyze",
            "reuse",
            "--trace",
            "none.lackey",
            "--json",
            "out.json",
        ],
        &["none.lackey", "no references"],
    );
}

#[test]
fn an_address_beyond_a_table_reach_is_an_error_naming_it() {
    let d = folder("reach");
    write(&d, "high.lackey", " L 1000000000000,8\n L 1000,8\n");
    write(&d, "linear.toml", "[page_table]\nkind = \"linear\"\n");
    refused(
        &d,
        &["simulate", "--trace", "high.lackey"],
        &[
            "high.lackey",
            "0x1000000000000",
            "48-bit",
            "page_table.levels = 5",
        ],
    );
    refused(
        &d,
        &[
            "simulate",
            "--trace",
            "high.lackey",
            "--config",
            "linear.toml",
        ],
        &["high.lackey", "48-bit", "map any 64-bit address"],
    );
    refused(
        &d,
        &["pagetables", "compare", "--trace", "high.lackey"],
        &["high.lackey", "radix", "48-bit"],
    );
}

/// A drmemtrace folder of 5,000 threads, each in four segments interleaved with all
/// the others, is merged within 100 MB and 256 open files, reference for reference.
#[test]
fn a_drmemtrace_folder_of_thousands_of_threads_is_merged_in_bounded_memory() {
    use pagelab_core::trace::drmemtrace::write::Writer;
    let d = folder("drmemtrace-threads");
    let trace = d.join("app.dir").join("trace");
    std::fs::create_dir_all(&trace).unwrap();
    const THREADS: u64 = 5_000;
    for t in 0..THREADS {
        let mut w = Writer::new(6, 10_000 + t, 77, 1_000 + t);
        for segment in 0..4u64 {
            if segment > 0 {
                w.timestamp(1_000 + segment * 10_000 + t);
            }
            w.instr(0x40_0000 + segment * 4, 4)
                .read(0x1000_0000 + t * 4096 + segment * 64, 8);
        }
        let name = format!("drmemtrace.app.{}.0000.trace", 10_000 + t);
        std::fs::write(trace.join(name), w.finish()).unwrap();
    }
    let o = run_in(&d, &["trace", "info", "--json", "app.dir"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["info"]["references"], 8 * THREADS, "{}", stdout(&o));
    let o = run_in(&d, &["simulate", "-q", "--trace", "app.dir"], None);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `--set KEY=VALUE`: a malformed assignment, an unknown field (with the level's
/// shortcuts listed), a bad value, a level that does not exist and `--set` without a
/// machine to change are each one line naming the user's key.
#[test]
fn a_bad_setting_names_the_key_as_given() {
    let d = folder("set");
    write(&d, "ok.lackey", LACKEY);
    let sim = [
        "simulate",
        "--trace",
        "ok.lackey",
        "--machine",
        "skylake",
        "--set",
    ];
    for (set, names) in [
        ("ways", &["--set", "\"ways\"", "KEY=VALUE"][..]),
        ("=16", &["--set", "\"=16\"", "dotted key"]),
        (
            "tlb.levels.stlb.way=16",
            &["--set tlb.levels.stlb.way", "`way`", "`ways`", "skylake"],
        ),
        ("tlb.levels.stlb.ways=many", &["--set tlb.levels.stlb.ways"]),
        (
            "tlb.levels.l9.ways=2",
            &["--set tlb.levels.l9.ways", "\"l9\"", "stlb"],
        ),
        ("page_table.kind=btree", &["--set page_table.kind", "btree"]),
    ] {
        let mut args = sim.to_vec();
        args.push(set);
        refused(&d, &args, names);
    }
    refused(
        &d,
        &[
            "pagetables",
            "compare",
            "--trace",
            "ok.lackey",
            "--set",
            "a=1",
        ],
        &["--set", "--machine or --config"],
    );
}
