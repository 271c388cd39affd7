//! The reader of every text format of one reference per line (lackey, address lists):
//! lines read with a bound on their length ([`Lines`]), each parsed by the format.

use super::input::{Lines, Source};
use super::{Format, Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::event::{AccessKind, Batch, MemRef};
use std::marker::PhantomData;
use std::path::Path;

/// A text format: what one line holds.
pub trait LineFormat: 'static {
    /// The name in `Metadata::source_format`.
    const NAME: &'static str;
    /// The reference on `line` as (kind, address, size), `Ok(None)` for a line to skip
    /// (blank, a comment), or what is wrong with it.
    fn parse(line: &[u8]) -> Result<Option<(AccessKind, u64, u32)>, String>;
}

pub struct LineReader<F> {
    lines: Lines,
    metadata: Metadata,
    format: PhantomData<fn() -> F>,
}

impl<F: LineFormat> LineReader<F> {
    pub fn open(source: Source) -> Result<LineReader<F>, TraceError> {
        Ok(LineReader::from_lines(Lines::open(source)?))
    }

    /// Read from an open input (already decompressed); `path` names it in errors.
    pub fn from_reader(input: Box<dyn std::io::BufRead + Send>, path: &Path) -> LineReader<F> {
        LineReader::from_lines(Lines::new(input, path))
    }

    fn from_lines(lines: Lines) -> LineReader<F> {
        LineReader {
            lines,
            metadata: Metadata {
                source_format: F::NAME.into(),
                ..Metadata::default()
            },
            format: PhantomData,
        }
    }
}

impl<F: LineFormat> TraceReader for LineReader<F> {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        while batch.refs.len() < BATCH_REFS {
            let Some(line) = self.lines.next_line()? else {
                break;
            };
            match F::parse(line) {
                Ok(Some((kind, addr, size))) => batch.refs.push(MemRef::new(addr, size, kind)),
                Ok(None) => {}
                Err(message) => return Err(self.lines.error(message)),
            }
        }
        Ok(!batch.refs.is_empty())
    }
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.lines.bytes
    }
}

impl<F: LineFormat> Format for LineReader<F> {
    fn open(source: Source, _salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        Ok(Box::new(LineReader::<F>::open(source)?))
    }
    fn from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        let input = Box::new(std::io::Cursor::new(bytes));
        Ok(Box::new(LineReader::<F>::from_reader(input, path)))
    }
    fn text_line(line: &str) -> bool {
        matches!(F::parse(line.as_bytes()), Ok(Some(_)))
    }
}
