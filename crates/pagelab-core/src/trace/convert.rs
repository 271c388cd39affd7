//! `trace convert`: any format pagelab reads into its native format, or into lackey
//! text, an address list or raw u64 addresses, as the command line and Python run it.

use super::native::{NativeWriter, WriterOptions};
use super::{addrs, lackey, rawu64, Location, Metadata, TraceError, TraceFormat};
use crate::{Batch, MemRef};
use std::io::{BufWriter, Write};
use std::path::Path;

/// How to convert.
#[derive(Clone, Debug)]
pub struct Options {
    /// The input's format; `None` detects it.
    pub from: Option<TraceFormat>,
    /// The output's format ([`output_format`]).
    pub to: TraceFormat,
    /// What was traced, for the native header (default: what the input says).
    pub workload: Option<String>,
    /// The native format's chunking and compression.
    pub writer: WriterOptions,
    /// Read a native trace cut short up to its last complete chunk, with a warning.
    pub salvage: bool,
}

/// The format to write: the one named (`to`), else the output's extension's, else
/// native. ChampSim and pgrec are refused, with why.
pub fn output_format(to: Option<&str>, output: &Path) -> Result<TraceFormat, String> {
    let format = match to {
        Some(name) => TraceFormat::parse(name)?,
        None => TraceFormat::from_extension(output).unwrap_or(TraceFormat::Native),
    };
    match format {
        TraceFormat::Champsim => Err(
            "writing ChampSim traces is not supported (it would drop sizes and events); write native instead"
                .into(),
        ),
        TraceFormat::Pgrec => Err(
            "pgrec is what the recorder writes, not an output format; write native instead".into(),
        ),
        other => Ok(other),
    }
}

/// Convert the trace at `input` into `out` (named `name` in errors), calling `tick`
/// with the references written and the input's position after each batch. Returns
/// the reader's warning (a salvaged input), if any.
pub fn convert<W: Write>(
    input: &Path,
    out: W,
    name: &Path,
    options: &Options,
    mut tick: impl FnMut(u64, u64),
) -> Result<Option<String>, TraceError> {
    let mut reader = super::open_salvaging(input, options.from, options.salvage)?;
    let write = |w: &mut BufWriter<W>, r: &MemRef| -> std::io::Result<()> {
        match options.to {
            TraceFormat::Lackey => lackey::write_ref(w, r),
            TraceFormat::Addrs => addrs::write_ref(w, r),
            _ => rawu64::write_ref(w, r),
        }
    };
    match options.to {
        TraceFormat::Native => {
            let source = reader.metadata();
            let metadata = Metadata {
                source_format: if source.source_format.is_empty() {
                    options
                        .from
                        .map(|f| f.name().to_string())
                        .unwrap_or_default()
                } else {
                    source.source_format.clone()
                },
                workload: options
                    .workload
                    .clone()
                    .unwrap_or_else(|| source.workload.clone()),
                created_by: format!("pagelab {}", env!("CARGO_PKG_VERSION")),
                extra: source.extra.clone(),
            };
            let out = BufWriter::with_capacity(1 << 20, out);
            let mut writer = NativeWriter::new(out, name, &metadata, options.writer.clone())?;
            let mut batch = Batch::default();
            while reader.next_batch(&mut batch)? {
                writer.write_batch(&batch)?;
                tick(batch.refs.len() as u64, reader.position());
            }
            writer.finish()?;
        }
        TraceFormat::Lackey | TraceFormat::Addrs | TraceFormat::U64 => {
            let failed = |e: std::io::Error| TraceError::io(name, Location::File, &e);
            let mut w = BufWriter::with_capacity(1 << 20, out);
            let mut batch = Batch::default();
            while reader.next_batch(&mut batch)? {
                for r in &batch.refs {
                    write(&mut w, r).map_err(failed)?;
                }
                tick(batch.refs.len() as u64, reader.position());
            }
            w.flush().map_err(failed)?;
        }
        // ChampSim and pgrec are refused by `output_format` with their reasons; a
        // format added to the list is read everywhere and written only once an arm
        // here writes it.
        other => {
            return Err(TraceError::new(
                name,
                Location::File,
                format!(
                    "pagelab cannot write {} traces; write native, lackey, addrs or u64",
                    other.name()
                ),
            ))
        }
    }
    Ok(reader.warning().map(str::to_string))
}
