//! The recorder's stream written from a batch: what the tests and fixtures read back.

use super::{EndCounts, ADDR_MASK, EVENT, MAGIC, TAG_ALLOC, TAG_END, TAG_LONGREF, TAG_MARKER};
use super::{TAG_SEGMENT, TAG_THREAD, VERSION};
use crate::event::{Batch, Event};

/// Write the stream (for tests and fixtures): header, the batch's references and events
/// in order, and an END record unless `end` is `None`.
pub fn write(batch: &Batch, fetches: u8, sample: u32, end: Option<EndCounts>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |w: u64| out.extend_from_slice(&w.to_le_bytes());
    put(u64::from_le_bytes(*MAGIC));
    put(VERSION as u64 | (fetches as u64) << 8 | (sample as u64) << 16);
    let ev = |tag: u8, p: u64| EVENT | (tag as u64) << 56 | p;
    let mut events = batch.events.iter().peekable();
    let mut emit_events = |upto: usize, put: &mut dyn FnMut(u64)| {
        while let Some((_, e)) = events.next_if(|(i, _)| *i <= upto) {
            let name_words = |s: &str, put: &mut dyn FnMut(u64)| {
                for chunk in s.as_bytes().chunks(8) {
                    let mut b = [0u8; 8];
                    b[..chunk.len()].copy_from_slice(chunk);
                    put(u64::from_le_bytes(b));
                }
            };
            match e {
                Event::Alloc(a) => {
                    put(ev(TAG_ALLOC, a.op as u64));
                    for v in [a.addr, a.size, a.old_addr, a.flags, a.callsite] {
                        put(v);
                    }
                }
                Event::Segment(s) => {
                    put(ev(
                        TAG_SEGMENT,
                        s.perms as u64 | (s.kind as u64) << 8 | (s.name.len() as u64) << 16,
                    ));
                    put(s.start);
                    put(s.end);
                    name_words(&s.name, put);
                }
                Event::Marker { id, name } => {
                    put(ev(TAG_MARKER, *id as u64 | (name.len() as u64) << 32));
                    name_words(name, put);
                }
                Event::Thread { tid } => put(ev(TAG_THREAD, *tid as u64)),
                Event::SwitchAddressSpace { .. } => {} // not in recorder streams
            }
        }
    };
    for (i, r) in batch.refs.iter().enumerate() {
        emit_events(i, &mut put);
        let (a, s) = (r.addr.0, r.size);
        if a <= ADDR_MASK && (1..4096).contains(&s) {
            put(a | (s as u64) << 48 | (r.kind as u64) << 60);
        } else {
            put(ev(TAG_LONGREF, r.kind as u64));
            put(a);
            put(s as u64);
        }
    }
    emit_events(usize::MAX, &mut put);
    if let Some(e) = end {
        put(ev(TAG_END, 0));
        put(e.seen);
        put(e.written);
    }
    out
}
