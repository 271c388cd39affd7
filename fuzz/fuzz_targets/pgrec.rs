//! Recorder stream (`.pgrec`) reader on arbitrary bytes, salvaging (as `pagelab
//! record` reads): it reads to the end, stops with a warning where the stream is cut,
//! or fails with an error naming an offset; never a panic, and never more references
//! than the bytes could hold. (Strict reading turns the warning into an error.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::input::Compression;
use pagelab_core::trace::pgrec::PgrecReader;
use pagelab_core::trace::TraceReader;
use std::io::Cursor;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = PgrecReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        Compression::None,
        Path::new("fuzz.pgrec"),
    )
    .map(|r| r.salvage(true)) else {
        return;
    };
    let mut batch = Batch::default();
    let mut refs = 0usize;
    loop {
        match reader.next_batch(&mut batch) {
            Ok(true) => refs += batch.refs.len(),
            Ok(false) => break,
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz.pgrec: offset "), "{e}");
                break;
            }
        }
    }
    assert!(
        refs <= data.len() / 8,
        "{refs} references from {} bytes",
        data.len()
    );
});
