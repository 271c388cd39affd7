//! The standard benchmark trace (`bench/gen.rs`, the generator other tools are measured
//! on) on a slice of its first references: pagelab's TLBs must miss exactly as often as
//! a plain LRU written here, for the three arrays whose miss ratios on the whole trace
//! are the published reference results (fully associative LRU of 64 and 1536 entries,
//! 128 sets × 12 ways with set = vpn mod 128). The generator is sequential, so a trace of
//! N references is the first N of the 100-million one; `pagelab-bench --expect-standard`
//! checks the whole trace against the reference figures themselves.

use pagelab_core::config::{SetAssocConfig, TlbConfig};
use pagelab_core::trace::{self, TraceFormat};
use pagelab_core::{Machine, MachineConfig};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

const SLICE: u64 = 1_000_000;

/// Misses of an LRU cache of `sets` sets of `ways` entries over page numbers (set =
/// vpn mod sets): recency as a stamp per page, the oldest found in an ordered map.
fn reference_lru_misses(vpns: &[u64], sets: u64, ways: usize) -> u64 {
    let mut stamp_of: Vec<HashMap<u64, u64>> = vec![HashMap::new(); sets as usize];
    let mut by_stamp: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); sets as usize];
    let mut misses = 0;
    for (now, &vpn) in vpns.iter().enumerate() {
        let now = now as u64;
        let s = (vpn % sets) as usize;
        match stamp_of[s].insert(vpn, now) {
            Some(old) => {
                by_stamp[s].remove(&old);
            }
            None => {
                misses += 1;
                if stamp_of[s].len() > ways {
                    let (_, victim) = by_stamp[s].pop_first().expect("a full set");
                    stamp_of[s].remove(&victim);
                }
            }
        }
        by_stamp[s].insert(now, vpn);
    }
    misses
}

fn tlb(sets: usize, ways: usize) -> MachineConfig {
    MachineConfig {
        name: format!("{sets}x{ways}"),
        tlb: TlbConfig::SetAssociative(SetAssocConfig {
            sets,
            ways,
            ..SetAssocConfig::default()
        }),
        ..MachineConfig::default()
    }
}

#[test]
fn pagelab_misses_as_a_plain_lru_on_the_standard_trace() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let gen = dir.path().join("gen");
    let built = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["-C", "opt-level=3", "-o"])
        .arg(&gen)
        .arg(root.join("bench/gen.rs"))
        .status()
        .expect("run rustc");
    assert!(built.success(), "rustc bench/gen.rs failed");
    let out = dir.path().join("t");
    let ran = Command::new(&gen)
        .arg(SLICE.to_string())
        .arg(&out)
        .arg("42")
        .output()
        .expect("run the generator");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let va = dir.path().join("t.va.u64");

    let bytes = std::fs::read(&va).unwrap();
    let vpns: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()) >> 12)
        .collect();
    assert_eq!(vpns.len() as u64, SLICE);

    for (sets, ways) in [(1, 64), (1, 1536), (128, 12)] {
        let config = tlb(sets, ways);
        let mut machine = Machine::build(&config).unwrap();
        let mut reader = trace::open(&va, Some(TraceFormat::U64)).unwrap();
        machine.run_trace(reader.as_mut(), &va, |_, _| {}).unwrap();
        let report = machine.report();
        assert_eq!(report.counts.references, SLICE);
        let expected = reference_lru_misses(&vpns, sets as u64, ways);
        assert_eq!(
            report.levels[0].misses, expected,
            "{sets} x {ways} LRU on the first {SLICE} references of the standard trace"
        );
    }
}
