//! DynamoRIO drmemtrace offline traces: the post-processed ("final") records of
//! `drrun -t drmemtrace -offline`, versions 1 to 6 of `trace_entry_t`, 64-bit
//! (x86-64, AArch64). A thread's trace is a file of 12-byte records — uncompressed,
//! gzip-, zstd- or xz-compressed, or a `.zip` of chunks — and a traced program is a
//! folder of them, one per thread (`drmemtrace.*.dir/trace/`), read in the order of
//! their timestamp markers, as drcachesim's serial reader does.
//!
//! Loads and stores become references of the instruction before them; software
//! prefetches are loads (they are translated like one); every instruction fetch
//! (plain, branches, calls, returns, `sysenter`, each of a bundle) is a fetch.
//! Hardware prefetches, flushes, encodings and other markers carry no reference. A
//! thread switch is a `Thread` event; each process id gets an address space, in the
//! order they appear. Field layouts and numbers: DynamoRIO's
//! `clients/drcachesim/common/trace_entry.h`.

mod decode;
pub mod write;
mod zip;

use super::input::{decompress_buffered, open_file, Compression, Source};
use super::{format::Format, Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::addr::Asid;
use crate::event::{Batch, Event};
use decode::{Decoder, Stop};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes per record (`trace_entry_t` with an 8-byte address).
pub const RECORD: usize = 12;
/// The newest `TRACE_ENTRY_VERSION` read (`TRACE_ENTRY_VERSION_FREQUENT_TIMESTAMPS`).
pub const MAX_VERSION: u64 = 6;
/// `OFFLINE_FILE_TYPE_ARCH_ARM32 | OFFLINE_FILE_TYPE_ARCH_X86_32`: 4-byte addresses.
const FILE_32_BIT: u64 = 0x10 | 0x20;

/// `trace_type_t`.
pub mod ty {
    pub const READ: u16 = 0;
    pub const WRITE: u16 = 1;
    pub const PREFETCH: u16 = 2;
    pub const PREFETCH_INSTR: u16 = 9;
    pub const INSTR: u16 = 10;
    pub const INSTR_DIRECT_JUMP: u16 = 11;
    pub const INSTR_CONDITIONAL_JUMP: u16 = 13;
    pub const INSTR_DIRECT_CALL: u16 = 14;
    pub const INSTR_RETURN: u16 = 16;
    pub const INSTR_BUNDLE: u16 = 17;
    pub const INSTR_FLUSH: u16 = 18;
    pub const DATA_FLUSH_END: u16 = 21;
    pub const THREAD: u16 = 22;
    pub const THREAD_EXIT: u16 = 23;
    pub const PID: u16 = 24;
    pub const HEADER: u16 = 25;
    pub const FOOTER: u16 = 26;
    pub const HARDWARE_PREFETCH: u16 = 27;
    pub const MARKER: u16 = 28;
    pub const INSTR_NO_FETCH: u16 = 29;
    pub const INSTR_MAYBE_FETCH: u16 = 30;
    pub const INSTR_SYSENTER: u16 = 31;
    pub const PREFETCH_READ_L1_NT: u16 = 32;
    pub const PREFETCH_WRITE_L3_NT: u16 = 46;
    pub const ENCODING: u16 = 47;
    pub const INSTR_TAKEN_JUMP: u16 = 48;
    pub const INSTR_UNTAKEN_JUMP: u16 = 49;
}

/// `trace_marker_type_t` (a marker's `size` field).
pub mod marker {
    pub const TIMESTAMP: u16 = 2;
    pub const CPU_ID: u16 = 3;
    pub const FILETYPE: u16 = 9;
    pub const CACHE_LINE_SIZE: u16 = 10;
    pub const VERSION: u16 = 12;
    pub const PAGE_SIZE: u16 = 18;
    pub const CHUNK_INSTR_COUNT: u16 = 20;
    pub const CHUNK_FOOTER: u16 = 21;
    pub const RECORD_ORDINAL: u16 = 22;
}

const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Whether `head` (uncompressed) starts like a final trace: a header of a known
/// version, then a marker, thread or pid record.
fn starts_like(head: &[u8]) -> bool {
    if head.len() < 2 * RECORD {
        return false;
    }
    let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
    let version = u64::from_le_bytes(head[4..12].try_into().expect("8 bytes"));
    u16_at(0) == ty::HEADER
        && u16_at(2) == 0
        && (1..=MAX_VERSION).contains(&version)
        && [ty::MARKER, ty::THREAD, ty::PID].contains(&u16_at(RECORD))
}

/// The drmemtrace format of the format list.
pub struct Drmemtrace;

impl Format for Drmemtrace {
    fn open(source: Source, salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        let path = source.path().to_path_buf();
        let decoder = thread_decoder(source, salvage)?;
        DrmemtraceReader::new([Ok(decoder)], &path).map(|r| Box::new(r) as _)
    }

    fn from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        let input: Box<dyn std::io::Read + Send> = if bytes.starts_with(ZIP_MAGIC) {
            zip::open(zip::Archive::Memory(Arc::new(bytes)), path)?
        } else {
            Box::new(std::io::Cursor::new(bytes))
        };
        let decoder = Decoder::new(input, path, "", false);
        DrmemtraceReader::new([Ok(decoder)], path).map(|r| Box::new(r) as _)
    }

    fn recognises(head: &[u8]) -> bool {
        if head.starts_with(ZIP_MAGIC) {
            return true;
        }
        let compression = Compression::sniff(head);
        if compression == Compression::None {
            return starts_like(head);
        }
        let Ok(mut reader) = super::input::decompress(
            std::io::Cursor::new(head.to_vec()),
            compression,
            Path::new(""),
        ) else {
            return false;
        };
        let mut start = [0u8; 2 * RECORD];
        super::input::read_full(&mut reader, &mut start)
            .is_ok_and(|n| n == start.len() && starts_like(&start))
    }

    fn has_signature() -> bool {
        true
    }
}

