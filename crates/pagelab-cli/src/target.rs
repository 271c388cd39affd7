//! What `pagelab record` runs under Valgrind, and how: a command line, or a workload
//! of the catalogue (`crate::workloads` makes those).

use std::ffi::OsString;
use std::path::PathBuf;

/// What runs under Valgrind, and how.
pub struct Target {
    pub command: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub stdin: Option<PathBuf>,
    /// A shell command run beside the program once it has started (servers' load).
    pub driver: Option<String>,
    pub env: Vec<(String, OsString)>,
    pub label: String,
    /// Run with only `env` (and VALGRIND_LIB) in the environment.
    pub clean_env: bool,
    /// Where the program's standard output goes (inherited when `None`).
    pub stdout: Option<PathBuf>,
}

impl Target {
    /// The program file the command runs (found on PATH when it names no directory),
    /// if it exists.
    pub fn program(&self) -> Option<PathBuf> {
        let first = PathBuf::from(self.command.first()?);
        if first.components().count() > 1 {
            let full = match &self.cwd {
                Some(cwd) if first.is_relative() => cwd.join(&first),
                _ => first,
            };
            return full.is_file().then_some(full);
        }
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(&first))
            .find(|p| p.is_file())
    }

    /// The driver, as a command to spawn in the target's folder and environment.
    pub fn driver_command(&self) -> Option<std::process::Command> {
        let script = self.driver.as_ref()?;
        let mut d = std::process::Command::new("sh");
        d.arg("-c").arg(script);
        if let Some(cwd) = &self.cwd {
            d.current_dir(cwd);
        }
        if self.clean_env {
            d.env_clear();
        }
        for (k, v) in &self.env {
            d.env(k, v);
        }
        Some(d)
    }

    pub fn from_command(command: &[OsString]) -> Target {
        let line: Vec<String> = command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        Target {
            command: command.to_vec(),
            cwd: None,
            stdin: None,
            driver: None,
            env: Vec::new(),
            label: line.join(" "),
            clean_env: false,
            stdout: None,
        }
    }
}
