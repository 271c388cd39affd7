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
        }
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
            "\r{} {:>14} refs  {:>7.1} M refs/s  {:>10.1} MB read",
            self.what,
            self.refs,
            self.refs as f64 / secs / 1e6,
            position as f64 / 1e6
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
