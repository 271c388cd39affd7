//! `pagelab trace info`: what a trace holds (references by kind, events, footprint
//! per page size, data categories and the call sites with the most bytes), as a table
//! or JSON.

use crate::{human_bytes, progress};
use anyhow::Result;
use pagelab_core::event::PlainBatch;
use pagelab_core::trace::ahead::{self, Parts, Want};
use pagelab_core::trace::{self, info::InfoBuilder, Part, TraceError, TraceFormat};
use pagelab_core::Batch;
use std::io::Write;
use std::path::Path;

pub fn run(
    file: &Path,
    format: Option<TraceFormat>,
    json: bool,
    salvage: bool,
    categories: Option<&Path>,
    quiet: bool,
) -> Result<()> {
    let rules = match categories {
        Some(p) => pagelab_core::categories::load_rules(p).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    let mut reader = trace::open_salvaging(file, format, salvage)?;
    let mut builder = InfoBuilder::new().with_categories(rules);
    let mut progress = progress::Progress::new("reading", quiet).of_files([file]);
    // With a core to spare, the trace is decoded on it while this one counts.
    let mut count = |parts: &mut dyn Parts| -> Result<(), TraceError> {
        let (mut plain, mut batch) = (PlainBatch::default(), Batch::default());
        while parts.next(Want::Batches, &mut plain, &mut batch)? != Part::End {
            builder.add(&batch);
            progress.tick(batch.refs.len() as u64, parts.position());
        }
        Ok(())
    };
    if ahead::spare_core() && !reader.live() {
        ahead::read_ahead(reader.as_mut(), Want::Batches, count)?;
    } else {
        count(&mut reader.as_mut())?;
    }
    let elapsed = progress.finish();
    if let Some(w) = reader.warning() {
        eprintln!("pagelab: warning: {w}");
    }
    let info = builder.finish();
    let metadata = reader.metadata().clone();
    let mut out = std::io::stdout().lock();
    if json {
        // A salvaged trace is marked in every output: `salvaged` holds what was lost.
        let value = serde_json::json!({
            "file": file,
            "metadata": metadata,
            "info": info,
            "salvaged": reader.warning(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    let row = |out: &mut dyn Write, k: &str, v: String| writeln!(out, "  {k:<28} {v:>16}");
    writeln!(out, "trace {}", file.display())?;
    if !metadata.source_format.is_empty() {
        row(&mut out, "captured as", metadata.source_format.clone())?;
    }
    if !metadata.workload.is_empty() {
        row(&mut out, "workload", metadata.workload.clone())?;
    }
    if reader.warning().is_some() {
        row(&mut out, "salvaged (cut short)", "yes".into())?;
    }
    row(&mut out, "references", info.references.to_string())?;
    for (kind, n) in &info.by_kind {
        row(&mut out, &format!("  {kind}"), n.to_string())?;
    }
    row(
        &mut out,
        "duration (instructions)",
        info.instructions.to_string(),
    )?;
    row(
        &mut out,
        "page-crossing references",
        info.page_crossing.to_string(),
    )?;
    for size in trace::info::FOOTPRINT_SIZES {
        let key = size.to_string();
        let pages = info.footprint_pages[&key];
        row(
            &mut out,
            &format!("footprint, {key} pages"),
            format!("{pages} ({})", human_bytes(pages * size.bytes())),
        )?;
    }
    if let (Some(lo), Some(hi)) = (info.min_address, info.max_address) {
        row(&mut out, "addresses", format!("{lo:#x}..{hi:#x}"))?;
    }
    row(
        &mut out,
        "address spaces",
        format!("{:?}", info.address_spaces),
    )?;
    for (kind, n) in &info.events {
        row(&mut out, &format!("events: {kind}"), n.to_string())?;
    }
    for (category, refs, pages) in &info.categories.categories {
        row(
            &mut out,
            &format!("category {category}"),
            format!("{refs} refs, {pages} pages ({})", human_bytes(pages << 12)),
        )?;
    }
    if let Some(note) = &info.categories.note {
        row(&mut out, "categories", note.clone())?;
    }
    for c in &info.categories.callsites {
        row(
            &mut out,
            &format!("call site {}", c.callsite),
            format!(
                "{} blocks, {} ({})",
                c.blocks,
                human_bytes(c.bytes),
                c.category
            ),
        )?;
        if !c.name.is_empty() {
            writeln!(out, "    at {}", c.name)?;
        }
    }
    row(
        &mut out,
        "read in",
        format!("{:.2} s", elapsed.as_secs_f64()),
    )?;
    Ok(())
}
