//! A sweep's progress on standard error: runs done, failures, references per second
//! and time left; a line before and after. On a terminal, a bar; elsewhere (a log, a
//! CI job), a line at most every ten seconds as runs finish. Nothing when quiet.

use crate::{Observer, Summary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often a line is written when standard error is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(10);

pub struct TerminalProgress {
    bar: ProgressBar,
    /// What the database is called in messages.
    db: String,
    quiet: bool,
    /// Lines instead of a bar (standard error is not a terminal).
    lines: bool,
    start: Instant,
    last_line: Instant,
    /// Runs to run.
    missing: usize,
}

impl TerminalProgress {
    pub fn new(db: &str, quiet: bool) -> TerminalProgress {
        let now = Instant::now();
        TerminalProgress {
            bar: ProgressBar::hidden(),
            db: db.to_string(),
            quiet,
            lines: !quiet && !std::io::stderr().is_terminal(),
            start: now,
            last_line: now,
            missing: 0,
        }
    }
}

impl Observer for TerminalProgress {
    fn planned(&mut self, s: &Summary) {
        if self.quiet {
            return;
        }
        let missing = s.total - s.present - s.duplicates;
        let mut other = String::new();
        if s.duplicates > 0 {
            other += &format!(
                " ({} repeating another run's trace and configuration, run once)",
                s.duplicates
            );
        }
        if s.other_versions > 0 {
            other += &format!(
                " ({} runs of other pagelab builds kept apart)",
                s.other_versions
            );
        }
        eprintln!(
            "pagelab: {} runs, {} already in {}, {missing} to run{other}",
            s.total, s.present, self.db
        );
        self.missing = missing;
        self.start = std::time::Instant::now();
        self.last_line = self.start;
        self.bar = ProgressBar::with_draw_target(
            Some(missing as u64),
            ProgressDrawTarget::stderr_with_hz(2),
        );
        self.bar.set_style(
            ProgressStyle::with_template("{pos}/{len} runs  {msg}  {elapsed} elapsed, {eta} left")
                .expect("a valid template"),
        );
    }

    fn committed(&mut self, s: &Summary) {
        let now = Instant::now();
        if self.lines && s.ran > 0 && now.duration_since(self.last_line) >= LINE_EVERY {
            self.last_line = now;
            let secs = now.duration_since(self.start).as_secs_f64();
            let left = secs / s.ran as f64 * self.missing.saturating_sub(s.ran) as f64;
            eprintln!(
                "pagelab: {}/{} runs, {} failed, {:.1} M refs/s, about {} left",
                s.ran,
                self.missing,
                s.failed,
                s.references as f64 / s.seconds.max(1e-9) / 1e6,
                duration(left)
            );
        }
        self.bar.set_position(s.ran as u64);
        self.bar.set_message(format!(
            "{} failed, {:.1} M refs/s",
            s.failed,
            s.references as f64 / s.seconds.max(1e-9) / 1e6
        ));
    }

    fn finished(&mut self, s: &Summary) {
        self.bar.finish_and_clear();
        if !self.quiet {
            let shared = match s.one_pass {
                0 => String::new(),
                n => format!(" ({n} of them in one pass with others)"),
            };
            eprintln!(
                "pagelab: {} runs done in {:.1} s{shared}, {} failed; results in {}",
                s.ran, s.seconds, s.failed, self.db
            );
        }
    }
}

/// A duration as a person reads it: "12 s", "3 min 20 s", "1 h 05 min".
pub fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

/// Progress while a sweep's configurations are built and checked, for
/// [`pagelab_sweep::load_observed`]: a bar on standard error once a grid is
/// large enough to take a while (a thousand runs or more), cleared when done.
pub fn checking(quiet: bool) -> impl FnMut(usize, usize) {
    let mut bar: Option<ProgressBar> = None;
    move |done, total| {
        if quiet || total < 1000 {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(2),
            );
            bar.set_style(
                ProgressStyle::with_template(
                    "checking the sweep's configurations {pos}/{len} {wide_bar}",
                )
                .expect("a valid template"),
            );
            bar
        });
        bar.set_position(done as u64);
        if done == total {
            bar.finish_and_clear();
        }
    }
}
