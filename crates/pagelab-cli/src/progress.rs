//! Progress on standard error for long runs: references, rate and input position,
//! refreshed about once a second, only when standard error is a terminal (indicatif
//! draws the line and hides it elsewhere).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

pub struct Progress {
    what: std::borrow::Cow<'static, str>,
    bar: Option<ProgressBar>,
    start: Instant,
    last: Instant,
    refs: u64,
    /// What the position counts: bytes "read" or "written".
    position_is: &'static str,
}

impl Progress {
    pub fn new(what: impl Into<std::borrow::Cow<'static, str>>, quiet: bool) -> Progress {
        let bar = (!quiet).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(1));
            bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
            bar
        });
        let now = Instant::now();
        Progress {
            what: what.into(),
            bar: bar.filter(|b| !b.is_hidden()),
            start: now,
            last: now,
            refs: 0,
            position_is: "read",
        }
    }

    /// The position given to [`Progress::tick`] is bytes written, not read.
    pub fn counting_output(mut self) -> Progress {
        self.position_is = "written";
        self
    }

    /// `refs` more references done; `position` bytes of input read (or output written).
    #[inline]
    pub fn tick(&mut self, refs: u64, position: u64) {
        self.refs += refs;
        let Some(bar) = &self.bar else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(self.last) < Duration::from_secs(1) {
            return;
        }
        self.last = now;
        let secs = now.duration_since(self.start).as_secs_f64();
        bar.set_message(format!(
            "{} {:>14} refs  {:>7.1} M refs/s  {:>10.1} MB {}",
            self.what,
            self.refs,
            self.refs as f64 / secs / 1e6,
            position as f64 / 1e6,
            self.position_is
        ));
    }

    /// Clear the progress line; the time since the start.
    pub fn finish(self) -> Duration {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.start.elapsed()
    }
}
