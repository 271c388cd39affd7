//! Writes pagelab's native trace format, one compressed chunk at a time.

use super::chunk::ChunkEncoder;
use super::{CHUNK_TAG, END_TAG, MAGIC, VERSION};
use crate::addr::Asid;
use crate::event::{Event, MemRef};
use crate::trace::error::{Location, TraceError};
use crate::trace::Metadata;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A chunk is written once its payload reaches this size, whatever `chunk_refs` says,
/// so that every chunk stays well within what the reader accepts.
const RAW_CHUNK_LIMIT: usize = 64 << 20;

#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// References per chunk (the unit of compression and of streaming).
    pub chunk_refs: u32,
    /// zstd level, -7 (fastest) to 19 (smallest).
    pub level: i32,
    /// Whether zstd Huffman-codes the bytes it stores as literals. Off by default:
    /// the literals are mostly address deltas, nearly random bytes, and decoding them
    /// is a large share of reading a trace. On the standard benchmark trace, coding
    /// them makes the file ~17 % smaller and zstd's instructions ~65 % more (~8 % of
    /// a `simulate --machine skylake` run). Either way the file is the same
    /// format: a reader needs no option.
    pub compress_literals: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_refs: 32 * 1024,
            level: 3,
            compress_literals: false,
        }
    }
}

pub struct NativeWriter<W: Write> {
    out: W,
    path: PathBuf,
    options: WriterOptions,
    encoder: ChunkEncoder,
    raw: Vec<u8>,
    compressor: zstd::bulk::Compressor<'static>,
    stored: Vec<u8>,
    offset: u64,
    total_refs: u64,
    total_events: u64,
    chunks: u64,
    flush_chunks: bool,
}

impl NativeWriter<BufWriter<File>> {
    /// Create `path` and write the header.
    pub fn create(
        path: &Path,
        metadata: &Metadata,
        options: WriterOptions,
    ) -> Result<Self, TraceError> {
        let file = File::create(path).map_err(|e| TraceError::io(path, Location::File, &e))?;
        NativeWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            path,
            metadata,
            options,
        )
    }
}

impl<W: Write> NativeWriter<W> {
    /// Write the header to `out`; `path` is only used to name the output in errors.
    pub fn new(
        mut out: W,
        path: &Path,
        metadata: &Metadata,
        options: WriterOptions,
    ) -> Result<Self, TraceError> {
        let err = |e: std::io::Error| TraceError::io(path, Location::Offset(0), &e);
        let meta = serde_json::to_vec(metadata).expect("metadata serializes");
        let mut header = Vec::with_capacity(20 + meta.len());
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        header.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        header.extend_from_slice(&meta);
        let crc = crc32fast::hash(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&header).map_err(err)?;
        let mut compressor =
            zstd::bulk::Compressor::new(options.level.clamp(-7, 19)).map_err(err)?;
        // Matches shorter than 7 bytes save little in these columns and cost the reader
        // a sequence each: without them the standard trace decompresses ~20% faster and
        // grows ~3%.
        compressor
            .set_parameter(zstd::stream::raw::CParameter::MinMatch(7))
            .map_err(err)?;
        let literals = if options.compress_literals {
            zstd::zstd_safe::ParamSwitch::Auto
        } else {
            zstd::zstd_safe::ParamSwitch::Disable
        };
        compressor
            .set_parameter(zstd::stream::raw::CParameter::LiteralCompressionMode(
                literals,
            ))
            .map_err(err)?;
        let mut encoder = ChunkEncoder::default();
        encoder.start(Asid(0));
        Ok(NativeWriter {
            out,
            path: path.to_path_buf(),
            options: WriterOptions {
                chunk_refs: options.chunk_refs.max(1),
                ..options
            },
            encoder,
            raw: Vec::new(),
            compressor,
            stored: Vec::new(),
            offset: header.len() as u64,
            total_refs: 0,
            total_events: 0,
            chunks: 0,
            flush_chunks: false,
        })
    }

