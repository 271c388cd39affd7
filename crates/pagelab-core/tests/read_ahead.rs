//! A trace read ahead on a thread of its own (`trace::ahead`) runs as a trace read in
//! turn: the parts arrive as the reader gives them, what the simulation asks for
//! switching midway; a run gives the same report, a warm-up's switch from whole
//! batches to plain parts included; a damaged chunk gives the same error; and a
//! simulation that stops early returns its error (the reading thread stops).

use pagelab_core::event::{AccessKind, Batch, MemRef, PlainBatch};
use pagelab_core::trace::ahead::{read_ahead, Parts, Want};
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{Metadata, Part, TraceReader};
use pagelab_core::{Machine, MachineConfig};
use std::path::Path;

/// A native trace of `chunks` chunks of 1,000 references over 4,096 pages; every
/// seventh chunk has an instruction fetch, so that it is not plain when fetches are
/// kept out.
fn trace(chunks: u64) -> Vec<u8> {
    let options = WriterOptions {
        chunk_refs: 1000,
        ..WriterOptions::default()
    };
    let mut w =
        NativeWriter::new(Vec::new(), Path::new("mem"), &Metadata::default(), options).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for c in 0..chunks {
        let refs = (0..1000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let kind = if c % 7 == 3 && i == 500 {
                    AccessKind::Fetch
                } else {
                    AccessKind::Load
                };
                MemRef::new(0x4000_0000 + (x % 4096) * 4096 + (x >> 52) * 8, 8, kind)
            })
            .collect();
        w.write_batch(&Batch {
            refs,
            events: vec![],
        })
        .unwrap();
    }
    w.finish().unwrap()
}

fn reader(trace: &[u8]) -> NativeReader<&[u8]> {
    NativeReader::new(trace, Path::new("mem")).unwrap()
}

/// What `parts` gives, asked for whole batches until part `switch`, plain parts
/// without fetches after: each part's kind and references, and the position after it.
fn drain(parts: &mut dyn Parts, switch: usize) -> Result<Vec<(Part, Vec<u64>, u64)>, String> {
    let (mut plain, mut batch, mut out) = (PlainBatch::default(), Batch::default(), Vec::new());
    loop {
        let want = if out.len() < switch {
            Want::Batches
        } else {
            Want::Plain { fetches: false }
        };
        let part = parts
            .next(want, &mut plain, &mut batch)
            .map_err(|e| e.to_string())?;
        let addrs = match part {
            Part::Plain => plain.addrs.clone(),
            _ => batch.refs.iter().map(|r| r.addr.0).collect(),
        };
        out.push((part, addrs, parts.position()));
        if part == Part::End {
            return Ok(out);
        }
    }
}

#[test]
fn parts_read_ahead_arrive_as_the_reader_gives_them() {
    let t = trace(40);
    let mut r = reader(&t);
    let in_turn = drain(&mut (&mut r as &mut dyn TraceReader), 10).unwrap();
    let mut r = reader(&t);
    let ahead = read_ahead(&mut r, Want::Batches, |parts| {
        let got = drain(parts, 10);
        // After the end, the end again, as a reader read in turn gives it.
        let (mut plain, mut batch) = (PlainBatch::default(), Batch::default());
        let again = parts.next(Want::Batches, &mut plain, &mut batch).unwrap();
        assert_eq!((again, batch.refs.len()), (Part::End, 0));
        got
    })
    .unwrap();
    // Parts read ahead before the switch are whole batches: the same references.
    assert_eq!(in_turn.len(), ahead.len());
    for (i, (a, b)) in in_turn.iter().zip(&ahead).enumerate() {
        assert_eq!(a.1, b.1, "part {i}'s references");
        assert_eq!(a.2, b.2, "the position after part {i}");
    }
    let plain =
        |parts: &[(Part, Vec<u64>, u64)]| parts.iter().filter(|p| p.0 == Part::Plain).count();
    assert!(plain(&ahead) > 0 && plain(&in_turn) >= plain(&ahead));
    assert!(ahead[..10].iter().all(|p| p.0 == Part::Full));
}

fn config(text: &str) -> MachineConfig {
    toml::from_str(text).unwrap()
}

/// The report of `config` over `trace`, read ahead or in turn, with a warm-up of
/// `warmup` references.
fn run(config: &MachineConfig, trace: &[u8], warmup: u64, ahead: bool) -> Result<String, String> {
    let mut m = Machine::build(config).unwrap();
    m.set_cache_thread(ahead);
    m.set_warmup(warmup);
    let mut r = reader(trace);
    m.run_trace(&mut r, Path::new("mem"), |_, _| {})
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_string(&m.report()).unwrap())
}

#[test]
fn a_run_read_ahead_counts_as_one_read_in_turn() {
    let t = trace(60);
    let machines = [
        config(""),
        config("[tlb]\nkind = \"set-associative\"\nsets = 16\nways = 4\n"),
    ];
    for c in &machines {
        for warmup in [0, 12_345] {
            assert_eq!(
                run(c, &t, warmup, true),
                run(c, &t, warmup, false),
                "warm-up {warmup}"
            );
        }
    }
}

#[test]
fn a_damaged_chunk_stops_a_run_read_ahead_with_the_same_error() {
    let mut t = trace(30);
    let at = t.len() / 2;
    t[at] ^= 0x5a;
    let c = config("");
    let (a, b) = (run(&c, &t, 0, true), run(&c, &t, 0, false));
    assert!(a.is_err(), "{a:?}");
    assert_eq!(a, b);
}

#[test]
fn a_simulation_that_stops_early_returns_its_error() {
    // 64 frames for 4,096 pages: out of memory in the first chunks, with most of the
    // trace still to read.
    let c = config("[frames]\nkind = \"simple\"\nmemory = \"256K\"\n");
    let t = trace(200);
    let (a, b) = (run(&c, &t, 0, true), run(&c, &t, 0, false));
    assert!(
        a.as_ref()
            .is_err_and(|e| e.contains("out of physical memory")),
        "{a:?}"
    );
    assert_eq!(a, b);
}
