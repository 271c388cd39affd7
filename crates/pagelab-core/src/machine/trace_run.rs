//! A whole trace through the machine, batch by batch: each part the reader gives
//! goes the fastest way the machine allows (plain columns to the kernel, whole
//! batches otherwise, split at a warm-up's end). When a core is spare, the data caches
//! have a thread of their own for the run (see `cached.rs`), or else the trace is read
//! ahead on one (`crate::trace::ahead`).

use super::*;
use crate::trace::ahead::{Parts, Want};

impl Machine {
    /// Simulate a whole trace, batch by batch; `after_batch` is told the references of
    /// each batch and the reader's input position (for progress). A simulation error
    /// names the trace file. With a core to spare (and no data caches on it), the
    /// trace is read ahead on a thread of its own (`crate::trace::ahead`); the counts
    /// are the same.
    pub fn run_trace(
        &mut self,
        reader: &mut dyn TraceReader,
        path: &Path,
        after_batch: impl FnMut(u64, u64),
    ) -> Result<(), TraceError> {
        self.start_cache_thread();
        let ahead = self.cache_thread
            && !self.caches_threaded()
            && !reader.live()
            && super::cached::spare_core();
        let run = if ahead {
            let want = self.want();
            crate::trace::ahead::read_ahead(reader, want, |parts| {
                self.run_batches(parts, path, after_batch)
            })
        } else {
            let mut parts = reader;
            self.run_batches(&mut parts, path, after_batch)
        };
        self.stop_cache_thread();
        run
    }

    /// How the loop wants the trace's next part: plain parts go straight to the
    /// kernel, as columns (they leave out allocation events, which eager paging
    /// needs); a warm-up wants whole batches, which split at its end.
    fn want(&self) -> Want {
        if !self.warming() && self.decoupled && self.kernel && self.ranges.eager.is_none() {
            // With data caches, instruction fetches stay out of plain parts: the
            // caches' pass reads a plain part as data.
            Want::Plain {
                fetches: !self.tlb.split() && self.cached.is_none(),
            }
        } else {
            Want::Batches
        }
    }

    /// [`Machine::run_trace`]'s loop over batches.
    fn run_batches(
        &mut self,
        parts: &mut dyn Parts,
        path: &Path,
        mut after_batch: impl FnMut(u64, u64),
    ) -> Result<(), TraceError> {
        let mut batch = Batch::default();
        let mut plain = PlainBatch::default();
        let stopped = |e: SimError| {
            TraceError::new(path, Location::File, format!("simulation stopped at {e}"))
        };
        loop {
            let refs = match parts.next(self.want(), &mut plain, &mut batch)? {
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
            after_batch(refs as u64, parts.position());
        }
    }
}
