//! The machine's side of a warm-up (see [`super::steady`]): the first references run
//! as any others, the report is kept when they end, and [`Machine::report`] gives
//! what came after. The warm-up ends exactly after its last reference: a batch that
//! holds that point runs as two (events placed at the point go with the warm-up).

use super::*;

impl Machine {
    /// Leave the first `references` of the run out of its report (0: none). Set
    /// before the run.
    pub fn set_warmup(&mut self, references: u64) {
        self.warmup_at = (references > 0).then_some(references);
        self.warm = None;
    }

    /// Whether a warm-up is set and still running.
    pub(super) fn warming(&self) -> bool {
        self.warmup_at.is_some() && self.warm.is_none()
    }

    /// Run a batch while warming up: to the warm-up's end, the report kept, the rest.
    pub(super) fn run_warming(&mut self, batch: &Batch) -> Result<(), SimError> {
        let at = self.warmup_at.expect("warming up");
        let left = at - self.counts.references;
        let n = batch.refs.len() as u64;
        if n < left {
            return self.run_batch(batch);
        }
        if n == left {
            self.run_batch(batch)?;
            self.keep_warm_report();
            return Ok(());
        }
        // Once per run: two batches made for it.
        let (head, tail) = batch.split_at(left as usize);
        self.run_batch(&head)?;
        self.keep_warm_report();
        self.run_batch(&tail)
    }

    /// The report at the warm-up's end, with the caches back from their thread for it.
    fn keep_warm_report(&mut self) {
        let threaded = self.cached.as_ref().is_some_and(|d| d.threaded());
        self.stop_cache_thread();
        self.warm = Some(Box::new(self.report_whole()));
        if threaded {
            self.start_cache_thread();
        }
    }

    /// At the end of a run with a warm-up: an error if it left nothing to measure.
    pub(super) fn check_warmup(&self) -> Result<(), String> {
        let Some(at) = self.warmup_at else {
            return Ok(());
        };
        if self.counts.references <= at {
            return Err(format!(
                "a warm-up of {at} references leaves none to measure: the input holds {}",
                self.counts.references
            ));
        }
        Ok(())
    }

    /// The results so far; after a warm-up, of what followed it (its own counts and
    /// costs in [`Report::warmup`]).
    pub fn report(&self) -> Report {
        let end = self.report_whole();
        match &self.warm {
            Some(warm) => {
                let policy = self.walker.promoter.policy.as_ref();
                end.since(warm, &|k| policy.is_some_and(|p| p.stat_is_state(k)))
            }
            None => end,
        }
    }
}
