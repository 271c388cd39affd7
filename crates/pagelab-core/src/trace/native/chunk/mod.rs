//! Encoding and decoding of one chunk's payload (before compression): column sections
//! for kinds, sizes, delta-encoded addresses and instruction pointers, and the events.
//! Each chunk starts its deltas afresh, so every chunk decodes on its own.
//!
//! Addresses are stored as zigzag deltas in as few little-endian bytes as they need,
//! their byte count kept in the reference's kind byte: decoding is one unaligned 8-byte
//! load and a mask per reference, with no branch on the value (the section ends with 8
//! bytes of padding so the load never runs past it).
//!
//! A delta is taken against one of [`SLOTS`] previous addresses, named in the kind
//! byte (bits 0–1 the access kind, 2–5 the delta's byte count, 6–7 the slot). The
//! encoder picks the slot nearest the address and, when none is near, the least
//! recently used one, so that streams which interleave — stack and heap, code and
//! data, two arrays — each keep small deltas. On the standard benchmark trace this
//! halves the delta bytes against a single previous address, and the decompressor has
//! less to do.

mod encode;
pub use encode::ChunkEncoder;

use super::varint::{self, unzigzag, zigzag, Cursor};
use crate::addr::{Asid, VirtAddr};
use crate::event::{
    count_kind_codes, AccessKind, Alloc, AllocOp, Batch, Event, MemRef, PlainBatch, Segment,
    SegmentKind,
};

/// Sizes below this are stored in the size byte; larger ones escape to the extras section.
const SIZE_ESCAPE: u32 = 255;
/// Zero bytes after the address deltas.
const PAD: usize = 8;
/// Previous addresses a delta may be taken against.
pub const SLOTS: usize = 4;
/// A delta of at least this many bytes means no slot is near: take the least recently used.
const FAR_BYTES: u32 = 4;
/// Bits 2–5 of a kind byte: the delta's byte count, at most 8.
const LEN_FIELD: u8 = 15 << 2;
/// By kind byte, what decoding its delta needs: the mask keeping the low bytes of a
/// word that hold the delta, and the delta's byte count. Indexed by the whole byte,
/// each lookup is one load folded into the instruction that uses it, in place of
/// extracting the length field (a copy, a shift, an `and`) and then its mask. One
/// table for both, so that one register addresses them. (Lengths above 8 keep all 8
/// bytes; they are refused before decoding.)
struct DeltaTable {
    masks: [u64; 256],
    lens: [usize; 256],
}
static DELTA_TABLE: DeltaTable = {
    let mut t = DeltaTable {
        masks: [u64::MAX; 256],
        lens: [0; 256],
    };
    let mut k = 0;
    while k < 256 {
        let n = (k as u8 & LEN_FIELD) >> 2;
        if n < 8 {
            t.masks[k] = (1u64 << (8 * n)) - 1;
        }
        t.lens[k] = n as usize;
        k += 1;
    }
    t
};
const FLAG_HAS_IPS: u8 = 1;

const EV_ALLOC: u8 = 0;
const EV_SEGMENT: u8 = 1;
const EV_MARKER: u8 = 2;
const EV_SWITCH: u8 = 3;
const EV_THREAD: u8 = 4;

/// A chunk payload split into its sections, their lengths checked.
struct Sections<'a> {
    has_ips: bool,
    start_asid: Asid,
    kinds: &'a [u8],
    sizes: &'a [u8],
    /// The address deltas and their padding, checked to fit the kinds' lengths.
    addrs: &'a [u8],
    ips: &'a [u8],
    extras: &'a [u8],
    events: &'a [u8],
}

