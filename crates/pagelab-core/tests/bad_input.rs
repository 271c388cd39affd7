//! Bad input: truncated, random and corrupted native files, malformed lackey lines,
//! ChampSim and u64 files of a wrong length, and salvage mode. Every failure must be
//! an error (never a panic) that names the file and where in it the problem is.

mod common;

use common::{temp_file, temp_with};
use pagelab_core::addr::Asid;
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef};
use pagelab_core::trace::input::Source;
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions, MAGIC};
use pagelab_core::trace::{
    self, champsim, Location, Metadata, TraceError, TraceFormat, TraceReader,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

// ---------------------------------------------------------------------------------
// Helpers

/// Read a whole file as `format`; a panic in the library is turned into a test
/// failure that says which input caused it.
fn read_file(path: &Path, format: TraceFormat, what: &str) -> Result<Batch, TraceError> {
    match catch_unwind(AssertUnwindSafe(|| {
        let mut reader = trace::open(path, Some(format))?;
        trace::read_all(reader.as_mut())
    })) {
        Ok(result) => result,
        Err(_) => panic!("the {format:?} reader panicked on {what}"),
    }
}

/// The error names the file and a byte offset, in its fields and in its message.
fn assert_names_file_and_offset(e: &TraceError, path: &Path, what: &str) {
    let text = e.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "{what}: the error does not name the file: {text}"
    );
    assert!(
        text.contains("offset"),
        "{what}: the error names no offset: {text}"
    );
    assert!(
        matches!(e.location, Location::Offset(_)),
        "{what}: {:?}",
        e.location
    );
    assert_eq!(e.file, path, "{what}");
    assert!(
        !text.contains('\n'),
        "{what}: the message spans lines: {text:?}"
    );
}

/// A small native trace of several chunks (7 references each), with events, ips and
/// address-space switches.
fn sample_batch(n: usize) -> Batch {
    let mut batch = Batch::default();
    for i in 0..n as u64 {
        if i % 9 == 4 {
            batch.push_event(Event::Alloc(Alloc {
                op: AllocOp::ALL[i as usize % AllocOp::ALL.len()],
                addr: 0x5555_0000 + i * 64,
                size: 64,
                old_addr: 0,
                flags: 0,
                callsite: i,
            }));
        }
        if i == 12 {
            batch.push_event(Event::SwitchAddressSpace { asid: Asid(2) });
        }
        let mut r = MemRef::new(
            0x7ff0_0000_1000 + i * 8 + (i % 3) * 0x10_0000,
            (i % 70) as u32,
            AccessKind::ALL[i as usize % 4],
        );
        r.ip = if i % 5 == 0 { 0 } else { 0x40_1000 + i * 4 };
        r.asid = if i >= 12 { Asid(2) } else { Asid(0) };
        batch.refs.push(r);
    }
    batch.push_event(Event::Marker {
        id: 7,
        name: "end".into(),
    });
    batch
}

