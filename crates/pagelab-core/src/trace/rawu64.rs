//! Raw little-endian u64 virtual addresses, 8 bytes per reference, no header (the
//! `*.va.u64` files of the standard benchmark generator). Every reference is a 1-byte
//! load in address space 0.

use super::input::{open_binary, read_full, Compression};
use super::{Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::event::{AccessKind, Batch, MemRef};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

pub struct U64Reader {
    input: Box<dyn BufRead + Send>,
    compression: Compression,
    path: PathBuf,
    offset: u64,
    buf: Vec<u8>,
    metadata: Metadata,
}

impl U64Reader {
    pub fn open(path: &Path) -> Result<U64Reader, TraceError> {
        let (input, compression) = open_binary(path)?;
        Ok(U64Reader::from_reader(input, compression, path))
    }

    /// Read from an open input, decompressed from `compression`; `path` names it in errors.
    pub fn from_reader(
        input: Box<dyn BufRead + Send>,
        compression: Compression,
        path: &Path,
    ) -> U64Reader {
        U64Reader {
            input,
            compression,
            path: path.to_path_buf(),
            offset: 0,
            buf: vec![0u8; BATCH_REFS * 8],
            metadata: Metadata {
                source_format: "u64".into(),
                ..Metadata::default()
            },
        }
    }
}

impl TraceReader for U64Reader {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        let n = read_full(&mut self.input, &mut self.buf).map_err(|e| {
            TraceError::at_offset(&self.path, self.offset, format!("cannot read: {e}"))
        })?;
        if n % 8 != 0 {
            let at = self.offset + (n - n % 8) as u64;
            return Err(TraceError::at_offset(
                &self.path,
                at,
                format!(
                    "truncated: {} trailing bytes do not make an 8-byte address{}",
                    n % 8,
                    self.compression.offset_note()
                ),
            ));
        }
        self.offset += n as u64;
        batch.refs.extend(self.buf[..n].chunks_exact(8).map(|b| {
            MemRef::new(
                u64::from_le_bytes(b.try_into().unwrap()),
                1,
                AccessKind::Load,
            )
        }));
        Ok(n > 0)
    }
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.offset
    }
}

pub fn write_ref(out: &mut impl Write, r: &MemRef) -> std::io::Result<()> {
    out.write_all(&r.addr.0.to_le_bytes())
}

impl crate::trace::Format for U64Reader {
    fn open(
        path: &Path,
        _salvage: bool,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(U64Reader::open(path)?))
    }
    fn from_bytes(
        bytes: Vec<u8>,
        path: &Path,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        let input = Box::new(std::io::Cursor::new(bytes));
        Ok(Box::new(U64Reader::from_reader(
            input,
            crate::trace::input::Compression::None,
            path,
        )))
    }
}
