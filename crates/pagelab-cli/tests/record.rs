//! `pagelab record` end to end, under Valgrind: a program that crashes, exits non-zero,
//! is killed, or whose trace fills the disk still leaves a trace pagelab reads, and
//! `pagelab record` exits with the program's status (128 + the signal for a signal, as
//! a shell reports it); SIGINT or SIGTERM to `pagelab record` stops the program and
//! leaves a readable trace.
//!
//! These tests run Valgrind (installed on every machine here; `make test` installs it
//! where it is missing) and compile small C programs with the system's `cc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-record-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Compile a C program given as source text; its path.
fn compile(name: &str, source: &str) -> PathBuf {
    let src = scratch(&format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = scratch(name);
    let out = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(out.status.success(), "cc failed: {}", stderr(&out));
    exe
}

fn info(trace: &Path, salvage: bool) -> Output {
    let mut c = Command::new(PAGELAB);
    c.args(["trace", "info", "--json"]);
    if salvage {
        c.arg("--salvage");
    }
    c.arg(trace).output().unwrap()
}

/// References in a trace, read strictly (it must be complete).
fn references(trace: &Path) -> u64 {
    let o = info(trace, false);
    assert!(o.status.success(), "trace info: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["info"]["references"].as_u64().unwrap()
}

const CRASH: &str = r#"
#include <stdlib.h>
int main(void) {
    volatile char *a = malloc(64 * 4096);
    for (int i = 0; i < 64; i++) a[i * 4096] = 1;
    volatile char *p = 0;
    return *p;   /* SIGSEGV */
}
"#;

/// Stores at pseudo-random places of 16 MiB, forever (they compress poorly, so the
/// trace grows quickly).
const SPIN: &str = r#"
#include <stdlib.h>
int main(void) {
    volatile char *a = malloc(1 << 24);
    unsigned long x = 1;
    for (;;) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        a[(x >> 33) & ((1 << 24) - 1)] = 1;
    }
}
"#;

#[test]
fn a_crashing_program_leaves_a_complete_trace() {
    let exe = compile("crash", CRASH);
    let out = scratch("crash.plt");
    let o = Command::new(PAGELAB)
        .args(["record", "-q", "--fetches", "none", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(128 + 11), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the recorded program was killed by SIGSEGV"),
        "{}",
        stderr(&o)
    );
    assert!(references(&out) >= 64);
}

#[test]
fn a_failing_program_passes_its_status_on() {
    let out = scratch("exit3.plt");
    let o = Command::new(PAGELAB)
        .args(["record", "-q", "--fetches", "none", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "echo hello; exit 3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("exited with status 3"),
        "{}",
        stderr(&o)
    );
    assert!(references(&out) > 0);
}

/// Send `signal` to a `pagelab record` of a busy loop once it records: it must end
/// within two seconds with 128 + the signal, leave a trace `trace info` reads, and
/// leave nothing in its temporary folder.
fn interrupt_recording(signal: &str, number: i32) {
    let tmp = scratch(&format!("tmp-{signal}"));
    std::fs::create_dir_all(&tmp).unwrap();
    let out = scratch(&format!("interrupted-{signal}.plt"));
    let rec = Command::new(PAGELAB)
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "while :; do :; done"])
        .env("TMPDIR", &tmp)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_bytes(&out, 50_000);
    Command::new("kill")
        .args([&format!("-{signal}"), &rec.id().to_string()])
        .status()
        .unwrap();
    let sent = Instant::now();
    let o = rec.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{signal}: pagelab record took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(o.status.code(), Some(128 + number), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("interrupted by SIG{signal}")),
        "{}",
        stderr(&o)
    );
    assert!(references(&out) > 1000);
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
}

#[test]
fn sigint_stops_the_recording_and_keeps_the_trace() {
    interrupt_recording("INT", 2);
}

#[test]
fn sigterm_stops_the_recording_and_keeps_the_trace() {
    interrupt_recording("TERM", 15);
}

/// The temporary file a recording into `out` is written to until it ends (created
/// beside it as `.NAME.XXXXXX.partial`), if there is one.
fn partial_of(out: &Path) -> Option<PathBuf> {
    let name = out.file_name()?.to_string_lossy().into_owned();
    std::fs::read_dir(out.parent()?)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(&format!(".{name}.")) && n.ends_with(".partial")
        })
}

