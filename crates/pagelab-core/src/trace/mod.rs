//! Traces: the readers and writers of every supported format behind one streaming
//! interface, [`TraceReader`], which fills a [`Batch`] at a time so that traces of any
//! length are read in constant memory.
//!
//! Formats (see [`TraceFormat`]): pagelab's native `.plt`, Valgrind lackey text,
//! ChampSim binary records, plain text address lists, raw little-endian u64 addresses,
//! and the stream of pagelab's Valgrind recorder.

pub mod addrs;
pub mod ahead;
pub mod champsim;
pub mod convert;
pub mod drmemtrace;
pub mod error;
mod format;
pub mod info;
pub mod input;
pub mod interleave;
pub mod lackey;
pub mod line_reader;
pub mod native;
pub mod pgrec;
pub mod rawu64;
pub mod record_reader;
pub mod synthetic;

pub use error::{Location, TraceError};
pub use format::{
    describe_content, open, open_detected, open_salvaging, Format, TraceFormat, NAMES,
};

/// The trace formats, by name (`--format`): the one list from which [`TraceFormat`],
/// its names and extensions, detection and opening are made. Each entry names the
/// reader (implementing [`Format`]) and the file extensions; magic bytes and text
/// lines are tried in the list's order. The macro hands the list to `$m`, after the
/// tokens given after it and a `;`.
#[macro_export]
macro_rules! for_each_trace_format {
    ($m:ident $(, $($arg:tt)*)?) => {
        $m! {
            $($($arg)*)?;
            /// pagelab's own format: zstd-compressed chunks of columns, with every event.
            "native" => Native(native::NativeReader<std::io::BufReader<input::SourceRead>>, ["plt"]),
            /// Valgrind `--tool=lackey --trace-mem=yes` text (optionally gz/xz/zst); no events.
            "lackey" => Lackey(lackey::LackeyReader, ["lackey"]),
            /// ChampSim 64-byte `input_instr` records (optionally gz/xz/zst); no events.
            "champsim" => Champsim(champsim::ChampsimReader, ["champsim", "champsimtrace"]),
            /// One reference per line: `[KIND] ADDRESS [SIZE]` (optionally gz/xz/zst); no events.
            "addrs" => Addrs(addrs::AddrsReader, ["addrs", "txt"]),
            /// Raw little-endian u64 virtual addresses, 8 bytes each; no events.
            "u64" => U64(rawu64::U64Reader, ["u64"]),
            /// The stream of pagelab's Valgrind recorder (recorder/FORMAT.md), with every event.
            "pgrec" => Pgrec(pgrec::PgrecReader, ["pgrec"]),
            /// DynamoRIO drmemtrace final traces, versions 1–6 (a thread's file, a
            /// `.zip` of chunks, gz/zst/xz; or a folder of threads), with thread and process
            /// switches.
            "drmemtrace" => Drmemtrace(drmemtrace::Drmemtrace, ["trace", "zip"]),
        }
    };
}

use crate::event::{Batch, PlainBatch};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What a trace says about itself. Stored as JSON in the native header; other formats
/// report only their format name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// The format the references were first captured in ("lackey", "champsim", ...).
    pub source_format: String,
    /// What was traced: a command line or a workload name.
    pub workload: String,
    /// The program and version that wrote the file.
    pub created_by: String,
    /// Free-form further facts (capture options, host, ...).
    pub extra: BTreeMap<String, String>,
}

/// A streaming source of trace batches.
pub trait TraceReader: Send {
    /// Clear `batch` and fill it with the next part of the trace.
    /// `Ok(false)` means the trace has ended (the batch is then empty).
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError>;
    /// The next part of the trace as a [`PlainBatch`] when all its references are
    /// plain (and, unless `fetches`, none is an instruction fetch), else as a `batch`;
    /// both are cleared first. For loops that need only plain references' addresses
    /// and run the others the general way. Readers that keep no columns give batches.
    fn next_plain(
        &mut self,
        fetches: bool,
        plain: &mut PlainBatch,
        batch: &mut Batch,
    ) -> Result<Part, TraceError> {
        let _ = fetches;
        plain.clear();
        Ok(if self.next_batch(batch)? {
            Part::Full
        } else {
            Part::End
        })
    }
    fn metadata(&self) -> &Metadata;
    /// Bytes of input consumed so far (of the decompressed stream for compressed text),
    /// for progress reports.
    fn position(&self) -> u64;
    /// A problem the reader chose to survive (salvage mode), to be shown to the user.
    fn warning(&self) -> Option<&str> {
        None
    }
    /// Whether the trace is being written while it is read (a program recorded as it
    /// runs): then it is not read ahead (`ahead`), since a read in progress may wait on
    /// the program for long, and a run that stops early must not wait with it.
    fn live(&self) -> bool {
        false
    }
}

/// What [`TraceReader::next_plain`] gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The plain batch holds the next part.
    Plain,
    /// The batch holds it.
    Full,
    /// The trace has ended.
    End,
}

/// References per batch for the readers that choose their own batch size.
pub const BATCH_REFS: usize = 32 * 1024;

/// Read a whole trace into memory (for tests and small traces only).
pub fn read_all(reader: &mut dyn TraceReader) -> Result<Batch, TraceError> {
    let mut all = Batch::default();
    let mut batch = Batch::default();
    while reader.next_batch(&mut batch)? {
        let base = all.refs.len();
        all.refs.extend_from_slice(&batch.refs);
        all.events
            .extend(batch.events.drain(..).map(|(i, e)| (base + i, e)));
    }
    Ok(all)
}
