//! Running a program natively with chosen data categories backed by transparent huge
//! pages (`pagelab advise`): the preload library `make native` builds
//! (native/pagelab_huge.c) calls `madvise(MADV_HUGEPAGE)` on the regions of the
//! categories named in `PAGELAB_HUGE`, and only those (`PAGELAB_HUGE_ONLY`: the
//! program's own requests for huge pages are dropped); each run is timed (wall clock, from start to
//! exit) and the huge pages the process really got are read from
//! /proc/PID/smaps_rollup while it runs, and from the `AnonHugePages:` line our own
//! programs print at exit with `PAGELAB_REPORT_HUGE=1`.

use crate::target::Target;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The categories the library can back (its `PAGELAB_HUGE` names).
pub const BACKED: [&str; 3] = ["static", "small-dynamic", "large-dynamic"];

/// Where `make native` puts the library; `PAGELAB_HUGE_LIB` overrides the search.
pub fn library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("PAGELAB_HUGE_LIB") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("PAGELAB_HUGE_LIB: {} is not a file", p.display());
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // target/release/pagelab -> target/native
        if let Some(target) = exe.parent().and_then(Path::parent) {
            candidates.push(target.join("native/libpagelab_huge.so"));
        }
    }
    candidates
        .push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/native/libpagelab_huge.so"));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .context("the huge-page preload library is not built (make native builds target/native/libpagelab_huge.so)")
}

/// What transparent huge pages this kernel gives: the selected mode of
/// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise", "never").
pub fn thp_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')? + 1;
    let end = text[start..].find(']')? + start;
    Some(text[start..end].to_string())
}

/// The clock of this machine's first CPU, from /proc/cpuinfo, in GHz.
pub fn clock_ghz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu MHz"))?;
    let mhz: f64 = line.split(':').nth(1)?.trim().parse().ok()?;
    (mhz > 0.0).then_some(mhz / 1000.0)
}

/// The preset closest to this machine: by the CPU's vendor.
pub fn this_machine_preset() -> &'static str {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if text.contains("AuthenticAMD") {
        "zen4"
    } else if text.contains("GenuineIntel") {
        "skylake"
    } else {
        "sandy-bridge"
    }
}

/// One native run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Run {
    pub seconds: f64,
    /// The most anonymous memory in huge pages seen (sampled while it ran, and the
    /// program's own report at exit), in KiB.
    pub anon_huge_kib: u64,
}

/// Read AnonHugePages (kB) from a smaps_rollup text.
fn anon_huge(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run `target` once with `categories` backed by huge pages (none: the library is
/// loaded and does nothing, so that every run pays the same interposition).
pub fn run(target: &Target, lib: &Path, categories: &[&str]) -> Result<Run> {
    let mut cmd = Command::new(&target.command[0]);
    cmd.args(&target.command[1..]);
    if let Some(cwd) = &target.cwd {
        cmd.current_dir(cwd);
    }
    if target.clean_env {
        cmd.env_clear();
    }
    for (k, v) in &target.env {
        cmd.env(k, v);
    }
    cmd.env("LD_PRELOAD", lib)
        .env("PAGELAB_HUGE", categories.join(","))
        // The categories named are the only memory with huge pages: a program's own
        // requests (stockfish asks for its hash table) are dropped.
        .env("PAGELAB_HUGE_ONLY", "1")
        .env("PAGELAB_REPORT_HUGE", "1");
    match &target.stdout {
        Some(out) => {
            cmd.stdout(
                File::create(out).with_context(|| format!("{}: cannot create", out.display()))?,
            );
        }
        None => {
            cmd.stdout(Stdio::piped());
        }
    }
    match &target.stdin {
        Some(p) => {
            cmd.stdin(File::open(p).with_context(|| format!("{}: cannot open", p.display()))?);
        }
        None => {
            cmd.stdin(Stdio::null());
        }
    }
    cmd.stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", target.label))?;
    let pid = child.id();
    let mut driver = match &target.driver {
        Some(script) => {
            let mut d = Command::new("sh");
            d.arg("-c").arg(script).stdout(Stdio::null());
            if let Some(cwd) = &target.cwd {
                d.current_dir(cwd);
            }
            if target.clean_env {
                d.env_clear();
            }
            for (k, v) in &target.env {
                d.env(k, v);
            }
            Some(d.spawn().context("cannot start the workload's driver")?)
        }
        None => None,
    };
    // Sample the huge pages while it runs.
    let done = AtomicBool::new(false);
    let most = AtomicU64::new(0);
    let (stdout, stderr, status) = std::thread::scope(|s| -> Result<_> {
        s.spawn(|| {
            let path = format!("/proc/{pid}/smaps_rollup");
            while !done.load(Ordering::Relaxed) {
                if let Some(kb) = std::fs::read_to_string(&path)
                    .ok()
                    .as_deref()
                    .and_then(anon_huge)
                {
                    most.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let mut out = String::new();
        let mut err = String::new();
        let mut child_out = child.stdout.take();
        let mut child_err = child.stderr.take();
        let reader = s.spawn(move || {
            let mut e = String::new();
            if let Some(p) = child_err.as_mut() {
                let _ = p.read_to_string(&mut e);
            }
            e
        });
        if let Some(p) = child_out.as_mut() {
            let _ = p.read_to_string(&mut out);
        }
        let status = child.wait();
        done.store(true, Ordering::Relaxed);
        err.push_str(&reader.join().unwrap_or_default());
        Ok((out, err, status?))
    })?;
    let seconds = start.elapsed().as_secs_f64();
    if let Some(d) = driver.as_mut() {
        let _ = d.wait();
    }
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        bail!(
            "{} with PAGELAB_HUGE={:?} failed ({status}){}",
            target.label,
            categories.join(","),
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )
            }
        );
    }
    let reported = stdout.lines().filter_map(anon_huge).max().unwrap_or(0);
    Ok(Run {
        seconds,
        anon_huge_kib: most.load(Ordering::Relaxed).max(reported),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_huge_pages_are_read_from_smaps_rollup_text() {
        let text = "Rss: 100 kB\nAnonHugePages:    4096 kB\nShmemHugePages: 0 kB\n";
        assert_eq!(anon_huge(text), Some(4096));
        assert_eq!(anon_huge("Rss: 1 kB\n"), None);
    }
}
