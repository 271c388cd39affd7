//! The stream the Valgrind recorder writes (`.pgrec`, specified in recorder/FORMAT.md):
//! a two-word header, then one little-endian u64 word per reference and tagged event
//! records. `pagelab record` reads it from a FIFO as the program runs and writes the
//! native format; `pagelab trace convert` reads a saved one.
//!
//! A stream that stops without its END record was cut short (the program or the
//! recorder was killed): an error naming the offset, unless the reader salvages
//! ([`PgrecReader::salvage`], `--salvage`), when everything before the cut is kept and
//! [`TraceReader::warning`] says what was lost. A stream that stops right after an
//! EXEC record ended where the program exec'd another: read whole, with a warning that
//! the program exec'd was not recorded (unless [`PgrecReader::resume`] goes on with
//! its stream). Each program exec'd is an address space of its own, after a switch and
//! the marker `exec PATH`. A malformed record in the middle is an error naming its
//! offset.

mod write;
pub use write::write;

use super::input::{open_binary, Compression, Source};
use super::{Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::addr::VirtAddr;
use crate::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The header's first word: the bytes `PGLREC01`.
pub const MAGIC: &[u8; 8] = b"PGLREC01";
pub const VERSION: u8 = 1;

const EVENT: u64 = 1 << 63;
const ADDR_MASK: u64 = (1 << 48) - 1;
const TAG_LONGREF: u8 = 0;
const TAG_ALLOC: u8 = 1;
const TAG_SEGMENT: u8 = 2;
const TAG_MARKER: u8 = 3;
const TAG_THREAD: u8 = 4;
const TAG_END: u8 = 5;
const TAG_EXEC: u8 = 6;
/// The marker id of a followed exec: `exec PATH` (1 and 2 are start and stop).
pub const EXEC_MARKER: u32 = 3;

/// What the END record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndCounts {
    /// References the program made while tracing was on (before sampling).
    pub seen: u64,
    /// References written to the stream.
    pub written: u64,
}

pub struct PgrecReader {
    input: Box<dyn BufRead + Send>,
    compression: Compression,
    path: PathBuf,
    /// Bytes consumed.
    offset: u64,
    metadata: Metadata,
    end: Option<EndCounts>,
    /// Set when the stream ends without its END record.
    cut: Option<String>,
    /// Whether a stream cut short is read up to the cut (else it is an error).
    salvage: bool,
    refs_read: u64,
    done: bool,
    /// The last EXEC record: the path, and the offset just after the record.
    exec: Option<(String, u64)>,
    /// The program whose stream [`PgrecReader::resume`] went on with, for a marker.
    resumed: Option<String>,
    /// The address space of the references: each program exec'd gets the next one
    /// (its memory replaces the last program's; the trace keeps them apart).
    asid: crate::addr::Asid,
}

/// Why reading a word stopped.
enum Stop {
    /// The stream ended cleanly before the word began.
    Eof,
    /// The stream ended inside the word, after this many bytes of it.
    Partial(usize),
    Io(std::io::Error),
}

impl PgrecReader {
    pub fn open(source: Source) -> Result<PgrecReader, TraceError> {
        let path = source.path().to_path_buf();
        let (input, compression) = open_binary(source)?;
        PgrecReader::from_reader(input, compression, &path)
    }

    /// Read from an open input (a FIFO, a decompressing reader); `path` names it in
    /// errors. Reads and checks the header.
    pub fn from_reader(
        input: Box<dyn BufRead + Send>,
        compression: Compression,
        path: &Path,
    ) -> Result<PgrecReader, TraceError> {
        let mut r = PgrecReader {
            input,
            compression,
            path: path.to_path_buf(),
            offset: 0,
            metadata: Metadata {
                source_format: "pgrec".into(),
                ..Metadata::default()
            },
            end: None,
            cut: None,
            salvage: false,
            refs_read: 0,
            done: false,
            exec: None,
            resumed: None,
            asid: crate::addr::Asid(0),
        };
        let short = |r: &PgrecReader| {
            TraceError::at_offset(
                &r.path,
                r.offset,
                "not a recorder stream: it ends inside its 16-byte header (did the recorder start?)",
            )
        };
        let magic = r.word().map_err(|_| short(&r))?;
        if magic.to_le_bytes() != *MAGIC {
            return Err(TraceError::at_offset(
                &r.path,
                0,
                "not a recorder stream: it does not start with PGLREC01",
            ));
        }
        let info = r.word().map_err(|_| short(&r))?;
        r.header_info(info, 8)?;
        Ok(r)
    }

