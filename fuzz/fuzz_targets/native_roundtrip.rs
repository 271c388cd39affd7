//! Round trip through the native format: whatever lackey text parses is written with
//! small chunks (so chunk boundaries are exercised) and read back; the references read
//! must equal the references written, and the metadata must survive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::lackey::LackeyReader;
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{Metadata, TraceReader};
use std::io::Cursor;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut lackey = LackeyReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        Path::new("fuzz.lackey"),
    );
    let metadata = Metadata::default();
    let options = WriterOptions {
        chunk_refs: 5,
        level: 1,
        // Both ways of storing zstd's literals.
        compress_literals: data.len() % 2 == 1,
    };
    let mut writer =
        NativeWriter::new(Vec::new(), Path::new("x"), &metadata, options).expect("writer starts");
    let mut written = Vec::new();
    let mut batch = Batch::default();
    loop {
        match lackey.next_batch(&mut batch) {
            Ok(true) => {
                writer.write_batch(&batch).expect("write to a Vec");
                written.extend_from_slice(&batch.refs);
            }
            Ok(false) => break,
            // Not lackey text: nothing to round-trip.
            Err(_) => return,
        }
    }
    let bytes = writer.finish().expect("finish to a Vec");

    let mut reader =
        NativeReader::new(Cursor::new(&bytes[..]), Path::new("x")).expect("header reads back");
    assert_eq!(reader.metadata(), &metadata);
    let mut read = Vec::new();
    loop {
        match reader.next_batch(&mut batch) {
            Ok(true) => read.extend_from_slice(&batch.refs),
            Ok(false) => break,
            Err(e) => panic!("reading back what was written: {e}"),
        }
    }
    assert_eq!(read, written);
});
