//! Every trace format, generated from the list in
//! [`for_each_trace_format!`](crate::for_each_trace_format): [`TraceFormat`], its names
//! and file extensions, detection and opening. Each format's reader says how it opens
//! and how it recognises its own data ([`Format`]).

use super::*;

/// A format's reader as the list uses it.
pub trait Format {
    /// Open `path` (decompressing if the format allows it). `salvage`: read a trace
    /// that is cut short up to its last good part, with a warning, where the format
    /// can tell.
    fn open(path: &Path, salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError>;
    /// A reader over bytes in memory, uncompressed (tests, fuzzing); `path` names it in
    /// errors.
    fn from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Box<dyn TraceReader + Send>, TraceError>;
    /// Whether a file's first 8 bytes are this format's magic bytes.
    fn magic(_head: &[u8]) -> bool {
        false
    }
    /// Whether a line of text of a file of unknown name is a line of this format.
    fn text_line(_line: &str) -> bool {
        false
    }
}

macro_rules! define_trace_formats {
    (; $($(#[$doc:meta])* $name:literal => $variant:ident($reader:ty, [$($ext:literal),*]),)*) => {
        /// The trace formats pagelab reads.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub enum TraceFormat {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        /// The formats' names (`--format`), in the list's order.
        pub const NAMES: &[&str] = &[$($name),*];

        impl TraceFormat {
            pub const ALL: &[TraceFormat] = &[$(TraceFormat::$variant),*];
            pub fn name(self) -> &'static str {
                match self {
                    $(TraceFormat::$variant => $name,)*
                }
            }
            /// The extensions (after any .gz/.xz/.zst) a file of this format has.
            pub fn extensions(self) -> &'static [&'static str] {
                match self {
                    $(TraceFormat::$variant => &[$($ext),*],)*
                }
            }
            fn magic(self, head: &[u8]) -> bool {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::magic(head),)*
                }
            }
            fn text_line(self, line: &str) -> bool {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::text_line(line),)*
                }
            }
            fn open(
                self,
                path: &Path,
                salvage: bool,
            ) -> Result<Box<dyn TraceReader + Send>, TraceError> {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::open(path, salvage),)*
                }
            }
            /// A reader of this format over bytes in memory (tests, fuzzing).
            pub fn from_bytes(
                self,
                bytes: Vec<u8>,
                path: &Path,
            ) -> Result<Box<dyn TraceReader + Send>, TraceError> {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::from_bytes(bytes, path),)*
                }
            }
        }
    };
}

crate::for_each_trace_format!(define_trace_formats);

impl TraceFormat {
    pub fn parse(name: &str) -> Result<TraceFormat, String> {
        TraceFormat::ALL
            .iter()
            .copied()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown trace format {name:?} (known: {})",
                    NAMES.join(", ")
                )
            })
    }

    /// The format a file name announces by its extension (after any .gz/.xz/.zst).
    pub fn from_extension(path: &Path) -> Option<TraceFormat> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        let stem = ["gz", "xz", "zst"]
            .iter()
            .find_map(|ext| name.strip_suffix(&format!(".{ext}")))
            .unwrap_or(&name);
        let ext = stem.rsplit_once('.')?.1;
        TraceFormat::ALL
            .iter()
            .copied()
            .find(|f| f.extensions().contains(&ext))
    }

    /// Tell the format of a file: magic bytes first, then the file name's extension
    /// (after any .gz/.xz/.zst), then, for text, the shape of its first lines.
    pub fn detect(path: &Path) -> Result<TraceFormat, TraceError> {
        let head = input::peek(path, 8)?;
        if let Some(format) = TraceFormat::ALL.iter().find(|f| f.magic(&head)) {
            return Ok(*format);
        }
        if let Some(format) = TraceFormat::from_extension(path) {
            // A .txt file may still be another format's text: let its lines say.
            if !format.extensions().contains(&"txt") {
                return Ok(format);
            }
        }
        // Text of unknown name: look at the first lines that are not comments.
        if let Some(format) = sniff_text(path)? {
            return Ok(format);
        }
        // Binary of unknown name: hold it to the native format, whose error says what is wrong.
        Ok(TraceFormat::Native)
    }
}

fn sniff_text(path: &Path) -> Result<Option<TraceFormat>, TraceError> {
    use std::io::BufRead;
    let (reader, _) = input::open_decompressed(path)?;
    let mut lines = 0;
    // Only the first 64 KiB: a binary file of unknown name has no line endings.
    for line in std::io::Read::take(reader, 64 << 10).split(b'\n').take(64) {
        let Ok(line) = line else { return Ok(None) };
        let Ok(text) = std::str::from_utf8(&line) else {
            return Ok(None);
        };
        let t = text.trim_end();
        if t.is_empty() || t.starts_with("==") || t.starts_with("--") || t.starts_with('#') {
            continue;
        }
        lines += 1;
        if let Some(format) = TraceFormat::ALL.iter().find(|f| f.text_line(t)) {
            return Ok(Some(*format));
        }
        if lines > 4 {
            break;
        }
    }
    Ok(None)
}

/// Open a trace for reading; `format` `None` detects it.
pub fn open(
    path: &Path,
    format: Option<TraceFormat>,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    open_salvaging(path, format, false)
}

/// [`open`], and with `salvage` a native trace that is cut short or corrupt ends after
/// its last good chunk with a warning ([`TraceReader::warning`]) instead of an error:
/// how an interrupted recording is read.
pub fn open_salvaging(
    path: &Path,
    format: Option<TraceFormat>,
    salvage: bool,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    let format = match format {
        Some(f) => f,
        None => TraceFormat::detect(path)?,
    };
    format.open(path, salvage)
}