/// Bytes of read-ahead buffer per open thread file (the decoder reads large blocks).
const THREAD_BUFFER: usize = 64 << 10;

/// Thread files open at once while a folder is merged: beyond them, the thread whose
/// next segment comes last (by its timestamp: the scheduler knows it) is parked
/// (closed, buffers freed) and reopened at its offset when it runs again, so memory
/// and open files stay bounded whatever the thread count, and threads taking turns
/// round-robin reopen one file a round rather than one a turn. An open thread holds
/// about 200 KB (plus the window of a zstd or xz stream); a resumed one seeks
/// (uncompressed), decompresses its current chunk up to its offset (`.zip`) or its
/// whole stream up to it (`.gz`, `.zst`, `.xz`).
const MAX_OPEN_THREADS: usize = 64;

/// One thread's file: a `.zip` of chunks, or records (uncompressed or compressed).
/// A regular file can be parked and reopened; a pipe cannot.
fn thread_decoder(source: Source, salvage: bool) -> Result<Decoder, TraceError> {
    let path = source.path().to_path_buf();
    let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
    if source.head().starts_with(ZIP_MAGIC) {
        // Members are reached by offset: a regular file is reopened, anything else
        // (a pipe) is read into memory first.
        let archive = if regular {
            zip::Archive::File(path.clone())
        } else {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut source.into_read(), &mut bytes)
                .map_err(|e| TraceError::at_offset(&path, 0, format!("cannot read: {e}")))?;
            zip::Archive::Memory(Arc::new(bytes))
        };
        let input = zip::open(archive.clone(), &path)?;
        let decoder = Decoder::new(input, &path, " of the unzipped chunks", salvage);
        let at = path.clone();
        return Ok(decoder.reopened_by(Box::new(move |offset| {
            zip::open_at(archive.clone(), &at, offset)
        })));
    }
    let compression = Compression::sniff(source.head());
    let input = decompress_buffered(source.into_read(), compression, &path, THREAD_BUFFER)?;
    let decoder = Decoder::new(input, &path, compression.offset_note(), salvage);
    if !regular {
        return Ok(decoder);
    }
    let at = path.clone();
    Ok(decoder.reopened_by(Box::new(move |offset| reopen_at(&at, compression, offset))))
}

/// A thread file's record stream again, from byte `offset` of its (decompressed) records.
fn reopen_at(
    path: &Path,
    compression: Compression,
    offset: u64,
) -> Result<Box<dyn std::io::Read + Send>, TraceError> {
    use std::io::{Read, Seek, SeekFrom};
    let fail =
        |e: std::io::Error| TraceError::at_offset(path, offset, format!("cannot reopen: {e}"));
    let mut file = open_file(path)?;
    if compression == Compression::None {
        file.seek(SeekFrom::Start(offset)).map_err(fail)?;
        return Ok(Box::new(file));
    }
    let mut input = decompress_buffered(file, compression, path, THREAD_BUFFER)?;
    let dropped =
        std::io::copy(&mut (&mut input).take(offset), &mut std::io::sink()).map_err(fail)?;
    if dropped < offset {
        return Err(TraceError::at_offset(
            path,
            offset,
            format!(
                "shorter than when it was first read (was it changed?){}",
                compression.offset_note()
            ),
        ));
    }
    Ok(Box::new(input))
}

