//! The records of one thread's final drmemtrace: 12-byte `trace_entry_t`s
//! (`u16 type`, `u16 size`, `u64` address or value, little-endian, packed), decoded
//! into references until a batch is full, a timestamp marker or the footer.

use super::{marker, ty, MAX_VERSION, RECORD};
use crate::addr::{Asid, VirtAddr};
use crate::event::{AccessKind, MemRef};
use crate::trace::input::read_full;
use crate::trace::TraceError;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Records read from the input at a time.
const BLOCK_RECORDS: usize = 8192;

/// Why [`Decoder::decode`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The batch holds `max` references.
    Full,
    /// A timestamp marker (microseconds since 1601): the thread's next segment.
    Timestamp(u64),
    /// The footer: the thread's trace is over.
    End,
}

/// Opens a thread's record stream again at a byte offset (for a decoder that was
/// parked: its file closed and buffer freed while other threads run).
pub type Reopen = Box<dyn Fn(u64) -> Result<Box<dyn Read + Send>, TraceError> + Send>;

/// One thread's records.
pub struct Decoder {
    input: Box<dyn Read + Send>,
    /// How to open the input again, where it can be (a file, not a pipe).
    reopen: Option<Reopen>,
    /// Its input closed and its buffer freed, to be reopened at `offset`.
    parked: bool,
    path: PathBuf,
    /// Said after an offset of a compressed stream.
    note: &'static str,
    /// Bytes of records decoded (the offset of the next one).
    offset: u64,
    buf: Vec<u8>,
    at: usize,
    len: usize,
    pub version: Option<u64>,
    pub tid: Option<u64>,
    pub pid: Option<u64>,
    /// The address space the references go to.
    pub asid: Asid,
    /// The last instruction's address, and the next's (for bundles).
    pc: u64,
    next_pc: u64,
    ended: bool,
    /// With salvage: a trace cut short ends here, with this warning.
    salvage: bool,
    pub warning: Option<String>,
}

impl Decoder {
    pub fn new(
        input: Box<dyn Read + Send>,
        path: &Path,
        note: &'static str,
        salvage: bool,
    ) -> Decoder {
        Decoder {
            input,
            reopen: None,
            parked: false,
            path: path.to_path_buf(),
            note,
            offset: 0,
            buf: vec![0u8; BLOCK_RECORDS * RECORD],
            at: 0,
            len: 0,
            version: None,
            tid: None,
            pid: None,
            asid: Asid(0),
            pc: 0,
            next_pc: 0,
            ended: false,
            salvage,
            warning: None,
        }
    }

    /// The decoder can be parked, its stream reopened by `reopen`.
    pub fn reopened_by(mut self, reopen: Reopen) -> Decoder {
        self.reopen = Some(reopen);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether its input is open (holding a file and buffers).
    pub fn is_open(&self) -> bool {
        !self.parked
    }

    /// Whether it can be parked: its stream can be reopened, or it has ended.
    pub fn can_park(&self) -> bool {
        self.reopen.is_some() || self.ended
    }

    /// Close the input and free the buffer; [`Decoder::resume`] reopens them where the
    /// decoding stopped. The records read ahead into the buffer are read again then.
    pub fn park(&mut self) {
        if self.parked || !self.can_park() {
            return;
        }
        self.input = Box::new(std::io::empty());
        self.buf = Vec::new();
        self.at = 0;
        self.len = 0;
        self.parked = true;
    }

    /// Reopen a parked decoder's input at the next record to decode.
    pub fn resume(&mut self) -> Result<(), TraceError> {
        if !self.parked {
            return Ok(());
        }
        if !self.ended {
            let reopen = self
                .reopen
                .as_ref()
                .expect("only a reopenable decoder parks");
            self.input = reopen(self.offset)?;
            self.buf = vec![0u8; BLOCK_RECORDS * RECORD];
        }
        self.parked = false;
        Ok(())
    }

    /// Bytes of records decoded so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn error(&self, at: u64, message: String) -> TraceError {
        TraceError::at_offset(&self.path, at, format!("{message}{}", self.note))
    }

    /// Refill the buffer; false at the end of the input (or, salvaging, at a damaged
    /// part: then `ended` is set and `warning` says why).
    fn refill(&mut self) -> Result<bool, TraceError> {
        let partial = self.len - self.at;
        self.buf.copy_within(self.at..self.len, 0);
        let read = read_full(&mut self.input, &mut self.buf[partial..]);
        self.at = 0;
        let n = match read {
            Ok(n) => n,
            Err(e) => return self.damaged(format!("cannot read: {e}")),
        };
        self.len = partial + n;
        if self.len == 0 {
            return Ok(false);
        }
        if self.len < RECORD {
            let message = format!(
                "truncated: the last record has {} of its {RECORD} bytes",
                self.len
            );
            return self.damaged(message);
        }
        Ok(true)
    }

