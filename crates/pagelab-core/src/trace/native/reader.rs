//! Reads pagelab's native trace format chunk by chunk, checking every length and
//! checksum; a truncated or corrupt file ends in one error naming the byte offset.

use super::chunk;
use super::{CHUNK_HEADER_LEN, CHUNK_TAG, END_LEN, END_TAG, MAGIC, MAX_CHUNK_BYTES, VERSION};
use crate::event::{Batch, PlainBatch};
use crate::trace::error::TraceError;
use crate::trace::input::{read_full, Source, SourceRead};
use crate::trace::{Metadata, Part, TraceReader};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

pub struct NativeReader<R: Read> {
    input: R,
    path: PathBuf,
    metadata: Metadata,
    offset: u64,
    stored: Vec<u8>,
    raw: Vec<u8>,
    decompressor: zstd::bulk::Decompressor<'static>,
    refs: u64,
    events: u64,
    chunks: u64,
    done: bool,
    salvage: bool,
    warning: Option<String>,
}

impl NativeReader<BufReader<SourceRead>> {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        NativeReader::from_source(Source::open(path)?)
    }
    /// Read an input already opened (its head read for detection).
    pub fn from_source(source: Source) -> Result<Self, TraceError> {
        let path = source.path().to_path_buf();
        NativeReader::new(BufReader::with_capacity(1 << 20, source.into_read()), &path)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl<R: Read> NativeReader<R> {
    /// Read and check the header from `input`; `path` names the input in errors.
    pub fn new(mut input: R, path: &Path) -> Result<Self, TraceError> {
        let err = |offset: u64, msg: String| TraceError::at_offset(path, offset, msg);
        let mut fixed = [0u8; 16];
        let n = read_full(&mut input, &mut fixed).map_err(|e| err(0, e.to_string()))?;
        if fixed[..n.min(8)] != MAGIC[..n.min(8)] || n == 0 {
            return Err(err(0, "not a pagelab trace (bad magic bytes)".into()));
        }
        if n < 16 {
            return Err(err(
                n as u64,
                "truncated: the file ends inside the header".into(),
            ));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(err(
                8,
                format!("trace format version {version} is not supported (this pagelab reads version {VERSION})"),
            ));
        }
        let meta_len = u32_at(&fixed, 12);
        if meta_len > MAX_CHUNK_BYTES {
            return Err(err(
                12,
                format!("metadata length {meta_len} is implausible (corrupt header)"),
            ));
        }
        let mut rest = vec![0u8; meta_len as usize + 4];
        let got = read_full(&mut input, &mut rest).map_err(|e| err(16, e.to_string()))?;
        if got < rest.len() {
            return Err(err(
                16 + got as u64,
                "truncated: the file ends inside the header".into(),
            ));
        }
        let (meta, crc) = rest.split_at(meta_len as usize);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&fixed);
        hasher.update(meta);
        if hasher.finalize() != u32_at(crc, 0) {
            return Err(err(0, "header checksum mismatch (corrupt header)".into()));
        }
        let metadata: Metadata = serde_json::from_slice(meta)
            .map_err(|e| err(16, format!("metadata is not valid JSON: {e}")))?;
        Ok(NativeReader {
            input,
            path: path.to_path_buf(),
            metadata,
            offset: 16 + rest.len() as u64,
            stored: Vec::new(),
            raw: Vec::new(),
            decompressor: zstd::bulk::Decompressor::new().map_err(|e| err(0, e.to_string()))?,
            refs: 0,
            events: 0,
            chunks: 0,
            done: false,
            salvage: false,
            warning: None,
        })
    }

    /// In salvage mode a truncated or corrupt tail ends the trace after the last good
    /// chunk, with a warning (see [`TraceReader::warning`]) instead of an error.
    pub fn salvage(mut self, on: bool) -> Self {
        self.salvage = on;
        self
    }

    fn fail(&mut self, offset: u64, message: String) -> Result<bool, TraceError> {
        self.done = true;
        if self.salvage {
            self.warning = Some(format!(
                "{}: offset {offset}: {message}; kept the {} references in the {} complete chunks before it",
                self.path.display(),
                self.refs,
                self.chunks
            ));
            Ok(false)
        } else {
            Err(TraceError::at_offset(
                &self.path,
                offset,
                format!(
                    "{message} (salvage mode keeps the {} references of the {} complete chunks before it)",
                    self.refs, self.chunks
                ),
            ))
        }
    }

    fn read_exact_at(
        &mut self,
        buf_len: usize,
        what: &str,
        start: u64,
    ) -> Result<Option<Vec<u8>>, TraceError> {
        let mut buf = vec![0u8; buf_len];
        let got = read_full(&mut self.input, &mut buf)
            .map_err(|e| TraceError::at_offset(&self.path, self.offset, e.to_string()))?;
        if got < buf_len {
            let end = self.offset + got as u64;
            self.fail(
                end,
                format!("truncated: the file ends inside the {what} that starts at offset {start}"),
            )?;
            return Ok(None);
        }
        self.offset += got as u64;
        Ok(Some(buf))
    }

    fn read_end(&mut self, start: u64) -> Result<bool, TraceError> {
        let Some(rest) = self.read_exact_at(END_LEN - 4, "end marker", start)? else {
            return Ok(false);
        };
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(END_TAG);
        hasher.update(&rest[..24]);
        if hasher.finalize() != u32_at(&rest, 24) {
            return self.fail(start, "end marker checksum mismatch (corrupt file)".into());
        }
        let (refs, events, chunks) = (u64_at(&rest, 0), u64_at(&rest, 8), u64_at(&rest, 16));
        if (refs, events, chunks) != (self.refs, self.events, self.chunks) {
            return self.fail(
                start,
                format!(
                    "the end marker counts {refs} references, {events} events in {chunks} chunks but the file holds {}, {}, {}",
                    self.refs, self.events, self.chunks
                ),
            );
        }
        let mut probe = [0u8; 1];
        let extra = read_full(&mut self.input, &mut probe)
            .map_err(|e| TraceError::at_offset(&self.path, self.offset, e.to_string()))?;
        if extra != 0 {
            let offset = self.offset;
            return self.fail(offset, "unexpected data after the end marker".into());
        }
        self.done = true;
        Ok(false)
    }
}

