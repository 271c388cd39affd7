//! Plain text address lists: one reference per line, `[KIND] ADDRESS [SIZE]`.
//! KIND is `R`/`L` (load, the default), `W`/`S` (store), `I`/`F` (fetch) or `M` (modify);
//! ADDRESS is hexadecimal with a `0x` prefix or decimal; SIZE (bytes) defaults to 1.
//! Blank lines and lines starting with `#` are skipped.

use super::input::{parse_dec, parse_hex, Lines};
use super::{Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::event::{AccessKind, Batch, MemRef};
use std::io::Write;
use std::path::Path;

fn parse_number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => parse_hex(hex.as_bytes()),
        None => parse_dec(s.as_bytes()),
    }
}

/// Parse one line into (kind, address, size).
pub fn parse_line(line: &str) -> Result<(AccessKind, u64, u32), String> {
    let mut fields = line.split_ascii_whitespace();
    let first = fields.next().ok_or("empty line")?;
    let (kind, addr_text) = match first {
        "R" | "L" | "r" | "l" => (AccessKind::Load, fields.next()),
        "W" | "S" | "w" | "s" => (AccessKind::Store, fields.next()),
        "I" | "F" | "i" | "f" => (AccessKind::Fetch, fields.next()),
        "M" | "m" => (AccessKind::Modify, fields.next()),
        _ => (AccessKind::Load, Some(first)),
    };
    let addr_text = addr_text.ok_or("missing address after the kind")?;
    let addr = parse_number(addr_text)
        .ok_or_else(|| format!("{addr_text:?} is not an address (0x-prefixed hex or decimal)"))?;
    let size = match fields.next() {
        None => 1,
        Some(s) => parse_number(s)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("{s:?} is not a size in bytes"))?,
    };
    if let Some(extra) = fields.next() {
        return Err(format!(
            "unexpected field {extra:?} (expected [KIND] ADDRESS [SIZE])"
        ));
    }
    Ok((kind, addr, size))
}

pub struct AddrsReader {
    lines: Lines,
    metadata: Metadata,
}

impl AddrsReader {
    pub fn open(path: &Path) -> Result<AddrsReader, TraceError> {
        Ok(AddrsReader::from_lines(Lines::open(path)?))
    }

    /// Read from an open input (already decompressed); `path` names it in errors.
    pub fn from_reader(input: Box<dyn std::io::BufRead + Send>, path: &Path) -> AddrsReader {
        AddrsReader::from_lines(Lines::new(input, path))
    }

    fn from_lines(lines: Lines) -> AddrsReader {
        AddrsReader {
            lines,
            metadata: Metadata {
                source_format: "addrs".into(),
                ..Metadata::default()
            },
        }
    }
}

impl TraceReader for AddrsReader {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        while batch.refs.len() < BATCH_REFS {
            let Some(line) = self.lines.next_line()? else {
                break;
            };
            let parsed = match std::str::from_utf8(line).map(str::trim) {
                Ok(t) if t.is_empty() || t.starts_with('#') => continue,
                Ok(t) => parse_line(t),
                Err(_) => Err("not UTF-8 text".to_string()),
            };
            let (kind, addr, size) = parsed.map_err(|m| self.lines.error(m))?;
            batch.refs.push(MemRef::new(addr, size, kind));
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

/// Write one reference as an address-list line.
pub fn write_ref(out: &mut impl Write, r: &MemRef) -> std::io::Result<()> {
    let kind = match r.kind {
        AccessKind::Load => 'R',
        AccessKind::Store => 'W',
        AccessKind::Fetch => 'I',
        AccessKind::Modify => 'M',
    };
    writeln!(out, "{kind} {:#x} {}", r.addr.0, r.size)
}

impl crate::trace::Format for AddrsReader {
    fn open(
        path: &Path,
        _salvage: bool,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(AddrsReader::open(path)?))
    }
    fn from_bytes(
        bytes: Vec<u8>,
        path: &Path,
    ) -> Result<Box<dyn crate::trace::TraceReader + Send>, TraceError> {
        Ok(Box::new(AddrsReader::from_reader(
            Box::new(std::io::Cursor::new(bytes)),
            path,
        )))
    }
    fn text_line(line: &str) -> bool {
        parse_line(line).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!(parse_line("0x1000"), Ok((AccessKind::Load, 0x1000, 1)));
        assert_eq!(parse_line("4096"), Ok((AccessKind::Load, 4096, 1)));
        assert_eq!(parse_line("W 0x10 8"), Ok((AccessKind::Store, 0x10, 8)));
        assert_eq!(parse_line("I 0xffff 4"), Ok((AccessKind::Fetch, 0xffff, 4)));
        assert!(parse_line("W").is_err());
        assert!(parse_line("0xzz").is_err());
        assert!(parse_line("12ab").is_err());
        assert!(parse_line("R 1 2 3").is_err());
    }
}
