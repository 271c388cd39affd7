//! Built-in synthetic workloads, read like traces: `pagelab simulate --synthetic SPEC`.
//!
//! `column-walk` is the microbenchmark of Fang et al., "Online Superpage Promotion
//! Revisited" (SIGMETRICS 2000), §4.1, which touches 4096 base pages over and over:
//!
//! ```c
//! char A[4096][4096];
//! for (j = 0; j < test_iterations; j++)
//!   for (i = 0; i < 4096; i++)
//!     sum += A[i][j];
//! ```
//!
//! Each iteration reads one byte of every row; a row is one 4 KiB page, so without
//! superpages every reference misses any TLB of fewer than 4096 entries. The array
//! starts at `base` (default 0x40000000, aligned to 1 GiB so that every superpage
//! candidate up to that size is whole); `sum` is taken to live in a register.
//!
//! A spec is the name and comma-separated `key=value` options:
//! `column-walk:iterations=64,rows=4096,row_bytes=4096,base=0x40000000`.

use super::{Metadata, TraceError, TraceReader, BATCH_REFS};
use crate::event::{AccessKind, Batch, MemRef};

/// The §4.1 microbenchmark as a reference stream.
pub struct ColumnWalk {
    rows: u64,
    row_bytes: u64,
    iterations: u64,
    base: u64,
    /// The next reference's row and column.
    i: u64,
    j: u64,
    metadata: Metadata,
}

impl ColumnWalk {
    pub fn new(rows: u64, row_bytes: u64, iterations: u64, base: u64) -> ColumnWalk {
        ColumnWalk {
            rows,
            row_bytes,
            iterations,
            base,
            i: 0,
            j: 0,
            metadata: Metadata {
                source_format: "synthetic".into(),
                workload: format!(
                    "column-walk:iterations={iterations},rows={rows},row_bytes={row_bytes},base={base:#x}"
                ),
                created_by: format!("pagelab {}", env!("CARGO_PKG_VERSION")),
                extra: Default::default(),
            },
        }
    }

    /// References in the whole stream.
    pub fn len(&self) -> u64 {
        self.rows * self.iterations
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl TraceReader for ColumnWalk {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        batch.clear();
        while batch.refs.len() < BATCH_REFS && self.j < self.iterations {
            let addr = self.base + self.i * self.row_bytes + self.j % self.row_bytes;
            batch.refs.push(MemRef::new(addr, 1, AccessKind::Load));
            self.i += 1;
            if self.i == self.rows {
                self.i = 0;
                self.j += 1;
            }
        }
        Ok(!batch.refs.is_empty())
    }
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.j * self.rows + self.i
    }
}

/// The names `--synthetic` knows.
pub const NAMES: &[&str] = &["column-walk"];

/// A synthetic workload from its spec, or an error naming what is wrong.
pub fn parse(spec: &str) -> Result<Box<dyn TraceReader + Send>, String> {
    let (name, options) = spec.split_once(':').unwrap_or((spec, ""));
    if name != "column-walk" {
        return Err(format!(
            "unknown synthetic workload {name:?} (known: {})",
            NAMES.join(", ")
        ));
    }
    let (mut rows, mut row_bytes, mut iterations, mut base) = (4096u64, 4096u64, 1u64, 1u64 << 30);
    for option in options.split(',').filter(|o| !o.is_empty()) {
        let (key, value) = option
            .split_once('=')
            .ok_or_else(|| format!("{name}: option {option:?} is not key=value"))?;
        let v =
            parse_u64(value).ok_or_else(|| format!("{name}: {key}={value:?} is not a number"))?;
        match key {
            "rows" => rows = v,
            "row_bytes" => row_bytes = v,
            "iterations" => iterations = v,
            "base" => base = v,
            _ => {
                return Err(format!(
                    "{name}: unknown option {key:?} (known: iterations, rows, row_bytes, base)"
                ))
            }
        }
    }
    if rows == 0 || row_bytes == 0 {
        return Err(format!("{name}: rows and row_bytes must be at least 1"));
    }
    rows.checked_mul(row_bytes)
        .and_then(|b| b.checked_add(base))
        .ok_or_else(|| format!("{name}: the array runs past the end of the address space"))?;
    Ok(Box::new(ColumnWalk::new(rows, row_bytes, iterations, base)))
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_columns_row_by_row() {
        let mut r = parse("column-walk:rows=3,row_bytes=4096,iterations=2,base=0x1000").unwrap();
        let all = super::super::read_all(r.as_mut()).unwrap();
        let addrs: Vec<u64> = all.refs.iter().map(|m| m.addr.0).collect();
        assert_eq!(addrs, [0x1000, 0x2000, 0x3000, 0x1001, 0x2001, 0x3001]);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, want) in [
            ("row-walk", "unknown synthetic workload"),
            ("column-walk:iterations", "not key=value"),
            ("column-walk:iterations=x", "not a number"),
            ("column-walk:depth=3", "unknown option \"depth\""),
            ("column-walk:rows=0", "at least 1"),
            ("column-walk:base=0xffffffffffffff00", "past the end"),
        ] {
            let e = parse(spec).err().unwrap();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }
}
