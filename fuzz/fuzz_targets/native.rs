//! Native `.plt` reader on arbitrary bytes, strict and in salvage mode: it must return
//! errors (or a warning in salvage mode), never panic, hang or allocate without bound.
//! Read as plain columns where it can (`next_plain`), it must fail exactly where it
//! fails read batch by batch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::event::{Batch, PlainBatch};
use pagelab_core::trace::native::NativeReader;
use pagelab_core::trace::{Part, TraceReader};
use std::io::Cursor;
use std::path::Path;

fn drain(reader: &mut dyn TraceReader) -> Result<(), ()> {
    let mut batch = Batch::default();
    loop {
        match reader.next_batch(&mut batch) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(_) => return Err(()),
        }
    }
}

fn drain_plain(reader: &mut dyn TraceReader, fetches: bool) -> Result<u64, ()> {
    let (mut plain, mut batch, mut refs) = (PlainBatch::default(), Batch::default(), 0);
    loop {
        match reader.next_plain(fetches, &mut plain, &mut batch) {
            Ok(Part::Plain) => refs += plain.addrs.len() as u64,
            Ok(Part::Full) => refs += batch.refs.len() as u64,
            Ok(Part::End) => return Ok(refs),
            Err(_) => return Err(()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.plt");

    let strict = NativeReader::new(Cursor::new(data), path).map(|mut r| drain(&mut r).is_ok());
    for fetches in [false, true] {
        if let (Ok(strict_ok), Ok(mut reader)) =
            (&strict, NativeReader::new(Cursor::new(data), path))
        {
            let plain_ok = drain_plain(&mut reader, fetches).is_ok();
            assert_eq!(*strict_ok, plain_ok, "plain and batch reading disagree");
        }
    }

    if let Ok(mut reader) = NativeReader::new(Cursor::new(data), path).map(|r| r.salvage(true)) {
        // Salvage mode turns a bad tail into a warning: it never fails after the header.
        assert!(drain(&mut reader).is_ok(), "salvage mode returned an error");
        // A strict failure after the header is exactly a salvage warning.
        if let Ok(strict_ok) = strict {
            assert_eq!(
                strict_ok,
                reader.warning().is_none(),
                "strict and salvage modes disagree"
            );
        }
    }
});
