//! Opening input files, transparently decompressing gzip, xz and zstd streams (for the
//! text and ChampSim formats), while counting the bytes consumed so that errors can name
//! an offset.

use super::error::{Location, TraceError};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

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
    /// What the content is, in an error message.
    pub fn describe(self) -> &'static str {
        match self {
            Compression::None => "uncompressed data",
            Compression::Gzip => "gzip-compressed data",
            Compression::Xz => "xz-compressed data",
            Compression::Zstd => "zstd-compressed data",
        }
    }
    /// The file name extension that announces it.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => "gz",
            Compression::Xz => "xz",
            Compression::Zstd => "zst",
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

/// How many bytes of an input [`Source`] reads ahead to tell its format.
pub const HEAD_BYTES: usize = 64 << 10;

/// An input opened once: its first bytes ([`HEAD_BYTES`]) are read to tell its format
/// and compression, then replayed in front of the rest. A pipe, `/dev/stdin` or a
/// `<( )` can be read only once, so nothing reopens an input.
pub struct Source {
    path: PathBuf,
    head: Vec<u8>,
    file: File,
}

/// The bytes of a [`Source`]: its head, then the rest of the file.
pub type SourceRead = io::Chain<io::Cursor<Vec<u8>>, File>;

impl Source {
    pub fn open(path: &Path) -> Result<Source, TraceError> {
        let mut file = open_file(path)?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(TraceError::new(
                path,
                Location::File,
                "is a directory, not a trace",
            ));
        }
        let mut head = vec![0u8; HEAD_BYTES];
        let n = read_full(&mut file, &mut head)
            .map_err(|e| TraceError::io(path, Location::Offset(0), &e))?;
        head.truncate(n);
        Ok(Source {
            path: path.to_path_buf(),
            head,
            file,
        })
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The first bytes of the input (all of it when it is shorter than [`HEAD_BYTES`]).
    pub fn head(&self) -> &[u8] {
        &self.head
    }
    /// Every byte of the input from the start.
    pub fn into_read(self) -> SourceRead {
        io::Cursor::new(self.head).chain(self.file)
    }
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
    source: Source,
) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    let compression = Compression::sniff(source.head());
    open_with(source, compression)
}

/// The same for a binary trace: its first bytes are data and may look like any magic,
/// so only the file name says whether it is compressed. Compressed content under a
/// name that does not say so is an error rather than records of garbage.
pub fn open_binary(source: Source) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    let by_name = compression_by_name(source.path());
    let by_content = Compression::sniff(source.head());
    if by_name == Compression::None && by_content != Compression::None {
        return Err(TraceError::at_offset(
            source.path(),
            0,
            format!(
                "the content is {} but the name does not end in .{} (rename the file, or decompress it)",
                by_content.describe(),
                by_content.extension()
            ),
        ));
    }
    open_with(source, by_name)
}

fn open_with(
    source: Source,
    compression: Compression,
) -> Result<(Box<dyn BufRead + Send>, Compression), TraceError> {
    let path = source.path.clone();
    let input = source.into_read();
    Ok((decompress(input, compression, &path)?, compression))
}

/// A buffered reader of `input`'s content, decompressed from `compression`.
pub fn decompress<R: Read + Send + 'static>(
    input: R,
    compression: Compression,
    path: &Path,
) -> Result<Box<dyn BufRead + Send>, TraceError> {
    decompress_buffered(input, compression, path, 1 << 20)
}

/// The same with a buffer of `cap` bytes (a reader that reads in large blocks of its
/// own, or one of many open at once, needs less than the default megabyte).
pub fn decompress_buffered<R: Read + Send + 'static>(
    input: R,
    compression: Compression,
    path: &Path,
    cap: usize,
) -> Result<Box<dyn BufRead + Send>, TraceError> {
    Ok(match compression {
        Compression::None => Box::new(BufReader::with_capacity(cap, input)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            cap,
            flate2::read::MultiGzDecoder::new(BufReader::new(input)),
        )),
        Compression::Xz => Box::new(BufReader::with_capacity(
            cap,
            xz2::read::XzDecoder::new_multi_decoder(BufReader::new(input)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            cap,
            zstd::stream::read::Decoder::new(input)
                .map_err(|e| TraceError::io(path, Location::Offset(0), &e))?,
        )),
    })
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

/// The longest line a text trace may have, in bytes: a reference takes a few dozen, so
/// a longer line is not a trace's (and reading it whole could exhaust memory).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Line-by-line reading of a text trace with line numbers and byte counts, reusing
/// one buffer, every line at most [`MAX_LINE_BYTES`] long.
pub struct Lines {
    reader: Box<dyn BufRead + Send>,
    pub path: std::path::PathBuf,
    pub line_no: u64,
    pub bytes: u64,
    buf: Vec<u8>,
}

impl Lines {
    pub fn open(source: Source) -> Result<Lines, TraceError> {
        let path = source.path().to_path_buf();
        let (reader, _) = open_decompressed(source)?;
        Ok(Lines::new(reader, &path))
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
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| {
                TraceError::at_line(&self.path, self.line_no + 1, format!("cannot read: {e}"))
            })?;
        if n == 0 {
            return Ok(None);
        }
        if n as u64 == limit && self.buf.last() != Some(&b'\n') {
            return Err(TraceError::at_line(
                &self.path,
                self.line_no + 1,
                format!("the line is longer than {MAX_LINE_BYTES} bytes: not a text trace"),
            ));
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
