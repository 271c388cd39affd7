//! DynamoRIO drmemtrace traces, written here by the test writer that follows the
//! published record layout: every record kind becomes the reference or event it
//! stands for; a thread's file reads the same uncompressed, gzip'd, zstd'd and as a
//! `.zip` of chunks; a folder of threads is merged by timestamp with thread and
//! address-space events; and bad input is an error naming the file and offset.

use pagelab_core::event::{AccessKind, Event, MemRef};
use pagelab_core::trace::drmemtrace::write::{self, Writer};
use pagelab_core::trace::drmemtrace::{marker, ty};
use pagelab_core::trace::{self, read_all, TraceFormat};
use pagelab_core::{Asid, Batch, VirtAddr};
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn refs(path: &Path) -> Batch {
    let mut r = trace::open(path, None).unwrap_or_else(|e| panic!("{e}"));
    read_all(r.as_mut()).unwrap_or_else(|e| panic!("{e}"))
}

fn m(addr: u64, ip: u64, size: u32, kind: AccessKind, asid: u16) -> MemRef {
    MemRef {
        addr: VirtAddr(addr),
        ip,
        size,
        kind,
        asid: Asid(asid),
    }
}

/// One thread: instructions with loads and stores, a bundle, a no-fetch instruction,
/// prefetches of both kinds, a flush, markers.
fn one_thread() -> Writer {
    let mut w = Writer::new(6, 101, 100, 1000);
    w.instr(0x40_1000, 3)
        .read(0x7ff0_0010, 8)
        .instr(0x40_1003, 4)
        .write(0x60_0000, 4)
        .read(0x60_0008, 4)
        .bundle(&[2, 5])
        .record(ty::INSTR_NO_FETCH, 2, 0x40_2000)
        .read(0x60_1000, 16)
        .record(ty::PREFETCH, 1, 0x60_2000)
        .record(ty::HARDWARE_PREFETCH, 64, 0x60_3000)
        .record(ty::INSTR_FLUSH, 64, 0x40_0000)
        .timestamp(1500)
        .record(ty::INSTR_CONDITIONAL_JUMP, 2, 0x40_3000)
        .marker(marker::CACHE_LINE_SIZE, 64);
    w
}

fn expected() -> Vec<MemRef> {
    use AccessKind::*;
    vec![
        m(0x40_1000, 0x40_1000, 3, Fetch, 0),
        m(0x7ff0_0010, 0x40_1000, 8, Load, 0),
        m(0x40_1003, 0x40_1003, 4, Fetch, 0),
        m(0x60_0000, 0x40_1003, 4, Store, 0),
        m(0x60_0008, 0x40_1003, 4, Load, 0),
        // The bundle's two instructions follow the last one.
        m(0x40_1007, 0x40_1007, 2, Fetch, 0),
        m(0x40_1009, 0x40_1009, 5, Fetch, 0),
        // After a no-fetch instruction its data is still its own.
        m(0x60_1000, 0x40_2000, 16, Load, 0),
        m(0x60_2000, 0x40_2000, 1, Load, 0),
        m(0x40_3000, 0x40_3000, 2, Fetch, 0),
    ]
}

#[test]
fn every_kind_of_record_becomes_what_it_stands_for() {
    let dir = scratch();
    let p = put(dir.path(), "t.trace", &one_thread().finish());
    let b = refs(&p);
    assert_eq!(b.refs, expected());
    assert!(b.events.is_empty(), "{:?}", b.events);
    let r = trace::open(&p, None).unwrap();
    assert_eq!(r.metadata().source_format, "drmemtrace");
    assert!(r.metadata().created_by.contains("version 6"));
}

#[test]
fn a_thread_reads_the_same_compressed_and_zipped_in_chunks() {
    let dir = scratch();
    let whole = one_thread().finish();
    let plain = refs(&put(dir.path(), "t.trace", &whole));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&whole).unwrap();
    assert_eq!(
        refs(&put(dir.path(), "t.trace.gz", &gz.finish().unwrap())),
        plain
    );
    let zst = zstd::encode_all(&whole[..], 3).unwrap();
    assert_eq!(refs(&put(dir.path(), "t.trace.zst", &zst)), plain);
    // Chunks as raw2trace cuts them: a chunk footer ends each but the last, the next
    // starts with the record ordinal and the timestamp and CPU again.
    let cut = 12 * 13; // after the header and the first instruction's encoding
    let mut first = whole[..cut].to_vec();
    let footer = record(ty::MARKER, marker::CHUNK_FOOTER, 0);
    first.extend_from_slice(&footer);
    let mut second = record(ty::MARKER, marker::RECORD_ORDINAL, 13);
    second.extend_from_slice(&record(ty::MARKER, marker::TIMESTAMP, 1000));
    second.extend_from_slice(&whole[cut..]);
    let zip = write::zip(&[&first, &second]);
    assert_eq!(
        refs(&put(
            dir.path(),
            "drmemtrace.app.00101.0000.trace.zip",
            &zip
        )),
        plain
    );
    // Detected by content whatever the name.
    assert_eq!(refs(&put(dir.path(), "capture.bin", &zip)), plain);
    assert_eq!(refs(&put(dir.path(), "capture2.bin", &whole)), plain);
}