impl<'a> Sections<'a> {
    fn parse(raw: &'a [u8], n_refs: u32) -> Result<Sections<'a>, String> {
        let mut head = Cursor::new(raw);
        let flags = head.byte()?;
        if flags & !FLAG_HAS_IPS != 0 {
            return Err(format!("unknown chunk flags {flags:#x}"));
        }
        let start_asid = asid_from(head.varint()?)?;
        let mut lens = [0usize; 4];
        for len in lens.iter_mut() {
            *len = usize::try_from(head.varint()?).map_err(|_| "a section length is too large")?;
        }
        let kinds = head.bytes(n_refs as usize)?;
        let sizes = head.bytes(n_refs as usize)?;
        let addrs = head.bytes(lens[0])?;
        if addrs.len() < PAD {
            return Err("the address section lacks its padding".into());
        }
        let ips = head.bytes(lens[1])?;
        let extras = head.bytes(lens[2])?;
        let events = head.bytes(lens[3])?;
        if !head.is_done() {
            return Err(format!("{} bytes after the last section", head.remaining()));
        }
        let has_ips = flags & FLAG_HAS_IPS != 0;
        if !has_ips && !ips.is_empty() {
            return Err("instruction pointers present but not flagged".into());
        }
        Ok(Sections {
            has_ips,
            start_asid,
            kinds,
            sizes,
            addrs,
            ips,
            extras,
            events,
        })
    }

    /// Check the lengths of the address deltas once, so that the loops over
    /// references need not: each at most 8, and together they fill the section before
    /// its padding. The same pass over the kind bytes counts the references of each
    /// kind. (After the events, so that a chunk wrong in both is reported as before
    /// for its events.)
    fn check_lengths(&self) -> Result<Deltas<'a>, String> {
        let (kinds, addrs) = (self.kinds, self.addrs);
        let scan = scan_kinds(kinds);
        if scan.largest_len > 8 << 2 {
            return Err("invalid kind byte".into());
        }
        // The unchecked reads of `addresses` rely on this sum.
        let delta_bytes = scan.delta_bytes;
        if delta_bytes + PAD != addrs.len() || addrs[delta_bytes..].iter().any(|&b| b != 0) {
            return Err("the address deltas do not fill their section".into());
        }
        Ok(Deltas {
            kinds,
            addrs,
            by_kind: scan.by_kind,
        })
    }
}

/// What one pass over a chunk's kind bytes tells.
#[derive(Debug, PartialEq)]
struct KindScan {
    /// The largest length field, in place (`k & LEN_FIELD`).
    largest_len: u8,
    /// The lengths summed: the bytes of the address deltas.
    delta_bytes: usize,
    /// References by kind, indexed by `AccessKind as usize`.
    by_kind: [u64; 4],
}

