//! The reader of every binary format of fixed-size records without a header (ChampSim,
//! raw u64 addresses): records read in blocks, each decoded by the format, a partial
//! last record an error at its offset.

use super::input::{open_binary, read_full, Compression, Source};
use super::{Format, Metadata, TraceError, TraceReader};
use crate::event::{Batch, MemRef};
use std::io::BufRead;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// A binary format of fixed-size records.
pub trait RecordFormat: 'static {
    /// The name in `Metadata::source_format`.
    const NAME: &'static str;
    /// Bytes per record.
    const RECORD: usize;
    /// Records read per batch.
    const RECORDS_PER_BATCH: usize;
    /// Append the references of one record.
    fn decode(record: &[u8], out: &mut Vec<MemRef>);
    /// What is wrong with a last record of `partial` bytes.
    fn truncated(partial: usize) -> String;
}

pub struct RecordReader<F> {
    input: Box<dyn BufRead + Send>,
    compression: Compression,
    path: PathBuf,
    offset: u64,
    buf: Vec<u8>,
    metadata: Metadata,
    format: PhantomData<fn() -> F>,
}

impl<F: RecordFormat> RecordReader<F> {
    pub fn open(source: Source) -> Result<RecordReader<F>, TraceError> {
        let path = source.path().to_path_buf();
        let (input, compression) = open_binary(source)?;
        Ok(RecordReader::from_reader(input, compression, &path))
    }

    /// Read from an open input, decompressed from `compression`; `path` names it in errors.
    pub fn from_reader(
        input: Box<dyn BufRead + Send>,
        compression: Compression,
        path: &Path,
    ) -> RecordReader<F> {
        RecordReader {
            input,
            compression,
            path: path.to_path_buf(),
            offset: 0,
            buf: vec![0u8; F::RECORDS_PER_BATCH * F::RECORD],
            metadata: Metadata {
                source_format: F::NAME.into(),
                ..Metadata::default()
            },
            format: PhantomData,
        }
    }
}

impl<F: RecordFormat> TraceReader for RecordReader<F> {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        let n = read_full(&mut self.input, &mut self.buf).map_err(|e| {
            TraceError::at_offset(&self.path, self.offset, format!("cannot read: {e}"))
        })?;
        let partial = n % F::RECORD;
        if partial != 0 {
            let at = self.offset + (n - partial) as u64;
            let note = self.compression.offset_note();
            return Err(TraceError::at_offset(
                &self.path,
                at,
                format!("{}{note}", F::truncated(partial)),
            ));
        }
        self.offset += n as u64;
        for record in self.buf[..n].chunks_exact(F::RECORD) {
            F::decode(record, &mut batch.refs);
        }
        Ok(n > 0)
    }
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.offset
    }
}

impl<F: RecordFormat> Format for RecordReader<F> {
    fn open(source: Source, _salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        Ok(Box::new(RecordReader::<F>::open(source)?))
    }
    fn from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Box<dyn TraceReader + Send>, TraceError> {
        let input = Box::new(std::io::Cursor::new(bytes));
        Ok(Box::new(RecordReader::<F>::from_reader(
            input,
            Compression::None,
            path,
        )))
    }
}
