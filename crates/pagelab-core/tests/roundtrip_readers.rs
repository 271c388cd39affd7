//! Every reader round-trips through the native format. For lackey text, address lists,
//! ChampSim records and raw u64 addresses: random content is written to a file, read
//! (checked against what was generated), written to a native file in small chunks,
//! read back, and must be identical, references and events. gzip-compressed lackey
//! files must read exactly like the plain ones. The native format on its own is tested
//! in roundtrip_native.rs.

mod common;

use common::roundtrip::{addr_strategy, config, kind_strategy, read, through_native};
use common::temp_with;
use pagelab_core::addr::{Asid, VirtAddr};
use pagelab_core::event::{AccessKind, MemRef};
use pagelab_core::trace::input::Source;
use pagelab_core::trace::{champsim, TraceFormat};
use proptest::prelude::*;
use std::path::Path;

// ---------------------------------------------------------------------------------
// Helpers

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
// The properties

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