    /// Check a header's second word (at offset `at`), and take its options.
    fn header_info(&mut self, info: u64, at: u64) -> Result<(), TraceError> {
        let version = info as u8;
        if version != VERSION {
            return Err(TraceError::at_offset(
                &self.path,
                at,
                format!("recorder stream version {version} is not supported (this pagelab reads version {VERSION})"),
            ));
        }
        let fetches = match (info >> 8) as u8 {
            0 => "none",
            1 => "page",
            2 => "all",
            other => {
                return Err(TraceError::at_offset(
                    &self.path,
                    at,
                    format!("unknown fetch mode {other} in the header"),
                ))
            }
        };
        let sample = (info >> 16) as u32;
        self.metadata.extra.insert("fetches".into(), fetches.into());
        self.metadata
            .extra
            .insert("sample".into(), sample.max(1).to_string());
        Ok(())
    }

    /// The program the recorded process replaced itself with (`execve`), when the
    /// stream ended right after that EXEC record: the recorder did not follow it, or
    /// the one following it has not opened the stream yet ([`PgrecReader::resume`]).
    pub fn replaced_by(&self) -> Option<&str> {
        match &self.exec {
            Some((path, at)) if self.done && self.end.is_none() && *at == self.offset => Some(path),
            _ => None,
        }
    }

    /// Go on reading, from `input`, the stream of the program the process exec'd (a
    /// header, then records), after [`PgrecReader::replaced_by`] said the stream
    /// ended at the exec. The next batch starts with the marker `exec PATH`.
    pub fn resume(&mut self, input: Box<dyn BufRead + Send>) -> Result<(), TraceError> {
        let Some(path) = self.replaced_by().map(str::to_string) else {
            return Err(TraceError::at_offset(
                &self.path,
                self.offset,
                "the stream did not end at an exec",
            ));
        };
        self.input = input;
        self.done = false;
        self.cut = None;
        let at = self.offset;
        let short = |r: &PgrecReader| {
            TraceError::at_offset(
                &r.path,
                at,
                format!("the stream of {path} ends inside its header"),
            )
        };
        let magic = self.word().map_err(|_| short(self))?;
        if magic.to_le_bytes() != *MAGIC {
            return Err(TraceError::at_offset(
                &self.path,
                at,
                format!("the stream of {path} does not start with PGLREC01"),
            ));
        }
        let info = self.word().map_err(|_| short(self))?;
        self.header_info(info, at + 8)?;
        self.resumed = Some(path);
        Ok(())
    }

    /// Whether the next word is the first after an EXEC record, where the stream of
    /// the program exec'd may begin (its header) when it follows in the same stream.
    #[inline]
    fn at_exec(&self) -> bool {
        matches!(&self.exec, Some((_, at)) if *at == self.offset)
    }

    /// The END record's counts, once it has been read.
    pub fn end_counts(&self) -> Option<EndCounts> {
        self.end
    }