    /// The input cannot be read on from here: an error, or salvaging (after a header)
    /// the end of the thread with a warning.
    fn damaged(&mut self, message: String) -> Result<bool, TraceError> {
        if self.salvage && self.version.is_some() {
            self.warning = Some(format!(
                "{}: at offset {}: {message}{}; read up to there",
                self.path.display(),
                self.offset,
                self.note
            ));
            self.ended = true;
            self.len = 0;
            return Ok(false);
        }
        Err(self.error(self.offset, message))
    }

    /// Decode references into `out` until it holds `max`, a timestamp, or the end.
    pub fn decode(&mut self, out: &mut Vec<MemRef>, max: usize) -> Result<Stop, TraceError> {
        while out.len() < max {
            if self.ended {
                return Ok(Stop::End);
            }
            if self.len - self.at < RECORD && !self.refill()? {
                return if self.ended {
                    Ok(Stop::End)
                } else {
                    self.cut_short()
                };
            }
            let r = &self.buf[self.at..self.at + RECORD];
            let kind = u16::from_le_bytes([r[0], r[1]]);
            let size = u16::from_le_bytes([r[2], r[3]]);
            let value = u64::from_le_bytes(r[4..12].try_into().expect("8 bytes"));
            let at = self.offset;
            self.at += RECORD;
            self.offset += RECORD as u64;
            if self.version.is_none() && kind != ty::HEADER {
                return Err(self.error(
                    at,
                    format!(
                        "not a drmemtrace: the first record is of type {kind}, not a header ({})",
                        ty::HEADER
                    ),
                ));
            }
            let data = |kind| MemRef {
                addr: VirtAddr(value),
                ip: self.pc,
                size: u32::from(size.max(1)),
                kind,
                asid: self.asid,
            };
            match kind {
                ty::READ | ty::PREFETCH..=ty::PREFETCH_INSTR | ty::PREFETCH_READ_L1_NT..=ty::PREFETCH_WRITE_L3_NT => {
                    out.push(data(AccessKind::Load))
                }
                ty::WRITE => out.push(data(AccessKind::Store)),
                ty::INSTR..=ty::INSTR_RETURN
                | ty::INSTR_MAYBE_FETCH
                | ty::INSTR_SYSENTER
                | ty::INSTR_TAKEN_JUMP
                | ty::INSTR_UNTAKEN_JUMP => {
                    self.pc = value;
                    self.next_pc = value.wrapping_add(u64::from(size));
                    out.push(MemRef {
                        addr: VirtAddr(value),
                        ip: value,
                        size: u32::from(size.max(1)),
                        kind: AccessKind::Fetch,
                        asid: self.asid,
                    });
                }
                ty::INSTR_NO_FETCH => {
                    self.pc = value;
                    self.next_pc = value.wrapping_add(u64::from(size));
                }
                ty::INSTR_BUNDLE => {
                    if size > 8 {
                        return Err(self.error(at, format!("a bundle of {size} instructions (at most 8)")));
                    }
                    for &len in &r[4..4 + usize::from(size)] {
                        self.pc = self.next_pc;
                        self.next_pc = self.pc.wrapping_add(u64::from(len));
                        out.push(MemRef {
                            addr: VirtAddr(self.pc),
                            ip: self.pc,
                            size: u32::from(len.max(1)),
                            kind: AccessKind::Fetch,
                            asid: self.asid,
                        });
                    }
                }
                ty::INSTR_FLUSH..=ty::DATA_FLUSH_END | ty::HARDWARE_PREFETCH | ty::ENCODING | ty::THREAD_EXIT => {}
                ty::THREAD => self.tid = Some(value),
                ty::PID => self.pid = Some(value),
                ty::HEADER => {
                    if self.version.is_some() {
                        return Err(self.error(at, "a second header".into()));
                    }
                    if value == 0 || value > MAX_VERSION {
                        return Err(self.error(
                            at,
                            format!("drmemtrace version {value}: pagelab reads versions 1 to {MAX_VERSION}"),
                        ));
                    }
                    self.version = Some(value);
                }
                ty::FOOTER => {
                    self.ended = true;
                    return Ok(Stop::End);
                }
                ty::MARKER => match size {
                    marker::TIMESTAMP => return Ok(Stop::Timestamp(value)),
                    marker::FILETYPE if value & super::FILE_32_BIT != 0 => {
                        return Err(self.error(
                            at,
                            format!("a 32-bit trace (file type {value:#x}): pagelab reads 64-bit drmemtrace"),
                        ))
                    }
                    _ => {}
                },
                _ => return Err(self.error(at, format!("unknown record type {kind}"))),
            }
        }
        Ok(Stop::Full)
    }

    /// The input ended before the footer: an error, or with salvage the end.
    fn cut_short(&mut self) -> Result<Stop, TraceError> {
        let message = if self.version.is_none() {
            "empty: no drmemtrace header".to_string()
        } else {
            "truncated: the trace ends without its footer".to_string()
        };
        if self.salvage && self.version.is_some() {
            self.warning = Some(format!(
                "{}: at offset {}: {message}; read up to there",
                self.path.display(),
                self.offset
            ));
            self.ended = true;
            return Ok(Stop::End);
        }
        Err(self.error(self.offset, message))
    }
}
