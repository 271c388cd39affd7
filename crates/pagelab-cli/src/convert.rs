//! `pagelab trace convert`: read any supported format, write pagelab's native format
//! (or lackey text, an address list, raw u64 addresses).

use crate::output;
use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use pagelab_core::trace::native::{NativeWriter, WriterOptions};
use pagelab_core::trace::{self, addrs, lackey, rawu64, Metadata, TraceFormat};
use pagelab_core::Batch;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The trace to read.
    input: PathBuf,
    /// The file to write ("-" for standard output).
    output: PathBuf,
    /// Input format; detected when omitted.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pagelab_core::trace::NAMES.iter().copied()))]
    from: Option<String>,
    /// Output format (native, lackey, addrs, u64); from the output's extension, else native.
    #[arg(long)]
    to: Option<String>,
    /// What was traced, recorded in the native header.
    #[arg(long)]
    workload: Option<String>,
    /// References per chunk of the native format (at least 1).
    #[arg(long, default_value_t = WriterOptions::default().chunk_refs, value_parser = clap::value_parser!(u32).range(1..))]
    chunk_refs: u32,
    /// Read a native trace that was cut short (an interrupted recording) up to its last
    /// complete chunk, with a warning, instead of failing.
    #[arg(long)]
    salvage: bool,
    /// zstd level of the native format (-7 fastest .. 19 smallest).
    #[arg(long, default_value_t = WriterOptions::default().level, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-7..=19))]
    level: i32,
    /// Huffman-code zstd's literals (mostly address deltas): files ~17 % smaller,
    /// reading them slower (by default they are stored as they are).
    #[arg(long)]
    compress_literals: bool,
    #[arg(long, short)]
    quiet: bool,
}

fn output_format(args: &ConvertArgs) -> Result<TraceFormat> {
    match &args.to {
        Some(name) => TraceFormat::parse(name).map_err(anyhow::Error::msg),
        None => Ok(TraceFormat::from_extension(&args.output).unwrap_or(TraceFormat::Native)),
    }
}

/// A text or binary sink for the formats that are one reference per record.
fn write_plain<W: Write>(
    reader: &mut dyn trace::TraceReader,
    out: W,
    name: &Path,
    write: fn(&mut BufWriter<W>, &pagelab_core::MemRef) -> std::io::Result<()>,
    progress: &mut Progress,
) -> Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, out);
    let mut batch = Batch::default();
    while reader.next_batch(&mut batch)? {
        for r in &batch.refs {
            write(&mut w, r).with_context(|| format!("{}: cannot write", name.display()))?;
        }
        progress.tick(batch.refs.len() as u64, reader.position());
    }
    w.flush()
        .with_context(|| format!("{}: cannot write", name.display()))?;
    Ok(())
}

pub fn run(args: &ConvertArgs) -> Result<()> {
    let from = args
        .from
        .as_deref()
        .map(TraceFormat::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let to = output_format(args)?;
    if to == TraceFormat::Champsim {
        bail!("writing ChampSim traces is not supported (it would drop sizes and events); write native instead");
    }
    if to == TraceFormat::Pgrec {
        bail!("pgrec is what the recorder writes, not an output format; write native instead");
    }
    output::check(&args.output, "the output", &[&args.input])?;
    if output::is_stdout(&args.output) {
        return convert(args, from, to, std::io::stdout().lock()).map(|_| ());
    }
    // Written beside the output and renamed at the end: an interrupted or failed
    // conversion leaves no half-written file under the output's name.
    let mut pending = output::Pending::create(&args.output)?;
    let elapsed = convert(args, from, to, pending.file())?;
    pending.commit()?;
    if !args.quiet {
        let bytes = std::fs::metadata(&args.output)
            .map(|m| m.len())
            .unwrap_or(0);
        eprintln!(
            "pagelab: wrote {} ({bytes} bytes, {} format) in {:.2} s",
            args.output.display(),
            to.name(),
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn convert<W: Write>(
    args: &ConvertArgs,
    from: Option<TraceFormat>,
    to: TraceFormat,
    out: W,
) -> Result<std::time::Duration> {
    let name = args.output.as_path();
    let mut reader = trace::open_salvaging(&args.input, from, args.salvage)?;
    let mut progress = Progress::new("converting", args.quiet);
    match to {
        TraceFormat::Native => {
            let source = reader.metadata();
            let metadata = Metadata {
                source_format: if source.source_format.is_empty() {
                    from.map(|f| f.name().to_string()).unwrap_or_default()
                } else {
                    source.source_format.clone()
                },
                workload: args
                    .workload
                    .clone()
                    .unwrap_or_else(|| source.workload.clone()),
                created_by: format!("pagelab {}", env!("CARGO_PKG_VERSION")),
                extra: source.extra.clone(),
            };
            let options = WriterOptions {
                chunk_refs: args.chunk_refs,
                level: args.level,
                compress_literals: args.compress_literals,
            };
            let out = BufWriter::with_capacity(1 << 20, out);
            let mut writer = NativeWriter::new(out, name, &metadata, options)?;
            let mut batch = Batch::default();
            while reader.next_batch(&mut batch)? {
                writer.write_batch(&batch)?;
                progress.tick(batch.refs.len() as u64, reader.position());
            }
            writer.finish()?;
        }
        TraceFormat::Lackey => write_plain(
            reader.as_mut(),
            out,
            name,
            |w, r| lackey::write_ref(w, r),
            &mut progress,
        )?,
        TraceFormat::Addrs => write_plain(
            reader.as_mut(),
            out,
            name,
            |w, r| addrs::write_ref(w, r),
            &mut progress,
        )?,
        TraceFormat::U64 => write_plain(
            reader.as_mut(),
            out,
            name,
            |w, r| rawu64::write_ref(w, r),
            &mut progress,
        )?,
        // ChampSim and pgrec are refused above with their reasons; a format added to
        // the list is read everywhere and written only once an arm here writes it.
        other => bail!(
            "pagelab cannot write {} traces; write native, lackey, addrs or u64",
            other.name()
        ),
    }
    let elapsed = progress.finish();
    if let Some(w) = reader.warning() {
        eprintln!("pagelab: warning: {w}");
    }
    Ok(elapsed)
}