/// A folder of thread files (`drmemtrace.*.dir`, or its `trace/`), read in timestamp order.
pub fn open_dir(dir: &Path, salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    let folder = if dir.join("trace").is_dir() {
        dir.join("trace")
    } else {
        dir.to_path_buf()
    };
    let fail = |m: String| TraceError::new(dir, super::error::Location::File, m);
    let mut files: Vec<PathBuf> = Vec::new();
    let entries = std::fs::read_dir(&folder).map_err(|e| fail(format!("cannot list: {e}")))?;
    for entry in entries {
        let path = entry.map_err(|e| fail(format!("cannot list: {e}")))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if let Some((_, suffix)) = name.rsplit_once(".trace") {
            match suffix {
                "" | ".zip" | ".gz" | ".zst" | ".xz" => files.push(path),
                ".lz4" | ".sz" => {
                    return Err(fail(format!(
                        "{name}: {} compression; pagelab reads .zip, .gz, .zst, .xz and uncompressed thread files",
                        &suffix[1..]
                    )))
                }
                _ => {}
            }
        }
    }
    if files.is_empty() {
        return Err(fail(format!(
            "no drmemtrace thread files (*.trace, *.trace.zip, .gz, .zst or .xz) in {}",
            folder.display()
        )));
    }
    files.sort();
    // Opened one by one: each is parked when too many are open.
    let decoders = files
        .iter()
        .map(|f| thread_decoder(Source::open(f)?, salvage));
    DrmemtraceReader::new(decoders, dir).map(|r| Box::new(r) as _)
}

/// One thread of a trace being merged.
struct Thread {
    decoder: Decoder,
    /// References decoded before the thread was first scheduled.
    pending: Vec<crate::event::MemRef>,
    /// The timestamp its next segment starts at, while it waits to run (None while
    /// it runs or once it has ended): the latest is parked first.
    next: Option<u64>,
}

/// The references of one or more threads, serially by their timestamps.
pub struct DrmemtraceReader {
    threads: Vec<Thread>,
    /// The threads waiting to run, by the timestamp of their next segment, then by
    /// file order.
    waiting: BinaryHeap<Reverse<(u64, usize)>>,
    current: Option<usize>,
    /// Threads whose input is open.
    open: usize,
    /// The thread and address space the last references belonged to.
    last_tid: Option<u64>,
    last_asid: Asid,
    metadata: Metadata,
    /// What salvaging survived, thread by thread.
    warnings: Vec<String>,
    warning: Option<String>,
}

