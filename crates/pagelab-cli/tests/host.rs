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