    #[inline]
    pub fn write_ref(&mut self, r: &MemRef) -> Result<(), TraceError> {
        self.encoder.push_ref(r);
        if self.encoder.n_refs() >= self.options.chunk_refs
            || self.encoder.raw_len_estimate() > RAW_CHUNK_LIMIT
        {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Write an event; it comes before the next reference written.
    pub fn write_event(&mut self, e: &Event) -> Result<(), TraceError> {
        self.encoder.push_event(e);
        // Bound memory when a trace is all events.
        if self.encoder.raw_len_estimate() > RAW_CHUNK_LIMIT {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Write a whole batch, its events in their places.
    pub fn write_batch(&mut self, batch: &crate::event::Batch) -> Result<(), TraceError> {
        let mut events = batch.events.iter().peekable();
        for (i, r) in batch.refs.iter().enumerate() {
            while let Some((_, e)) = events.next_if(|(at, _)| *at <= i) {
                self.write_event(e)?;
            }
            self.write_ref(r)?;
        }
        for (_, e) in events {
            self.write_event(e)?;
        }
        Ok(())
    }

    /// Hand every chunk to the output as soon as it is written, rather than when the
    /// output's buffer fills: a recording that is killed then keeps every chunk but the
    /// one in progress.
    pub fn flush_each_chunk(mut self, on: bool) -> Self {
        self.flush_chunks = on;
        self
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }
    pub fn refs_written(&self) -> u64 {
        self.total_refs + self.encoder.n_refs() as u64
    }

    fn flush_chunk(&mut self) -> Result<(), TraceError> {
        let (n_refs, n_events) = (self.encoder.n_refs(), self.encoder.n_events());
        if n_refs == 0 && n_events == 0 {
            return Ok(());
        }
        self.encoder.finish(&mut self.raw);
        self.stored.clear();
        self.stored
            .reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
        let offset = self.offset;
        let path = &self.path;
        self.compressor
            .compress_to_buffer(&self.raw, &mut self.stored)
            .map_err(|e| TraceError::io(path, Location::Offset(offset), &e))?;
        let mut head = [0u8; super::CHUNK_HEADER_LEN];
        head[0..4].copy_from_slice(CHUNK_TAG);
        head[4..8].copy_from_slice(&n_refs.to_le_bytes());
        head[8..12].copy_from_slice(&n_events.to_le_bytes());
        head[12..16].copy_from_slice(&(self.raw.len() as u32).to_le_bytes());
        head[16..20].copy_from_slice(&(self.stored.len() as u32).to_le_bytes());
        head[20..24].copy_from_slice(&crc32fast::hash(&self.stored).to_le_bytes());
        self.write_all_at(&head)?;
        let stored = std::mem::take(&mut self.stored);
        let result = self.write_all_at(&stored);
        self.stored = stored;
        result?;
        self.total_refs += n_refs as u64;
        self.total_events += n_events as u64;
        self.chunks += 1;
        if self.flush_chunks {
            self.out
                .flush()
                .map_err(|e| TraceError::io(&self.path, Location::Offset(self.offset), &e))?;
        }
        let asid = self.encoder.asid();
        self.encoder.start(asid);
        Ok(())
    }

    fn write_all_at(&mut self, bytes: &[u8]) -> Result<(), TraceError> {
        self.out
            .write_all(bytes)
            .map_err(|e| TraceError::io(&self.path, Location::Offset(self.offset), &e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Write the last chunk and the end marker, flush, and give back the sink.
    pub fn finish(mut self) -> Result<W, TraceError> {
        self.flush_chunk()?;
        let mut end = Vec::with_capacity(super::END_LEN);
        end.extend_from_slice(END_TAG);
        end.extend_from_slice(&self.total_refs.to_le_bytes());
        end.extend_from_slice(&self.total_events.to_le_bytes());
        end.extend_from_slice(&self.chunks.to_le_bytes());
        let crc = crc32fast::hash(&end);
        end.extend_from_slice(&crc.to_le_bytes());
        self.write_all_at(&end)?;
        let offset = self.offset;
        self.out
            .flush()
            .map_err(|e| TraceError::io(&self.path, Location::Offset(offset), &e))?;
        Ok(self.out)
    }
}