impl DrmemtraceReader {
    fn new(
        decoders: impl IntoIterator<Item = Result<Decoder, TraceError>>,
        path: &Path,
    ) -> Result<DrmemtraceReader, TraceError> {
        let mut reader = DrmemtraceReader {
            threads: Vec::new(),
            waiting: BinaryHeap::new(),
            current: None,
            open: 0,
            last_tid: None,
            last_asid: Asid(0),
            metadata: Metadata::default(),
            warnings: Vec::new(),
            warning: None,
        };
        let mut pids: Vec<u64> = Vec::new();
        // Each thread read up to its first timestamp: its header, tid and pid (and at
        // most one reference, should one come before any timestamp).
        for decoder in decoders {
            let mut t = Thread {
                decoder: decoder?,
                pending: Vec::new(),
                next: None,
            };
            let next = match t.decoder.decode(&mut t.pending, 1)? {
                Stop::Timestamp(ts) => Some(ts),
                Stop::Full => Some(0),
                Stop::End => (!t.pending.is_empty()).then_some(0),
            };
            let pid = t.decoder.pid.unwrap_or(0);
            let index = pids.iter().position(|&p| p == pid).unwrap_or_else(|| {
                pids.push(pid);
                pids.len() - 1
            });
            let asid = Asid(u16::try_from(index).map_err(|_| {
                TraceError::at_offset(t.decoder.path(), 0, "more than 65,536 processes")
            })?);
            t.decoder.asid = asid;
            reader.warnings.extend(t.decoder.warning.take());
            for r in &mut t.pending {
                r.asid = asid;
            }
            let i = reader.threads.len();
            match next {
                Some(ts) => reader.waiting.push(Reverse((ts, i))),
                None => t.decoder.park(),
            }
            t.next = next;
            reader.open += usize::from(t.decoder.is_open());
            reader.threads.push(t);
            // Room for the next file before it is opened.
            reader.make_room()?;
        }
        let versions: Vec<String> = reader
            .threads
            .iter()
            .filter_map(|t| t.decoder.version)
            .map(|v| v.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        reader.metadata = Metadata {
            source_format: "drmemtrace".into(),
            workload: path.display().to_string(),
            created_by: format!(
                "DynamoRIO drmemtrace, trace_entry_t version {}",
                versions.join(", ")
            ),
            extra: [
                ("threads".to_string(), reader.threads.len().to_string()),
                ("processes".to_string(), pids.len().to_string()),
            ]
            .into_iter()
            .collect(),
        };
        if !reader.warnings.is_empty() {
            reader.warning = Some(reader.warnings.join("; "));
        }
        Ok(reader)
    }

    /// Park the open threads whose next segments come last until one more may open
    /// (Belady's choice: the scheduler knows every waiting thread's next timestamp).
    fn make_room(&mut self) -> Result<(), TraceError> {
        while self.open >= MAX_OPEN_THREADS {
            let victim = (0..self.threads.len())
                .filter(|&i| Some(i) != self.current)
                .filter(|&i| {
                    self.threads[i].decoder.is_open() && self.threads[i].decoder.can_park()
                })
                .max_by_key(|&i| (self.threads[i].next, i));
            let Some(victim) = victim else {
                // Pipes cannot be parked: they stay open.
                return Ok(());
            };
            self.threads[victim].decoder.park();
            self.open -= 1;
        }
        Ok(())
    }

    /// Thread `i` ready to decode: reopened if it was parked.
    fn run(&mut self, i: usize) -> Result<(), TraceError> {
        self.threads[i].next = None;
        if !self.threads[i].decoder.is_open() {
            self.make_room()?;
            self.threads[i].decoder.resume()?;
            self.open += 1;
        }
        Ok(())
    }

    /// Thread `i` has ended: its file is closed and its buffers freed.
    fn end(&mut self, i: usize) {
        let t = &mut self.threads[i];
        if let Some(w) = t.decoder.warning.take() {
            self.warnings.push(w);
            self.warning = Some(self.warnings.join("; "));
        }
        if t.decoder.is_open() {
            t.decoder.park();
            self.open -= usize::from(!t.decoder.is_open());
        }
    }
}

impl TraceReader for DrmemtraceReader {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        let many = self.threads.len() > 1;
        loop {
            let i = match self.current {
                Some(i) => i,
                None => {
                    let Some(Reverse((_, i))) = self.waiting.pop() else {
                        return Ok(!batch.is_empty());
                    };
                    self.run(i)?;
                    let t = &mut self.threads[i];
                    let tid = t.decoder.tid;
                    if many && tid != self.last_tid {
                        batch.push_event(Event::Thread {
                            tid: tid.unwrap_or(0) as u32,
                        });
                        self.last_tid = tid;
                    }
                    if t.decoder.asid != self.last_asid {
                        batch.push_event(Event::SwitchAddressSpace {
                            asid: t.decoder.asid,
                        });
                        self.last_asid = t.decoder.asid;
                    }
                    batch.refs.append(&mut t.pending);
                    self.current = Some(i);
                    i
                }
            };
            if batch.refs.len() >= BATCH_REFS {
                return Ok(true);
            }
            let t = &mut self.threads[i];
            match t.decoder.decode(&mut batch.refs, BATCH_REFS)? {
                Stop::Full => return Ok(true),
                Stop::Timestamp(ts) => {
                    // One thread goes on; several are scheduled again.
                    if many {
                        self.waiting.push(Reverse((ts, i)));
                        t.next = Some(ts);
                        self.current = None;
                    }
                }
                Stop::End => {
                    self.end(i);
                    self.current = None;
                }
            }
        }
    }

    fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    fn position(&self) -> u64 {
        self.threads.iter().map(|t| t.decoder.offset()).sum()
    }

    fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}
