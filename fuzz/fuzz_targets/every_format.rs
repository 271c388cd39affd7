//! Every listed trace format on arbitrary bytes (the first byte picks the format):
//! every input must end in `Ok(false)` or an error, never a panic. A format added to
//! `for_each_trace_format!` is fuzzed here without a target of its own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::TraceFormat;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = TraceFormat::ALL[pick as usize % TraceFormat::ALL.len()];
    let Ok(mut reader) = format.from_bytes(rest.to_vec(), Path::new("fuzz.bin")) else {
        return;
    };
    let mut batch = Batch::default();
    while let Ok(true) = reader.next_batch(&mut batch) {
        assert!(
            !batch.refs.is_empty() || !batch.events.is_empty(),
            "{}: a batch reported as read holds nothing",
            format.name()
        );
    }
});
