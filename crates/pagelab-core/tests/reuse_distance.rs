//! Exact reuse distances (`analysis::reuse`) against two other ways to the same
//! numbers: a brute-force LRU stack on random page streams (the whole histogram), and
//! pagelab's own simulation of a fully associative LRU TLB of every size from 1 to
//! 4096 entries on a real bundled trace (the misses, exactly).

use pagelab_core::analysis::reuse::{Histogram, ReusePass};
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::{Asid, Machine, MachineConfig, PageSize};
use proptest::prelude::*;
use std::path::Path;

/// The histogram of a brute-force LRU stack (most recent first) over `keys`.
fn brute_force(keys: &[(u16, u64)]) -> Histogram {
    let mut stack: Vec<(u16, u64)> = Vec::new();
    let mut h = Histogram::default();
    for &k in keys {
        let d = stack.iter().position(|&x| x == k);
        if let Some(d) = d {
            stack.remove(d);
        }
        stack.insert(0, k);
        h.record(d.map(|d| d as u64));
    }
    h
}

fn batch(keys: &[(u16, u64)]) -> Batch {
    Batch {
        refs: keys
            .iter()
            .map(|&(asid, page)| MemRef {
                asid: Asid(asid),
                ..MemRef::new(page * 4096 + 8, 4, AccessKind::Load)
            })
            .collect(),
        ..Batch::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Streams with a hot set, repeats and address spaces, cut into batches: the
    /// engine's histogram is the brute force's, count for count.
    #[test]
    fn the_histogram_is_the_brute_force_stacks(
        keys in prop::collection::vec(
            (prop_oneof![5 => Just(0u16), 1 => 1u16..3], prop_oneof![3 => 0u64..16, 1 => 0u64..3000]),
            1..3000,
        ),
        cut in 1usize..500,
    ) {
        let mut pass = ReusePass::new(&[PageSize::K4]);
        for part in keys.chunks(cut) {
            pass.add_batch(&batch(part)).unwrap();
        }
        prop_assert_eq!(&pass.histograms()[0], &brute_force(&keys));
    }
}

/// Pages of 2M: the same engine over coarser page numbers, against the brute force.
#[test]
fn larger_pages_group_their_base_pages() {
    let keys: Vec<(u16, u64)> = (0..5000u64).map(|i| (0, (i * 7919) % 2048)).collect();
    let mut pass = ReusePass::new(&[PageSize::K4, PageSize::M2]);
    pass.add_batch(&batch(&keys)).unwrap();
    let coarse: Vec<(u16, u64)> = keys.iter().map(|&(a, p)| (a, p / 512)).collect();
    assert_eq!(pass.histograms()[0], brute_force(&keys));
    assert_eq!(pass.histograms()[1], brute_force(&coarse));
}

/// The first `n` references of a bundled trace.
fn trace_head(name: &str, n: usize) -> Batch {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/traces")
        .join(name);
    let mut reader = pagelab_core::trace::open(&path, None).unwrap();
    let (mut all, mut b) = (Batch::default(), Batch::default());
    while all.refs.len() < n && reader.next_batch(&mut b).unwrap() {
        all.refs.extend(b.refs.iter().copied());
    }
    all.refs.truncate(n);
    all
}

/// Predicted misses (from one pass) equal the simulated misses of a fully associative
/// LRU TLB of every size from 1 to 4096 entries, on the start of a real recording
/// (instruction fetches, loads and stores, references across pages).
#[test]
fn predicted_misses_are_the_simulated_ones_at_every_size() {
    let refs = trace_head("sqlite-rec.plt", 60_000);
    let mut pass = ReusePass::new(&[PageSize::K4]);
    pass.add_batch(&refs).unwrap();
    let sizes: Vec<u64> = (1..=4096).collect();
    let predicted = pass.histograms()[0].misses(&sizes);
    for (&n, &want) in sizes.iter().zip(&predicted) {
        let doc = format!(
            "[tlb]\nkind = \"set-associative\"\nsets = 1\nways = {n}\nreplacement = \"lru\"\n"
        );
        let config = MachineConfig::from_toml(&doc, "fa").unwrap();
        let mut m = Machine::build(&config).unwrap();
        m.run_batch(&refs).unwrap();
        let r = m.report();
        assert_eq!(r.levels[0].misses, want, "{n} entries");
    }
    // The sizes cover the curve: from misses at most references to first ones only.
    assert!(predicted[0] > 10_000 && predicted[4095] == pass.histograms()[0].cold);
}

/// Sampling pages (SHARDS) estimates the curve: at rate 1 it is the exact pass; at
/// 0.25 on the GUPS recording (a quarter of a million pages, misses at every size up
/// to them) its miss ratios stay within 0.02 of the exact ones, and it says it is
/// approximate.
#[test]
fn sampled_pages_estimate_the_curve() {
    use pagelab_core::analysis::reuse::ReusePass;
    let refs = trace_head("gups-rec.plt", 1_000_000);
    let (mut exact, mut all, mut quarter) = (
        ReusePass::new(&[PageSize::K4]),
        ReusePass::sampled(&[PageSize::K4], 1.0).unwrap(),
        ReusePass::sampled(&[PageSize::K4], 0.25).unwrap(),
    );
    for p in [&mut exact, &mut all, &mut quarter] {
        p.add_batch(&refs).unwrap();
    }
    let (e, a, q) = (exact.finish(), all.finish(), quarter.finish());
    assert_eq!(e, a);
    assert!(e.exact && !q.exact);
    let (e, q) = (&e.page_sizes[0], &q.page_sizes[0]);
    assert_eq!(
        q.translations, e.translations,
        "every translation is counted"
    );
    let mut compared = 0;
    for ((n, _, exact), (m, _, estimate)) in e.curve.iter().zip(&q.curve) {
        if n == m && *n >= 64 {
            assert!(
                (exact - estimate).abs() < 0.02,
                "{n} entries: {exact} against {estimate}"
            );
            compared += 1;
        }
    }
    // Sizes from 64 to past 100,000 entries, where the curve falls.
    assert!(compared >= 12, "{compared} sizes compared");
    assert!(e
        .curve
        .iter()
        .any(|c| c.0 >= 65536 && c.2 < 0.9 * e.curve[0].2));
    assert!(ReusePass::sampled(&[PageSize::K4], 0.0).is_err());
    assert!(ReusePass::sampled(&[PageSize::K4], 1.5).is_err());
    assert!(ReusePass::sampled(&[PageSize::K4], 1e-300).is_err());
}
