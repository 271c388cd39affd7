//! Every trace format, generated from the list in
//! [`for_each_trace_format!`](crate::for_each_trace_format): [`TraceFormat`], its names
//! and file extensions, detection and opening. Each format's reader says how it opens
//! and how it recognises its own data ([`Format`]).

use super::input::Source;
use super::*;

/// A format's reader as the list uses it.
pub trait Format {
    /// Read `source` (decompressing if the format allows it). `salvage`: read a trace
    /// that is cut short up to its last good part, with a warning, where the format
    /// can tell; without it, such a trace is an error.
    fn open(source: Source, salvage: bool) -> Result<Box<dyn TraceReader + Send>, TraceError>;
    /// A reader over bytes in memory, uncompressed (tests, fuzzing); `path` names it in
    /// errors.
    fn from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Box<dyn TraceReader + Send>, TraceError>;
    /// The bytes every file of this format starts with (none: empty).
    const MAGIC: &'static [u8] = b"";
    /// Whether `head` (a file's first bytes, as read) is this format's beyond doubt:
    /// by default, whether it starts with [`Format::MAGIC`].
    fn recognises(head: &[u8]) -> bool {
        !Self::MAGIC.is_empty() && head.starts_with(Self::MAGIC)
    }
    /// Whether every file of this format has a signature [`Format::recognises`] finds.
    fn has_signature() -> bool {
        !Self::MAGIC.is_empty()
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
            fn recognises(self, head: &[u8]) -> bool {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::recognises(head),)*
                }
            }
            fn has_signature(self) -> bool {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::has_signature(),)*
                }
            }
            fn text_line(self, line: &str) -> bool {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::text_line(line),)*
                }
            }
            fn open(
                self,
                source: Source,
                salvage: bool,
            ) -> Result<Box<dyn TraceReader + Send>, TraceError> {
                match self {
                    $(TraceFormat::$variant => <$reader as Format>::open(source, salvage),)*
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

    /// Tell the format of an input: signatures (magic bytes) first, then the file name's extension
    /// (after any .gz/.xz/.zst), then, for text, the shape of its first lines. A name
    /// that announces a format its content is not is an error naming what was found.
    pub fn detect(source: &Source) -> Result<TraceFormat, TraceError> {
        let head = source.head();
        if let Some(format) = TraceFormat::ALL.iter().find(|f| f.recognises(head)) {
            return Ok(*format);
        }
        let text = sniff_text(head);
        if let Some(format) = TraceFormat::from_extension(source.path()) {
            // `.trace` is a name many text traces have too (a lackey listing named
            // `run.trace`): what their lines say wins over drmemtrace's name.
            if format == TraceFormat::Drmemtrace {
                if let Some(text) = text {
                    return Ok(text);
                }
            }
            // A .txt file may still be another format's text: let its lines say.
            if !format.extensions().contains(&"txt") {
                if let Some(found) = format.contradicted_by(head, text) {
                    let message = if head.is_empty() {
                        format!("the file is empty: not a {} trace", format.name())
                    } else {
                        format!(
                            "the name says {} but the content is {found} (rename the file, or pass the format by name)",
                            format.name()
                        )
                    };
                    return Err(TraceError::at_offset(source.path(), 0, message));
                }
                return Ok(format);
            }
        }
        if let Some(format) = text {
            return Ok(format);
        }
        // Binary of unknown name: hold it to the native format, whose error says what is wrong.
        Ok(TraceFormat::Native)
    }

    /// What the content shows that this format (announced by a file name) cannot be:
    /// another format's magic bytes or text, or nothing where the format has magic.
    fn contradicted_by(self, head: &[u8], text: Option<TraceFormat>) -> Option<String> {
        let has_magic = self.has_signature();
        if head.is_empty() {
            return has_magic.then(|| "empty".to_string());
        }
        match text {
            Some(found) if found != self => Some(match input::Compression::sniff(head) {
                input::Compression::None => format!("{} text", found.name()),
                c => format!("{} text ({})", found.name(), c.describe()),
            }),
            _ if has_magic => Some(describe_content(head)),
            _ => None,
        }
    }
}

/// What a file's first bytes look like, for an error message.
pub fn describe_content(head: &[u8]) -> String {
    let compression = input::Compression::sniff(head);
    if compression != input::Compression::None {
        return compression.describe().to_string();
    }
    if head.is_empty() {
        return "empty".into();
    }
    let printable = head
        .iter()
        .take(4096)
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace());
    if printable {
        "text in no format pagelab reads".into()
    } else {
        "binary data in no format pagelab recognises".into()
    }
}

/// The text format the first lines of `head` (decompressed if compressed) are in.
fn sniff_text(head: &[u8]) -> Option<TraceFormat> {
    use std::io::BufRead;
    let compression = input::Compression::sniff(head);
    let reader = input::decompress(
        std::io::Cursor::new(head.to_vec()),
        compression,
        Path::new(""),
    )
    .ok()?;
    let mut lines = 0;
    // Only the first 64 KiB: a binary file of unknown name has no line endings.
    for line in std::io::Read::take(reader, 64 << 10).split(b'\n').take(64) {
        // A compressed head ends mid-stream: what came before it still counts.
        let Ok(line) = line else { return None };
        let Ok(text) = std::str::from_utf8(&line) else {
            return None;
        };
        let t = text.trim_end();
        if t.is_empty() || t.starts_with("==") || t.starts_with("--") || t.starts_with('#') {
            continue;
        }
        lines += 1;
        if let Some(format) = TraceFormat::ALL.iter().find(|f| f.text_line(t)) {
            return Some(*format);
        }
        if lines > 4 {
            break;
        }
    }
    None
}

/// Open a trace for reading; `format` `None` detects it.
pub fn open(
    path: &Path,
    format: Option<TraceFormat>,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    open_salvaging(path, format, false)
}

/// [`open`], and with `salvage` a trace that is cut short or corrupt ends after its
/// last good part with a warning ([`TraceReader::warning`]) instead of an error: how
/// an interrupted recording is read.
pub fn open_salvaging(
    path: &Path,
    format: Option<TraceFormat>,
    salvage: bool,
) -> Result<Box<dyn TraceReader + Send>, TraceError> {
    open_detected(path, format, salvage).map(|(reader, _)| reader)
}

/// [`open_salvaging`], and the format it was read as. The input is opened once (it
/// may be a pipe): detection reads its first bytes, which the reader then replays.
pub fn open_detected(
    path: &Path,
    format: Option<TraceFormat>,
    salvage: bool,
) -> Result<(Box<dyn TraceReader + Send>, TraceFormat), TraceError> {
    // A folder is a drmemtrace of several threads.
    if path.is_dir() && matches!(format, None | Some(TraceFormat::Drmemtrace)) {
        return Ok((
            drmemtrace::open_dir(path, salvage)?,
            TraceFormat::Drmemtrace,
        ));
    }
    let source = Source::open(path)?;
    let format = match format {
        Some(f) => f,
        None => TraceFormat::detect(&source)?,
    };
    Ok((format.open(source, salvage)?, format))
}