fn native_bytes(batch: &Batch, chunk_refs: u32) -> Vec<u8> {
    let metadata = Metadata {
        source_format: "test".into(),
        workload: "bad input".into(),
        ..Metadata::default()
    };
    let options = WriterOptions {
        chunk_refs,
        level: 3,
        ..WriterOptions::default()
    };
    let mut w = NativeWriter::new(Vec::new(), Path::new("memory"), &metadata, options).unwrap();
    w.write_batch(batch).unwrap();
    w.finish().unwrap()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Where the header ends and, for each chunk, (end offset, refs, events).
fn layout(bytes: &[u8]) -> (usize, Vec<(usize, usize, usize)>) {
    let header = 16 + u32_at(bytes, 12) as usize + 4;
    let mut at = header;
    let mut chunks = Vec::new();
    while &bytes[at..at + 4] == b"CHNK" {
        let (refs, events, stored) = (
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
            u32_at(bytes, at + 16),
        );
        at += 24 + stored as usize;
        chunks.push((at, refs as usize, events as usize));
    }
    assert_eq!(&bytes[at..at + 4], b"END!");
    assert_eq!(at + 32, bytes.len());
    (header, chunks)
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------
// Native: truncation, corruption, random bytes

#[test]
fn truncated_native_file_errors_at_every_length() {
    let batch = sample_batch(30);
    let bytes = native_bytes(&batch, 7);
    let (_, chunks) = layout(&bytes);
    assert!(chunks.len() >= 4, "the sample has several chunks");
    let file = temp_file(".plt");
    for len in 0..=bytes.len() {
        std::fs::write(file.path(), &bytes[..len]).unwrap();
        let what = format!("the first {len} of {} bytes", bytes.len());
        match read_file(file.path(), TraceFormat::Native, &what) {
            Ok(back) => {
                assert_eq!(
                    len,
                    bytes.len(),
                    "{what}: a truncated file read without error"
                );
                assert_eq!(back, batch);
            }
            Err(e) => {
                assert!(len < bytes.len(), "the complete file fails: {e}");
                assert_names_file_and_offset(&e, file.path(), &what);
                let Location::Offset(at) = e.location else {
                    unreachable!()
                };
                assert!(
                    at <= len as u64,
                    "{what}: the error's offset {at} is past the end: {e}"
                );
            }
        }
    }
}

#[test]
fn every_flipped_byte_is_detected() {
    let batch = sample_batch(24);
    let bytes = native_bytes(&batch, 7);
    let file = temp_file(".plt");
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= mask;
            std::fs::write(file.path(), &bad).unwrap();
            let what = format!("byte {at} of {} flipped with {mask:#04x}", bytes.len());
            match read_file(file.path(), TraceFormat::Native, &what) {
                Ok(_) => panic!("{what}: the corrupt file read without error"),
                Err(e) => assert_names_file_and_offset(&e, file.path(), &what),
            }
        }
    }
}

