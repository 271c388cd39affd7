//! A writer of drmemtrace final traces, following the published record layout (12-byte
//! little-endian `trace_entry_t`s, the header raw2trace writes, chunks in a `.zip`):
//! for tests, fixtures and fuzzing seeds. DynamoRIO itself is not needed to make one.

use super::{marker, ty};
use std::io::Write;

/// `OFFLINE_FILE_TYPE_ARCH_X86_64`.
pub const FILE_TYPE_X86_64: u64 = 0x40;

/// One thread's records.
pub struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    /// The header raw2trace writes: version, file type, thread, process, cache line,
    /// chunk size, page size, then a first timestamp and CPU.
    pub fn new(version: u64, tid: u64, pid: u64, timestamp: u64) -> Writer {
        let mut w = Writer { bytes: Vec::new() };
        w.record(ty::HEADER, 0, version)
            .marker(marker::VERSION, version)
            .marker(marker::FILETYPE, FILE_TYPE_X86_64)
            .record(ty::THREAD, 4, tid)
            .record(ty::PID, 4, pid)
            .marker(marker::CACHE_LINE_SIZE, 64)
            .marker(marker::CHUNK_INSTR_COUNT, 10_000_000)
            .marker(marker::PAGE_SIZE, 4096)
            .timestamp(timestamp);
        w
    }

    /// Any record.
    pub fn record(&mut self, kind: u16, size: u16, value: u64) -> &mut Writer {
        self.bytes.extend_from_slice(&kind.to_le_bytes());
        self.bytes.extend_from_slice(&size.to_le_bytes());
        self.bytes.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub fn marker(&mut self, kind: u16, value: u64) -> &mut Writer {
        self.record(ty::MARKER, kind, value)
    }

    /// A timestamp and the CPU, as the tracer writes them at each buffer.
    pub fn timestamp(&mut self, microseconds: u64) -> &mut Writer {
        self.marker(marker::TIMESTAMP, microseconds)
            .marker(marker::CPU_ID, 0)
    }

    /// An instruction of `len` bytes at `pc`, its encoding first (as version 4 on writes).
    pub fn instr(&mut self, pc: u64, len: u16) -> &mut Writer {
        self.record(ty::ENCODING, len.min(8), 0x90)
            .record(ty::INSTR, len, pc)
    }

    pub fn read(&mut self, addr: u64, size: u16) -> &mut Writer {
        self.record(ty::READ, size, addr)
    }

    pub fn write(&mut self, addr: u64, size: u16) -> &mut Writer {
        self.record(ty::WRITE, size, addr)
    }

    /// A bundle of instructions following the last one, of these lengths (at most 8).
    pub fn bundle(&mut self, lengths: &[u8]) -> &mut Writer {
        let mut value = [0u8; 8];
        value[..lengths.len()].copy_from_slice(lengths);
        self.record(
            ty::INSTR_BUNDLE,
            lengths.len() as u16,
            u64::from_le_bytes(value),
        )
    }

    /// The records so far, without an end (a trace cut short).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The records with the thread's exit and the footer.
    pub fn finish(mut self) -> Vec<u8> {
        let tid = 0;
        self.record(ty::THREAD_EXIT, 4, tid)
            .record(ty::FOOTER, 0, 0);
        self.bytes
    }
}

/// A `.zip` of chunks named as DynamoRIO names them (`chunk.0000`, …), deflated.
pub fn zip(chunks: &[&[u8]]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (i, chunk) in chunks.iter().enumerate() {
        out.start_file(format!("chunk.{i:04}"), options)
            .expect("an in-memory zip");
        out.write_all(chunk).expect("an in-memory zip");
    }
    out.finish().expect("an in-memory zip").into_inner()
}