/// [`scan_kinds_portable`] sixteen bytes at a time. Sums of bytes are what SSE2 does
/// cheaply (`psadbw` sums the distances of 8 bytes from another 8 into one word), so
/// every figure is made a sum: the length fields' sum is the delta bytes (times 4),
/// and for the kind codes x, the sums of x, |x - 1| and |x - 2| with the number of
/// bytes are four independent equations in the four kinds' counts.
#[cfg(target_arch = "x86_64")]
fn scan_kinds(kinds: &[u8]) -> KindScan {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_and_si128, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_max_epu8,
        _mm_sad_epu8, _mm_set1_epi8, _mm_setzero_si128, _mm_srli_si128, _mm_storeu_si128,
    };
    let blocks = kinds.chunks_exact(16);
    let tail = blocks.remainder();
    let n = (kinds.len() - tail.len()) as u64;
    // SAFETY: SSE2 is part of every x86-64 target; each block is 16 bytes, and the
    // unaligned load reads exactly those.
    let (largest, sums) = unsafe {
        let (zero, ones, twos) = (_mm_setzero_si128(), _mm_set1_epi8(1), _mm_set1_epi8(2));
        let (len_field, code) = (_mm_set1_epi8(LEN_FIELD as i8), _mm_set1_epi8(3));
        let (mut largest, mut lens, mut x, mut x1, mut x2) = (zero, zero, zero, zero, zero);
        for block in blocks {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let len = _mm_and_si128(v, len_field);
            largest = _mm_max_epu8(largest, len);
            lens = _mm_add_epi64(lens, _mm_sad_epu8(len, zero));
            let c = _mm_and_si128(v, code);
            x = _mm_add_epi64(x, _mm_sad_epu8(c, zero));
            x1 = _mm_add_epi64(x1, _mm_sad_epu8(c, ones));
            x2 = _mm_add_epi64(x2, _mm_sad_epu8(c, twos));
        }
        let mut bytes = [0u8; 16];
        _mm_storeu_si128(bytes.as_mut_ptr().cast::<__m128i>(), largest);
        // Each sum is in two 64-bit lanes.
        let total =
            |s: __m128i| (_mm_cvtsi128_si64(_mm_add_epi64(s, _mm_srli_si128::<8>(s)))) as u64;
        (
            bytes.into_iter().max().unwrap_or(0),
            [total(lens), total(x), total(x1), total(x2)],
        )
    };
    let [lens, x, x1, x2] = sums;
    // Over n codes, with counts c0..c3: x = c1 + 2 c2 + 3 c3, x1 = c0 + c2 + 2 c3,
    // x2 = 2 c0 + c1 + c3 and n = c0 + c1 + c2 + c3; solved (in signed arithmetic, as
    // differences may be negative; every halving is of an even number, so exact):
    let (n, x, x1, x2) = (n as i64, x as i64, x1 as i64, x2 as i64);
    let c3 = (x + x2 - 2 * n) / 2;
    let c1 = n + c3 - x1;
    let c2 = (x1 - 3 * c3 + (x - x2) / 2) / 2;
    let c0 = n - c1 - c2 - c3;
    let rest = scan_kinds_portable(tail);
    KindScan {
        largest_len: largest.max(rest.largest_len),
        delta_bytes: (lens >> 2) as usize + rest.delta_bytes,
        by_kind: std::array::from_fn(|k| [c0, c1, c2, c3][k] as u64 + rest.by_kind[k]),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn scan_kinds(kinds: &[u8]) -> KindScan {
    scan_kinds_portable(kinds)
}

/// The largest length field, the lengths' sum and the kinds' counts of `kinds`, in
/// folds without an early exit, so that they vectorize; on any target.
fn scan_kinds_portable(kinds: &[u8]) -> KindScan {
    // Summed in u32 (faster) over parts small enough that it cannot wrap.
    let delta_bytes: usize = kinds
        .chunks(1 << 28)
        .map(|part| {
            let sum: u32 = part.iter().map(|&k| ((k & LEN_FIELD) >> 2) as u32).sum();
            sum as usize
        })
        .sum();
    KindScan {
        largest_len: kinds.iter().fold(0, |a, &k| a.max(k & LEN_FIELD)),
        delta_bytes,
        by_kind: count_kind_codes(kinds),
    }
}

/// The kind bytes and address deltas of a chunk, their lengths checked (only
/// [`Sections::check_lengths`] makes one).
struct Deltas<'a> {
    kinds: &'a [u8],
    addrs: &'a [u8],
    /// References by kind, indexed by `AccessKind as usize`.
    by_kind: [u64; 4],
}

impl<'a> Deltas<'a> {
    /// The addresses, in order. Each delta is against the slot its kind byte names;
    /// the slot then holds this address. No branch depends on the data.
    #[inline(always)]
    fn addresses(&self) -> impl Iterator<Item = u64> + 'a {
        let mut slots = [0u64; SLOTS];
        let mut pos = 0usize;
        let (addrs, table) = (self.addrs, &DELTA_TABLE);
        self.kinds.iter().map(move |&k| {
            // SAFETY: `check_lengths` checked that the lengths, each at most 8, sum to the
            // section's length less its 8 bytes of padding; `pos` is the sum of the
            // lengths before this one, so `pos + 8 <= addrs.len()`.
            let word = unsafe { addrs.as_ptr().add(pos).cast::<u64>().read_unaligned() };
            pos += table.lens[k as usize];
            let delta = unzigzag_fast(u64::from_le(word) & table.masks[k as usize]);
            let slot = &mut slots[(k >> 6) as usize];
            let addr = slot.wrapping_add(delta);
            *slot = addr;
            addr
        })
    }
}

