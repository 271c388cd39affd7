//! The data caches on a thread of their own during a run of a trace
//! (`Machine::set_cache_thread`): the report is the same as on the machine's thread.
//! `decoupled_equals_in_order.rs` compares every native file's run both ways; here, a
//! warm-up, which takes the caches back from their thread for its report.

use pagelab_core::Machine;
use std::path::Path;

/// A warm-up hands the caches back from their thread for its report and then on
/// again: the steady state's report is the same as on one thread.
#[test]
fn a_warmup_with_the_caches_on_their_thread() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/xz.plt");
    let config = pagelab_core::presets::load("skylake").unwrap();
    let run = |cache_thread: bool| {
        let mut m = Machine::build(&config).unwrap();
        m.set_cache_thread(cache_thread);
        m.set_warmup(100_000);
        let mut reader = pagelab_core::trace::open(&path, None).unwrap();
        m.run_trace(reader.as_mut(), &path, |_, _| {}).unwrap();
        serde_json::to_value(m.report()).unwrap()
    };
    let threaded = run(true);
    assert!(threaded["cache"]["levels"][0]["hits"]["data"].as_u64() > Some(0));
    assert_eq!(threaded, run(false));
}
