//! Runs as tasks on an existing Ray cluster. Ray's client is Python: the executor
//! starts `PYTHON -m pagelab._ray_runner ADDRESS`, writes one JSON line per job to its
//! standard input (`{"index", "trace", "config", "analysis"}`, the configuration as normalised
//! TOML) and reads one JSON line per finished run from its standard output
//! (`{"index", "report" | "error", "references", "seconds"}`, the report an object).
//! Each task calls the same
//! [`crate::run_one`] as the local executor, through the Python bindings. Traces are
//! reached by path: the cluster's nodes must see them where this machine does.

use crate::{Executor, Job, Outcome};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
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
    report: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    references: u64,
    seconds: f64,
}

impl Executor for Ray {
    fn execute(&self, jobs: Vec<Job>, done: &mut dyn FnMut(Outcome) -> Result<()>) -> Result<()> {
        // Each run is a task of its own.
        let jobs: Vec<Job> = jobs.iter().flat_map(Job::separate).collect();
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
            // Absolute, not resolved: a link keeps the name its format is told by.
            let named = crate::inputs::synthetic(&job.trace).is_some()
                || crate::inputs::layout(&job.trace).is_some();
            let trace = if named {
                job.trace.clone()
            } else {
                std::path::absolute(&job.trace).unwrap_or_else(|_| job.trace.clone())
            };
            let Some(trace) = trace.to_str() else {
                let _ = child.kill();
                bail!(
                    "--ray: {}: a path that is not UTF-8 cannot be sent to Ray",
                    trace.display()
                );
            };
            let line = serde_json::json!({
                "index": job.index,
                "trace": trace,
                "config": job.config_toml,
                "analysis": job.analysis,
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
                let mut bytes = Vec::new();
                let _ = stderr.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
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
                    (Some(report), _) => Ok((report.to_string(), parsed.references)),
                    (None, Some(e)) => Err(e),
                    (None, None) => Err("the Ray task returned nothing".into()),
                };
                if let Err(e) = done(Outcome {
                    shared: false,
                    index: parsed.index,
                    result,
                    seconds: parsed.seconds,
                }) {
                    let _ = child.kill();
                    return Err(e);
                }
            }
            if let Some(f) = failure {
                // Stopped before waiting: the runner would go on to its next task.
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "--ray {}: {f} (the runs finished before are kept)",
                    self.address
                );
            }
            let status = child.wait().context("waiting for the Ray runner")?;
            let stderr = errors.join().unwrap_or_default();
            if !status.success() || seen != jobs.len() {
                // Its last lines, on one line: what Ray said went wrong.
                let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
                bail!(
                    "--ray {}: {what} stopped ({status}) after {seen} of {} runs (the finished ones are kept): {tail}",
                    self.address,
                    jobs.len(),
                );
            }
            Ok(())
        })
    }
}
