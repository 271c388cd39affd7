//! The recorder's stream (`.pgrec`): what is written reads back exactly, a stream cut
//! anywhere is an error, or salvaged keeps the references before the cut and says so;
//! malformed records are errors naming their offset.

use pagelab_core::addr::VirtAddr;
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use pagelab_core::trace::input::Compression;
use pagelab_core::trace::pgrec::{self, EndCounts, PgrecReader};
use pagelab_core::trace::{read_all, TraceReader};
use proptest::prelude::*;
use std::path::Path;

fn reader(bytes: Vec<u8>) -> Result<PgrecReader, pagelab_core::trace::TraceError> {
    PgrecReader::from_reader(
        Box::new(std::io::Cursor::new(bytes)),
        Compression::None,
        Path::new("test.pgrec"),
    )
}

fn memref() -> impl Strategy<Value = MemRef> {
    (
        prop_oneof![0u64..1 << 20, 0u64..1 << 48, any::<u64>()],
        prop_oneof![1u32..16, 1u32..5000, Just(0u32)],
        0u8..4,
    )
        .prop_map(|(addr, size, kind)| MemRef {
            addr: VirtAddr(addr),
            size,
            kind: AccessKind::from_code(kind),
            ..MemRef::default()
        })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (0u8..10, any::<[u64; 5]>()).prop_map(|(op, v)| Event::Alloc(Alloc {
            op: AllocOp::from_code(op).unwrap(),
            addr: v[0],
            size: v[1],
            old_addr: v[2],
            flags: v[3],
            callsite: v[4],
        })),
        (
            any::<u64>(),
            any::<u64>(),
            0u8..8,
            0u8..7,
            "[a-z/.\\[\\]]{0,20}"
        )
            .prop_map(|(start, end, perms, kind, name)| Event::Segment(Segment {
                start,
                end,
                perms,
                kind: SegmentKind::from_code(kind).unwrap(),
                name,
            })),
        (any::<u32>(), "[a-z ]{0,17}").prop_map(|(id, name)| Event::Marker { id, name }),
        any::<u32>().prop_map(|tid| Event::Thread { tid }),
    ]
}

fn batch() -> impl Strategy<Value = Batch> {
    (
        prop::collection::vec(memref(), 0..200),
        prop::collection::vec((0usize..200, event()), 0..20),
    )
        .prop_map(|(refs, mut events)| {
            for (i, _) in events.iter_mut() {
                *i = (*i).min(refs.len());
            }
            events.sort_by_key(|(i, _)| *i);
            Batch { refs, events }
        })
}

proptest! {
    #[test]
    fn written_streams_read_back(b in batch()) {
        let end = EndCounts { seen: 7 + b.refs.len() as u64, written: b.refs.len() as u64 };
        let bytes = pgrec::write(&b, 2, 1, Some(end));
        let mut r = reader(bytes).unwrap();
        let back = read_all(&mut r).unwrap();
        prop_assert_eq!(&back, &b);
        prop_assert_eq!(r.end_counts(), Some(end));
        prop_assert!(r.warning().is_none());
        prop_assert_eq!(r.metadata().extra.get("fetches").map(String::as_str), Some("all"));
    }

    /// Whatever length a stream is cut to, it is an error naming where it stops;
    /// salvaged, its complete records before the cut are kept and the cut is
    /// reported. Never a panic.
    #[test]
    fn cut_streams_keep_what_came_before(b in batch(), cut in 0.0f64..1.0) {
        let full = pgrec::write(&b, 1, 1, Some(EndCounts { seen: 0, written: 0 }));
        let len = 16 + ((full.len() - 16) as f64 * cut) as usize;
        let e = read_all(&mut reader(full[..len].to_vec()).unwrap()).unwrap_err().to_string();
        prop_assert!(e.contains("without its END record") && e.contains("--salvage"), "{}", e);
        let mut r = reader(full[..len].to_vec()).unwrap().salvage(true);
        let back = read_all(&mut r).unwrap();
        prop_assert!(back.refs.len() <= b.refs.len());
        prop_assert_eq!(&back.refs[..], &b.refs[..back.refs.len()]);
        let warning = r.warning().expect("a cut stream is reported");
        prop_assert!(warning.contains("without its END record"), "{}", warning);
        prop_assert!(warning.contains(&format!("kept the {} references", back.refs.len())), "{}", warning);
    }
}

#[test]
fn header_problems_are_errors() {
    let good = pgrec::write(&Batch::default(), 0, 1, None);
    let e = reader(good[..11].to_vec()).err().unwrap().to_string();
    assert!(e.contains("ends inside its 16-byte header"), "{e}");
    let mut bad = good.clone();
    bad[0] = b'X';
    let e = reader(bad).err().unwrap().to_string();
    assert!(
        e.contains("test.pgrec: offset 0: not a recorder stream"),
        "{e}"
    );
    let mut v2 = good.clone();
    v2[8] = 2;
    let e = reader(v2).err().unwrap().to_string();
    assert!(e.contains("version 2 is not supported"), "{e}");
}

