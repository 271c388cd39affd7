//! Helpers shared by the integration tests: configuration pieces built in one line,
//! and what the page-table differential tests share (a raw random operation, decoded
//! by each test against its reference, and the comparison of two lookups). What one
//! group of tests shares is in a submodule: `pagetables` and `pagetable_reference`
//! (the page-table structures against a HashMap), `roundtrip` (the readers and the
//! native format), `superpages` (superpage promotion's machines), `golden` (counts
//! against a file of `tests/golden/`). [`Batches`] reads batches kept in memory.
#![allow(dead_code)]

pub mod golden;
pub mod pagetable_reference;
pub mod pagetables;
pub mod roundtrip;
pub mod superpages;

use pagelab_core::addr::VirtAddr;
use pagelab_core::config::{LevelConfig, Serves, SetAssocConfig};
use pagelab_core::pagetable::Translation;
use pagelab_core::PageSize;
use proptest::prelude::*;

/// A `sets × ways` LRU array holding `sizes`.
pub fn array(sets: usize, ways: usize, sizes: &[PageSize]) -> SetAssocConfig {
    SetAssocConfig {
        sets,
        ways,
        page_sizes: sizes.to_vec(),
        ..SetAssocConfig::default()
    }
}

/// A level of a hierarchy (hit_cycles 1).
pub fn level(
    name: &str,
    serves: Serves,
    parent: Option<&str>,
    arrays: Vec<SetAssocConfig>,
) -> LevelConfig {
    LevelConfig {
        name: name.into(),
        serves,
        parent: parent.map(Into::into),
        hit_cycles: 1.0,
        arrays,
        range: None,
    }
}

/// One raw operation; each test gives it meaning against its reference's state (so
/// that unmaps can aim at pages that are actually mapped).
#[derive(Clone, Debug)]
pub struct RawOp {
    pub what: u8,
    pub asid: u8,
    pub size: u8,
    pub region: u8,
    pub g: u8,
    pub m: u8,
    pub k: u8,
    pub pfn: u64,
    pub perms: u8,
    pub byte: u16,
    pub pick: u16,
}

/// Raw operations in 4 address spaces, with frames below `max_pfn`.
pub fn raw_op(max_pfn: u64) -> impl Strategy<Value = RawOp> {
    (
        (any::<u8>(), 0u8..4, any::<u8>(), any::<u8>()),
        (any::<u8>(), any::<u8>(), any::<u8>()),
        0u64..max_pfn,
        (any::<u8>(), any::<u16>(), any::<u16>()),
    )
        .prop_map(
            |((what, asid, size, region), (g, m, k), pfn, (perms, byte, pick))| RawOp {
                what,
                asid,
                size,
                region,
                g,
                m,
                k,
                pfn,
                perms,
                byte,
                pick,
            },
        )
}

/// Whether a table's lookup of `va` and the reference's agree on the physical
/// address, the page size and the rights.
pub fn same(
    table: Option<Translation>,
    reference: Option<Translation>,
    va: u64,
) -> Result<(), String> {
    let key = |t: Option<Translation>| t.map(|t| (t.phys(VirtAddr(va)), t.size, t.perms));
    if key(table) == key(reference) {
        Ok(())
    } else {
        Err(format!(
            "lookup of {va:#x}: table gives {:?}, reference {:?}",
            key(table),
            key(reference)
        ))
    }
}

/// An empty temporary file whose name ends in `suffix` (formats are told by their
/// extension), removed when dropped.
pub fn temp_file(suffix: &str) -> tempfile::NamedTempFile {
    tempfile::Builder::new()
        .prefix("pagelab-test-")
        .suffix(suffix)
        .tempfile()
        .expect("create a temporary file")
}

/// A temporary file holding `bytes`.
pub fn temp_with(suffix: &str, bytes: &[u8]) -> tempfile::NamedTempFile {
    let f = temp_file(suffix);
    std::fs::write(f.path(), bytes).expect("write a temporary file");
    f
}

/// Batches kept in memory, as a trace reader (its position: the batches read).
pub struct Batches {
    batches: Vec<pagelab_core::Batch>,
    next: usize,
    metadata: pagelab_core::trace::Metadata,
}

impl Batches {
    pub fn new(batches: Vec<pagelab_core::Batch>) -> Batches {
        Batches {
            batches,
            next: 0,
            metadata: Default::default(),
        }
    }
}

impl pagelab_core::trace::TraceReader for Batches {
    fn next_batch(
        &mut self,
        batch: &mut pagelab_core::Batch,
    ) -> Result<bool, pagelab_core::trace::TraceError> {
        batch.clear();
        let Some(b) = self.batches.get(self.next) else {
            return Ok(false);
        };
        batch.refs.extend_from_slice(&b.refs);
        batch.events.extend(b.events.iter().cloned());
        self.next += 1;
        Ok(true)
    }
    fn metadata(&self) -> &pagelab_core::trace::Metadata {
        &self.metadata
    }
    fn position(&self) -> u64 {
        self.next as u64
    }
}
