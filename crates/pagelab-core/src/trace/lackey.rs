//! Valgrind lackey traces (`valgrind --tool=lackey --trace-mem=yes`): one line per
//! reference, `I  ADDR,SIZE` for an instruction fetch and ` L`, ` S`, ` M` for a data
//! load, store and modify, addresses in hex and sizes in decimal. Valgrind's own
//! `==PID==` / `--PID--` lines are skipped.

use super::input::{parse_dec, parse_hex, Lines};
use super::{Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::event::{AccessKind, Batch, MemRef};
use std::io::Write;
use std::path::Path;

/// Parse one reference line into (kind, address, size).
pub fn parse_line(line: &[u8]) -> Result<(AccessKind, u64, u32), &'static str> {
    let (kind, rest) = match line {
        [b'I', b' ', b' ', rest @ ..] => (AccessKind::Fetch, rest),
        [b' ', b'L', b' ', rest @ ..] => (AccessKind::Load, rest),
        [b' ', b'S', b' ', rest @ ..] => (AccessKind::Store, rest),
        [b' ', b'M', b' ', rest @ ..] => (AccessKind::Modify, rest),
        _ => return Err("not a lackey line (expected 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE')"),
    };
    let comma = rest
        .iter()
        .position(|&c| c == b',')
        .ok_or("missing ',SIZE' after the address")?;
    let addr = parse_hex(&rest[..comma]).ok_or("the address is not hexadecimal")?;
    let size = parse_dec(&rest[comma + 1..])
        .and_then(|s| u32::try_from(s).ok())
        .ok_or("the size is not a decimal number")?;
    Ok((kind, addr, size))
}

pub struct LackeyReader {
    lines: Lines,
    metadata: Metadata,
}

impl LackeyReader {
    pub fn open(path: &Path) -> Result<LackeyReader, TraceError> {
        Ok(LackeyReader::from_lines(Lines::open(path)?))
    }

    /// Read from an open input (already decompressed); `path` names it in errors.
    pub fn from_reader(input: Box<dyn std::io::BufRead + Send>, path: &Path) -> LackeyReader {
        LackeyReader::from_lines(Lines::new(input, path))
    }

    fn from_lines(lines: Lines) -> LackeyReader {
        LackeyReader {
            lines,
            metadata: Metadata {
                source_format: "lackey".into(),
                ..Metadata::default()
            },
        }
    }
}

impl TraceReader for LackeyReader {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        while batch.refs.len() < BATCH_REFS {
            let Some(line) = self.lines.next_line()? else {
                break;
            };
            if line.is_empty() || line.starts_with(b"==") || line.starts_with(b"--") {
                continue;
            }
            match parse_line(line) {
                Ok((kind, addr, size)) => batch.refs.push(MemRef::new(addr, size, kind)),
                Err(msg) => {
                    let shown = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
                    return Err(self.lines.error(format!("{msg}: {shown:?}")));
                }
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

/// Write one reference as lackey would print it.
pub fn write_ref(out: &mut impl Write, r: &MemRef) -> std::io::Result<()> {
    let tag = match r.kind {
        AccessKind::Fetch => "I ",
        AccessKind::Load => " L",
        AccessKind::Store => " S",
        AccessKind::Modify => " M",
    };
    writeln!(out, "{tag} {:08x},{}", r.addr.0, r.size)
}

impl crate::trace::Format for LackeyReader {
    fn open(
        path: &Path,
        _salvage: bool,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(LackeyReader::open(path)?))
    }
    fn from_bytes(
        bytes: Vec<u8>,
        path: &Path,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(LackeyReader::from_reader(
            Box::new(std::io::Cursor::new(bytes)),
            path,
        )))
    }
    fn text_line(line: &str) -> bool {
        parse_line(line.as_bytes()).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        assert_eq!(
            parse_line(b"I  04016e0,3"),
            Ok((AccessKind::Fetch, 0x4016e0, 3))
        );
        assert_eq!(
            parse_line(b" L 1ffefffd18,8"),
            Ok((AccessKind::Load, 0x1ffefffd18, 8))
        );
        assert_eq!(
            parse_line(b" S 0404c88,4"),
            Ok((AccessKind::Store, 0x404c88, 4))
        );
        assert_eq!(
            parse_line(b" M 0404c88,16"),
            Ok((AccessKind::Modify, 0x404c88, 16))
        );
    }

    #[test]
    fn rejects_malformed_lines() {
        assert!(parse_line(b" L 1ffefffd18").is_err());
        assert!(parse_line(b" L zz,8").is_err());
        assert!(parse_line(b" X 10,8").is_err());
        assert!(parse_line(b" L 10,-8").is_err());
        assert!(parse_line(b" L 11111111111111111,8").is_err());
    }

    #[test]
    fn writes_what_it_reads() {
        let r = MemRef::new(0x4016e0, 3, AccessKind::Fetch);
        let mut out = Vec::new();
        write_ref(&mut out, &r).unwrap();
        assert_eq!(out, b"I  004016e0,3\n");
        assert_eq!(
            parse_line(&out[..out.len() - 1]),
            Ok((AccessKind::Fetch, 0x4016e0, 3))
        );
    }
}
