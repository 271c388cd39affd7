//! A recording that follows the program through `execve`: a wrapper script or a shim
//! (pyenv's `python3`) that replaces itself with the real program. Valgrind runs the
//! program exec'd under the recorder too (`--trace-children=yes`), whose stream starts
//! afresh: in the same FIFO when it opens it before the last one's end was read, else
//! after an end of file, when the FIFO is opened again. Processes the program starts
//! are traced by Valgrind only so that an exec of theirs can be, and record nothing
//! (the tool's `--parent`).

use anyhow::Result;
use pagelab_core::trace::pgrec::PgrecReader;
use pagelab_core::trace::{Metadata, TraceError, TraceReader};
use pagelab_core::Batch;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// The recorder's stream, the programs exec'd included.
pub struct Followed<'a> {
    reader: PgrecReader,
    /// The FIFO opened again for the program exec'd, or `None` when the recorded
    /// process ended first (its exec was not followed).
    reopen: Box<dyn FnMut() -> Result<Option<File>> + Send + 'a>,
    /// The programs exec'd and followed, in order.
    pub programs: Vec<String>,
    /// The program exec'd and not followed, where the trace ends.
    pub unfollowed: Option<String>,
    /// The FIFO, for errors.
    fifo: PathBuf,
}

impl<'a> Followed<'a> {
    pub fn new(
        reader: PgrecReader,
        fifo: &Path,
        reopen: impl FnMut() -> Result<Option<File>> + Send + 'a,
    ) -> Followed<'a> {
        Followed {
            reader,
            reopen: Box::new(reopen),
            programs: Vec::new(),
            unfollowed: None,
            fifo: fifo.to_path_buf(),
        }
    }

    /// At the end of a program's stream: go on with the program it exec'd, if that one
    /// is recorded. `Ok(true)` when there is more to read.
    fn next_program(&mut self) -> Result<bool, TraceError> {
        let Some(path) = self.reader.replaced_by().map(str::to_string) else {
            return Ok(false);
        };
        let at = self.reader.position();
        let opened = (self.reopen)().map_err(|e| {
            TraceError::at_offset(
                &self.fifo,
                at,
                format!("cannot follow the exec of {path}: {e:#}"),
            )
        })?;
        match opened {
            Some(file) => {
                self.reader
                    .resume(Box::new(BufReader::with_capacity(4 << 20, file)))?;
                self.programs.push(path);
                Ok(true)
            }
            None => {
                self.unfollowed = Some(path);
                Ok(false)
            }
        }
    }
}

impl TraceReader for Followed<'_> {
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        loop {
            if self.reader.next_batch(batch)? {
                return Ok(true);
            }
            if !self.next_program()? {
                return Ok(false);
            }
        }
    }

    fn metadata(&self) -> &Metadata {
        self.reader.metadata()
    }

    fn position(&self) -> u64 {
        self.reader.position()
    }

    /// The reader's, unless the trace ends at an exec not followed: `pagelab record`
    /// says that itself, with why.
    fn warning(&self) -> Option<&str> {
        self.reader.warning().filter(|_| self.unfollowed.is_none())
    }

    /// The program writes the trace as it runs.
    fn live(&self) -> bool {
        true
    }
}
