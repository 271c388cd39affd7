//! ChampSim binary record reader on arbitrary bytes: a whole number of 64-byte records reads to the
//! end, anything else ends in a "truncated" error; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::Batch;
use pagelab_core::trace::champsim::ChampsimReader;
use pagelab_core::trace::input::Compression;
use pagelab_core::trace::TraceReader;
use std::io::Cursor;
use std::path::Path;

const RECORD: usize = 64;

fuzz_target!(|data: &[u8]| {
    let mut reader = ChampsimReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        Compression::None,
        Path::new("fuzz.champsim"),
    );
    let mut batch = Batch::default();
    let ended = loop {
        match reader.next_batch(&mut batch) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    assert_eq!(
        ended.is_ok(),
        data.len().is_multiple_of(RECORD),
        "{ended:?}"
    );
});