/// A chunk read, checked and decompressed into the reader's `raw` buffer.
struct ChunkHead {
    start: u64,
    n_refs: u32,
    n_events: u32,
}

impl<R: Read> NativeReader<R> {
    /// Read the next chunk into `self.raw`; `None` at the end of the trace.
    fn next_chunk(&mut self) -> Result<Option<ChunkHead>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let start = self.offset;
        let mut head = [0u8; CHUNK_HEADER_LEN];
        let got = read_full(&mut self.input, &mut head[..4])
            .map_err(|e| TraceError::at_offset(&self.path, start, e.to_string()))?;
        if got == 0 {
            return self.fail_chunk(
                start,
                format!(
                    "truncated: the trace ends without its end marker (after {} complete chunks, {} references)",
                    self.chunks, self.refs
                ),
            );
        }
        if got < 4 {
            return self.fail_chunk(
                start + got as u64,
                "truncated: the file ends inside a chunk header".into(),
            );
        }
        self.offset += 4;
        if &head[..4] == END_TAG {
            return self.read_end(start).map(|_| None);
        }
        if &head[..4] != CHUNK_TAG {
            return self.fail_chunk(
                start,
                format!(
                    "expected a chunk, found bytes {:02x?} (corrupt file)",
                    &head[..4]
                ),
            );
        }
        let Some(rest) = self.read_exact_at(CHUNK_HEADER_LEN - 4, "chunk header", start)? else {
            return Ok(None);
        };
        head[4..].copy_from_slice(&rest);
        let (n_refs, n_events) = (u32_at(&head, 4), u32_at(&head, 8));
        let (raw_len, stored_len, crc) = (u32_at(&head, 12), u32_at(&head, 16), u32_at(&head, 20));
        if raw_len > MAX_CHUNK_BYTES || stored_len > MAX_CHUNK_BYTES {
            return self.fail_chunk(
                start,
                format!("chunk lengths {raw_len}/{stored_len} are implausible (corrupt file)"),
            );
        }
        // Grow with the data actually present, so a corrupt length cannot make us
        // allocate more than the file holds.
        self.stored.clear();
        let got = (&mut self.input)
            .take(stored_len as u64)
            .read_to_end(&mut self.stored)
            .map_err(|e| TraceError::at_offset(&self.path, self.offset, e.to_string()))?;
        if got < stored_len as usize {
            let end = self.offset + got as u64;
            return self.fail_chunk(
                end,
                format!("truncated: the file ends inside the chunk that starts at offset {start} ({stored_len} bytes expected, {got} present)"),
            );
        }
        self.offset += got as u64;
        if crc32fast::hash(&self.stored) != crc {
            return self.fail_chunk(start, "chunk checksum mismatch (corrupt data)".into());
        }
        self.raw.clear();
        self.raw.reserve(raw_len as usize);
        match self
            .decompressor
            .decompress_to_buffer(&self.stored, &mut self.raw)
        {
            Ok(n) if n == raw_len as usize => {}
            Ok(n) => {
                return self.fail_chunk(
                    start,
                    format!("chunk decompresses to {n} bytes, header says {raw_len}"),
                )
            }
            Err(e) => return self.fail_chunk(start, format!("chunk does not decompress: {e}")),
        }
        Ok(Some(ChunkHead {
            start,
            n_refs,
            n_events,
        }))
    }

    /// [`NativeReader::fail`] where a chunk was expected: `None` ends the trace.
    fn fail_chunk(
        &mut self,
        offset: u64,
        message: String,
    ) -> Result<Option<ChunkHead>, TraceError> {
        self.fail(offset, message).map(|_| None)
    }

    /// Count a chunk decoded, or fail with what is malformed in it (`None`: the
    /// salvaged trace ends before it).
    fn decoded<T>(
        &mut self,
        head: &ChunkHead,
        result: Result<T, String>,
    ) -> Result<Option<T>, TraceError> {
        match result {
            Ok(t) => {
                self.refs += head.n_refs as u64;
                self.events += head.n_events as u64;
                self.chunks += 1;
                Ok(Some(t))
            }
            Err(e) => self
                .fail(head.start, format!("malformed chunk: {e}"))
                .map(|_| None),
        }
    }
}

