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

use super::varint::{self, unzigzag, zigzag, Cursor};
use crate::addr::{Asid, VirtAddr};
use crate::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};

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
/// Masks keeping the low `n` bytes of a word, by `n` (lengths above 8 are refused
/// before decoding; the table has 16 entries so a 4-bit field needs no bounds check).
const MASKS: [u64; 16] = {
    let mut m = [u64::MAX; 16];
    let mut n = 0;
    while n < 8 {
        m[n] = (1u64 << (8 * n)) - 1;
        n += 1;
    }
    m
};
const FLAG_HAS_IPS: u8 = 1;

const EV_ALLOC: u8 = 0;
const EV_SEGMENT: u8 = 1;
const EV_MARKER: u8 = 2;
const EV_SWITCH: u8 = 3;
const EV_THREAD: u8 = 4;

/// Builds one chunk's payload reference by reference.
#[derive(Default)]
pub struct ChunkEncoder {
    kinds: Vec<u8>,
    sizes: Vec<u8>,
    addrs: Vec<u8>,
    ips: Vec<u8>,
    extras: Vec<u8>,
    events: Vec<u8>,
    n_events: u32,
    last_event_index: u64,
    slots: [u64; SLOTS],
    /// When each slot was last used, for choosing the least recently used.
    slot_used: [u64; SLOTS],
    prev_ip: u64,
    has_ips: bool,
    start_asid: Asid,
    asid: Asid,
}

impl ChunkEncoder {
    /// Begin a chunk whose first reference runs in address space `asid`.
    pub fn start(&mut self, asid: Asid) {
        self.kinds.clear();
        self.sizes.clear();
        self.addrs.clear();
        self.ips.clear();
        self.extras.clear();
        self.events.clear();
        self.n_events = 0;
        self.last_event_index = 0;
        self.slots = [0; SLOTS];
        self.slot_used = [0; SLOTS];
        self.prev_ip = 0;
        self.has_ips = false;
        self.start_asid = asid;
        self.asid = asid;
    }

    pub fn n_refs(&self) -> u32 {
        self.kinds.len() as u32
    }
    pub fn n_events(&self) -> u32 {
        self.n_events
    }
    /// The address space the next reference is in.
    pub fn asid(&self) -> Asid {
        self.asid
    }
    pub fn raw_len_estimate(&self) -> usize {
        2 * self.kinds.len()
            + self.addrs.len()
            + self.ips.len()
            + self.extras.len()
            + self.events.len()
    }

    pub fn push_ref(&mut self, r: &MemRef) {
        if r.asid != self.asid {
            self.push_event(&Event::SwitchAddressSpace { asid: r.asid });
        }
        let size_code = r.size.min(SIZE_ESCAPE);
        self.sizes.push(size_code as u8);
        if size_code == SIZE_ESCAPE {
            varint::put(&mut self.extras, r.size as u64);
        }
        // The nearest slot (the first of equals); none near: the least recently used.
        let a = r.addr.0;
        let (mut slot, mut delta, mut len) = (0usize, 0u64, u32::MAX);
        for (s, &prev) in self.slots.iter().enumerate() {
            let d = zigzag(a.wrapping_sub(prev) as i64);
            let l = (64 - d.leading_zeros()).div_ceil(8);
            if l < len {
                (slot, delta, len) = (s, d, l);
            }
        }
        if len >= FAR_BYTES {
            let mut lru = 0;
            for s in 1..SLOTS {
                if self.slot_used[s] < self.slot_used[lru] {
                    lru = s;
                }
            }
            slot = lru;
            delta = zigzag(a.wrapping_sub(self.slots[slot]) as i64);
            len = (64 - delta.leading_zeros()).div_ceil(8);
        }
        self.slots[slot] = a;
        self.slot_used[slot] = self.kinds.len() as u64 + 1;
        self.kinds
            .push(r.kind as u8 | (len as u8) << 2 | (slot as u8) << 6);
        // A fixed 8-byte copy, then drop the bytes not needed: cheaper than a copy of
        // variable length.
        let end = self.addrs.len() + len as usize;
        self.addrs.extend_from_slice(&delta.to_le_bytes());
        self.addrs.truncate(end);
        if r.ip != 0 && !self.has_ips {
            // The first instruction pointer in this chunk: earlier references had none.
            self.has_ips = true;
            for _ in 1..self.kinds.len() {
                self.ips.push(0);
            }
        }
        if self.has_ips {
            varint::put(
                &mut self.ips,
                zigzag(r.ip.wrapping_sub(self.prev_ip) as i64),
            );
            self.prev_ip = r.ip;
        }
    }

