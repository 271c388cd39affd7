//! Opening input files, transparently decompressing gzip, xz and zstd streams (for the
//! text and ChampSim formats), while counting the bytes consumed so that errors can name
//! an offset.

use super::error::{Location, TraceError};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// The compression wrapped around a text or ChampSim trace, told by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Zstd,
}

impl Compression {
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b, 0x08]) {
            Compression::Gzip
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
    /// How offsets into this input are to be read in an error message.
    pub fn offset_note(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => " of the gzip-decompressed stream",
            Compression::Xz => " of the xz-decompressed stream",
            Compression::Zstd => " of the zstd-decompressed stream",
        }
    }
}

/// Open `path` for reading, naming it in the error.
pub fn open_file(path: &Path) -> Result<File, TraceError> {
    File::open(path).map_err(|e| TraceError::io(path, Location::File, &e))
}

/// Read up to `n` bytes from the start of the file without consuming a reader.
pub fn peek(path: &Path, n: usize) -> Result<Vec<u8>, TraceError> {
    let mut head = Vec::with_capacity(n);
    open_file(path)?
        .take(n as u64)
        .read_to_end(&mut head)
        .map_err(|e| TraceError::io(path, Location::Offset(0), &e))?;
    Ok(head)
}

/// The compression a file name announces (`.gz`, `.xz`, `.zst`).
pub fn compression_by_name(path: &Path) -> Compression {
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("xz") => Compression::Xz,
        Some("zst") => Compression::Zstd,
        _ => Compression::None,
    }
}

/// A buffered reader of the decompressed content of a text trace, and which
/// compression it had (told by magic bytes: text never starts with them).
pub fn open_decompressed(
    path: &Path,
) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    open_with(path, Compression::sniff(&peek(path, 8)?))
}

/// The same for a binary trace: its first bytes are data and may look like any magic,
/// so only the file name says whether it is compressed.
pub fn open_binary(path: &Path) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    open_with(path, compression_by_name(path))
}

fn open_with(
    path: &Path,
    compression: Compression,
) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    let file = open_file(path)?;
    let cap = 1 << 20;
    let reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(BufReader::with_capacity(cap, file)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            cap,
            flate2::read::MultiGzDecoder::new(BufReader::new(file)),
        )),
        Compression::Xz => Box::new(BufReader::with_capacity(
            cap,
            xz2::read::XzDecoder::new_multi_decoder(BufReader::new(file)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            cap,
            zstd::stream::read::Decoder::new(file)
                .map_err(|e| TraceError::io(path, Location::Offset(0), &e))?,
        )),
    };
    Ok((reader, compression))
}

/// Fill `buf` completely, or report how many bytes were available before end of input.
/// `Ok(n)` with `n < buf.len()` means the input ended after `n` bytes.
pub fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Line-by-line reading of a text trace with line numbers and byte counts, reusing
/// one buffer.
pub struct Lines {
    reader: Box<dyn BufRead + Send>,
    pub path: std::path::PathBuf,
    pub line_no: u64,
    pub bytes: u64,
    buf: Vec<u8>,
}

impl Lines {
    pub fn open(path: &Path) -> Result<Lines, TraceError> {
        let (reader, _) = open_decompressed(path)?;
        Ok(Lines::new(reader, path))
    }

    /// Lines of an already open (and decompressed) input; `path` names it in errors.
    pub fn new(reader: Box<dyn BufRead + Send>, path: &Path) -> Lines {
        Lines {
            reader,
            path: path.to_path_buf(),
            line_no: 0,
            bytes: 0,
            buf: Vec::with_capacity(256),
        }
    }

    /// The next line without its line ending, or `None` at end of input.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, TraceError> {
        self.buf.clear();
        let n = self.reader.read_until(b'\n', &mut self.buf).map_err(|e| {
            TraceError::at_line(&self.path, self.line_no + 1, format!("cannot read: {e}"))
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.bytes += n as u64;
        let mut line = &self.buf[..];
        while let [rest @ .., b'\n' | b'\r'] = line {
            line = rest;
        }
        Ok(Some(line))
    }

    pub fn error(&self, message: impl Into<String>) -> TraceError {
        TraceError::at_line(&self.path, self.line_no, message)
    }
}

/// Parse hexadecimal digits (no prefix).
pub fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        let d = (c as char).to_digit(16)?;
        v = v << 4 | d as u64;
    }
    Some(v)
}

/// Parse decimal digits.
pub fn parse_dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}
