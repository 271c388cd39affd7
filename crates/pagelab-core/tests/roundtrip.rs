//! Every reader round-trips through the native format. For lackey text, address lists,
//! ChampSim records and raw u64 addresses: random content is written to a file, read
//! (checked against what was generated), written to a native file in small chunks,
//! read back, and must be identical, references and events. The native format is also
//! tested directly with random references (every kind, sizes 0, ≤ 63 and larger, ips
//! present or not, address-space switches) and random events of every kind, and
//! gzip-compressed lackey files must read exactly like the plain ones.

mod common;

use common::{temp_file, temp_with};
use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use pagelab_core::trace::input::Source;
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{self, champsim, Metadata, TraceFormat, TraceReader};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::BTreeMap;
use std::path::Path;

// ---------------------------------------------------------------------------------
// Helpers

fn read(path: &Path, format: TraceFormat) -> Batch {
    let mut reader = trace::open(path, Some(format)).unwrap_or_else(|e| panic!("open: {e}"));
    trace::read_all(reader.as_mut()).unwrap_or_else(|e| panic!("read: {e}"))
}

fn write_native(path: &Path, batch: &Batch, metadata: &Metadata, chunk_refs: u32) {
    let options = WriterOptions {
        chunk_refs,
        level: 1,
        // Both ways of storing zstd's literals, by the parity of the chunk size.
        compress_literals: chunk_refs % 2 == 1,
    };
    let mut w =
        NativeWriter::create(path, metadata, options).unwrap_or_else(|e| panic!("create: {e}"));
    w.write_batch(batch)
        .unwrap_or_else(|e| panic!("write: {e}"));
    assert_eq!(w.refs_written(), batch.refs.len() as u64);
    w.finish().unwrap_or_else(|e| panic!("finish: {e}"));
}

/// Write `batch` natively in chunks of `chunk_refs` and read it back.
fn through_native(batch: &Batch, chunk_refs: u32) -> Batch {
    let file = temp_file(".plt");
    write_native(file.path(), batch, &Metadata::default(), chunk_refs);
    read(file.path(), TraceFormat::Native)
}

/// Read `path` as `format`, check it holds `expected` (references only, no events),
/// and that the batch survives the native format unchanged.
fn check_reader(
    path: &Path,
    format: TraceFormat,
    expected: &[MemRef],
    chunk_refs: u32,
) -> Result<(), TestCaseError> {
    let batch = read(path, format);
    prop_assert_eq!(batch.refs.len(), expected.len());
    for (i, (got, want)) in batch.refs.iter().zip(expected).enumerate() {
        prop_assert_eq!(got, want, "reference {} as read from {:?}", i, format);
    }
    prop_assert!(batch.events.is_empty());
    let back = through_native(&batch, chunk_refs);
    prop_assert_eq!(&back.refs, &batch.refs);
    prop_assert_eq!(&back.events, &batch.events);
    Ok(())
}

fn kind_strategy() -> impl Strategy<Value = AccessKind> {
    prop::sample::select(AccessKind::ALL.to_vec())
}

/// Addresses with locality (small deltas around a few bases) and without.
fn addr_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..0x1_0000,
        3 => (0u64..8, 0u64..0x10_000).prop_map(|(b, o)| 0x7ff0_0000_0000 + b * 0x100_0000 + o),
        1 => any::<u64>(),
        1 => prop::sample::select(vec![0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]),
        // Deltas of every byte length, repeats (zero deltas) included.
        1 => (0u32..64, 0u64..4).prop_map(|(k, o)| (1u64 << k).wrapping_add(o)),
    ]
}

fn small_chunks() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![1u32, 2, 7, 7, 7, 64])
}

// ---------------------------------------------------------------------------------
// Lackey

#[derive(Clone, Debug)]
enum LackeyLine {
    Ref {
        kind: AccessKind,
        addr: u64,
        size: u32,
        pad: u8,
        upper: bool,
    },
    Noise(u8),
}

fn lackey_ref() -> impl Strategy<Value = LackeyLine> {
    let size = prop_oneof![1u32..=300, any::<u32>()];
    (
        kind_strategy(),
        addr_strategy(),
        size,
        0u8..=16,
        any::<bool>(),
    )
        .prop_map(|(kind, addr, size, pad, upper)| LackeyLine::Ref {
            kind,
            addr,
            size,
            pad,
            upper,
        })
}

fn lackey_line() -> impl Strategy<Value = LackeyLine> {
    prop_oneof![
        8 => lackey_ref(),
        1 => (0u8..4).prop_map(LackeyLine::Noise),
    ]
}