/// [`unzigzag`] in three instructions: shifting the value right moves its sign bit
/// into the carry flag, from which `sbb` makes the mask of zeros or ones. (The
/// compiler spends five: a copy, the shift, an `and`, a negation and the `xor`.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn unzigzag_fast(v: u64) -> u64 {
    let mut half = v;
    // SAFETY: arithmetic on two registers only: no memory, no stack. The flags it
    // changes are declared clobbered (the default without `preserves_flags`), and the
    // scratch register, an `out` operand, is never one of the inputs.
    unsafe {
        std::arch::asm!(
            "shr {half}, 1",
            "sbb {sign}, {sign}",
            "xor {half}, {sign}",
            half = inout(reg) half,
            sign = out(reg) _,
            options(pure, nomem, nostack),
        );
    }
    half
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn unzigzag_fast(v: u64) -> u64 {
    unzigzag(v) as u64
}

/// Decode a chunk payload as a [`PlainBatch`] if its references are plain: no switch
/// of address space, no instruction pointers, no reference across a base page (nor
/// one large enough to escape its size), and no instruction fetch unless `fetches`.
/// `Ok(false)`: the chunk is not plain (`plain` is then meaningless; decode it with
/// [`decode`]). Errors describe what is malformed, as [`decode`]'s do.
pub fn decode_plain(
    raw: &[u8],
    n_refs: u32,
    n_events: u32,
    fetches: bool,
    scratch: &mut Batch,
    plain: &mut PlainBatch,
) -> Result<bool, String> {
    plain.clear();
    let s = Sections::parse(raw, n_refs)?;
    // Events are checked as in a full decode, so a malformed chunk is an error here too.
    scratch.clear();
    decode_events(s.events, n_refs, n_events, scratch)?;
    let deltas = s.check_lengths()?;
    let switches = scratch
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::SwitchAddressSpace { .. }));
    // One pass over the sizes gives both whether one escaped and how far a reference
    // may reach (a fold by `max` vectorizes; `contains` would be a pass of its own).
    let largest = s.sizes.iter().fold(0, |a, &b| a.max(b));
    let escaped = !s.extras.is_empty() || largest == SIZE_ESCAPE as u8;
    if switches || s.has_ips || escaped {
        return Ok(false);
    }
    let by_kind = deltas.by_kind;
    if !fetches && by_kind[AccessKind::Fetch as usize] > 0 {
        return Ok(false);
    }
    // Whether a reference of the largest size could reach past its base page from
    // any of the addresses (then each is checked with its own size).
    let reach = largest.max(1) as u64 - 1;
    let offsets = (1u64 << crate::addr::BASE_SHIFT) - 1;
    plain.addrs.reserve(n_refs as usize);
    let out = &mut plain.addrs.spare_capacity_mut()[..n_refs as usize];
    for (out, addr) in out.iter_mut().zip(deltas.addresses()) {
        out.write(addr);
    }
    // SAFETY: the loop wrote all `n_refs` elements after the (empty) column's length:
    // `kinds` has exactly `n_refs` bytes, checked by the parse.
    unsafe { plain.addrs.set_len(n_refs as usize) };
    // The largest offset is found in a pass of its own, which vectorizes, rather than
    // in the loop above, whose every reference waits on the one before.
    if largest_offset(&plain.addrs) + reach > offsets {
        let last = |(&a, &size): (&u64, &u8)| a.wrapping_add((size.max(1) - 1) as u64);
        if plain
            .addrs
            .iter()
            .zip(s.sizes)
            .any(|r| (last(r) ^ r.0) > offsets)
        {
            return Ok(false);
        }
    }
    plain.asid = s.start_asid;
    plain.by_kind = by_kind;
    Ok(true)
}