fn record(kind: u16, size: u16, value: u64) -> Vec<u8> {
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&size.to_le_bytes());
    r.extend_from_slice(&value.to_le_bytes());
    r
}

#[test]
fn a_folder_of_threads_is_merged_by_timestamp() {
    let dir = scratch();
    let folder = dir.path().join("drmemtrace.app.100.0000.dir").join("trace");
    std::fs::create_dir_all(&folder).unwrap();
    // Thread 101 at t=10 and t=30, thread 102 at t=20, thread 201 (another process) at t=25.
    let mut a = Writer::new(6, 101, 100, 10);
    a.instr(0x1000, 4).timestamp(30).instr(0x1004, 4);
    let mut b = Writer::new(6, 102, 100, 20);
    b.instr(0x2000, 4).read(0x9000, 8);
    let mut c = Writer::new(6, 201, 200, 25);
    c.instr(0x3000, 4);
    put(
        &folder,
        "drmemtrace.app.00101.1234.trace.zip",
        &write::zip(&[&a.finish()]),
    );
    put(&folder, "drmemtrace.app.00102.1234.trace", &b.finish());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&c.finish()).unwrap();
    put(
        &folder,
        "drmemtrace.app.00201.1234.trace.gz",
        &gz.finish().unwrap(),
    );
    put(&folder, "modules.log", b"not a thread\n");
    let top = dir.path().join("drmemtrace.app.100.0000.dir");
    let (mut r, format) = trace::open_detected(&top, None, false).unwrap();
    assert_eq!(format, TraceFormat::Drmemtrace);
    let all = read_all(r.as_mut()).unwrap();
    let addrs: Vec<(u64, u16)> = all.refs.iter().map(|r| (r.addr.0, r.asid.0)).collect();
    assert_eq!(
        addrs,
        vec![
            (0x1000, 0),
            (0x2000, 0),
            (0x9000, 0),
            (0x3000, 1),
            (0x1004, 0)
        ]
    );
    assert_eq!(
        all.events,
        vec![
            (0, Event::Thread { tid: 101 }),
            (1, Event::Thread { tid: 102 }),
            (3, Event::Thread { tid: 201 }),
            (3, Event::SwitchAddressSpace { asid: Asid(1) }),
            (4, Event::Thread { tid: 101 }),
            (4, Event::SwitchAddressSpace { asid: Asid(0) }),
        ]
    );
    assert_eq!(r.metadata().extra["threads"], "3");
    // The folder itself or its trace/ subfolder.
    assert_eq!(refs(&folder).refs, all.refs);
}

fn error(bytes: &[u8], name: &str) -> String {
    let dir = scratch();
    let p = put(dir.path(), name, bytes);
    match trace::open(&p, Some(TraceFormat::Drmemtrace)).and_then(|mut r| read_all(r.as_mut())) {
        Ok(_) => panic!("{name}: read without an error"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(name) && !text.contains('\n'), "{text}");
            text
        }
    }
}

