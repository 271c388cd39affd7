//! Encoding and decoding of one chunk's payload (before compression): column sections
//! for kinds/sizes, delta-encoded addresses and instruction pointers, and the events.
//! Each chunk starts its deltas afresh, so every chunk decodes on its own.

use super::varint::{self, unzigzag, zigzag, Cursor};
use crate::addr::{Asid, VirtAddr};
use crate::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};

/// Sizes up to this are stored in the kind byte; larger ones escape to the extras section.
const SIZE_ESCAPE: u32 = 63;
const FLAG_HAS_IPS: u8 = 1;

const EV_ALLOC: u8 = 0;
const EV_SEGMENT: u8 = 1;
const EV_MARKER: u8 = 2;
const EV_SWITCH: u8 = 3;

/// Builds one chunk's payload reference by reference.
#[derive(Default)]
pub struct ChunkEncoder {
    kinds: Vec<u8>,
    addrs: Vec<u8>,
    ips: Vec<u8>,
    extras: Vec<u8>,
    events: Vec<u8>,
    n_events: u32,
    last_event_index: u64,
    prev_fetch: u64,
    prev_data: u64,
    prev_ip: u64,
    has_ips: bool,
    start_asid: Asid,
    asid: Asid,
}

impl ChunkEncoder {
    /// Begin a chunk whose first reference runs in address space `asid`.
    pub fn start(&mut self, asid: Asid) {
        self.kinds.clear();
        self.addrs.clear();
        self.ips.clear();
        self.extras.clear();
        self.events.clear();
        self.n_events = 0;
        self.last_event_index = 0;
        self.prev_fetch = 0;
        self.prev_data = 0;
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
        self.kinds.len() + self.addrs.len() + self.ips.len() + self.extras.len() + self.events.len()
    }

    pub fn push_ref(&mut self, r: &MemRef) {
        if r.asid != self.asid {
            self.push_event(&Event::SwitchAddressSpace { asid: r.asid });
        }
        let size_code = r.size.min(SIZE_ESCAPE);
        self.kinds.push(r.kind as u8 | (size_code as u8) << 2);
        if size_code == SIZE_ESCAPE {
            varint::put(&mut self.extras, r.size as u64);
        }
        let prev = if r.kind == AccessKind::Fetch {
            &mut self.prev_fetch
        } else {
            &mut self.prev_data
        };
        varint::put(&mut self.addrs, zigzag(r.addr.0.wrapping_sub(*prev) as i64));
        *prev = r.addr.0;
        if r.ip != 0 && !self.has_ips {
            // The first instruction pointer in this chunk: earlier references had none.
            self.has_ips = true;
            for _ in 1..self.kinds.len() {
                self.ips.push(0);
            }
        }
        if self.has_ips {
            varint::put(&mut self.ips, zigzag(r.ip.wrapping_sub(self.prev_ip) as i64));
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
        for len in [self.addrs.len(), self.ips.len(), self.extras.len(), self.events.len()] {
            varint::put(raw, len as u64);
        }
        for section in [&self.kinds, &self.addrs, &self.ips, &self.extras, &self.events] {
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
    let addrs = head.bytes(lens[0])?;
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

    let mut addrs = Cursor::new(addrs);
    let mut ips = Cursor::new(ips);
    let mut extras = Cursor::new(extras);
    // Previous address of data references [0] and of instruction fetches [1].
    let mut prev = [0u64; 2];
    let mut prev_ip = 0u64;
    let mut asid = start_asid;
    let mut switches = batch
        .events
        .iter()
        .filter_map(|(i, e)| match e {
            Event::SwitchAddressSpace { asid } => Some((*i, *asid)),
            _ => None,
        })
        .peekable();
    batch.refs.reserve(n_refs as usize);
    let mut start = 0usize;
    loop {
        // References up to the next address-space switch share one asid.
        let end = match switches.peek() {
            Some(&(i, _)) => i,
            None => n_refs as usize,
        };
        for &b in &kinds[start..end] {
            let kind = AccessKind::from_code(b);
            let code = (b >> 2) as u32;
            let size = if code == SIZE_ESCAPE {
                u32::try_from(extras.varint()?).map_err(|_| "a reference size exceeds 32 bits")?
            } else {
                code
            };
            let p = &mut prev[(kind == AccessKind::Fetch) as usize];
            *p = p.wrapping_add(unzigzag(addrs.varint()?) as u64);
            let addr = *p;
            let ip = if has_ips {
                prev_ip = prev_ip.wrapping_add(unzigzag(ips.varint()?) as u64);
                prev_ip
            } else {
                0
            };
            batch.refs.push(MemRef {
                addr: VirtAddr(addr),
                ip,
                size,
                kind,
                asid,
            });
        }
        match switches.next() {
            Some((_, a)) => {
                asid = a;
                start = end;
            }
            None => break,
        }
    }
    if !addrs.is_done() || !ips.is_done() || !extras.is_done() {
        return Err("a column holds more values than the chunk has references".into());
    }
    Ok(asid)
}

fn decode_events(events: &[u8], n_refs: u32, n_events: u32, batch: &mut Batch) -> Result<(), String> {
    let mut c = Cursor::new(events);
    let mut index = 0u64;
    for _ in 0..n_events {
        index += c.varint()?;
        if index > n_refs as u64 {
            return Err(format!("an event is placed at reference {index} of {n_refs}"));
        }
        let event = match c.byte()? {
            EV_ALLOC => {
                let code = c.byte()?;
                let op = AllocOp::from_code(code).ok_or_else(|| format!("unknown allocation op {code}"))?;
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
                let kind = SegmentKind::from_code(code).ok_or_else(|| format!("unknown segment kind {code}"))?;
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
                Event::Marker { id, name: get_str(&mut c)? }
            }
            EV_SWITCH => Event::SwitchAddressSpace {
                asid: asid_from(c.varint()?)?,
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
