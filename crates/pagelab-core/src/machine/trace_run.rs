//! A whole trace through the machine, batch by batch: each part the reader gives
//! goes the fastest way the machine allows (plain columns to the kernel, whole
//! batches otherwise, split at a warm-up's end), and the data caches have a thread
//! of their own for the run when a core is spare (see `cached.rs`).

use super::*;

impl Machine {
    /// Simulate a whole trace, batch by batch; `after_batch` is told the references of
    /// each batch and the reader's input position (for progress). A simulation error
    /// names the trace file.
    pub fn run_trace(
        &mut self,
        reader: &mut dyn TraceReader,
        path: &Path,
        after_batch: impl FnMut(u64, u64),
    ) -> Result<(), TraceError> {
        self.start_cache_thread();
        let run = self.run_batches(reader, path, after_batch);
        self.stop_cache_thread();
        run
    }

    /// [`Machine::run_trace`]'s loop over batches.
    fn run_batches(
        &mut self,
        reader: &mut dyn TraceReader,
        path: &Path,
        mut after_batch: impl FnMut(u64, u64),
    ) -> Result<(), TraceError> {
        let mut batch = Batch::default();
        let mut plain = PlainBatch::default();
        let stopped = |e: SimError| {
            TraceError::new(path, Location::File, format!("simulation stopped at {e}"))
        };
        loop {
            // Plain parts of the trace go straight to the kernel, as columns.
            // (Plain parts leave out allocation events, which eager paging needs.)
            let part = if self.warming() {
                // Whole batches, which split at the warm-up's end.
                if reader.next_batch(&mut batch)? {
                    Part::Full
                } else {
                    Part::End
                }
            } else if self.decoupled && self.kernel && self.ranges.eager.is_none() {
                // With data caches, instruction fetches stay out of plain parts: the
                // caches' pass reads a plain part as data.
                let fetches = !self.tlb.split() && self.cached.is_none();
                reader.next_plain(fetches, &mut plain, &mut batch)?
            } else if reader.next_batch(&mut batch)? {
                Part::Full
            } else {
                Part::End
            };
            let refs = match part {
                Part::End => {
                    return self
                        .check_warmup()
                        .map_err(|e| TraceError::new(path, Location::File, e))
                }
                Part::Plain => {
                    self.run_plain(&plain).map_err(stopped)?;
                    plain.addrs.len()
                }
                Part::Full if self.warming() => {
                    self.run_warming(&batch).map_err(stopped)?;
                    batch.refs.len()
                }
                Part::Full => {
                    self.run_batch(&batch).map_err(stopped)?;
                    batch.refs.len()
                }
            };
            after_batch(refs as u64, reader.position());
        }
    }
}
