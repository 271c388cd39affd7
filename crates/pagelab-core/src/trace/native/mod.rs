//! pagelab's own trace format (`.plt`): chunked, zstd-compressed, delta-encoded,
//! streamable, with a versioned header carrying metadata.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! header   magic "PGLTRACE" | version u16 | reserved u16 | metadata length u32
//!          | metadata (JSON object, UTF-8) | crc32 of everything before it, u32
//! chunk*   tag "CHNK" | refs u32 | events u32 | raw length u32 | stored length u32
//!          | crc32 of the stored payload u32 | payload (zstd frame)
//! end      tag "END!" | total refs u64 | total events u64 | chunks u64 | crc32 u32
//! ```
//!
//! A chunk payload holds column sections (see `chunk.rs`): a kind byte and a size byte
//! per reference, zigzag address deltas in as few bytes as each needs (each against one
//! of four previous addresses that the kind byte names), optional instruction-pointer
//! deltas, escaped large sizes, and the events with the index of the reference they
//! precede. Deltas
//! restart in every chunk, so chunks decode independently and a reader holds one chunk
//! at a time: memory is constant whatever the trace's length.

mod chunk;
mod reader;
mod varint;
mod writer;

pub use reader::NativeReader;
pub use writer::{NativeWriter, WriterOptions};

pub const MAGIC: &[u8; 8] = b"PGLTRACE";
/// Version 2: deltas against one of four previous addresses (version 1 had two: the
/// last fetch and the last data address).
pub const VERSION: u16 = 2;
const CHUNK_TAG: &[u8; 4] = b"CHNK";
const END_TAG: &[u8; 4] = b"END!";
const CHUNK_HEADER_LEN: usize = 24;
const END_LEN: usize = 32;
/// Chunks larger than this are refused as corrupt rather than allocated.
const MAX_CHUNK_BYTES: u32 = 256 << 20;
