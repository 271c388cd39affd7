//! Valgrind lackey traces (`valgrind --tool=lackey --trace-mem=yes`): one line per
//! reference, `I  ADDR,SIZE` for an instruction fetch and ` L`, ` S`, ` M` for a data
//! load, store and modify, addresses in hex and sizes in decimal. Valgrind's own
//! `==PID==` / `--PID--` lines are skipped.

use super::input::{parse_dec, parse_hex};
use super::line_reader::{LineFormat, LineReader};
use crate::event::{AccessKind, MemRef};
use std::io::Write;

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

/// Valgrind lackey text, one reference per line.
pub struct Lackey;

pub type LackeyReader = LineReader<Lackey>;

impl LineFormat for Lackey {
    const NAME: &'static str = "lackey";
    fn parse(line: &[u8]) -> Result<Option<(AccessKind, u64, u32)>, String> {
        if line.is_empty() || line.starts_with(b"==") || line.starts_with(b"--") {
            return Ok(None);
        }
        parse_line(line).map(Some).map_err(|msg| {
            let shown = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
            format!("{msg}: {shown:?}")
        })
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
