//! Runs as tasks on an existing Ray cluster. Ray's client is Python: the executor
//! starts `PYTHON -m pagelab._ray_runner ADDRESS`, writes one JSON line per job to its
//! standard input (`{"index", "trace", "config"}`, the configuration as normalised
//! TOML) and reads one JSON line per finished run from its standard output
//! (`{"index", "report" | "error", "references", "seconds"}`). Each task calls the same
//! [`crate::simulate`] as the local executor, through the Python bindings. Traces are
//! reached by path: the cluster's nodes must see them where this machine does.

use crate::{Executor, Job, Outcome};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

/// A Ray cluster at `address` ("auto", "HOST:PORT" or "ray://HOST:PORT"), reached
/// through the Python interpreter `python`, which must import `pagelab` and `ray`.
pub struct Ray {
    pub address: String,
    pub python: String,
}

#[derive(Deserialize)]
struct Line {
    index: usize,
    #[serde(default)]
    report: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    references: u64,
    seconds: f64,
}

impl Executor for Ray {
    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let what = format!("{} -m pagelab._ray_runner {}", self.python, self.address);
        let mut child = Command::new(&self.python)
            .args(["-m", "pagelab._ray_runner", &self.address])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!("--ray: cannot start {what} (name the interpreter with --python)")
            })?;
        let mut input = String::new();
        for job in &jobs {
            let line = serde_json::json!({
                "index": job.index,
                "trace": job.trace.canonicalize().unwrap_or_else(|_| job.trace.clone()),
                "config": job.config_toml,
            });
            input.push_str(&line.to_string());
            input.push('\n');
        }
        let mut stdin = child.stdin.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        std::thread::scope(|s| -> Result<()> {
            // Written and read on their own threads: neither pipe may fill and stall.
            s.spawn(move || {
                let _ = stdin.write_all(input.as_bytes());
            });
            let errors = s.spawn(move || {
                let mut text = String::new();
                let _ = stderr.read_to_string(&mut text);
                text
            });
            let mut seen = 0;
            let mut failure = None;
            for line in BufReader::new(stdout).lines() {
                let line = line.context("reading the Ray runner's output")?;
                let parsed: Line = match serde_json::from_str(&line) {
                    Ok(l) => l,
                    Err(e) => {
                        failure = Some(format!("the Ray runner wrote {line:?}: {e}"));
                        break;
                    }
                };
                seen += 1;
                let result = match (parsed.report, parsed.error) {
                    (Some(report), _) => Ok((report, parsed.references)),
                    (None, Some(e)) => Err(e),
                    (None, None) => Err("the Ray task returned nothing".into()),
                };
                if let Err(e) = done(Outcome {
                    index: parsed.index,
                    result,
                    seconds: parsed.seconds,
                }) {
                    let _ = child.kill();
                    return Err(e);
                }
            }
            let status = child.wait().context("waiting for the Ray runner")?;
            let stderr = errors.join().unwrap_or_default();
            if let Some(f) = failure {
                let _ = child.kill();
                bail!("--ray {}: {f}", self.address);
            }
            if !status.success() || seen != jobs.len() {
                let tail: VecDeque<&str> = stderr.lines().rev().take(12).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                bail!(
                    "--ray {}: {what} stopped ({status}) after {seen} of {} runs (the finished ones are kept):\n{}",
                    self.address,
                    jobs.len(),
                    tail.join("\n")
                );
            }
            Ok(())
        })
    }
}
