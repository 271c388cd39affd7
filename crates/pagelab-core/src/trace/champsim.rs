//! ChampSim binary traces: 64-byte `input_instr` records, as written by ChampSim's Pin
//! tracer (optionally .gz / .xz compressed):
//!
//! ```text
//! u64 ip | u8 is_branch | u8 branch_taken | u8 dst_regs[2] | u8 src_regs[4]
//!        | u64 dst_mem[2] | u64 src_mem[4]
//! ```
//!
//! Each record becomes an instruction fetch at `ip`, then a load for every non-zero
//! source address and a store for every non-zero destination address, all carrying
//! `ip`. ChampSim records no access sizes; every reference gets size 1.

use super::record_reader::{RecordFormat, RecordReader};
use super::BATCH_REFS;
use crate::addr::VirtAddr;
use crate::event::{AccessKind, MemRef};

pub const RECORD: usize = 64;

/// ChampSim `input_instr` records.
pub struct Champsim;

pub type ChampsimReader = RecordReader<Champsim>;

impl RecordFormat for Champsim {
    const NAME: &'static str = "champsim";
    const RECORD: usize = RECORD;
    const RECORDS_PER_BATCH: usize = BATCH_REFS / 4;
    fn decode(record: &[u8], out: &mut Vec<MemRef>) {
        decode_record(record, out)
    }
    fn truncated(partial: usize) -> String {
        format!("truncated: the last record has {partial} of its {RECORD} bytes")
    }
}

/// Append the references of one record.
pub fn decode_record(rec: &[u8], out: &mut Vec<MemRef>) {
    let word = |at: usize| u64::from_le_bytes(rec[at..at + 8].try_into().unwrap());
    let ip = word(0);
    let mk = |addr: u64, kind| MemRef {
        addr: VirtAddr(addr),
        ip,
        size: 1,
        kind,
        asid: Default::default(),
    };
    out.push(mk(ip, AccessKind::Fetch));
    for i in 0..4 {
        let a = word(32 + 8 * i);
        if a != 0 {
            out.push(mk(a, AccessKind::Load));
        }
    }
    for i in 0..2 {
        let a = word(16 + 8 * i);
        if a != 0 {
            out.push(mk(a, AccessKind::Store));
        }
    }
}

/// Encode one record (for tests and fixtures): `ip`, up to 4 loads, up to 2 stores.
pub fn encode_record(ip: u64, loads: &[u64], stores: &[u64]) -> [u8; RECORD] {
    let mut rec = [0u8; RECORD];
    rec[0..8].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in stores.iter().take(2).enumerate() {
        rec[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().take(4).enumerate() {
        rec[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_becomes_fetch_loads_stores() {
        let rec = encode_record(0x401000, &[0x7000, 0x7008], &[0x9000]);
        let mut out = Vec::new();
        decode_record(&rec, &mut out);
        let kinds: Vec<_> = out.iter().map(|r| (r.kind, r.addr.0, r.ip)).collect();
        assert_eq!(
            kinds,
            vec![
                (AccessKind::Fetch, 0x401000, 0x401000),
                (AccessKind::Load, 0x7000, 0x401000),
                (AccessKind::Load, 0x7008, 0x401000),
                (AccessKind::Store, 0x9000, 0x401000),
            ]
        );
    }
}
