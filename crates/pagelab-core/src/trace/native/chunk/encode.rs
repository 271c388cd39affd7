//! The encoder: one chunk's payload built reference by reference (the layout is in
//! the parent module's documentation).

use super::*;

/// Builds one chunk's payload reference by reference.
#[derive(Default)]
pub struct ChunkEncoder {
    kinds: Vec<u8>,
    sizes: Vec<u8>,
    pub(super) addrs: Vec<u8>,
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
