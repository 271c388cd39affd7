//! `pagelab trace convert`: read any supported format, write pagelab's native format
//! (or lackey text, an address list, raw u64 addresses): `pagelab_core::trace::convert`.

use crate::output;
use crate::progress::Progress;
use anyhow::Result;
use pagelab_core::trace::convert;
use pagelab_core::trace::native::WriterOptions;
use pagelab_core::trace::TraceFormat;
use std::io::Write;
use std::path::PathBuf;

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

pub fn run(args: &ConvertArgs) -> Result<()> {
    let options = convert::Options {
        from: args
            .from
            .as_deref()
            .map(TraceFormat::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        to: convert::output_format(args.to.as_deref(), &args.output).map_err(anyhow::Error::msg)?,
        workload: args.workload.clone(),
        writer: WriterOptions {
            chunk_refs: args.chunk_refs,
            level: args.level,
            compress_literals: args.compress_literals,
        },
        salvage: args.salvage,
    };
    output::check(&args.output, "the output", &[&args.input])?;
    if output::is_stdout(&args.output) {
        return write(args, &options, std::io::stdout().lock()).map(|_| ());
    }
    // Written beside the output and renamed at the end: an interrupted or failed
    // conversion leaves no half-written file under the output's name.
    let mut pending = output::Pending::create(&args.output)?;
    let elapsed = write(args, &options, pending.file())?;
    pending.commit()?;
    if !args.quiet {
        let bytes = std::fs::metadata(&args.output)
            .map(|m| m.len())
            .unwrap_or(0);
        eprintln!(
            "pagelab: wrote {} ({bytes} bytes, {} format) in {:.2} s",
            args.output.display(),
            options.to.name(),
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn write<W: Write>(
    args: &ConvertArgs,
    options: &convert::Options,
    out: W,
) -> Result<std::time::Duration> {
    let mut progress = Progress::new("converting", args.quiet).of_files([args.input.as_path()]);
    let warning = convert::convert(&args.input, out, &args.output, options, |refs, at| {
        progress.tick(refs, at)
    })?;
    let elapsed = progress.finish();
    if let Some(w) = warning {
        eprintln!("pagelab: warning: {w}");
    }
    Ok(elapsed)
}