/// The largest base-page offset (low [`crate::addr::BASE_SHIFT`] bits) of `addrs`.
#[cfg(target_arch = "x86_64")]
fn largest_offset(addrs: &[u64]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_castps_si128, _mm_castsi128_ps, _mm_cvtsi128_si32,
        _mm_loadu_si128, _mm_max_epi16, _mm_set1_epi32, _mm_setzero_si128, _mm_shuffle_epi32,
        _mm_shuffle_ps,
    };
    const _: () = assert!(crate::addr::BASE_SHIFT < 16);
    let blocks = addrs.chunks_exact(8);
    let tail = blocks.remainder();
    // SAFETY: SSE2 is part of every x86-64 target; each block is 8 words (64 bytes),
    // and the four unaligned loads read exactly those.
    let vector = unsafe {
        let offsets = _mm_set1_epi32((1 << crate::addr::BASE_SHIFT) - 1);
        // The low halves of four addresses in one register: each offset then sits in a
        // 16-bit lane, below 2^15 so that a signed maximum orders it, with 0 above it.
        let low = |x: __m128i, y: __m128i| {
            let (x, y) = (_mm_castsi128_ps(x), _mm_castsi128_ps(y));
            _mm_and_si128(
                _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(x, y)),
                offsets,
            )
        };
        let (mut max0, mut max1) = (_mm_setzero_si128(), _mm_setzero_si128());
        for block in blocks {
            let p = block.as_ptr().cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            let (c, d) = (_mm_loadu_si128(p.add(2)), _mm_loadu_si128(p.add(3)));
            max0 = _mm_max_epi16(max0, low(a, b));
            max1 = _mm_max_epi16(max1, low(c, d));
        }
        let m = _mm_max_epi16(max0, max1);
        let m = _mm_max_epi16(m, _mm_shuffle_epi32::<0b01_00_11_10>(m));
        let m = _mm_max_epi16(m, _mm_shuffle_epi32::<0b10_11_00_01>(m));
        _mm_cvtsi128_si32(m) as u64
    };
    largest_offset_portable(tail).max(vector)
}

#[cfg(not(target_arch = "x86_64"))]
fn largest_offset(addrs: &[u64]) -> u64 {
    largest_offset_portable(addrs)
}

/// [`largest_offset`] a word at a time, on any target.
#[inline]
fn largest_offset_portable(addrs: &[u64]) -> u64 {
    let offsets = (1u64 << crate::addr::BASE_SHIFT) - 1;
    addrs.iter().fold(0, |m, &a| m.max(a & offsets))
}

