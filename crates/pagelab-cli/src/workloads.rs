//! The catalogue of real workloads (workloads/catalogue.toml) that `pagelab record
//! --workload NAME` records: programs from the package registries, their inputs made by
//! a `prepare` command in a work folder, optionally a driver that loads a server.

use crate::catalogue;
use crate::target::Target;
use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Print the validated catalogue: one workload per line, or as JSON (a list of
/// objects with every field, the optional ones filled with "": what the scripts of
/// workloads/ read).
pub fn list(json: bool) -> Result<()> {
    let workloads = catalogue::load(&catalogue::find()?)?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&workloads)?)?;
        return Ok(());
    }
    for w in workloads {
        let needs: Vec<&str> = w.apt.iter().chain(&w.pip).map(String::as_str).collect();
        writeln!(
            out,
            "{:<16} {:<7} {}{}",
            w.name,
            w.size,
            w.description,
            if needs.is_empty() {
                String::new()
            } else {
                format!(" [needs {}]", needs.join(", "))
            }
        )?;
    }
    Ok(())
}

/// The program is on PATH (or is a path that exists).
fn runnable(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
}

/// Prepare workload `name`'s inputs and say how to run it.
pub fn target(name: &str, quiet: bool) -> Result<Target> {
    let dir = catalogue::find()?;
    let all = catalogue::load(&dir)?;
    let Some(w) = all.iter().find(|w| w.name == name) else {
        let names: Vec<&str> = all.iter().map(|w| w.name.as_str()).collect();
        bail!("unknown workload {name:?} (known: {})", names.join(", "));
    };
    let repo = dir.parent().unwrap_or(&dir);
    let venv_python = repo.join(".venv/bin/python");
    let python = if venv_python.is_file() {
        venv_python
    } else {
        PathBuf::from("python3")
    };
    let fill = |s: &str| {
        s.replace("${PAGELAB_WORKLOADS}", &dir.to_string_lossy())
            .replace("${PYTHON}", &python.to_string_lossy())
    };
    let command: Vec<String> = w.command.iter().map(|a| fill(a)).collect();
    let Some(program) = command.first() else {
        bail!("workload {name}: its command is empty");
    };
    // A relative path (`./gups`) names what `prepare` builds in the work folder: it
    // is looked for there, after `prepare`.
    let made_by_prepare = program.contains('/') && !Path::new(program).is_absolute();
    if !made_by_prepare && !runnable(program) {
        bail!(
            "workload {name}: {program} is not installed; run `workloads/setup.sh {name}` (it installs {})",
            w.apt.iter().chain(&w.pip).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let work = std::env::temp_dir().join("pagelab-workloads").join(name);
    std::fs::create_dir_all(&work).with_context(|| format!("{}: cannot create", work.display()))?;
    // A fixed, clean environment: the locale alone doubles what `sort` does, and git
    // reads $HOME. (VALGRIND_LIB is added by the recorder.)
    let env = vec![
        ("PAGELAB_WORKLOADS".to_string(), OsString::from(&dir)),
        ("PYTHON".to_string(), OsString::from(&python)),
        (
            "PATH".to_string(),
            OsString::from("/usr/local/bin:/usr/bin:/bin:/usr/games"),
        ),
        ("HOME".to_string(), OsString::from(&work)),
        ("LC_ALL".to_string(), OsString::from("C")),
        ("TZ".to_string(), OsString::from("UTC")),
        ("PYTHONHASHSEED".to_string(), OsString::from("0")),
        ("PERL_HASH_SEED".to_string(), OsString::from("0")),
        ("PERL_PERTURB_KEYS".to_string(), OsString::from("0")),
    ];
    if !w.prepare.is_empty() {
        if !quiet {
            eprintln!("pagelab: preparing {name} in {}", work.display());
        }
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&w.prepare)
            .current_dir(&work)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .status()
            .context("cannot run sh")?;
        if !status.success() {
            bail!(
                "workload {name}: its prepare command `{}` failed ({status})",
                w.prepare
            );
        }
    }
    if made_by_prepare && !work.join(program).is_file() {
        bail!(
            "workload {name}: {program} is not in {} after its prepare command; run `workloads/setup.sh {name}` (it installs {})",
            work.display(),
            w.apt.iter().chain(&w.pip).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let stdin = (!w.stdin.is_empty()).then(|| work.join(fill(&w.stdin)));
    Ok(Target {
        command: command.iter().map(OsString::from).collect(),
        cwd: Some(work.clone()),
        stdin,
        driver: (!w.driver.is_empty()).then(|| w.driver.clone()),
        env,
        clean_env: true,
        stdout: Some(work.join("stdout.txt")),
        label: format!("{name}: {}", w.description),
    })
}
