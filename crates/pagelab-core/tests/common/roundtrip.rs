//! What the round-trip tests (roundtrip_readers.rs, roundtrip_native.rs) share: reading
//! a file whole, writing a batch natively and reading it back, the strategies for
//! access kinds and addresses, and the proptest configuration.

use super::temp_file;
use pagelab_core::event::{AccessKind, Batch};
use pagelab_core::trace::native::{NativeWriter, WriterOptions};
use pagelab_core::trace::{self, Metadata, TraceFormat};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::path::Path;

/// The whole of the trace at `path`, read as `format`.
pub fn read(path: &Path, format: TraceFormat) -> Batch {
    let mut reader = trace::open(path, Some(format)).unwrap_or_else(|e| panic!("open: {e}"));
    trace::read_all(reader.as_mut()).unwrap_or_else(|e| panic!("read: {e}"))
}

/// Write `batch` natively in chunks of `chunk_refs`, with `metadata`.
pub fn write_native(path: &Path, batch: &Batch, metadata: &Metadata, chunk_refs: u32) {
    let options = WriterOptions {
        chunk_refs,
        level: 1,
        // Both ways of storing zstd's literals, by the parity of the chunk size.
        compress_literals: chunk_refs % 2 == 1,
    };
    let mut w =
        NativeWriter::create(path, metadata, options).unwrap_or_else(|e| panic!("create: {e}"));
    w.write_batch(batch)
        .unwrap_or_else(|e| panic!("write: {e}"));
    assert_eq!(w.refs_written(), batch.refs.len() as u64);
    w.finish().unwrap_or_else(|e| panic!("finish: {e}"));
}

/// Write `batch` natively in chunks of `chunk_refs` and read it back.
pub fn through_native(batch: &Batch, chunk_refs: u32) -> Batch {
    let file = temp_file(".plt");
    write_native(file.path(), batch, &Metadata::default(), chunk_refs);
    read(file.path(), TraceFormat::Native)
}

/// Every access kind.
pub fn kind_strategy() -> impl Strategy<Value = AccessKind> {
    prop::sample::select(AccessKind::ALL.to_vec())
}

/// Addresses with locality (small deltas around a few bases) and without.
pub fn addr_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..0x1_0000,
        3 => (0u64..8, 0u64..0x10_000).prop_map(|(b, o)| 0x7ff0_0000_0000 + b * 0x100_0000 + o),
        1 => any::<u64>(),
        1 => prop::sample::select(vec![0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]),
        // Deltas of every byte length, repeats (zero deltas) included.
        1 => (0u32..64, 0u64..4).prop_map(|(k, o)| (1u64 << k).wrapping_add(o)),
    ]
}

/// `cases` cases, no failures saved to a file.
pub fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
