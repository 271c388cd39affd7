//! The native format round-trips on its own, with random references (every kind,
//! sizes 0, ≤ 63 and larger, ips present or not, address-space switches) and random
//! events of every kind, written in chunks of every size: references, events and
//! metadata come back identical; address spaces that change without a switch event
//! come back with the switches the writer records; traces of events only, the empty
//! trace, and zstd's literals stored either way. Every other reader's round trip
//! through it is in roundtrip_readers.rs.

mod common;

use common::roundtrip::{addr_strategy, config, kind_strategy, read, through_native, write_native};
use common::temp_file;
use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use pagelab_core::trace::input::Source;
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{self, Metadata, TraceFormat, TraceReader};
use proptest::prelude::*;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------
// Helpers

/// One item of a trace as it happens: a reference (its address space is whichever is
/// current) or an event.
#[derive(Clone, Debug)]
enum Item {
    Ref {
        addr: u64,
        ip: u64,
        size: u32,
        kind: AccessKind,
    },
    Event(Event),
}

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z/._\\[\\]-]{0,24}",
        1 => ".{0,8}",
        1 => Just(String::new()),
    ]
}

fn any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..0x1000, any::<u64>()]
}

fn alloc_event() -> impl Strategy<Value = Event> {
    let op = prop::sample::select(AllocOp::ALL.to_vec());
    (op, any_u64(), any_u64(), any_u64(), any_u64(), any_u64()).prop_map(
        |(op, addr, size, old_addr, flags, callsite)| {
            Event::Alloc(Alloc {
                op,
                addr,
                size,
                old_addr,
                flags,
                callsite,
            })
        },
    )
}

fn segment_event() -> impl Strategy<Value = Event> {
    let kind = prop::sample::select(SegmentKind::ALL.to_vec());
    (any_u64(), any_u64(), any::<u8>(), kind, name_strategy()).prop_map(
        |(start, end, perms, kind, name)| {
            Event::Segment(Segment {
                start,
                end,
                perms,
                kind,
                name,
            })
        },
    )
}

fn event_strategy() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => alloc_event(),
        1 => segment_event(),
        1 => (any::<u32>(), name_strategy()).prop_map(|(id, name)| Event::Marker { id, name }),
        2 => prop_oneof![3 => 0u16..4, 1 => any::<u16>()]
            .prop_map(|a| Event::SwitchAddressSpace { asid: Asid(a) }),
    ]
}

/// Reference sizes: small, around the escape thresholds, and anything.
fn ref_size() -> impl Strategy<Value = u32> {
    let edges = vec![62u32, 63, 64, 127, 128, 254, 255, 256, 4096, u32::MAX];
    prop_oneof![
        3 => 0u32..=70,
        1 => 200u32..=300,
        1 => prop::sample::select(edges),
        1 => any::<u32>(),
    ]
}

fn item_strategy() -> impl Strategy<Value = Item> {
    prop_oneof![
        6 => (
            addr_strategy(),
            prop_oneof![2 => Just(0u64), 1 => addr_strategy()],
            ref_size(),
            kind_strategy(),
        )
            .prop_map(|(addr, ip, size, kind)| Item::Ref { addr, ip, size, kind }),
        1 => event_strategy().prop_map(Item::Event),
    ]
}

/// The batch a reader would produce for these items: every reference carries the
/// address space set by the last switch before it (0 at the start).
fn consistent_batch(items: &[Item]) -> Batch {
    let mut batch = Batch::default();
    let mut asid = Asid(0);
    for item in items {
        match item {
            Item::Ref {
                addr,
                ip,
                size,
                kind,
            } => batch.refs.push(MemRef {
                addr: VirtAddr(*addr),
                ip: *ip,
                size: *size,
                kind: *kind,
                asid,
            }),
            Item::Event(e) => {
                if let Event::SwitchAddressSpace { asid: a } = e {
                    asid = *a;
                }
                batch.push_event(e.clone());
            }
        }
    }
    batch
}

fn metadata_strategy() -> impl Strategy<Value = Metadata> {
    (
        "[a-z]{0,8}",
        ".{0,20}",
        "[a-z0-9 .]{0,12}",
        prop::collection::btree_map("[a-z_]{1,6}", ".{0,6}", 0..3),
    )
        .prop_map(|(source_format, workload, created_by, extra)| Metadata {
            source_format,
            workload,
            created_by,
            extra: extra.into_iter().collect::<BTreeMap<_, _>>(),
        })
}

// ---------------------------------------------------------------------------------
// The properties

