//! Plain text address lists: one reference per line, `[KIND] ADDRESS [SIZE]`.
//! KIND is `R`/`L` (load, the default), `W`/`S` (store), `I`/`F` (fetch) or `M` (modify);
//! ADDRESS is hexadecimal with a `0x` prefix or decimal; SIZE (bytes) defaults to 1.
//! Blank lines and lines starting with `#` are skipped.

use super::input::{parse_dec, parse_hex};
use super::line_reader::{LineFormat, LineReader};
use crate::event::{AccessKind, MemRef};
use std::io::Write;

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

/// Plain text address lists, one reference per line.
pub struct Addrs;

pub type AddrsReader = LineReader<Addrs>;

impl LineFormat for Addrs {
    const NAME: &'static str = "addrs";
    fn parse(line: &[u8]) -> Result<Option<(AccessKind, u64, u32)>, String> {
        match std::str::from_utf8(line).map(str::trim) {
            Ok(t) if t.is_empty() || t.starts_with('#') => Ok(None),
            Ok(t) => parse_line(t).map(Some),
            Err(_) => Err("not UTF-8 text".to_string()),
        }
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
