//! Which of two equal ways the kernel loop ([`super::decoupled::Kernel`]) treats a
//! reference to the page of the one before it: by a branch that skips its lookup
//! (credited as a hit, see [`super::Machine::set_repeat_filter`]), or by looking it up
//! like any other (a hit on the entry touched last, which changes nothing). Both give
//! the same counts; which is faster depends on the trace. Where repeats come in long
//! runs (a real program's loops: `xz.plt`) the branch is predicted and skips most of
//! the work (the lookup costs 20 % more time); where they come at random (the standard
//! benchmark trace, whose stack references interleave with the heap's at random) the
//! branch is mispredicted about once per repeat, and looking every page up is 5 %
//! faster.
//!
//! So the machine times them on the trace as it runs: at the start of every epoch of
//! [`EPOCH`] kernel runs over a plain batch of at least [`TIMED_REFS`] references (a
//! run over references of a general batch may stop after a few: those take the
//! current choice, untimed), it runs the first [`TRIALS`] with each way in turn (in the
//! order A B B A, so that a drift in speed weighs on both alike), then the rest of the
//! epoch with the way that took less time per reference. Only speed depends on the
//! timing: every count is the same whichever way runs. (Where pages are not 4 KiB the
//! kernel has one loop only, and both trials run it: the choice is then moot.)

use std::time::Duration;

/// Kernel runs per epoch (of those long enough to time).
pub const EPOCH: u32 = 64;
/// Trial runs at the start of an epoch, half with each way.
pub const TRIALS: u32 = 4;
/// Runs shorter than this are neither timed nor counted: they take the current choice.
pub const TIMED_REFS: usize = 4096;

/// How repeats are treated in the kernel loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepeatMode {
    /// Chosen by timing, epoch by epoch.
    Timed,
    /// Always branch on repeats (true) or always look them up (false): for tests and
    /// measurements.
    Fixed(bool),
}

#[derive(Clone, Debug)]
pub struct RepeatChoice {
    mode: RepeatMode,
    /// Timed runs so far in this epoch.
    run: u32,
    /// Nanoseconds and references of the trials, by way (0: look up, 1: branch).
    nanos: [u128; 2],
    refs: [u64; 2],
    /// The way of the epoch after its trials.
    branch: bool,
}

impl Default for RepeatChoice {
    fn default() -> RepeatChoice {
        RepeatChoice {
            mode: RepeatMode::Timed,
            run: 0,
            nanos: [0; 2],
            refs: [0; 2],
            branch: true,
        }
    }
}

impl RepeatChoice {
    pub fn set_mode(&mut self, mode: RepeatMode) {
        *self = RepeatChoice {
            mode,
            ..RepeatChoice::default()
        };
    }

    /// Whether the next run, of `refs` references at most, branches on repeats, and
    /// whether it is timed (then its time goes to [`RepeatChoice::record`]).
    #[inline]
    pub fn pick(&self, refs: usize) -> (bool, bool) {
        match self.mode {
            RepeatMode::Fixed(branch) => (branch, false),
            RepeatMode::Timed if refs < TIMED_REFS => (self.branch, false),
            // A B B A: trials 0 and 3 branch, 1 and 2 look up.
            RepeatMode::Timed if self.run < TRIALS => (self.run.is_multiple_of(3), true),
            RepeatMode::Timed => (self.branch, true),
        }
    }

    /// A timed run of `refs` references (the way [`RepeatChoice::pick`] gave) took
    /// `elapsed`.
    pub fn record(&mut self, branch: bool, refs: usize, elapsed: Duration) {
        if self.run < TRIALS {
            self.nanos[branch as usize] += elapsed.as_nanos();
            self.refs[branch as usize] += refs as u64;
        }
        self.run += 1;
        if self.run == TRIALS {
            // Less time per reference wins (cross-multiplied; a tie keeps the branch).
            let [n_look, n_branch] = self.nanos;
            let [r_look, r_branch] = self.refs.map(|r| r.max(1) as u128);
            self.branch = n_branch * r_look <= n_look * r_branch;
        }
        if self.run == EPOCH {
            self.run = 0;
            self.nanos = [0; 2];
            self.refs = [0; 2];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run one epoch whose runs of `refs` references take `per_ref(branch)` ns each.
    fn epoch(c: &mut RepeatChoice, per_ref: impl Fn(bool) -> u64) -> Vec<bool> {
        let mut ways = Vec::new();
        for _ in 0..EPOCH {
            let (branch, timed) = c.pick(32768);
            assert!(timed);
            ways.push(branch);
            c.record(branch, 32768, Duration::from_nanos(32768 * per_ref(branch)));
        }
        ways
    }

    #[test]
    fn each_epoch_tries_both_ways_then_keeps_the_faster() {
        let mut c = RepeatChoice::default();
        let trials = TRIALS as usize;
        // Branching is faster: the epoch after its trials branches.
        let ways = epoch(&mut c, |branch| if branch { 10 } else { 12 });
        assert_eq!(ways[..trials], [true, false, false, true]);
        assert!(ways[trials..].iter().all(|&b| b));
        // The trace changes: looking up is faster; the next epoch finds it.
        let ways = epoch(&mut c, |branch| if branch { 15 } else { 12 });
        assert_eq!(ways[..trials], [true, false, false, true]);
        assert!(ways[trials..].iter().all(|&b| !b));
    }

    #[test]
    fn short_runs_take_the_current_way_untimed_and_fixed_modes_never_time() {
        let mut c = RepeatChoice::default();
        epoch(&mut c, |branch| if branch { 20 } else { 10 });
        // An epoch of its own: a short run neither times nor counts.
        assert_eq!(c.pick(TIMED_REFS - 1), (false, false));
        assert_eq!(c.pick(TIMED_REFS), (true, true));
        for branch in [false, true] {
            c.set_mode(RepeatMode::Fixed(branch));
            for _ in 0..2 * EPOCH {
                assert_eq!(c.pick(32768), (branch, false));
            }
        }
    }
}