proptest! {
    #![proptest_config(config(512))]

    /// The native format on its own: a consistent batch (each reference in the address
    /// space its preceding switches set) comes back exactly, events after the last
    /// reference included, and so does the metadata.
    #[test]
    fn native_round_trips_refs_and_events(
        items in prop::collection::vec(item_strategy(), 0..400),
        tail in prop::collection::vec(event_strategy(), 0..4),
        chunk_refs in prop::sample::select(vec![1u32, 2, 7, 7, 33, 32 * 1024]),
        metadata in metadata_strategy(),
    ) {
        let mut batch = consistent_batch(&items);
        for e in tail {
            batch.push_event(e);
        }
        let file = temp_file(".plt");
        write_native(file.path(), &batch, &metadata, chunk_refs);
        let mut reader = NativeReader::open(file.path()).unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(reader.metadata(), &metadata);
        let back = trace::read_all(&mut reader).unwrap_or_else(|e| panic!("{e}"));
        prop_assert!(reader.warning().is_none());
        prop_assert_eq!(back.refs.len(), batch.refs.len());
        for (i, (got, want)) in back.refs.iter().zip(&batch.refs).enumerate() {
            prop_assert_eq!(got, want, "reference {}", i);
        }
        prop_assert_eq!(&back.events, &batch.events);
        // Reading it again through format detection gives the same.
        let again = read(file.path(), TraceFormat::detect(&Source::open(file.path()).unwrap()).unwrap());
        prop_assert_eq!(again, back);
    }

    /// References whose address spaces change without a switch event: the writer
    /// records the switch itself, so the references come back identical and the events
    /// gain exactly those switches, placed before the reference that needed them.
    #[test]
    fn native_records_address_space_changes_as_switches(
        items in prop::collection::vec(item_strategy(), 0..300),
        asids in prop::collection::vec(0u16..4, 1..300),
        chunk_refs in prop::sample::select(vec![1u32, 3, 7, 64]),
    ) {
        let mut batch = consistent_batch(&items);
        for (i, r) in batch.refs.iter_mut().enumerate() {
            if asids[i % asids.len()] != 0 {
                r.asid = Asid(asids[i % asids.len()]);
            }
        }
        // The expected events: the originals, plus a switch before each reference
        // whose address space is not the current one.
        let mut expected = Vec::new();
        let mut current = Asid(0);
        let mut events = batch.events.iter().peekable();
        for (i, r) in batch.refs.iter().enumerate() {
            while let Some((_, e)) = events.next_if(|(at, _)| *at <= i) {
                if let Event::SwitchAddressSpace { asid } = e {
                    current = *asid;
                }
                expected.push((i, e.clone()));
            }
            if r.asid != current {
                current = r.asid;
                expected.push((i, Event::SwitchAddressSpace { asid: current }));
            }
        }
        expected.extend(events.cloned());
        let back = through_native(&batch, chunk_refs);
        prop_assert_eq!(&back.refs, &batch.refs);
        prop_assert_eq!(&back.events, &expected);
    }
}

/// A trace made of events only, and the empty trace, round-trip too.
#[test]
fn event_only_and_empty_traces() {
    let mut batch = Batch::default();
    batch.push_event(Event::Marker {
        id: 1,
        name: "start".into(),
    });
    batch.push_event(Event::SwitchAddressSpace { asid: Asid(9) });
    batch.push_event(Event::Marker {
        id: 2,
        name: "end".into(),
    });
    assert_eq!(through_native(&batch, 7), batch);
    assert_eq!(through_native(&Batch::default(), 7), Batch::default());
}

/// zstd's literals stored as they are (the default) or Huffman-coded: the same
/// references come back, and coding them makes a trace of scattered 8-byte loads
/// smaller (so the option is really applied).
#[test]
fn literals_stored_either_way_read_the_same() {
    let mut batch = Batch::default();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        batch.refs.push(MemRef {
            addr: VirtAddr(0x7f00_0000_0000 + (x % (4 << 30)) / 8 * 8),
            ip: 0,
            size: 8,
            kind: AccessKind::Load,
            asid: Asid(0),
        });
    }
    let mut sizes = Vec::new();
    for compress_literals in [false, true] {
        let file = temp_file(".plt");
        let options = WriterOptions {
            compress_literals,
            ..WriterOptions::default()
        };
        let mut w = NativeWriter::create(file.path(), &Metadata::default(), options).unwrap();
        w.write_batch(&batch).unwrap();
        w.finish().unwrap();
        assert_eq!(read(file.path(), TraceFormat::Native), batch);
        sizes.push(std::fs::metadata(file.path()).unwrap().len());
    }
    assert!(sizes[1] < sizes[0], "{sizes:?}");
}