    /// The next word, or why there is none.
    #[inline]
    fn next_word(&mut self) -> Result<u64, Stop> {
        let buf = match self.input.fill_buf() {
            Ok(b) => b,
            Err(e) => return Err(Stop::Io(e)),
        };
        if buf.len() >= 8 {
            let w = u64::from_le_bytes(buf[..8].try_into().unwrap());
            self.input.consume(8);
            self.offset += 8;
            return Ok(w);
        }
        // A word split across the reader's buffer, or the end of the stream.
        let mut bytes = [0u8; 8];
        let mut have = 0;
        while have < 8 {
            let buf = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) => return Err(Stop::Io(e)),
            };
            if buf.is_empty() {
                return Err(if have == 0 {
                    Stop::Eof
                } else {
                    Stop::Partial(have)
                });
            }
            let n = buf.len().min(8 - have);
            bytes[have..have + n].copy_from_slice(&buf[..n]);
            self.input.consume(n);
            self.offset += n as u64;
            have += n;
        }
        Ok(u64::from_le_bytes(bytes))
    }

    fn word(&mut self) -> Result<u64, Stop> {
        self.next_word()
    }

    /// Read a stream cut short up to the cut, with a warning, instead of failing (how
    /// `pagelab record` reads the stream of a program that was killed).
    pub fn salvage(mut self, on: bool) -> PgrecReader {
        self.salvage = on;
        self
    }

    /// Mark the stream as cut short at the current offset: an error unless salvaging.
    fn cut_short(&mut self, what: &str) -> Result<(), TraceError> {
        self.done = true;
        let stops = format!(
            "the recording stops {what} without its END record \
             (the program or the recorder was killed, or the disk filled)"
        );
        if !self.salvage {
            return Err(TraceError::at_offset(
                &self.path,
                self.offset,
                format!("{stops}: read the references before it with --salvage"),
            ));
        }
        self.cut = Some(format!(
            "{}: offset {}: {stops}: kept the {} references before it",
            self.path.display(),
            self.offset,
            self.refs_read
        ));
        Ok(())
    }

    fn io_error(&self, e: std::io::Error) -> TraceError {
        TraceError::at_offset(
            &self.path,
            self.offset,
            format!("cannot read: {e}{}", self.compression.offset_note()),
        )
    }

    /// The `n` words an event record carries, or `None` when the stream is cut inside it.
    fn event_words<const N: usize>(&mut self) -> Result<Option<[u64; N]>, TraceError> {
        let mut out = [0u64; N];
        for w in out.iter_mut() {
            match self.word() {
                Ok(v) => *w = v,
                Err(Stop::Io(e)) => return Err(self.io_error(e)),
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    /// A name of `len` bytes in ⌈len/8⌉ zero-padded words.
    fn name(&mut self, len: usize, at: u64) -> Result<Option<String>, TraceError> {
        let mut bytes = Vec::with_capacity(len.next_multiple_of(8));
        for _ in 0..len.div_ceil(8) {
            match self.word() {
                Ok(v) => bytes.extend_from_slice(&v.to_le_bytes()),
                Err(Stop::Io(e)) => return Err(self.io_error(e)),
                Err(_) => return Ok(None),
            }
        }
        bytes.truncate(len);
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| TraceError::at_offset(&self.path, at, "a name is not UTF-8"))
    }

    /// Decode the event record that starts with `w` (at offset `at`) into `batch`.
    /// `Ok(false)`: the stream was cut inside it.
    fn event(&mut self, w: u64, at: u64, batch: &mut Batch) -> Result<bool, TraceError> {
        let tag = ((w >> 56) & 0x7f) as u8;
        let p = w & ((1 << 56) - 1);
        let path = self.path.clone();
        let bad = |msg: String| TraceError::at_offset(&path, at, msg);
        match tag {
            TAG_LONGREF => {
                let Some([addr, size]) = self.event_words::<2>()? else {
                    return Ok(false);
                };
                let size = u32::try_from(size)
                    .map_err(|_| bad(format!("a reference of {size} bytes is too large")))?;
                self.push_ref(batch, addr, size, (p & 3) as u8);
            }
            TAG_ALLOC => {
                let code = p as u8;
                let op = AllocOp::from_code(code)
                    .ok_or_else(|| bad(format!("unknown allocation operation {code}")))?;
                let Some([addr, size, old_addr, flags, callsite]) = self.event_words::<5>()? else {
                    return Ok(false);
                };
                batch.push_event(Event::Alloc(Alloc {
                    op,
                    addr,
                    size,
                    old_addr,
                    flags,
                    callsite,
                }));
            }
            TAG_SEGMENT => {
                let perms = p as u8;
                let code = (p >> 8) as u8;
                let kind = SegmentKind::from_code(code)
                    .ok_or_else(|| bad(format!("unknown segment kind {code}")))?;
                let len = ((p >> 16) & 0xffff) as usize;
                let Some([start, end]) = self.event_words::<2>()? else {
                    return Ok(false);
                };
                let Some(name) = self.name(len, at)? else {
                    return Ok(false);
                };
                batch.push_event(Event::Segment(Segment {
                    start,
                    end,
                    perms,
                    kind,
                    name,
                }));
            }
            TAG_MARKER => {
                let id = p as u32;
                let len = ((p >> 32) & 0xffff) as usize;
                let Some(name) = self.name(len, at)? else {
                    return Ok(false);
                };
                batch.push_event(Event::Marker { id, name });
            }
            TAG_THREAD => batch.push_event(Event::Thread { tid: p as u32 }),
            TAG_END => {
                let Some([seen, written]) = self.event_words::<2>()? else {
                    return Ok(false);
                };
                self.end = Some(EndCounts { seen, written });
            }
            TAG_EXEC => {
                let len = (p & 0xffff) as usize;
                let Some(name) = self.name(len, at)? else {
                    return Ok(false);
                };
                let name = if name.is_empty() {
                    "(a program whose path the recorder could not read)".to_string()
                } else {
                    name
                };
                self.exec = Some((name, self.offset));
            }
            other => return Err(bad(format!("unknown record tag {other}"))),
        }
        Ok(true)
    }

    #[inline]
    fn push_ref(&mut self, batch: &mut Batch, addr: u64, size: u32, kind: u8) {
        batch.refs.push(MemRef {
            addr: VirtAddr(addr),
            ip: 0,
            size,
            kind: AccessKind::from_code(kind),
            asid: self.asid,
        });
        self.refs_read += 1;
    }
}

impl TraceReader for PgrecReader {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        if let Some(path) = self.resumed.take() {
            self.next_program(&path, batch);
        }
        while !self.done && batch.refs.len() < BATCH_REFS {
            if self.end.is_none() && !self.at_exec() {
                // The common case: whole reference words in the input's buffer, decoded
                // in one pass and consumed at once.
                let buf = self.input.fill_buf().map_err(|e| {
                    TraceError::at_offset(&self.path, self.offset, format!("cannot read: {e}"))
                })?;
                let room = BATCH_REFS - batch.refs.len();
                let mut used = 0usize;
                let mut bad = None;
                let asid = self.asid;
                for word in buf.chunks_exact(8).take(room) {
                    let w = u64::from_le_bytes(word.try_into().unwrap());
                    if w & EVENT != 0 {
                        break;
                    }
                    let size = ((w >> 48) & 0xfff) as u32;
                    if w & (1 << 62) != 0 || size == 0 {
                        bad = Some(w);
                        break;
                    }
                    batch.refs.push(MemRef {
                        addr: VirtAddr(w & ADDR_MASK),
                        ip: 0,
                        size,
                        kind: AccessKind::from_code((w >> 60) as u8),
                        asid,
                    });
                    used += 8;
                }
                self.input.consume(used);
                self.offset += used as u64;
                self.refs_read += (used / 8) as u64;
                if let Some(w) = bad {
                    return Err(TraceError::at_offset(
                        &self.path,
                        self.offset,
                        format!("malformed reference word {w:#018x}"),
                    ));
                }
                if used > 0 {
                    continue;
                }
            }
            // One record at a time: an event, a word split across the buffer, the end.
            let at = self.offset;
            let w = match self.next_word() {
                Ok(w) => w,
                Err(Stop::Io(e)) => return Err(self.io_error(e)),
                Err(Stop::Eof) => {
                    // Ending right after an exec is the end of this program's stream,
                    // not a cut (`replaced_by`): what is left out is said.
                    if self.end.is_none() && !self.at_exec() {
                        self.cut_short("at a record boundary")?;
                    } else if self.end.is_none() {
                        let path = self.exec.as_ref().map_or("", |(p, _)| p.as_str());
                        self.cut = Some(format!(
                            "{}: offset {}: the stream ends where the program exec'd {path}, \
                             which was not recorded: kept the {} references before it",
                            self.path.display(),
                            self.offset,
                            self.refs_read
                        ));
                    }
                    self.done = true;
                    break;
                }
                Err(Stop::Partial(n)) => {
                    self.cut_short(&format!("{n} bytes into a record"))?;
                    break;
                }
            };
            if self.end.is_some() {
                return Err(TraceError::at_offset(
                    &self.path,
                    at,
                    "data after the END record",
                ));
            }
            if w.to_le_bytes() == *MAGIC && self.exec.as_ref().is_some_and(|(_, e)| *e == at) {
                // The exec'd program's stream, following in the same one.
                let info = match self.next_word() {
                    Ok(info) => info,
                    Err(Stop::Io(e)) => return Err(self.io_error(e)),
                    Err(_) => {
                        self.cut_short("inside the header of the program exec'd")?;
                        break;
                    }
                };
                self.header_info(info, at + 8)?;
                let path = self
                    .exec
                    .as_ref()
                    .map(|(p, _)| p.clone())
                    .unwrap_or_default();
                self.next_program(&path, batch);
            } else if w & EVENT == 0 {
                // The common case: one word per reference.
                let size = ((w >> 48) & 0xfff) as u32;
                let kind = ((w >> 60) & 3) as u8;
                if w & (1 << 62) != 0 || size == 0 {
                    return Err(TraceError::at_offset(
                        &self.path,
                        at,
                        format!("malformed reference word {w:#018x}"),
                    ));
                }
                self.push_ref(batch, w & ADDR_MASK, size, kind);
            } else if !self.event(w, at, batch)? {
                self.cut_short("inside an event record")?;
            }
        }
        Ok(!batch.is_empty())
    }
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.offset
    }
    fn warning(&self) -> Option<&str> {
        self.cut.as_deref()
    }
}

impl PgrecReader {
    /// The program exec'd begins: its own address space (the next), and the marker
    /// `exec PATH`.
    fn next_program(&mut self, path: &str, batch: &mut Batch) {
        self.asid = crate::addr::Asid(self.asid.0.wrapping_add(1));
        batch.push_event(Event::SwitchAddressSpace { asid: self.asid });
        batch.push_event(Event::Marker {
            id: EXEC_MARKER,
            name: format!("exec {path}"),
        });
    }
}

impl crate::trace::Format for PgrecReader {
    fn open(
        source: Source,
        salvage: bool,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(PgrecReader::open(source)?.salvage(salvage)))
    }
    fn from_bytes(
        bytes: Vec<u8>,
        path: &Path,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        let input = Box::new(std::io::Cursor::new(bytes));
        Ok(Box::new(PgrecReader::from_reader(
            input,
            crate::trace::input::Compression::None,
            path,
        )?))
    }
    const MAGIC: &'static [u8] = MAGIC;
}