#[test]
fn bad_traces_are_errors_naming_the_file_and_offset() {
    let whole = one_thread().finish();
    let e = error(&whole[..whole.len() - 5], "cut.trace");
    assert!(
        e.contains("truncated: the last record has 7 of its 12 bytes"),
        "{e}"
    );
    let e = error(one_thread().bytes(), "nofooter.trace");
    assert!(e.contains("without its footer"), "{e}");
    let e = error(&whole[12..], "headless.trace");
    assert!(e.contains("offset 0") && e.contains("not a header"), "{e}");
    let mut unknown = one_thread();
    unknown.record(77, 0, 0);
    let e = error(&unknown.finish(), "unknown.trace");
    assert!(e.contains("unknown record type 77"), "{e}");
    let e = error(&Writer::new(7, 1, 1, 0).finish(), "v7.trace");
    assert!(e.contains("version 7") && e.contains("1 to 6"), "{e}");
    let mut small = Writer::new(6, 1, 1, 0);
    small.marker(marker::FILETYPE, 0x20);
    let e = error(&small.finish(), "x86.trace");
    assert!(e.contains("32-bit"), "{e}");
    // A damaged chunk: its CRC says so.
    let mut zip = write::zip(&[&whole]);
    let at = zip.len() / 3;
    zip[at] ^= 0x55;
    let e = error(&zip, "damaged.trace.zip");
    assert!(
        e.contains("chunk.0000") || e.contains("deflate") || e.contains("corrupt"),
        "{e}"
    );
    let e = error(b"", "empty.trace");
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn salvage_reads_a_trace_cut_short_up_to_its_end() {
    let dir = scratch();
    let p = put(dir.path(), "cut.trace", one_thread().bytes());
    let mut r = trace::open_salvaging(&p, None, true).unwrap();
    let b = read_all(r.as_mut()).unwrap();
    assert_eq!(b.refs, expected());
    assert!(r.warning().unwrap().contains("without its footer"));
    // Cut inside a record: the records before it, and a warning.
    let whole = one_thread().finish();
    let p = put(dir.path(), "cut2.trace", &whole[..whole.len() - 5]);
    let mut r = trace::open_salvaging(&p, None, true).unwrap();
    assert_eq!(read_all(r.as_mut()).unwrap().refs, expected());
    assert!(r.warning().unwrap().contains("7 of its 12 bytes"));
}

#[test]
fn a_text_trace_named_trace_is_read_as_its_text() {
    let dir = scratch();
    let p = put(dir.path(), "run.trace", b" L 7ff000,8\nI  401000,3\n");
    let (mut r, format) = trace::open_detected(&p, None, false).unwrap();
    assert_eq!(format, TraceFormat::Lackey);
    assert_eq!(read_all(r.as_mut()).unwrap().refs.len(), 2);
}

#[test]
fn folders_without_threads_or_with_unread_compression_are_refused() {
    let dir = scratch();
    let e = trace::open(dir.path(), None).err().unwrap().to_string();
    assert!(e.contains("no drmemtrace thread files"), "{e}");
    put(dir.path(), "drmemtrace.app.00001.0000.trace.lz4", b"x");
    let e = trace::open(dir.path(), None).err().unwrap().to_string();
    assert!(e.contains("lz4"), "{e}");
}

/// More threads than stay open, each in segments longer than the decoder's read-ahead
/// and interleaved with all the others: parked threads resume at their offset in
/// every kind of file (uncompressed, gzip, zstd, a `.zip` of two chunks), so the merge
/// gives exactly the references of the threads' segments in timestamp order.
#[test]
fn threads_parked_and_resumed_lose_and_repeat_nothing() {
    const THREADS: u64 = 150;
    const SEGMENTS: u64 = 3;
    const PER_SEGMENT: u64 = 3_000; // 9,000 records: more than one read-ahead block
    let dir = scratch();
    let folder = dir.path().join("trace");
    std::fs::create_dir_all(&folder).unwrap();
    let pc = |t: u64, s: u64, i: u64| 0x40_0000 + (t * SEGMENTS + s) * 0x10_0000 + i * 4;
    let addr = |t: u64, s: u64, i: u64| 0x1_0000_0000 + (t * SEGMENTS + s) * 0x100_0000 + i * 8;
    for t in 0..THREADS {
        let mut w = Writer::new(6, 1000 + t, 7, 10_000 + t);
        for s in 0..SEGMENTS {
            if s > 0 {
                w.timestamp(10_000 + s * 1_000 + t);
            }
            for i in 0..PER_SEGMENT {
                w.instr(pc(t, s, i), 4).read(addr(t, s, i), 8);
            }
        }
        let whole = w.finish();
        let name = format!("drmemtrace.app.{}.0000.trace", 1000 + t);
        match t % 4 {
            0 => {
                put(&folder, &name, &whole);
            }
            1 => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&whole).unwrap();
                put(&folder, &format!("{name}.gz"), &gz.finish().unwrap());
            }
            2 => {
                let zst = zstd::encode_all(&whole[..], 1).unwrap();
                put(&folder, &format!("{name}.zst"), &zst);
            }
            _ => {
                let cut = whole.len() / 12 / 2 * 12;
                let zip = write::zip(&[&whole[..cut], &whole[cut..]]);
                put(&folder, &format!("{name}.zip"), &zip);
            }
        }
    }
    let mut expected = Vec::new();
    for s in 0..SEGMENTS {
        for t in 0..THREADS {
            for i in 0..PER_SEGMENT {
                let ip = pc(t, s, i);
                expected.push(m(ip, ip, 4, AccessKind::Fetch, 0));
                expected.push(m(addr(t, s, i), ip, 8, AccessKind::Load, 0));
            }
        }
    }
    let got = refs(&folder).refs;
    assert_eq!(got.len(), expected.len());
    assert!(
        got == expected,
        "the merge differs from the threads' segments"
    );
}