#[test]
fn malformed_records_name_their_offset() {
    let b = Batch {
        refs: vec![MemRef::new(0x1000, 4, AccessKind::Load); 3],
        events: vec![],
    };
    let mut bytes = pgrec::write(&b, 0, 1, None);
    // The third reference (offset 16 + 2*8) becomes an event with tag 99.
    bytes[32 + 7] = 0x80 | 99;
    let e = read_all(&mut reader(bytes).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("offset 32: unknown record tag 99"), "{e}");

    let mut bytes = pgrec::write(&b, 0, 1, None);
    bytes[24 + 6] = 0; // size 0
    bytes[24 + 7] = 0;
    let e = read_all(&mut reader(bytes).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("offset 24: malformed reference word"), "{e}");

    let mut bytes = pgrec::write(
        &b,
        0,
        1,
        Some(EndCounts {
            seen: 3,
            written: 3,
        }),
    );
    bytes.extend_from_slice(&bytes[16..24].to_vec());
    let e = read_all(&mut reader(bytes).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("data after the END record"), "{e}");
}

/// The words of a header (fetches page, sample 1).
fn header() -> Vec<u64> {
    vec![u64::from_le_bytes(*pgrec::MAGIC), 1 | 1 << 8 | 1 << 16]
}

/// An EXEC record of `path` (at most 8 bytes here).
fn exec_record(path: &str) -> Vec<u64> {
    let mut name = [0u8; 8];
    name[..path.len()].copy_from_slice(path.as_bytes());
    vec![
        1 << 63 | 6 << 56 | path.len() as u64,
        u64::from_le_bytes(name),
    ]
}

fn bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A load of 8 bytes at `addr`.
fn load(addr: u64) -> u64 {
    addr | 8 << 48
}

fn end(n: u64) -> Vec<u64> {
    vec![1 << 63 | 5 << 56, n, n]
}

/// A program that execs another: the stream goes on with the other's header, in the
/// same stream or (`resume`) in the next one opened; either way the references of both
/// are read, the program exec'd in an address space of its own after a switch and the
/// marker `exec PATH`. An exec that fails is followed by more of the same program; a
/// stream that ends at an exec says the program exec'd was not recorded.
#[test]
fn a_stream_goes_on_through_an_exec() {
    let marker = |at: usize| {
        [
            (
                at,
                Event::SwitchAddressSpace {
                    asid: pagelab_core::addr::Asid(1),
                },
            ),
            (
                at,
                Event::Marker {
                    id: pgrec::EXEC_MARKER,
                    name: "exec /bin/b".into(),
                },
            ),
        ]
    };
    let first: Vec<u64> = [
        header(),
        vec![load(0x1000)],
        exec_record("/bin/x"),
        vec![load(0x1008)],
        exec_record("/bin/b"),
    ]
    .concat();
    let second: Vec<u64> = [header(), vec![load(0x2000), load(0x3000)], end(2)].concat();
    // In one stream.
    let mut r = reader(bytes(&[first.clone(), second.clone()].concat())).unwrap();
    let b = read_all(&mut r).unwrap();
    assert_eq!(
        b.refs.iter().map(|m| m.addr.0).collect::<Vec<_>>(),
        [0x1000, 0x1008, 0x2000, 0x3000]
    );
    assert_eq!(b.events, marker(2));
    let spaces: Vec<u16> = b.refs.iter().map(|m| m.asid.0).collect();
    assert_eq!(spaces, [0, 0, 1, 1]);
    assert_eq!((r.warning(), r.replaced_by()), (None, None));
    // In two: the first ends at the exec, saying so.
    let mut r = reader(bytes(&first)).unwrap().salvage(true);
    let mut batch = Batch::default();
    let mut refs = 0;
    while r.next_batch(&mut batch).unwrap() {
        refs += batch.refs.len();
    }
    assert_eq!((refs, r.replaced_by()), (2, Some("/bin/b")));
    let said = r.warning().unwrap();
    assert!(
        said.contains("exec'd /bin/b, which was not recorded"),
        "{said}"
    );
    r.resume(Box::new(std::io::Cursor::new(bytes(&second))))
        .unwrap();
    assert!(r.next_batch(&mut batch).unwrap());
    assert_eq!(batch.events, marker(0));
    assert_eq!(batch.refs.len(), 2);
    assert_eq!(r.warning(), None);
    assert_eq!(
        r.end_counts(),
        Some(EndCounts {
            seen: 2,
            written: 2
        })
    );
    // A stream that stops after an exec that failed is cut short.
    let failed: Vec<u64> = [header(), exec_record("/bin/x"), vec![load(0x1000)]].concat();
    let mut r = reader(bytes(&failed)).unwrap().salvage(true);
    read_all(&mut r).unwrap();
    assert!(r.warning().is_some() && r.replaced_by().is_none());
}
