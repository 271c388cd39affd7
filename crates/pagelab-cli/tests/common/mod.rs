//! What the hostile-input suites share: running pagelab as a user would, within
//! 100 MB of data memory, and checking that a refused command changed nothing.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const PAGELAB: &str = env!("CARGO_BIN_EXE_pagelab");

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh folder for one case.
pub fn folder(case: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("pagelab-hostile-{}", std::process::id()))
        .join(case);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut command = Command::new(PAGELAB);
    within_100_mb(&mut command);
    let mut child = command
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pagelab runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        // A thread: a large input must not block against a full output pipe.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    child.wait_with_output().unwrap()
}

/// Run the command with at most 100 MB of data memory (heap, anonymous maps,
/// stacks: RLIMIT_DATA) and 256 open files: an allocation beyond it fails and the
/// process aborts, which fails its case.
pub fn within_100_mb(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit, a system call, runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            use nix::sys::resource::{setrlimit, Resource};
            setrlimit(Resource::RLIMIT_DATA, 100 << 20, 100 << 20)?;
            setrlimit(Resource::RLIMIT_NOFILE, 256, 256)?;
            Ok(())
        });
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every file of `dir` with its bytes.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// Run `args` in `dir` (holding the case's input files): the run must fail with one
/// line, "pagelab: error: ...", containing every one of `names`, and leave every
/// file of the folder as it was.
pub fn refused(dir: &Path, args: &[&str], names: &[&str]) -> String {
    let before = snapshot(dir);
    let o = run_in(dir, args, None);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} exited 0: {err}");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{args:?}: not a clean failure: {err}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line: {err}"
    );
    assert!(err.starts_with("pagelab: error: "), "{args:?}: {err}");
    for name in names {
        assert!(err.contains(name), "{args:?}: names {name:?}: {err}");
    }
    assert_eq!(
        snapshot(dir),
        before,
        "{args:?} changed a file of {}",
        dir.display()
    );
    err
}

/// A usage error (an option out of its range): clap's exit status 2, naming the option.
pub fn usage_refused(dir: &Path, args: &[&str], option: &str) {
    let before = snapshot(dir);
    let o = run_in(dir, args, None);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(option), "{}", stderr(&o));
    assert_eq!(snapshot(dir), before);
}

pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

pub fn copy_trace(dir: &Path, name: &str) {
    std::fs::copy(repo().join("data/traces/xz.plt"), dir.join(name)).unwrap();
}

pub const LACKEY: &str = " L 1000,8\n S 2000,4\n";
