//! Progress on standard error for long runs: references, rate and input position,
//! refreshed about once a second, only when standard error is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    what: &'static str,
    start: Instant,
    last: Instant,
    refs: u64,
    show: bool,
    shown: bool,
    /// What the position counts: bytes "read" or "written".
    position_is: &'static str,
}

impl Progress {
    pub fn new(what: &'static str, quiet: bool) -> Progress {
        let now = Instant::now();
        Progress {
            what,
            start: now,
            last: now,
            refs: 0,
            show: !quiet && std::io::stderr().is_terminal(),
            shown: false,
            position_is: "read",
        }
    }

    /// The position given to [`Progress::tick`] is bytes written, not read.
    pub fn counting_output(mut self) -> Progress {
        self.position_is = "written";
        self
    }

    #[inline]
    pub fn tick(&mut self, refs: u64, position: u64) {
        self.refs += refs;
        if !self.show {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.last) < Duration::from_secs(1) {
            return;
        }
        self.last = now;
        let secs = now.duration_since(self.start).as_secs_f64();
        eprint!(
            "\r{} {:>14} refs  {:>7.1} M refs/s  {:>10.1} MB {}",
            self.what,
            self.refs,
            self.refs as f64 / secs / 1e6,
            position as f64 / 1e6,
            self.position_is
        );
        let _ = std::io::stderr().flush();
        self.shown = true;
    }

    /// Clear the progress line; the time since the start.
    pub fn finish(self) -> Duration {
        if self.shown {
            eprint!("\r{:80}\r", "");
        }
        self.start.elapsed()
    }
}