/// The text of a lackey trace and the references it holds.
fn lackey_text(lines: &[LackeyLine], crlf: bool, final_newline: bool) -> (Vec<u8>, Vec<MemRef>) {
    let mut text = String::new();
    let mut refs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match *line {
            LackeyLine::Ref {
                kind,
                addr,
                size,
                pad,
                upper,
            } => {
                let tag = match kind {
                    AccessKind::Fetch => "I ",
                    AccessKind::Load => " L",
                    AccessKind::Store => " S",
                    AccessKind::Modify => " M",
                };
                // Valgrind pads addresses to 8 digits; any width up to 16 must do.
                let mut hex = format!("{addr:0width$x}", width = pad as usize);
                if upper {
                    hex = hex.to_uppercase();
                }
                text.push_str(&format!("{tag} {hex},{size}"));
                refs.push(MemRef::new(addr, size, kind));
            }
            LackeyLine::Noise(0) => text.push_str("==12345== Lackey, an example Valgrind tool"),
            LackeyLine::Noise(1) => text.push_str("--12345-- run: /usr/bin/true"),
            LackeyLine::Noise(2) => text.push_str("==12345== "),
            LackeyLine::Noise(_) => {} // a blank line
        }
        if i + 1 < lines.len() || final_newline {
            text.push_str(if crlf { "\r\n" } else { "\n" });
        }
    }
    (text.into_bytes(), refs)
}

// ---------------------------------------------------------------------------------
// Address lists

#[derive(Clone, Debug)]
struct AddrsLine {
    kind: Option<(AccessKind, u8)>,
    addr: u64,
    hex: Option<(u8, u8)>, // (prefix style, padding) or decimal
    size: Option<(u32, bool)>,
    spacing: u8,
}

fn addrs_line() -> impl Strategy<Value = AddrsLine> {
    (
        prop::option::of((kind_strategy(), any::<u8>())),
        addr_strategy(),
        prop::option::of((0u8..4, 0u8..=16)),
        prop::option::of((prop_oneof![0u32..=100, any::<u32>()], any::<bool>())),
        any::<u8>(),
    )
        .prop_map(|(kind, addr, hex, size, spacing)| AddrsLine {
            kind,
            addr,
            hex,
            size,
            spacing,
        })
}

fn addrs_text(lines: &[AddrsLine], comments: &[u8]) -> (Vec<u8>, Vec<MemRef>) {
    let mut text = String::new();
    let mut refs = Vec::new();
    let sep = |s: u8| match s % 3 {
        0 => " ",
        1 => "\t",
        _ => "  \t ",
    };
    for (i, l) in lines.iter().enumerate() {
        match comments.get(i).map(|c| c % 8) {
            Some(0) => text.push_str("# a comment line\n"),
            Some(1) => text.push_str("\n"),
            Some(2) => text.push_str("   \t\n"),
            _ => {}
        }
        if l.spacing & 8 != 0 {
            text.push(' ');
        }
        let kind = match l.kind {
            Some((k, style)) => {
                let names: &[&str] = match k {
                    AccessKind::Load => &["R", "L", "r", "l"],
                    AccessKind::Store => &["W", "S", "w", "s"],
                    AccessKind::Fetch => &["I", "F", "i", "f"],
                    AccessKind::Modify => &["M", "m"],
                };
                text.push_str(names[style as usize % names.len()]);
                text.push_str(sep(l.spacing));
                k
            }
            None => AccessKind::Load,
        };
        match l.hex {
            Some((style, pad)) => {
                let digits = format!("{:0width$x}", l.addr, width = pad as usize);
                let (prefix, digits) = match style {
                    0 => ("0x", digits),
                    1 => ("0X", digits),
                    2 => ("0x", digits.to_uppercase()),
                    _ => ("0X", digits.to_uppercase()),
                };
                text.push_str(prefix);
                text.push_str(&digits);
            }
            None => text.push_str(&l.addr.to_string()),
        }
        let size = match l.size {
            Some((s, hex)) => {
                text.push_str(sep(l.spacing >> 2));
                if hex {
                    text.push_str(&format!("{s:#x}"));
                } else {
                    text.push_str(&s.to_string());
                }
                s
            }
            None => 1,
        };
        if l.spacing & 16 != 0 {
            text.push_str(" \t");
        }
        text.push_str(if l.spacing & 32 != 0 { "\r\n" } else { "\n" });
        refs.push(MemRef::new(l.addr, size, kind));
    }
    (text.into_bytes(), refs)
}

// ---------------------------------------------------------------------------------
// ChampSim

/// One record: (ip, loads, stores); zero addresses mean "no access".
type Record = (u64, Vec<u64>, Vec<u64>);

fn mem_addr() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 3 => addr_strategy()]
}

fn record() -> impl Strategy<Value = Record> {
    (
        prop_oneof![1 => Just(0u64), 6 => addr_strategy()],
        prop::collection::vec(mem_addr(), 0..=4),
        prop::collection::vec(mem_addr(), 0..=2),
    )
}

