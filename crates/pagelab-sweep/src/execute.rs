//! Where runs execute: the [`Executor`] interface and the local executor (threads on
//! this machine's cores).

use crate::job::{Job, Outcome};
use anyhow::Result;
use std::collections::VecDeque;
use std::sync::{mpsc, Mutex};

/// Executes jobs, handing each outcome to `done` as it arrives (on the calling
/// thread). An error from `done` stops the executor and is returned.
pub trait Executor {
    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()>;

    /// Whether jobs may carry siblings: simulations of one trace that differ only in
    /// the last TLB level's geometry, run in one pass.
    fn one_pass(&self) -> bool {
        false
    }
}

/// Threads on this machine: `jobs` runs at once (default: the cores this process may
/// use); simulations that differ only in the last TLB level's geometry in one pass
/// unless `separate`.
pub struct Local {
    pub jobs: Option<usize>,
    pub separate: bool,
}

impl Executor for Local {
    fn one_pass(&self) -> bool {
        !self.separate
    }

    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()> {
        let threads = self
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, jobs.len().max(1));
        // Side by side on every core, no machine adds a thread of its own (until the
        // sweep ends).
        let alone = pagelab_core::machine::set_second_core_default(threads <= 1);
        let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
        let (tx, rx) = mpsc::channel::<Outcome>();
        let run = std::thread::scope(|s| {
            for _ in 0..threads {
                let (queue, tx) = (&queue, tx.clone());
                s.spawn(move || loop {
                    // The lock is released before the run (the guard ends with the
                    // closure); a poisoned queue would mean a bug here: stop too.
                    let Some(job) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                        break;
                    };
                    for outcome in crate::one_pass::run(&job) {
                        if tx.send(outcome).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for outcome in rx {
                if let Err(e) = done(outcome) {
                    // Workers stop at their next job.
                    if let Ok(mut q) = queue.lock() {
                        q.clear();
                    }
                    return Err(e);
                }
            }
            Ok(())
        });
        pagelab_core::machine::set_second_core_default(alone);
        run
    }
}
