//! Errors of trace input and output. Every error names the file and where in it the
//! problem is (a byte offset or a line), and prints as one line.

use std::path::{Path, PathBuf};

/// Where in a file a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A byte offset in the file (or, for compressed text and ChampSim input, in the
    /// decompressed stream; the message says so).
    Offset(u64),
    /// A 1-based line number in a text trace.
    Line(u64),
    /// The problem concerns the file as a whole (it cannot be opened or created).
    File,
}

/// A trace problem; prints as one line: the file, the offset or line, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}{}", file.display(), location_prefix(location), message.replace('\n', " "))]
pub struct TraceError {
    pub file: PathBuf,
    pub location: Location,
    pub message: String,
    /// The kind of the input or output error behind it, if one is (a reader that went
    /// away, `BrokenPipe`, is not a failure of the command).
    pub io_kind: Option<std::io::ErrorKind>,
}

impl TraceError {
    pub fn new(file: &Path, location: Location, message: impl Into<String>) -> TraceError {
        TraceError {
            file: file.to_path_buf(),
            location,
            message: message.into(),
            io_kind: None,
        }
    }
    pub fn at_offset(file: &Path, offset: u64, message: impl Into<String>) -> TraceError {
        TraceError::new(file, Location::Offset(offset), message)
    }
    pub fn at_line(file: &Path, line: u64, message: impl Into<String>) -> TraceError {
        TraceError::new(file, Location::Line(line), message)
    }
    pub fn io(file: &Path, location: Location, err: &std::io::Error) -> TraceError {
        TraceError {
            io_kind: Some(err.kind()),
            ..TraceError::new(file, location, err.to_string())
        }
    }
}

/// "offset N: " or "line N: " (nothing for the file as a whole). Messages never span
/// lines: a newline from a library error is folded.
fn location_prefix(location: &Location) -> String {
    match location {
        Location::Offset(o) => format!("offset {o}: "),
        Location::Line(l) => format!("line {l}: "),
        Location::File => String::new(),
    }
}
