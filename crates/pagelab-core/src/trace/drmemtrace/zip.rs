//! A drmemtrace `.zip`: one thread's trace in members (`chunk.0000`, …) taken in the
//! archive's order. The central directory is read with the `zip` crate; each member is
//! then streamed (stored or deflated) and checked against its CRC-32 and size, so a
//! trace of any length is read in constant memory.

use crate::trace::TraceError;
use flate2::read::DeflateDecoder;
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the archive's bytes are: a file (reopened per member) or memory.
#[derive(Clone)]
pub enum Archive {
    File(PathBuf),
    Memory(Arc<Vec<u8>>),
}

struct Member {
    name: String,
    start: u64,
    compressed: u64,
    size: u64,
    crc: u32,
    deflated: bool,
}

/// Bytes of memory as a reader's backing.
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Archive {
    fn open_at(&self, start: u64) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Archive::File(path) => {
                let mut f = File::open(path)?;
                f.seek(SeekFrom::Start(start))?;
                Box::new(io::BufReader::new(f))
            }
            Archive::Memory(bytes) => {
                let mut c = Cursor::new(Shared(bytes.clone()));
                c.set_position(start);
                Box::new(c)
            }
        })
    }
}

/// The members of the archive, in order, as one stream of records.
pub fn open(archive: Archive, path: &Path) -> Result<Box<dyn Read + Send>, TraceError> {
    open_at(archive, path, 0)
}

/// The same stream from its byte `skip` on: whole members before it are passed by
/// their sizes (they were checked when first read, to their ends), the rest
/// decompressed and dropped. A member that ends exactly at `skip` is decompressed
/// again: it may not have been checked yet.
pub fn open_at(
    archive: Archive,
    path: &Path,
    skip: u64,
) -> Result<Box<dyn Read + Send>, TraceError> {
    let fail =
        |e: String| TraceError::at_offset(path, 0, format!("not a readable zip archive: {e}"));
    let members = {
        let reader: Box<dyn ReadSeek> = match &archive {
            Archive::File(p) => Box::new(io::BufReader::new(
                File::open(p).map_err(|e| fail(e.to_string()))?,
            )),
            Archive::Memory(b) => Box::new(Cursor::new(Shared(b.clone()))),
        };
        let mut zip = ::zip::ZipArchive::new(reader).map_err(|e| fail(e.to_string()))?;
        let mut members = Vec::with_capacity(zip.len());
        for i in 0..zip.len() {
            let m = zip
                .by_index_raw(i)
                .map_err(|e| fail(format!("member {i}: {e}")))?;
            let name = m
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| format!("member {i}"));
            if m.is_dir() {
                continue;
            }
            let deflated = match m.compression() {
                ::zip::CompressionMethod::Stored => false,
                ::zip::CompressionMethod::Deflated => true,
                other => {
                    return Err(fail(format!(
                        "{name}: compressed with {other}, not deflate"
                    )))
                }
            };
            if m.encrypted() {
                return Err(fail(format!("{name}: encrypted")));
            }
            members.push(Member {
                start: m
                    .data_start()
                    .ok_or_else(|| fail(format!("{name}: no data")))?,
                compressed: m.compressed_size(),
                size: m.size(),
                crc: m.crc32(),
                deflated,
                name,
            });
        }
        members
    };
    if members.is_empty() {
        return Err(fail("it holds no member".into()));
    }
    let mut next = 0;
    let mut skip = skip;
    while next < members.len() && skip > members[next].size {
        skip -= members[next].size;
        next += 1;
    }
    let mut stream = Members {
        archive,
        members,
        next,
        current: None,
    };
    let dropped = io::copy(&mut (&mut stream).take(skip), &mut io::sink())
        .map_err(|e| TraceError::at_offset(path, 0, format!("cannot read: {e}")))?;
    if dropped < skip {
        return Err(TraceError::at_offset(
            path,
            0,
            "the archive is shorter than when it was first read (was it changed?)",
        ));
    }
    Ok(Box::new(stream))
}

trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// The members' decompressed bytes one after another.
struct Members {
    archive: Archive,
    members: Vec<Member>,
    next: usize,
    current: Option<Checked>,
}

/// One member's bytes, checked against its size and CRC-32 at its end.
struct Checked {
    inner: Box<dyn Read + Send>,
    name: String,
    crc: crc32fast::Hasher,
    read: u64,
    size: u64,
    expected: u32,
}

impl Read for Members {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.current.is_none() {
                let Some(m) = self.members.get(self.next) else {
                    return Ok(0);
                };
                self.next += 1;
                let raw = self.archive.open_at(m.start)?.take(m.compressed);
                let inner: Box<dyn Read + Send> = if m.deflated {
                    Box::new(DeflateDecoder::new(raw))
                } else {
                    Box::new(raw)
                };
                self.current = Some(Checked {
                    inner,
                    name: m.name.clone(),
                    crc: crc32fast::Hasher::new(),
                    read: 0,
                    size: m.size,
                    expected: m.crc,
                });
            }
            let c = self.current.as_mut().expect("opened above");
            let n = c
                .inner
                .read(buf)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", c.name)))?;
            if n > 0 {
                c.crc.update(&buf[..n]);
                c.read += n as u64;
                return Ok(n);
            }
            let crc = std::mem::take(&mut c.crc).finalize();
            if c.read != c.size || crc != c.expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: {} bytes with CRC-32 {crc:08x}, the archive says {} with {:08x} (a damaged archive)",
                        c.name, c.read, c.size, c.expected
                    ),
                ));
            }
            self.current = None;
        }
    }
}
