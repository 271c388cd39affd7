//! Valgrind lackey text reader on arbitrary bytes: every input must end in `Ok(false)` or an error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::lackey::LackeyReader;
use pagelab_core::trace::TraceReader;
use std::io::Cursor;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut reader = LackeyReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        Path::new("fuzz.lackey"),
    );
    let mut batch = Batch::default();
    while let Ok(true) = reader.next_batch(&mut batch) {
        assert!(
            !batch.refs.is_empty(),
            "a batch reported as read holds no references"
        );
    }
});
