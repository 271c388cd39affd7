//! Running a program natively with chosen data categories backed by transparent huge
//! pages (`pagelab advise`): the preload library `make native` builds
//! (native/huge_*.c) calls `madvise(MADV_HUGEPAGE)` on the regions of the
//! categories named in `PAGELAB_HUGE`, and only those (`PAGELAB_HUGE_ONLY`: the
//! program's own requests for huge pages are dropped); each run is timed (wall clock, from start to
//! exit) and the huge pages the process really got are read from
//! /proc/PID/smaps_rollup while it runs, and from the `AnonHugePages:` line our own
//! programs print at exit with `PAGELAB_REPORT_HUGE=1`.

use crate::target::Target;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The categories the library can back (its `PAGELAB_HUGE` names).
pub const BACKED: [&str; 3] = ["static", "small-dynamic", "large-dynamic"];

/// A program or library `make native` builds into target/native, beside this
/// executable's target folder or the repository's.
pub fn built(name: &str) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // target/release/pagelab -> target/native
        if let Some(target) = exe.parent().and_then(Path::parent) {
            candidates.push(target.join("native").join(name));
        }
    }
    candidates.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/native")
            .join(name),
    );
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| format!("target/native/{name} is not built (make native builds it)"))
}

/// Where `make native` puts the library; `PAGELAB_HUGE_LIB` overrides the search.
pub fn library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("PAGELAB_HUGE_LIB") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("PAGELAB_HUGE_LIB: {} is not a file", p.display());
    }
    built("libpagelab_huge.so").context("the huge-page preload library is not built")
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
/// loaded and does nothing, so that every run pays the same interposition). The
/// program's output goes to files (its own, or temporary ones read afterwards), so
/// that nothing it leaves running can hold a pipe open.
pub fn run(
    target: &Target,
    lib: &Path,
    categories: &[&str],
    supervisor: &crate::supervisor::Supervisor,
) -> Result<Run> {
    let scratch = tempfile::tempdir().context("cannot make a temporary folder")?;
    let _scratch_removed = supervisor.temporary(scratch.path());
    let out_path = target
        .stdout
        .clone()
        .unwrap_or_else(|| scratch.path().join("stdout"));
    let err_path = scratch.path().join("stderr");
    let create =
        |p: &Path| File::create(p).with_context(|| format!("{}: cannot create", p.display()));
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
    // Ours first, then whatever the program is run with already (an allocator).
    let mut preload = lib.as_os_str().to_os_string();
    if let Some(more) = (!target.clean_env)
        .then(|| std::env::var_os("LD_PRELOAD"))
        .flatten()
    {
        preload.push(" ");
        preload.push(more);
    }
    cmd.env("LD_PRELOAD", preload)
        .env("PAGELAB_HUGE", categories.join(","))
        // The categories named are the only memory with huge pages: a program's own
        // requests (stockfish asks for its hash table) are dropped.
        .env("PAGELAB_HUGE_ONLY", "1")
        .env("PAGELAB_REPORT_HUGE", "1")
        .stdout(create(&out_path)?)
        .stderr(create(&err_path)?);
    match &target.stdin {
        Some(p) => {
            cmd.stdin(File::open(p).with_context(|| format!("{}: cannot open", p.display()))?);
        }
        None => {
            cmd.stdin(Stdio::null());
        }
    }
    crate::supervisor::prepare(&mut cmd);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", target.label))?;
    let _supervised = supervisor.child(child.id());
    let mut driver = match target.driver_command().map(|mut d| {
        crate::supervisor::prepare(&mut d);
        d.stdout(Stdio::null()).spawn()
    }) {
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e).context("cannot start the workload's driver");
        }
        None => None,
    };
    let _driver_supervised = driver.as_ref().map(|d| supervisor.child(d.id()));
    // Sample the huge pages while it runs (each read walks the process's page
    // tables: not too often).
    let pid = child.id();
    let done = AtomicBool::new(false);
    let most = AtomicU64::new(0);
    let (status, seconds) = std::thread::scope(|s| {
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
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let status = child.wait();
        let seconds = start.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        (status, seconds)
    });
    let status = status?;
    if let Some(d) = driver.as_mut() {
        let s = d.wait()?;
        if !s.success() {
            bail!(
                "{}: the workload's driver ended with {s}: the run measured nothing",
                target.label
            );
        }
    }
    // The last lines of a file, as text, however long or binary it is.
    let lines_of = |p: &Path| -> Vec<String> {
        let bytes = std::fs::read(p).unwrap_or_default();
        let tail = &bytes[bytes.len().saturating_sub(64 << 10)..];
        String::from_utf8_lossy(tail)
            .lines()
            .map(str::to_string)
            .collect()
    };
    if !status.success() {
        let err = lines_of(&err_path);
        let tail: Vec<&str> = err.iter().rev().take(3).rev().map(String::as_str).collect();
        bail!(
            "{} with PAGELAB_HUGE={:?} failed ({status}){}",
            target.label,
            categories.join(","),
            if tail.is_empty() {
                String::new()
            } else {
                format!(": {}", tail.join(" / "))
            }
        );
    }
    let reported = lines_of(&out_path)
        .iter()
        .filter_map(|l| anon_huge(l))
        .max()
        .unwrap_or(0);
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