/// Prefixes that take random bytes further into the reader: none, the magic, the
/// magic and a supported version, a whole valid header, a valid header and a chunk tag.
fn random_file_prefix(kind: u8) -> Vec<u8> {
    let header_only = {
        let bytes = native_bytes(&Batch::default(), 7);
        let (header, _) = layout(&bytes);
        bytes[..header].to_vec()
    };
    match kind % 5 {
        0 => Vec::new(),
        1 => MAGIC.to_vec(),
        2 => [&MAGIC[..], &1u16.to_le_bytes(), &0u16.to_le_bytes()].concat(),
        3 => header_only,
        _ => [&header_only[..], b"CHNK"].concat(),
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn random_bytes_are_an_error_naming_file_and_offset(
        kind in 0u8..5,
        tail in prop::collection::vec(any::<u8>(), 0..600),
        small_lengths in any::<bool>(),
    ) {
        let mut bytes = random_file_prefix(kind);
        let mut tail = tail;
        if small_lengths && kind == 4 && tail.len() >= 20 {
            // Keep the chunk's lengths plausible so that its payload is read and checked.
            let (raw, stored) = (tail[8] as u32 * 4, tail[12] as u32 % 64);
            tail[8..12].copy_from_slice(&raw.to_le_bytes());
            tail[12..16].copy_from_slice(&stored.to_le_bytes());
        }
        bytes.extend_from_slice(&tail);
        let file = temp_with(".plt", &bytes);
        let what = format!("{} random bytes after prefix kind {kind}", tail.len());
        match read_file(file.path(), TraceFormat::Native, &what) {
            Ok(b) => prop_assert!(false, "{}: read {} refs from random bytes", what, b.refs.len()),
            Err(e) => assert_names_file_and_offset(&e, file.path(), &what),
        }
        // Detection must not mind either (random bytes are held to be native, or text).
        let _ = catch_unwind(AssertUnwindSafe(|| Source::open(file.path()).and_then(|s| TraceFormat::detect(&s))))
            .unwrap_or_else(|_| panic!("format detection panicked on {what}"));
    }
}

// ---------------------------------------------------------------------------------
// Salvage

#[test]
fn salvage_keeps_the_complete_chunks_of_a_truncated_file() {
    let batch = sample_batch(30);
    let bytes = native_bytes(&batch, 7);
    let (header, chunks) = layout(&bytes);
    let full =
        trace::read_all(&mut NativeReader::new(&bytes[..], Path::new("memory")).unwrap()).unwrap();
    assert_eq!(full, batch);
    let file = temp_file(".plt");
    for len in 0..=bytes.len() {
        std::fs::write(file.path(), &bytes[..len]).unwrap();
        let what = format!("salvage of the first {len} of {} bytes", bytes.len());
        let opened = catch_unwind(AssertUnwindSafe(|| NativeReader::open(file.path())))
            .unwrap_or_else(|_| panic!("{what}: panicked"));
        if len < header {
            // A file without a complete header has nothing to salvage.
            let e = opened
                .err()
                .unwrap_or_else(|| panic!("{what}: opened without a header"));
            assert_names_file_and_offset(&e, file.path(), &what);
            continue;
        }
        let mut reader = opened
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .salvage(true);
        let back = catch_unwind(AssertUnwindSafe(|| trace::read_all(&mut reader)))
            .unwrap_or_else(|_| panic!("{what}: panicked"))
            .unwrap_or_else(|e| panic!("{what}: salvage mode still failed: {e}"));
        let complete: Vec<_> = chunks.iter().filter(|&&(end, _, _)| end <= len).collect();
        let refs: usize = complete.iter().map(|c| c.1).sum();
        let events: usize = complete.iter().map(|c| c.2).sum();
        assert_eq!(back.refs, full.refs[..refs], "{what}");
        assert_eq!(back.events, full.events[..events], "{what}");
        if len == bytes.len() {
            assert!(reader.warning().is_none(), "{what}: {:?}", reader.warning());
            assert_eq!(back, batch);
        } else {
            let warning = reader
                .warning()
                .unwrap_or_else(|| panic!("{what}: no warning"));
            assert!(
                warning.contains(&file.path().display().to_string()),
                "{what}: {warning}"
            );
            assert!(warning.contains("offset"), "{what}: {warning}");
            assert!(
                warning.contains(&format!("{refs} references")),
                "{what}: {warning}"
            );
        }
    }
}

/// A corrupt chunk in the middle: salvage keeps the chunks before it.
#[test]
fn salvage_stops_at_a_corrupt_chunk() {
    let batch = sample_batch(30);
    let mut bytes = native_bytes(&batch, 7);
    let (_, chunks) = layout(&bytes);
    // Corrupt the payload of the third chunk.
    bytes[chunks[1].0 + 24 + 3] ^= 0x40;
    let file = temp_with(".plt", &bytes);
    let e = read_file(file.path(), TraceFormat::Native, "a corrupt chunk").unwrap_err();
    assert_names_file_and_offset(&e, file.path(), "a corrupt chunk");
    assert_eq!(
        e.location,
        Location::Offset(chunks[1].0 as u64),
        "the offset is the chunk's start: {e}"
    );
    let mut reader = NativeReader::open(file.path()).unwrap().salvage(true);
    let back = trace::read_all(&mut reader).unwrap();
    let refs = chunks[0].1 + chunks[1].1;
    assert_eq!(back.refs, batch.refs[..refs]);
    let warning = reader.warning().expect("a warning");
    assert!(warning.contains("checksum"), "{warning}");
}

// ---------------------------------------------------------------------------------
// Text and fixed-record formats

#[test]
fn malformed_lackey_line_3_is_named() {
    let text =
        "==4242== Lackey, an example Valgrind tool\nI  04016e0,3\n L 7ff000zz,8\n S 0404c88,4\n";
    let file = temp_with(".lackey", text.as_bytes());
    let e = read_file(file.path(), TraceFormat::Lackey, "lackey with a bad line 3").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("line 3"), "{msg}");
    assert!(msg.contains(&file.path().display().to_string()), "{msg}");
    assert_eq!(e.location, Location::Line(3));
}