/// Decode one chunk payload into `batch` (cleared first). Returns the address space
/// current after the chunk's last event. Errors describe what is malformed.
pub fn decode(raw: &[u8], n_refs: u32, n_events: u32, batch: &mut Batch) -> Result<Asid, String> {
    batch.clear();
    let s = Sections::parse(raw, n_refs)?;
    let (has_ips, start_asid, sizes, ips, extras) =
        (s.has_ips, s.start_asid, s.sizes, s.ips, s.extras);
    decode_events(s.events, n_refs, n_events, batch)?;
    let deltas = s.check_lengths()?;

    batch.refs.reserve(n_refs as usize);
    let out = &mut batch.refs.spare_capacity_mut()[..n_refs as usize];
    let columns = deltas.addresses().zip(s.kinds.iter().zip(sizes));
    for (r, (addr, (&k, &size))) in out.iter_mut().zip(columns) {
        r.write(MemRef {
            addr: VirtAddr(addr),
            ip: 0,
            size: size as u32,
            kind: AccessKind::from_code(k),
            asid: start_asid,
        });
    }
    // SAFETY: the loop wrote all `n_refs` elements after the (empty) batch's length:
    // `kinds` and `sizes` have exactly `n_refs` bytes each, checked above.
    unsafe { batch.refs.set_len(n_refs as usize) };

    // The rarer columns patch what the loop left at its defaults.
    let mut extras = Cursor::new(extras);
    if !extras.is_done() {
        for (r, &size) in batch.refs.iter_mut().zip(sizes) {
            if size as u32 == SIZE_ESCAPE {
                r.size = u32::try_from(extras.varint()?)
                    .map_err(|_| "a reference size exceeds 32 bits")?;
            }
        }
    } else if sizes.contains(&(SIZE_ESCAPE as u8)) {
        return Err("a reference's escaped size is missing".into());
    }
    if has_ips {
        let mut ips = Cursor::new(ips);
        let mut prev_ip = 0u64;
        for r in batch.refs.iter_mut() {
            prev_ip = prev_ip.wrapping_add(unzigzag(ips.varint()?) as u64);
            r.ip = prev_ip;
        }
        if !ips.is_done() {
            return Err("more instruction pointers than references".into());
        }
    }
    if !extras.is_done() {
        return Err("more escaped sizes than references that need them".into());
    }
    let mut asid = start_asid;
    let mut from = 0usize;
    for (at, e) in &batch.events {
        if let Event::SwitchAddressSpace { asid: next } = e {
            for r in &mut batch.refs[from..*at] {
                r.asid = asid;
            }
            asid = *next;
            from = *at;
        }
    }
    if from > 0 || asid != start_asid {
        for r in &mut batch.refs[from..] {
            r.asid = asid;
        }
    }
    Ok(asid)
}

fn decode_events(
    events: &[u8],
    n_refs: u32,
    n_events: u32,
    batch: &mut Batch,
) -> Result<(), String> {
    let mut c = Cursor::new(events);
    let mut index = 0u64;
    for _ in 0..n_events {
        index = index
            .checked_add(c.varint()?)
            .filter(|&i| i <= n_refs as u64)
            .ok_or_else(|| format!("an event is placed beyond the chunk's {n_refs} references"))?;
        let event = match c.byte()? {
            EV_ALLOC => {
                let code = c.byte()?;
                let op = AllocOp::from_code(code)
                    .ok_or_else(|| format!("unknown allocation op {code}"))?;
                Event::Alloc(Alloc {
                    op,
                    addr: c.varint()?,
                    size: c.varint()?,
                    old_addr: c.varint()?,
                    flags: c.varint()?,
                    callsite: c.varint()?,
                })
            }
            EV_SEGMENT => {
                let start = c.varint()?;
                let end = start.wrapping_add(c.varint()?);
                let perms = c.byte()?;
                let code = c.byte()?;
                let kind = SegmentKind::from_code(code)
                    .ok_or_else(|| format!("unknown segment kind {code}"))?;
                let name = get_str(&mut c)?;
                Event::Segment(Segment {
                    start,
                    end,
                    perms,
                    kind,
                    name,
                })
            }
            EV_MARKER => {
                let id = u32::try_from(c.varint()?).map_err(|_| "a marker id exceeds 32 bits")?;
                Event::Marker {
                    id,
                    name: get_str(&mut c)?,
                }
            }
            EV_SWITCH => Event::SwitchAddressSpace {
                asid: asid_from(c.varint()?)?,
            },
            EV_THREAD => Event::Thread {
                tid: u32::try_from(c.varint()?).map_err(|_| "a thread id exceeds 32 bits")?,
            },
            other => return Err(format!("unknown event type {other}")),
        };
        batch.events.push((index as usize, event));
    }
    if !c.is_done() {
        return Err(format!("{} bytes after the last event", c.remaining()));
    }
    Ok(())
}

fn get_str(c: &mut Cursor) -> Result<String, String> {
    let len = c.varint()? as usize;
    let bytes = c.bytes(len)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| "a name is not UTF-8".into())
}

fn asid_from(v: u64) -> Result<Asid, String> {
    u16::try_from(v)
        .map(Asid)
        .map_err(|_| format!("address-space id {v} exceeds 16 bits"))
}

#[cfg(test)]
mod tests;