impl<R: Read + Send> TraceReader for NativeReader<R> {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        let Some(head) = self.next_chunk()? else {
            return Ok(false);
        };
        let result = chunk::decode(&self.raw, head.n_refs, head.n_events, batch);
        if result.is_err() {
            batch.clear();
        }
        self.decoded(&head, result).map(|t| t.is_some())
    }

    fn next_plain(
        &mut self,
        fetches: bool,
        plain: &mut PlainBatch,
        batch: &mut Batch,
    ) -> Result<Part, TraceError> {
        batch.clear();
        plain.clear();
        let Some(head) = self.next_chunk()? else {
            return Ok(Part::End);
        };
        let (raw, n_refs, n_events) = (&self.raw, head.n_refs, head.n_events);
        // The batch is the plain decode's scratch space for events: emptied after.
        let result = match chunk::decode_plain(raw, n_refs, n_events, fetches, batch, plain) {
            Ok(true) => {
                batch.clear();
                Ok(Part::Plain)
            }
            Ok(false) => {
                plain.clear();
                chunk::decode(raw, n_refs, n_events, batch).map(|_| Part::Full)
            }
            Err(e) => Err(e),
        };
        if result.is_err() {
            batch.clear();
            plain.clear();
        }
        self.decoded(&head, result).map(|t| t.unwrap_or(Part::End))
    }

    fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    fn position(&self) -> u64 {
        self.offset
    }

    fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

impl crate::trace::Format for NativeReader<BufReader<SourceRead>> {
    fn open(
        source: Source,
        salvage: bool,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(
            NativeReader::from_source(source)?.salvage(salvage),
        ))
    }
    fn from_bytes(
        bytes: Vec<u8>,
        path: &Path,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(NativeReader::new(
            std::io::Cursor::new(bytes),
            path,
        )?))
    }
    const MAGIC: &'static [u8] = MAGIC;
}
