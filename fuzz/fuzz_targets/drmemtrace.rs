//! drmemtrace reader on arbitrary bytes (a thread's records, or a `.zip` of chunks when
//! they start with a zip signature): every input ends in `Ok(false)` or an error,
//! never a panic, and no input yields more references than eight per 12-byte record
//! (a bundle's most) of what it decompresses to.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::TraceFormat;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = TraceFormat::Drmemtrace.from_bytes(data.to_vec(), Path::new("fuzz.trace"))
    else {
        return;
    };
    let mut batch = Batch::default();
    let mut refs = 0usize;
    while let Ok(true) = reader.next_batch(&mut batch) {
        assert!(!batch.refs.is_empty() || !batch.events.is_empty());
        refs += batch.refs.len();
        let records = (reader.position() as usize) / 12 + 1;
        assert!(
            refs <= 8 * records,
            "{refs} references from {records} records"
        );
    }
});
