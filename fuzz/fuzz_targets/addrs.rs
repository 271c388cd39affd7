//! plain address-list text reader on arbitrary bytes: every input must end in `Ok(false)` or an error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::addrs::AddrsReader;
use pagelab_core::trace::TraceReader;
use std::io::Cursor;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut reader = AddrsReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        Path::new("fuzz.addrs"),
    );
    let mut batch = Batch::default();
    while let Ok(true) = reader.next_batch(&mut batch) {
        assert!(
            !batch.refs.is_empty(),
            "a batch reported as read holds no references"
        );
    }
});
