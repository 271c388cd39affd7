//! A sweep's progress on a terminal (standard error): runs done, failures, references
//! per second and time left; a line before and after. Nothing when not a terminal or
//! when quiet.

use crate::{Observer, Summary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct TerminalProgress {
    bar: ProgressBar,
    /// What the database is called in messages.
    db: String,
    quiet: bool,
}

impl TerminalProgress {
    pub fn new(db: &str, quiet: bool) -> TerminalProgress {
        TerminalProgress {
            bar: ProgressBar::hidden(),
            db: db.to_string(),
            quiet,
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
            eprintln!(
                "pagelab: {} runs done in {:.1} s, {} failed; results in {}",
                s.ran, s.seconds, s.failed, self.db
            );
        }
    }
}