    /// Add an event placed before the next reference.
    pub fn push_event(&mut self, e: &Event) {
        let index = self.kinds.len() as u64;
        varint::put(&mut self.events, index - self.last_event_index);
        self.last_event_index = index;
        self.n_events += 1;
        let out = &mut self.events;
        match e {
            Event::Alloc(a) => {
                out.push(EV_ALLOC);
                out.push(a.op as u8);
                for v in [a.addr, a.size, a.old_addr, a.flags, a.callsite] {
                    varint::put(out, v);
                }
            }
            Event::Segment(s) => {
                out.push(EV_SEGMENT);
                varint::put(out, s.start);
                varint::put(out, s.end.wrapping_sub(s.start));
                out.push(s.perms);
                out.push(s.kind as u8);
                put_str(out, &s.name);
            }
            Event::Marker { id, name } => {
                out.push(EV_MARKER);
                varint::put(out, *id as u64);
                put_str(out, name);
            }
            Event::Thread { tid } => {
                out.push(EV_THREAD);
                varint::put(out, *tid as u64);
            }
            Event::SwitchAddressSpace { asid } => {
                out.push(EV_SWITCH);
                varint::put(out, asid.0 as u64);
                self.asid = *asid;
            }
        }
    }

    /// Write the payload: a flags byte, the start asid, the section lengths, the sections.
    pub fn finish(&self, raw: &mut Vec<u8>) {
        raw.clear();
        raw.push(if self.has_ips { FLAG_HAS_IPS } else { 0 });
        varint::put(raw, self.start_asid.0 as u64);
        for len in [
            self.addrs.len() + PAD,
            self.ips.len(),
            self.extras.len(),
            self.events.len(),
        ] {
            varint::put(raw, len as u64);
        }
        raw.extend_from_slice(&self.kinds);
        raw.extend_from_slice(&self.sizes);
        raw.extend_from_slice(&self.addrs);
        raw.extend_from_slice(&[0; PAD]);
        for section in [&self.ips, &self.extras, &self.events] {
            raw.extend_from_slice(section);
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    varint::put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Decode one chunk payload into `batch` (cleared first). Returns the address space
/// current after the chunk's last event. Errors describe what is malformed.
pub fn decode(raw: &[u8], n_refs: u32, n_events: u32, batch: &mut Batch) -> Result<Asid, String> {
    batch.clear();
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

    decode_events(events, n_refs, n_events, batch)?;

    // Check the columns once, so that the loop over references cannot fail.
    let mut delta_bytes = 0usize;
    let mut bad_kind = 0u8;
    for &k in kinds {
        let len = (k & LEN_FIELD) >> 2;
        bad_kind |= (len > 8) as u8;
        delta_bytes += len as usize;
    }
    if bad_kind != 0 {
        return Err("invalid kind byte".into());
    }
    if delta_bytes + PAD != addrs.len() || addrs[delta_bytes..].iter().any(|&b| b != 0) {
        return Err("the address deltas do not fill their section".into());
    }

    // Each delta is against the slot its kind byte names; the slot then holds this
    // address. No branch depends on the data.
    let mut slots = [0u64; SLOTS];
    let mut pos = 0usize;
    batch.refs.reserve(n_refs as usize);
    let out = &mut batch.refs.spare_capacity_mut()[..n_refs as usize];
    for (r, (&k, &size)) in out.iter_mut().zip(kinds.iter().zip(sizes)) {
        let len = ((k & LEN_FIELD) >> 2) as usize;
        let word = u64::from_le_bytes(*<&[u8; 8]>::try_from(&addrs[pos..pos + 8]).unwrap());
        pos += len;
        let delta = unzigzag(word & MASKS[len]) as u64;
        let slot = &mut slots[(k >> 6) as usize];
        let addr = slot.wrapping_add(delta);
        *slot = addr;
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
mod tests {
    use super::*;

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
}
