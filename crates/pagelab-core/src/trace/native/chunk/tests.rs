//! Unit tests of `chunk`.

use super::*;
use crate::event::count_kinds;

fn load(addr: u64) -> MemRef {
    MemRef {
        addr: VirtAddr(addr),
        ip: 0,
        size: 8,
        kind: AccessKind::Load,
        asid: Asid(0),
    }
}

/// Streams that interleave each keep their own slot: a walk over a heap array
/// mixed with stack accesses costs one delta byte per reference, not five, and
/// decodes back to the same addresses.
#[test]
fn interleaved_streams_keep_small_deltas() {
    let (heap, stack, code) = (0x7f12_0000_0000u64, 0x7ffd_8000_0000u64, 0x40_0000u64);
    let refs: Vec<MemRef> = (0..3000u64)
        .map(|i| match i % 3 {
            0 => load(heap + 8 * i),
            1 => load(stack - 8 * (i % 7)),
            _ => load(code + 4 * i),
        })
        .collect();
    let mut enc = ChunkEncoder::default();
    enc.start(Asid(0));
    for r in &refs {
        enc.push_ref(r);
    }
    // The first reference of each stream is far from everything: up to 6 bytes.
    assert!(
        enc.addrs.len() <= refs.len() + 3 * 6,
        "{} delta bytes",
        enc.addrs.len()
    );
    let mut raw = Vec::new();
    enc.finish(&mut raw);
    let mut batch = Batch::default();
    decode(&raw, refs.len() as u32, 0, &mut batch).unwrap();
    assert_eq!(batch.refs, refs);
}

/// The plain decode accepts exactly what the full decode accepts, and gives the
/// same addresses: on a valid chunk and on every one-byte corruption of it.
#[test]
fn plain_decode_agrees_with_the_full_decode() {
    let refs: Vec<MemRef> = (0..40u64)
        .map(|i| {
            MemRef::new(
                0x7f00_0000_0000 + (i % 5) * 0x1234_5678 + 8 * i,
                8,
                AccessKind::ALL[(i % 4) as usize],
            )
        })
        .collect();
    let mut enc = ChunkEncoder::default();
    enc.start(Asid(0));
    for (i, r) in refs.iter().enumerate() {
        if i == 20 {
            enc.push_event(&Event::Marker {
                id: 1,
                name: "m".into(),
            });
        }
        enc.push_ref(r);
    }
    let mut valid = Vec::new();
    enc.finish(&mut valid);
    let (n, events) = (refs.len() as u32, 1);
    let (mut batch, mut scratch, mut plain) =
        (Batch::default(), Batch::default(), PlainBatch::default());
    let mut plain_seen = 0;
    for at in 0..=valid.len() {
        for value in [0u8, 1, 0x3c, 0x40, 0xff] {
            let mut raw = valid.clone();
            if at < raw.len() {
                raw[at] = value;
            }
            let full = decode(&raw, n, events, &mut batch).map(|_| ());
            match decode_plain(&raw, n, events, true, &mut scratch, &mut plain) {
                Ok(true) => {
                    plain_seen += 1;
                    assert!(
                        full.is_ok(),
                        "byte {at} = {value}: plain accepts, full says {full:?}"
                    );
                    let addrs: Vec<u64> = batch.refs.iter().map(|r| r.addr.0).collect();
                    assert_eq!(plain.addrs, addrs, "byte {at} = {value}");
                    assert_eq!(plain.by_kind, count_kinds(&batch.refs));
                }
                Ok(false) => {}
                Err(e) => assert!(
                    full.is_err(),
                    "byte {at} = {value}: plain says {e}, full accepts"
                ),
            }
        }
    }
    assert!(plain_seen > 0);
}

proptest::proptest! {
    /// The pass over kind bytes sixteen at a time agrees with the portable one, on
    /// any bytes (invalid lengths included) and any tail.
    #[test]
    fn kind_scan_matches_the_portable_one(kinds in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        proptest::prop_assert_eq!(scan_kinds(&kinds), scan_kinds_portable(&kinds));
    }

    /// So do the largest page offset and the unzigzag of three instructions.
    #[test]
    fn vector_and_portable_helpers_agree(addrs in proptest::collection::vec(proptest::num::u64::ANY, 0..100)) {
        proptest::prop_assert_eq!(largest_offset(&addrs), largest_offset_portable(&addrs));
        for &a in &addrs {
            proptest::prop_assert_eq!(unzigzag_fast(a), unzigzag(a) as u64);
        }
    }
}

/// A whole chunk of one kind, and of long runs of each (the sums' extremes).
#[test]
fn kind_scan_counts_whole_chunks() {
    for kinds in [
        vec![0x23u8; 32768],
        (0..32768u32).map(|i| (i / 1000 % 4) as u8 | 0x20).collect(),
    ] {
        assert_eq!(scan_kinds(&kinds), scan_kinds_portable(&kinds));
    }
}

/// Found by fuzzing: an event index delta near 2^64 must be an error, not a wrap.
#[test]
fn event_index_overflow_is_an_error() {
    let mut enc = ChunkEncoder::default();
    enc.start(Asid(0));
    enc.push_event(&Event::SwitchAddressSpace { asid: Asid(1) });
    let mut events = Vec::new();
    varint::put(&mut events, 0);
    events.extend_from_slice(&[EV_SWITCH, 1]);
    varint::put(&mut events, u64::MAX - 1);
    events.extend_from_slice(&[EV_SWITCH, 1]);
    let mut batch = Batch::default();
    let e = decode_events(&events, 2, 2, &mut batch).unwrap_err();
    assert!(e.contains("beyond"), "{e}");
}
