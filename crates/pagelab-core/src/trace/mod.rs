//! Traces: the readers and writers of every supported format behind one streaming
//! interface, [`TraceReader`], which fills a [`Batch`] at a time so that traces of any
//! length are read in constant memory.
//!
//! Formats (see [`TraceFormat`]): pagelab's native `.plt`, Valgrind lackey text,
//! ChampSim binary records, plain text address lists, raw little-endian u64 addresses,
//! and the stream of pagelab's Valgrind recorder.

pub mod addrs;
pub mod champsim;
pub mod error;
pub mod info;
pub mod input;
pub mod interleave;
pub mod lackey;
pub mod native;
pub mod pgrec;
pub mod rawu64;
pub mod synthetic;

pub use error::{Location, TraceError};

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
pub trait TraceReader {
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

/// The trace formats pagelab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// pagelab's own format (`.plt`).
    Native,
    /// Valgrind `--tool=lackey --trace-mem=yes` output (optionally gz/xz/zst).
    Lackey,
    /// ChampSim 64-byte `input_instr` records (optionally gz/xz/zst).
    Champsim,
    /// One reference per line: `[KIND] ADDRESS [SIZE]` (optionally gz/xz/zst).
    Addrs,
    /// Raw little-endian u64 virtual addresses, 8 bytes each.
    U64,
    /// The stream of pagelab's Valgrind recorder (recorder/FORMAT.md).
    Pgrec,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 6] = [
        TraceFormat::Native,
        TraceFormat::Lackey,
        TraceFormat::Champsim,
        TraceFormat::Addrs,
        TraceFormat::U64,
        TraceFormat::Pgrec,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Native => "native",
            TraceFormat::Lackey => "lackey",
            TraceFormat::Champsim => "champsim",
            TraceFormat::Addrs => "addrs",
            TraceFormat::U64 => "u64",
            TraceFormat::Pgrec => "pgrec",
        }
    }
    pub fn parse(name: &str) -> Result<TraceFormat, String> {
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown trace format {name:?} (known: {})",
                    names.join(", ")
                )
            })
    }

    /// The format a file name announces by its extension (after any .gz/.xz/.zst).
    pub fn from_extension(path: &Path) -> Option<TraceFormat> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        let stem = ["gz", "xz", "zst"]
            .iter()
            .find_map(|ext| name.strip_suffix(&format!(".{ext}")))
            .unwrap_or(&name);
        match stem.rsplit_once('.')?.1 {
            "plt" => Some(TraceFormat::Native),
            "lackey" => Some(TraceFormat::Lackey),
            "champsim" | "champsimtrace" => Some(TraceFormat::Champsim),
            "u64" => Some(TraceFormat::U64),
            "pgrec" => Some(TraceFormat::Pgrec),
            "addrs" | "txt" => Some(TraceFormat::Addrs),
            _ => None,
        }
    }

    /// Tell the format of a file: the native magic bytes first, then the file name's
    /// extension (after any .gz/.xz/.zst), then, for text, the shape of its first lines.
    pub fn detect(path: &Path) -> Result<TraceFormat, TraceError> {
        let head = input::peek(path, 8)?;
        if head.starts_with(native::MAGIC) {
            return Ok(TraceFormat::Native);
        }
        if head.starts_with(pgrec::MAGIC) {
            return Ok(TraceFormat::Pgrec);
        }
        if let Some(format) = TraceFormat::from_extension(path) {
            // A .txt file may still be lackey output: let its lines say.
            if format != TraceFormat::Addrs {
                return Ok(format);
            }
        }
        // Text of unknown name: look at the first lines that are not comments.
        if let Some(format) = sniff_text(path)? {
            return Ok(format);
        }
        // Binary of unknown name: hold it to the native format, whose error says what is wrong.
        Ok(TraceFormat::Native)
    }
}

fn sniff_text(path: &Path) -> Result<Option<TraceFormat>, TraceError> {
    use std::io::BufRead;
    let (reader, _) = input::open_decompressed(path)?;
    let mut lines = 0;
    // Only the first 64 KiB: a binary file of unknown name has no line endings.
    for line in std::io::Read::take(reader, 64 << 10).split(b'\n').take(64) {
        let Ok(line) = line else { return Ok(None) };
        let Ok(text) = std::str::from_utf8(&line) else {
            return Ok(None);
        };
        let t = text.trim_end();
        if t.is_empty() || t.starts_with("==") || t.starts_with("--") || t.starts_with('#') {
            continue;
        }
        lines += 1;
        if lackey::parse_line(t.as_bytes()).is_ok() {
            return Ok(Some(TraceFormat::Lackey));
        }
        if addrs::parse_line(t).is_ok() {
            return Ok(Some(TraceFormat::Addrs));
        }
        if lines > 4 {
            break;
        }
    }
    Ok(None)
}

/// Open a trace for reading; `format` `None` detects it.
pub fn open(
    path: &Path,
    format: Option<TraceFormat>,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    open_salvaging(path, format, false)
}

/// [`open`], and with `salvage` a native trace that is cut short or corrupt ends after
/// its last good chunk with a warning ([`TraceReader::warning`]) instead of an error:
/// how an interrupted recording is read.
pub fn open_salvaging(
    path: &Path,
    format: Option<TraceFormat>,
    salvage: bool,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    let format = match format {
        Some(f) => f,
        None => TraceFormat::detect(path)?,
    };
    Ok(match format {
        TraceFormat::Native => Box::new(native::NativeReader::open(path)?.salvage(salvage)),
        TraceFormat::Lackey => Box::new(lackey::LackeyReader::open(path)?),
        TraceFormat::Champsim => Box::new(champsim::ChampsimReader::open(path)?),
        TraceFormat::Addrs => Box::new(addrs::AddrsReader::open(path)?),
        TraceFormat::U64 => Box::new(rawu64::U64Reader::open(path)?),
        TraceFormat::Pgrec => Box::new(pgrec::PgrecReader::open(path)?),
    })
}

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