proptest! {
    #![proptest_config(config(64))]

    /// A malformed line anywhere, among valid lines and Valgrind's own lines, is
    /// reported with its 1-based line number, also past the first batch.
    #[test]
    fn malformed_lackey_line_is_named_by_number(
        before in prop::collection::vec(0u8..8, 0..200),
        bad in prop::sample::select(vec![
            " L 7ff000,", " L ,8", "L 7ff000,8", " X 10,8", " L 10,-8", " L 11111111111111111,8",
            " S 0404c88", "I 04016e0,3", "garbage", " L 7ff000,99999999999",
        ]),
        far in any::<bool>(),
    ) {
        let mut text = String::new();
        let mut count = 0usize;
        for (i, b) in before.iter().enumerate() {
            text.push_str(match b {
                0 => "==1== x",
                1 => "--1-- y",
                2 => "",
                _ => " M 1ffefffd18,8",
            });
            text.push('\n');
            count += 1;
            if far && i == 0 {
                // Push the bad line past the first batch of 32 Ki references.
                for _ in 0..40_000 {
                    text.push_str("I  04016e0,3\n");
                }
                count += 40_000;
            }
        }
        text.push_str(bad);
        text.push_str("\n L 10,8\n");
        let line = count + 1;
        let file = temp_with(".lackey", text.as_bytes());
        let e = read_file(file.path(), TraceFormat::Lackey, "a bad lackey line").unwrap_err();
        let msg = e.to_string();
        prop_assert!(msg.contains(&format!("line {line}:")), "expected line {}: {}", line, msg);
        prop_assert!(msg.contains(&file.path().display().to_string()), "{}", msg);
    }

    /// A ChampSim file whose length is not a multiple of 64: the error names the
    /// offset of the incomplete record.
    #[test]
    fn champsim_partial_record_names_its_offset(
        records in prop_oneof![0usize..40, Just(8191usize), Just(8192), Just(9000)],
        extra in 1usize..64,
    ) {
        let mut bytes = Vec::with_capacity(records * 64 + extra);
        for i in 0..records as u64 {
            let record = champsim::encode_record(0x40_0000 + i * 4, &[0x7000 + i], &[]);
            bytes.extend_from_slice(&record);
        }
        bytes.extend(std::iter::repeat(0xab).take(extra));
        let file = temp_with(".champsim", &bytes);
        let what = "a partial ChampSim record";
        let e = read_file(file.path(), TraceFormat::Champsim, what).unwrap_err();
        assert_names_file_and_offset(&e, file.path(), what);
        prop_assert_eq!(e.location, Location::Offset(records as u64 * 64), "{}", e);
    }

    /// The same for raw u64 addresses (8-byte records).
    #[test]
    fn u64_partial_address_names_its_offset(
        addrs in prop_oneof![0usize..100, Just(32 * 1024), Just(40_000)],
        extra in 1usize..8,
    ) {
        let bytes: Vec<u8> = (0..addrs as u64)
            .flat_map(|a| (a * 4096).to_le_bytes())
            .chain(std::iter::repeat(1).take(extra))
            .collect();
        let file = temp_with(".u64", &bytes);
        let e = read_file(file.path(), TraceFormat::U64, "a partial u64 address").unwrap_err();
        assert_names_file_and_offset(&e, file.path(), "a partial u64 address");
        prop_assert_eq!(e.location, Location::Offset(addrs as u64 * 8), "{}", e);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every listed format, fed arbitrary bytes in memory: an error naming the input,
    /// or references, never a panic. A new format is covered by being listed.
    #[test]
    fn every_listed_format_survives_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        prefix in 0usize..3,
    ) {
        for &format in TraceFormat::ALL {
            // Some inputs start like a real file of the format, to get past headers.
            let mut input = match (format, prefix) {
                (TraceFormat::Native, 1) => MAGIC.to_vec(),
                (TraceFormat::Pgrec, 1) => trace::pgrec::MAGIC.to_vec(),
                (_, 2) => b" L 1000,8\nR 0x2000 4\n".to_vec(),
                _ => Vec::new(),
            };
            input.extend_from_slice(&bytes);
            let path = Path::new("arbitrary.bin");
            let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<u64, TraceError> {
                let mut reader = format.from_bytes(input.clone(), path)?;
                let (mut batch, mut refs) = (Batch::default(), 0u64);
                while reader.next_batch(&mut batch)? {
                    refs += batch.refs.len() as u64;
                }
                Ok(refs)
            }));
            match outcome {
                Err(_) => prop_assert!(false, "{} panicked on {} bytes", format.name(), input.len()),
                Ok(Err(e)) => prop_assert!(
                    e.to_string().contains("arbitrary.bin"),
                    "{}: the error does not name the input: {e}",
                    format.name()
                ),
                Ok(Ok(_)) => {}
            }
        }
    }
}
