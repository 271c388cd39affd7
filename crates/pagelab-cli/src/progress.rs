//! Progress on standard error for long runs: references, rate, the share of the input
//! read and the time left (when the input is files read as stored). On a terminal, one
//! line redrawn about once a second (indicatif); elsewhere (a log, a CI job), a line
//! every ten seconds once the run has taken ten.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a line is written when standard error is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    what: std::borrow::Cow<'static, str>,
    bar: Option<ProgressBar>,
    /// Whether lines are written (not quiet, not a terminal).
    lines: bool,
    start: Instant,
    last: Instant,
    refs: u64,
    /// What the position counts: bytes "read" or "written".
    position_is: &'static str,
    /// The position at the end, when known.
    total: Option<u64>,
    /// The references at the end, when known instead.
    total_refs: Option<u64>,
}

impl Progress {
    pub fn new(what: impl Into<std::borrow::Cow<'static, str>>, quiet: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(1));
            bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
            bar
        });
        let now = Instant::now();
        Progress {
            what: what.into(),
            bar: bar.filter(|b| !b.is_hidden()),
            lines: !quiet && !terminal,
            start: now,
            last: now,
            refs: 0,
            position_is: "read",
            total: None,
            total_refs: None,
        }
    }

    /// The position given to [`Progress::tick`] is bytes written, not read.
    pub fn counting_output(mut self) -> Progress {
        self.position_is = "written";
        self
    }

    /// The positions are bytes of these files, read one after another or together:
    /// show the share read and the time left. Not when one is a compressed stream
    /// (gzip, xz, zstd text), whose positions count the bytes it decompresses to, or
    /// not a regular file.
    pub fn of_files<'a>(mut self, paths: impl IntoIterator<Item = &'a Path>) -> Progress {
        let size = |p: &Path| -> Option<u64> {
            let meta = std::fs::metadata(p).ok().filter(|m| m.is_file())?;
            let mut head = [0u8; 8];
            let n = std::io::Read::read(&mut std::fs::File::open(p).ok()?, &mut head).ok()?;
            // (A drmemtrace zip counts what it unzips too.)
            let plain = pagelab_core::trace::input::Compression::sniff(&head[..n])
                == pagelab_core::trace::input::Compression::None
                && !head.starts_with(b"PK\x03\x04");
            plain.then_some(meta.len())
        };
        self.total = paths
            .into_iter()
            .map(size)
            .sum::<Option<u64>>()
            .filter(|t| *t > 0);
        self
    }

    /// The run ends after `n` references: show the share done and the time left.
    pub fn of_references(mut self, n: u64) -> Progress {
        self.total_refs = Some(n).filter(|n| *n > 0);
        self
    }

    /// `refs` more references done; `position` bytes of input read (or output written).
    #[inline]
    pub fn tick(&mut self, refs: u64, position: u64) {
        self.refs += refs;
        if self.bar.is_none() && !self.lines {
            return;
        }
        let now = Instant::now();
        let every = if self.bar.is_some() {
            Duration::from_secs(1)
        } else {
            LINE_EVERY
        };
        if now.duration_since(self.last) < every {
            return;
        }
        self.last = now;
        self.show(now, position);
    }

    #[cold]
    fn show(&self, now: Instant, position: u64) {
        let secs = now.duration_since(self.start).as_secs_f64();
        let rate = self.refs as f64 / secs / 1e6;
        let share = match (self.total_refs, self.total) {
            (Some(n), _) => Some(self.refs as f64 / n as f64),
            (None, Some(t)) => Some(position as f64 / t as f64),
            (None, None) => None,
        }
        .filter(|s| *s > 0.0 && *s <= 1.0);
        match (&self.bar, share) {
            (Some(bar), Some(s)) => bar.set_message(format!(
                "{} {:>5.1}%  {:>14} refs  {:>7.1} M refs/s  {} left",
                self.what,
                100.0 * s,
                self.refs,
                rate,
                left(secs, s)
            )),
            (Some(bar), None) => bar.set_message(format!(
                "{} {:>14} refs  {:>7.1} M refs/s  {:>10.1} MB {}",
                self.what,
                self.refs,
                rate,
                position as f64 / 1e6,
                self.position_is
            )),
            (None, Some(s)) => eprintln!(
                "pagelab: {} {:.1}%: {} refs in {:.0} s ({:.1} M refs/s), {} left",
                self.what,
                100.0 * s,
                self.refs,
                secs,
                rate,
                left(secs, s)
            ),
            (None, None) => eprintln!(
                "pagelab: {}: {} refs in {:.0} s ({:.1} M refs/s), {:.1} MB {}",
                self.what,
                self.refs,
                secs,
                rate,
                position as f64 / 1e6,
                self.position_is
            ),
        }
    }

    /// Clear the progress line; the time since the start.
    pub fn finish(self) -> Duration {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.start.elapsed()
    }
}

/// The time left, when `share` of the work took `secs`: "1 h 05 min", "3 min 20 s", "12 s".
fn left(secs: f64, share: f64) -> String {
    pagelab_sweep::progress::duration(secs * (1.0 - share) / share)
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_left_reads_as_a_person_would() {
        assert_eq!(super::left(10.0, 0.5), "10 s");
        assert_eq!(super::left(50.0, 0.25), "2 min 30 s");
        assert_eq!(super::left(3600.0, 0.5), "1 h 00 min");
    }
}

/// Progress of several runs over one trace, one after another: a line per run, named
/// by the run, begun when its first batch is told and finished when the next run's is.
pub struct PerRun<'a> {
    trace: &'a Path,
    quiet: bool,
    current: Option<(String, Progress)>,
}

impl<'a> PerRun<'a> {
    pub fn new(trace: &'a Path, quiet: bool) -> PerRun<'a> {
        PerRun {
            trace,
            quiet,
            current: None,
        }
    }

    /// Run `name` read `refs` references more, and the reader is at `position`.
    pub fn tick(&mut self, name: &str, refs: u64, position: u64) {
        if self.current.as_ref().map(|c| c.0.as_str()) != Some(name) {
            self.finish();
            let p = Progress::new(name.to_string(), self.quiet).of_files([self.trace]);
            self.current = Some((name.to_string(), p));
        }
        if let Some((_, p)) = &mut self.current {
            p.tick(refs, position);
        }
    }

    /// The last run's line finished.
    pub fn finish(&mut self) {
        if let Some((_, p)) = self.current.take() {
            p.finish();
        }
    }
}
