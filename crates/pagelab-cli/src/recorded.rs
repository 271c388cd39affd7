//! Catalogue workloads recorded once and kept: the traces of the papers' own kernels
//! that `pagelab repro` runs its experiments on (`workload:NAME` in a claim file).
//!
//! A workload is recorded with `pagelab record --workload NAME` into the trace cache
//! (`--cache`, else [`pagelab_repro::run::default_cache`]) as `NAME.plt`, always with
//! pagelab's own Valgrind tool (lackey records no allocations, which the analyses of
//! data categories need), beside `NAME.recipe`: the SHA-256 of what made it (the
//! catalogue entry, `prepare.sh`, and for our own kernels their source, the headers
//! beside it, `recorder/include/pagelab.h` and the C compiler's version). A trace whose
//! recipe still matches is reused; any other is recorded again.
//! The trace appears whole or not at all: it is recorded under another name and
//! renamed.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What made workload `name`'s trace, as a SHA-256 in hex.
fn recipe(name: &str) -> Result<String> {
    let dir = crate::catalogue::find()?;
    let all = crate::catalogue::load(&dir)?;
    let Some(w) = all.iter().find(|w| w.name == name) else {
        bail!(
            "no workload {name:?} in {}",
            dir.join("catalogue.toml").display()
        );
    };
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(w)?);
    let mut hash_file = |p: &Path| -> Result<()> {
        let bytes = std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?;
        h.update(p.file_name().unwrap_or_default().as_encoded_bytes());
        h.update(bytes);
        Ok(())
    };
    hash_file(&dir.join("prepare.sh"))?;
    // Our own kernels: `./gups` is built from src/gups.c, the headers beside it and
    // the recorder's client requests, by the C compiler on PATH.
    if let Some(exe) = w.command.first().and_then(|c| c.strip_prefix("./")) {
        let source = dir.join("src").join(format!("{exe}.c"));
        if source.is_file() {
            hash_file(&source)?;
            let mut headers: Vec<PathBuf> = std::fs::read_dir(dir.join("src"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "h"))
                .collect();
            headers.sort();
            if let Some(repo) = dir.parent() {
                headers.push(repo.join("recorder/include/pagelab.h"));
            }
            for p in headers.iter().filter(|p| p.is_file()) {
                hash_file(p)?;
            }
            let gcc = std::process::Command::new("gcc").arg("--version").output();
            h.update(gcc.map(|o| o.stdout).unwrap_or_default());
        }
    }
    Ok(format!("{:x}", h.finalize()))
}

/// Workload `name`'s trace in `cache`, recorded now if it is missing or was made
/// otherwise (progress on standard error unless `quiet`).
pub fn ensure(cache: &Path, name: &str, quiet: bool) -> Result<PathBuf> {
    let trace = cache.join(format!("{name}.plt"));
    let stamp = cache.join(format!("{name}.recipe"));
    let want = recipe(name)?;
    let have = std::fs::read_to_string(&stamp).unwrap_or_default();
    if trace.is_file() && have.trim() == want {
        return Ok(trace);
    }
    std::fs::create_dir_all(cache)
        .with_context(|| format!("{}: cannot make the trace cache", cache.display()))?;
    if !quiet {
        eprintln!(
            "pagelab: recording workload {name} into {} (once: it is kept there)",
            cache.display()
        );
    }
    let partial = cache.join(format!(".{name}.plt.partial"));
    let exe = std::env::current_exe().context("cannot find pagelab's own executable")?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["record", "--tool", "pagelab", "--workload", name, "-o"])
        .arg(&partial);
    if quiet {
        command.arg("--quiet");
    }
    let status = command
        .status()
        .with_context(|| format!("pagelab record --workload {name}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&partial);
        bail!("pagelab record --workload {name}: {status} (its output is above)");
    }
    std::fs::rename(&partial, &trace)
        .with_context(|| format!("{}: cannot write", trace.display()))?;
    std::fs::write(&stamp, format!("{want}\n"))
        .with_context(|| format!("{}: cannot write", stamp.display()))?;
    Ok(trace)
}