/// Wait until the recording into `out` holds at least `bytes` bytes (it is under
/// way); its temporary file.
fn wait_for_bytes(out: &Path, bytes: u64) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(p) = partial_of(out) {
            if std::fs::metadata(&p).map_or(0, |m| m.len()) >= bytes {
                return p;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} did not grow",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

fn kill(pid: u32) {
    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn a_killed_program_leaves_the_trace_of_what_it_did() {
    let exe = compile("spin-a", SPIN);
    let out = scratch("killed.plt");
    let rec = Command::new(PAGELAB)
        .args(["record", "-q", "--fetches", "none", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_bytes(&out, 200_000);
    for valgrind in children(rec.id()) {
        kill(valgrind);
    }
    let o = rec.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    assert!(stderr(&o).contains("killed by SIGKILL"), "{}", stderr(&o));
    assert!(references(&out) > 10_000);
}

#[test]
fn a_killed_recorder_leaves_chunks_that_salvage_reads() {
    let exe = compile("spin-b", SPIN);
    let out = scratch("recorder-killed.plt");
    let mut rec = Command::new(PAGELAB)
        .args(["record", "-q", "--fetches", "none", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .spawn()
        .unwrap();
    let partial = wait_for_bytes(&out, 1_000_000);
    let valgrind = children(rec.id());
    kill(rec.id());
    rec.wait().unwrap();
    for v in valgrind {
        kill(v);
    }
    assert!(
        !out.exists(),
        "nothing under the output's name until it is complete"
    );
    let out = partial;
    let strict = info(&out, false);
    assert!(!strict.status.success());
    assert!(
        stderr(&strict).contains("salvage mode keeps the"),
        "{}",
        stderr(&strict)
    );
    let salvaged = info(&out, true);
    assert!(salvaged.status.success(), "{}", stderr(&salvaged));
    assert!(
        stderr(&salvaged).contains("kept the"),
        "{}",
        stderr(&salvaged)
    );
    let v: serde_json::Value = serde_json::from_slice(&salvaged.stdout).unwrap();
    assert!(v["info"]["references"].as_u64().unwrap() > 100_000);
}

/// A file-size limit stands in for a full disk: the write fails, recording stops with
/// an error, and the chunks written before it remain readable.
#[test]
fn a_full_disk_stops_recording_and_keeps_what_was_written() {
    let exe = compile("spin-c", SPIN);
    let out = scratch("full.plt");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 2048 && exec {PAGELAB} record -q --fetches none -o {} -- {}",
            out.display(),
            exe.display()
        ))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("recording stopped"), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(
        !out.exists(),
        "nothing under the output's name: it is not complete"
    );
    let out = partial_of(&out).expect("the partial file is kept");
    assert!(err.contains(&out.display().to_string()), "{err}");
    let salvaged = info(&out, true);
    assert!(salvaged.status.success(), "{}", stderr(&salvaged));
    let v: serde_json::Value = serde_json::from_slice(&salvaged.stdout).unwrap();
    assert!(v["info"]["references"].as_u64().unwrap() > 100_000);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_trace(path: &Path) -> pagelab_core::Batch {
    let mut r = pagelab_core::trace::open(path, None).unwrap();
    pagelab_core::trace::read_all(r.as_mut()).unwrap()
}

/// The acceptance test of the recorder: a program that touches N pages of a malloc'd
/// array in a known order, between PAGELAB_START() and PAGELAB_STOP(), gives exactly
/// that page stream, and the malloc event with the right address and size.
#[test]
fn a_known_pattern_records_exactly() {
    let pattern = repo().join("target/valgrind/tests/pattern");
    assert!(
        pattern.is_file(),
        "{} is missing: `make recorder` builds it",
        pattern.display()
    );
    let out = scratch("pattern.plt");
    let n = 64u64;
    let o = Command::new(PAGELAB)
        .args([
            "record",
            "-q",
            "--tool",
            "pagelab",
            "--start-off",
            "--fetches",
            "none",
            "-o",
        ])
        .arg(&out)
        .arg("--")
        .arg(&pattern)
        .arg(n.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    let mut words = printed.split_whitespace();
    let base = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
    let size: u64 = words.next().unwrap().parse().unwrap();
    assert_eq!(size, n * 4096);

    let trace = read_trace(&out);
    use pagelab_core::event::{AllocOp, Event};
    let malloc = trace.events.iter().find_map(|(_, e)| match e {
        Event::Alloc(a) if a.op == AllocOp::Malloc && a.addr == base => Some(*a),
        _ => None,
    });
    let malloc = malloc.expect("the malloc of the array is recorded");
    assert_eq!(malloc.size, size);
    let marker = |id: u32| {
        trace
            .events
            .iter()
            .find(|(_, e)| matches!(e, Event::Marker { id: i, .. } if *i == id))
            .map(|(at, _)| *at)
            .unwrap_or_else(|| panic!("marker {id} is recorded"))
    };
    let (start, stop) = (marker(1), marker(2));
    let pages: Vec<u64> = trace.refs[start..stop]
        .iter()
        .filter(|r| r.addr.0 >= base && r.addr.0 < base + size)
        .map(|r| (r.addr.0 - base) / 4096)
        .collect();
    let expected: Vec<u64> = (0..n).map(|i| i * 7 % n).collect();
    assert_eq!(pages, expected);
    // Nothing else is recorded in the region of interest.
    assert_eq!(stop - start, n as usize, "{:?}", &trace.refs[start..stop]);
    // The array's call site is named by its function, file and line (pattern.c is
    // built with -g), and trace info lists it so.
    let o = info(&out, false);
    assert!(o.status.success(), "trace info: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sites = v["info"]["categories"]["callsites"].as_array().unwrap();
    let array = sites
        .iter()
        .find(|s| s["callsite"] == format!("{:#018x}", malloc.callsite))
        .unwrap_or_else(|| panic!("the array's call site is listed: {sites:?}"));
    let name = array["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("main (pattern.c:"), "{name:?}");
}

/// The same program recorded by pagelab's tool and by lackey gives the same references
/// and so the same simulation (allocation events off: no preload library, so the
/// program's memory layout is the same under both tools).
#[test]
fn the_tool_records_what_lackey_records() {
    let input = scratch("xz-input.txt");
    let text: String = (1..4000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let mut traces = Vec::new();
    for tool in ["pagelab", "lackey"] {
        let out = scratch(&format!("xz-{tool}.plt"));
        let o = Command::new(PAGELAB)
            .args([
                "record",
                "-q",
                "--tool",
                tool,
                "--no-allocs",
                "--fetches",
                "all",
                "-o",
            ])
            .arg(&out)
            .args(["--", "xz", "-1", "--threads=1", "-c"])
            .arg(&input)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LC_ALL", "C")
            .current_dir(std::env::temp_dir())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{tool}: {}", stderr(&o));
        traces.push(out);
    }
    let (ours, lackey) = (read_trace(&traces[0]), read_trace(&traces[1]));
    assert!(lackey.refs.len() > 100_000);
    assert_eq!(ours.refs.len(), lackey.refs.len());
    // Kinds and sizes agree everywhere. Addresses agree but at a handful of places:
    // two lackey runs of the same program differ there too (the loader compares
    // strings in a stack buffer whose position varies from run to run).
    let mut moved = 0;
    for (i, (a, b)) in ours.refs.iter().zip(&lackey.refs).enumerate() {
        assert_eq!(
            (a.kind, a.size),
            (b.kind, b.size),
            "reference {i}: pagelab {a:?}, lackey {b:?}"
        );
        moved += (a.addr != b.addr) as usize;
    }
    assert!(moved <= 16, "{moved} addresses differ");
    let simulate = |t: &Path| {
        let o = Command::new(PAGELAB)
            .args(["simulate", "-q", "--json", "-", "--trace"])
            .arg(t)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["report"].clone()
    };
    assert_eq!(simulate(&traces[0]), simulate(&traces[1]));
}

/// A `pagelab record` killed outright leaves its FIFO folder; the next one removes
/// the folders of processes that are gone, and no other.
#[test]
fn stale_fifo_folders_are_removed() {
    let tmp = scratch("tmp-stale");
    let stale = tmp.join("pagelab-record-2147483646-abcdef");
    let alive = tmp.join(format!("pagelab-record-{}-abcdef", std::process::id()));
    for d in [&stale, &alive] {
        std::fs::create_dir_all(d).unwrap();
    }
    let out = scratch("stale.plt");
    let o = Command::new(PAGELAB)
        .args(["record", "-q", "--fetches", "none", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stale.exists(),
        "the folder of a process that is gone is removed"
    );
    assert!(alive.exists(), "the folder of a running process stays");
}

/// A shim as pyenv's: a shell script named `python3`, first in PATH, that replaces
/// itself with the real interpreter. The recording follows the exec: the interpreter's
/// references are in the trace, after a marker `exec PATH`, and the trace is complete;
/// with --no-follow-exec it stops at the exec, and says so.
#[test]
fn a_shim_that_execs_the_interpreter_is_followed() {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 is installed");
    let shim_dir = scratch("shim");
    std::fs::create_dir_all(&shim_dir).unwrap();
    let shim = shim_dir.join("python3");
    // The shim runs a command of its own first (a process it starts: not recorded).
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nversion=$(uname -s)\nexec {} \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = scratch("prog.py");
    std::fs::write(
        &prog,
        "d = {i: i * i for i in range(20000)}\nprint(len(d))\n",
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(shim_dir.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let record = |name: &str, extra: &[&str]| {
        let out = scratch(name);
        let o = Command::new(PAGELAB)
            .env("PATH", &path)
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(extra)
            .args(["--", "python3"])
            .arg(&prog)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "20000\n");
        (out, stderr(&o))
    };
    let (followed, err) = record("followed.plt", &[]);
    assert!(!err.contains("warning"), "{err}");
    let batch = read_trace(&followed);
    let exec = format!("exec {}", real.display());
    let marker = batch.events.iter().find_map(|(at, e)| match e {
        pagelab_core::event::Event::Marker { id: 3, name } if *name == exec => Some(*at),
        _ => None,
    });
    let at = marker.unwrap_or_else(|| panic!("no marker {exec:?}: {:?}", batch.events));
    // The interpreter's references, after the shim's, are most of the trace.
    let after = batch.refs.len() - at;
    assert!(after > 1_000_000 && after > 10 * at, "{at} then {after}");

    let (stopped, err) = record("stopped.plt", &["--no-follow-exec"]);
    assert!(
        err.contains(&format!("replaced itself with {}", real.display())),
        "{err}"
    );
    assert!(!err.contains("END record"), "{err}");
    assert!(references(&stopped) < at as u64 * 2);
}
