//! Writes the native-format seed files of the `native` target, `fuzz/seeds/native/*.plt`,
//! with the `NativeWriter` of the current library. Run it again whenever the native
//! format changes: `cd fuzz && cargo run --release --example native_seeds`.

use pagelab_core::addr::Asid;
use pagelab_core::event::{AccessKind, Alloc, AllocOp, Batch, Event, MemRef, Segment, SegmentKind};
use pagelab_core::trace::native::{NativeReader, NativeWriter, WriterOptions};
use pagelab_core::trace::{read_all, Metadata, TraceReader};
use std::path::Path;

fn write(batch: &Batch, metadata: &Metadata, chunk_refs: u32) -> Vec<u8> {
    let options = WriterOptions {
        chunk_refs,
        level: 1,
        ..WriterOptions::default()
    };
    let mut w = NativeWriter::new(Vec::new(), Path::new("seed"), metadata, options).unwrap();
    w.write_batch(batch).unwrap();
    w.finish().unwrap()
}

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/native");
    std::fs::create_dir_all(&out).unwrap();

    // Minimal: three plain references, default metadata, one chunk.
    let mut b = Batch::default();
    b.refs.push(MemRef::new(0x4016e0, 3, AccessKind::Fetch));
    b.refs.push(MemRef::new(0x1ffefffd18, 8, AccessKind::Load));
    b.refs.push(MemRef::new(0x404c88, 4, AccessKind::Store));
    std::fs::write(out.join("small.plt"), write(&b, &Metadata::default(), 1024)).unwrap();

    // Every feature: metadata, instruction pointers, large (escaped) sizes, every event
    // type, an address-space switch, several chunks of 4 references.
    let metadata = Metadata {
        source_format: "lackey".into(),
        workload: "seed".into(),
        created_by: "pagelab-fuzz seeds".into(),
        extra: [("k".to_string(), "v".to_string())].into_iter().collect(),
    };
    let mut b = Batch::default();
    b.push_event(Event::Segment(Segment {
        start: 0x400000,
        end: 0x401000,
        perms: 5,
        kind: SegmentKind::Text,
        name: "/bin/x".into(),
    }));
    b.push_event(Event::Marker {
        id: 1,
        name: "roi".into(),
    });
    for i in 0..10u64 {
        let size = if i % 3 == 0 { 4096 } else { 8 };
        let mut r = MemRef::new(
            0x7000_0000 + i * 0x1010,
            size,
            AccessKind::from_code(i as u8),
        );
        r.ip = if i >= 2 { 0x401000 + i * 4 } else { 0 };
        r.asid = Asid(if i >= 6 { 7 } else { 0 });
        b.refs.push(r);
        if i == 4 {
            b.push_event(Event::Alloc(Alloc {
                op: AllocOp::Mmap,
                addr: 0x7f00_0000_0000,
                size: 1 << 20,
                old_addr: 0,
                flags: 3,
                callsite: 0xdead,
            }));
        }
    }
    b.push_event(Event::Marker {
        id: 2,
        name: "end".into(),
    });
    let full = write(&b, &metadata, 4);
    std::fs::write(out.join("events.plt"), &full).unwrap();

    // The same cut inside its second chunk: strict mode fails, salvage mode keeps chunk 1.
    std::fs::write(out.join("truncated.plt"), &full[..full.len() * 2 / 3]).unwrap();

    for name in ["small.plt", "events.plt"] {
        let mut r = NativeReader::open(&out.join(name)).unwrap();
        let all = read_all(&mut r).unwrap();
        println!(
            "{name}: {} references, {} events",
            all.refs.len(),
            all.events.len()
        );
    }
    let mut r = NativeReader::open(&out.join("truncated.plt"))
        .unwrap()
        .salvage(true);
    let all = read_all(&mut r).unwrap();
    println!(
        "truncated.plt: {} references salvaged ({})",
        all.refs.len(),
        r.warning().unwrap_or("no warning")
    );
}
