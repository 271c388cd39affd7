//! `--machine host` from the command line: `pagelab machines --host` says what it read
//! and where from, its `--cpuid` dump replays to the same TLBs, and the preset runs.

mod common;
use common::*;
use pagelab_core::host::cpuid::Recorded;
use pagelab_core::host::Host;

#[test]
fn machines_host_names_its_sources_and_simulates() {
    let d = folder("host");
    let o = run_in(&d, &["machines", "--host"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("TLBs:") && text.contains("as --machine host"),
        "{text}"
    );
    let o = run_in(&d, &["machines", "--host", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["name"], "host");
    for t in v["host"]["tlbs"].as_array().unwrap() {
        assert!(t["source"].as_str().unwrap().starts_with("CPUID"), "{t}");
    }
    // The dump replays to what was read live.
    let o = run_in(&d, &["machines", "--host", "--cpuid"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let dump = Recorded::parse(&stdout(&o)).unwrap();
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(
        Host::read(&dump, empty.path()).tlbs,
        Host::this_machine().tlbs
    );
    copy_trace(&d, "t.plt");
    let o = run_in(
        &d,
        &["simulate", "-q", "--machine", "host", "--trace", "t.plt"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("machine host"), "{}", stdout(&o));
    usage_refused(&d, &["machines", "--cpuid"], "--host");
}

/// `pagelab calibrate --quick`: measured costs with their spread, written into the host
/// machine that --config takes.
#[test]
fn calibrate_writes_the_host_machine_with_measured_costs() {
    let d = folder("calibrate");
    // Natively, without the 100 MB the other runs are held to: it maps 128 MB.
    let o = std::process::Command::new(PAGELAB)
        .current_dir(&d)
        .args([
            "calibrate",
            "--quick",
            "-q",
            "-o",
            "host.toml",
            "--json",
            "cal.json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("4 KiB page fault"), "{}", stdout(&o));
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("cal.json")).unwrap()).unwrap();
    let fault = c["fault_4k_cycles"]["median"].as_f64().unwrap();
    assert!(c["fault_4k_cycles"]["min"].as_f64().unwrap() <= fault);
    assert!(
        fault > 100.0,
        "a page fault costs more than 100 cycles: {fault}"
    );
    assert_eq!(c["loads"].as_array().unwrap().len(), 3);
    let toml = std::fs::read_to_string(d.join("host.toml")).unwrap();
    assert!(toml.starts_with("# This machine, measured by `pagelab calibrate`"));
    assert!(
        toml.contains(&format!("page_fault_cycles = {:.1}", fault.round())),
        "{toml}"
    );
    copy_trace(&d, "t.plt");
    let o = run_in(
        &d,
        &[
            "simulate",
            "-q",
            "--config",
            "host.toml",
            "--trace",
            "t.plt",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    refused(&d, &["calibrate", "-o", "-"], &["--output", "name a file"]);
    std::fs::create_dir(d.join("out")).unwrap();
    refused(&d, &["calibrate", "-o", "out"], &["--output", "out"]);
}