/// What a ChampSim reader must make of the records: a fetch at ip, then a load for
/// each non-zero source, then a store for each non-zero destination, all carrying ip
/// and size 1.
fn champsim_refs(records: &[Record]) -> Vec<MemRef> {
    let mut refs = Vec::new();
    for (ip, loads, stores) in records {
        let mk = |addr: u64, kind| MemRef {
            addr: VirtAddr(addr),
            ip: *ip,
            size: 1,
            kind,
            asid: Asid(0),
        };
        refs.push(mk(*ip, AccessKind::Fetch));
        refs.extend(
            loads
                .iter()
                .filter(|&&a| a != 0)
                .map(|&a| mk(a, AccessKind::Load)),
        );
        refs.extend(
            stores
                .iter()
                .filter(|&&a| a != 0)
                .map(|&a| mk(a, AccessKind::Store)),
        );
    }
    refs
}

// ---------------------------------------------------------------------------------
// Native, directly

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

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn lackey_round_trips(
        lines in prop::collection::vec(lackey_line(), 0..300),
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
        chunk_refs in small_chunks(),
    ) {
        let (text, refs) = lackey_text(&lines, crlf, final_newline);
        let file = temp_with(".lackey", &text);
        check_reader(file.path(), TraceFormat::Lackey, &refs, chunk_refs)?;
    }

    #[test]
    fn addrs_round_trips(
        lines in prop::collection::vec(addrs_line(), 0..300),
        comments in prop::collection::vec(any::<u8>(), 0..300),
        chunk_refs in small_chunks(),
    ) {
        let (text, refs) = addrs_text(&lines, &comments);
        let file = temp_with(".addrs", &text);
        check_reader(file.path(), TraceFormat::Addrs, &refs, chunk_refs)?;
    }

    #[test]
    fn champsim_round_trips(
        records in prop::collection::vec(record(), 0..200),
        chunk_refs in small_chunks(),
    ) {
        let bytes: Vec<u8> = records
            .iter()
            .flat_map(|(ip, loads, stores)| champsim::encode_record(*ip, loads, stores))
            .collect();
        let file = temp_with(".champsim", &bytes);
        check_reader(file.path(), TraceFormat::Champsim, &champsim_refs(&records), chunk_refs)?;
    }

    #[test]
    fn u64_round_trips(
        addrs in prop::collection::vec(addr_strategy(), 0..600),
        chunk_refs in small_chunks(),
    ) {
        let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
        let file = temp_with(".u64", &bytes);
        let refs: Vec<MemRef> =
            addrs.iter().map(|&a| MemRef::new(a, 1, AccessKind::Load)).collect();
        check_reader(file.path(), TraceFormat::U64, &refs, chunk_refs)?;
    }

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

proptest! {
    #![proptest_config(config(64))]

    /// gzip-compressed lackey (one gzip member, or two concatenated) reads exactly as
    /// the plain text does, with the format given or detected from the name.
    #[test]
    fn gzipped_lackey_reads_identically(
        lines in prop::collection::vec(lackey_line(), 0..400),
        split in any::<prop::sample::Index>(),
    ) {
        let (text, refs) = lackey_text(&lines, false, true);
        let plain = temp_with(".lackey", &text);
        let expected = read(plain.path(), TraceFormat::Lackey);
        prop_assert_eq!(&expected.refs, &refs);

        // One gzip member, read with the format given and with it detected from the name.
        let gz = temp_with(".lackey.gz", &gzip(&text));
        prop_assert_eq!(&read(gz.path(), TraceFormat::Lackey), &expected);
        let detected = TraceFormat::detect(&Source::open(gz.path()).unwrap()).unwrap();
        prop_assert_eq!(detected, TraceFormat::Lackey);
        prop_assert_eq!(&read(gz.path(), detected), &expected);

        // Two members, the text split at a line boundary.
        let cut = if text.is_empty() {
            0
        } else {
            let at = split.index(text.len());
            text[at..].iter().position(|&b| b == b'\n').map_or(text.len(), |p| at + p + 1)
        };
        let two = [gzip(&text[..cut]), gzip(&text[cut..])].concat();
        std::fs::write(gz.path(), &two).unwrap();
        prop_assert_eq!(&read(gz.path(), TraceFormat::Lackey), &expected);
        prop_assert_eq!(&through_native(&read(gz.path(), TraceFormat::Lackey), 7), &expected);
    }
}

/// Compress with the system's gzip.
fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run gzip");
    let mut stdin = child.stdin.take().unwrap();
    let input = data.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("gzip output");
    feeder.join().unwrap().expect("feed gzip");
    assert!(out.status.success(), "gzip failed");
    out.stdout
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
