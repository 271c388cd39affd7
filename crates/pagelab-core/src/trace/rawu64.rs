//! Raw little-endian u64 virtual addresses, 8 bytes per reference, no header (the
//! `*.va.u64` files of the standard benchmark generator). Every reference is a 1-byte
//! load in address space 0.

use super::record_reader::{RecordFormat, RecordReader};
use super::BATCH_REFS;
use crate::event::{AccessKind, MemRef};
use std::io::Write;

/// Raw little-endian u64 addresses.
pub struct U64;

pub type U64Reader = RecordReader<U64>;

impl RecordFormat for U64 {
    const NAME: &'static str = "u64";
    const RECORD: usize = 8;
    const RECORDS_PER_BATCH: usize = BATCH_REFS;
    fn decode(record: &[u8], out: &mut Vec<MemRef>) {
        let addr = u64::from_le_bytes(record.try_into().expect("8 bytes"));
        out.push(MemRef::new(addr, 1, AccessKind::Load));
    }
    fn truncated(partial: usize) -> String {
        format!("truncated: {partial} trailing bytes do not make an 8-byte address")
    }
}

pub fn write_ref(out: &mut impl Write, r: &MemRef) -> std::io::Result<()> {
    out.write_all(&r.addr.0.to_le_bytes())
}
