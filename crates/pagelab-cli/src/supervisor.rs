//! SIGINT and SIGTERM while a command that runs other programs and keeps temporary
//! files runs (`pagelab advise`): the process groups of its children are asked to end
//! (SIGTERM, then SIGKILL after a grace period), its temporary files and folders
//! removed, and the process exits as a shell reports the signal, wherever the command
//! was, even when only its own process was signalled. Killed outright, it cannot clean
//! up: its children are then ended by the kernel ([`prepare`] asks for that).

use crate::interrupt::{name, Interrupts};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the children have to end after SIGTERM: longer than `pagelab record`
/// takes to stop Valgrind and finish its trace, so that a recording child ends on
/// its own and leaves nothing half-written.
const GRACE: Duration = Duration::from_secs(5);

pub struct Supervisor {
    state: Arc<Mutex<Supervised>>,
    done: Arc<AtomicBool>,
    interrupts: Interrupts,
}

/// A child: its process id and start time (`/proc/PID/stat` field 22), which tell it
/// from a later process given the same id.
#[derive(Clone, Copy, PartialEq)]
struct Child {
    pid: Pid,
    start: u64,
}

#[derive(Default)]
struct Supervised {
    children: Vec<Child>,
    paths: Vec<PathBuf>,
}

/// Before spawning a supervised child: it leads a process group of its own (what it
/// starts is ended with it), and the kernel sends it SIGTERM if this process dies.
pub fn prepare(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    crate::interrupt::end_with_parent(command);
}

impl Supervisor {
    pub fn start() -> std::io::Result<Supervisor> {
        let interrupts = Interrupts::catch()?;
        let state = Arc::new(Mutex::new(Supervised::default()));
        let done = Arc::new(AtomicBool::new(false));
        let (received, watched, finished) = (
            Arc::clone(&interrupts.received),
            Arc::clone(&state),
            Arc::clone(&done),
        );
        std::thread::spawn(move || {
            while !finished.load(Ordering::SeqCst) {
                let sig = received.load(Ordering::SeqCst);
                if sig == 0 {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                let (children, paths) = {
                    let s = watched.lock().unwrap_or_else(|e| e.into_inner());
                    (s.children.clone(), s.paths.clone())
                };
                end_all(&children);
                for p in &paths {
                    remove(p);
                }
                // Standard error may be a closed pipe by now: nothing to say then.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "pagelab: interrupted by {}: the programs it ran were stopped and its temporary files (a recording included) removed",
                    name(sig as i32)
                );
                std::process::exit(128 + sig as i32);
            }
        });
        Ok(Supervisor {
            state,
            done,
            interrupts,
        })
    }

    /// After the command's work, ended or failed: if a signal came, a failure is its
    /// consequence (a child stopped), so wait for the cleanup, which exits.
    pub fn settle(&self) {
        if self.interrupts.received().is_some() {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Supervised) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// End the child `pid` (spawned after [`prepare`]) and its process group on a
    /// signal, until the returned guard is dropped.
    pub fn child(&self, pid: u32) -> Supervising<'_> {
        let pid = Pid::from_raw(pid as i32);
        let child = start_time(pid).map(|start| Child { pid, start });
        if let Some(c) = child {
            self.with(|s| s.children.push(c));
        }
        Supervising {
            supervisor: self,
            what: What::Child(child),
        }
    }

    /// Remove the file or folder at `path` on a signal, and when the returned guard
    /// is dropped.
    pub fn temporary(&self, path: &Path) -> Supervising<'_> {
        self.with(|s| s.paths.push(path.to_path_buf()));
        Supervising {
            supervisor: self,
            what: What::Path(path.to_path_buf()),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

enum What {
    Child(Option<Child>),
    Path(PathBuf),
}

/// A child or a temporary file under a [`Supervisor`], until dropped.
pub struct Supervising<'a> {
    supervisor: &'a Supervisor,
    what: What,
}

impl Drop for Supervising<'_> {
    fn drop(&mut self) {
        match &self.what {
            What::Child(c) => self
                .supervisor
                .with(|s| s.children.retain(|x| Some(*x) != *c)),
            What::Path(path) => {
                remove(path);
                self.supervisor.with(|s| s.paths.retain(|p| p != path));
            }
        }
    }
}

fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// The start time of process `pid` (clock ticks since boot), while it exists (a
/// zombie included).
fn start_time(pid: Pid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (in parentheses): state is field 3, start time 22.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the child is still the process it was and has not exited.
fn running(c: &Child) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", c.pid)) else {
        return false;
    };
    let alive = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']));
    alive && start_time(c.pid) == Some(c.start)
}

/// Signal the process group each child leads, while the child is the process it was
/// (exited but not yet reaped counts: its group may live on).
fn signal_groups(children: &[Child], signal: Signal) {
    for c in children {
        if start_time(c.pid) == Some(c.start) {
            let _ = kill(Pid::from_raw(-c.pid.as_raw()), signal);
        }
    }
}

/// Ask every child's group to end; kill them if a child still runs after the grace
/// period; return once every child has ended (exited, even if not yet reaped).
fn end_all(children: &[Child]) {
    signal_groups(children, Signal::SIGTERM);
    let asked = Instant::now();
    while children.iter().any(running) {
        if asked.elapsed() > GRACE {
            signal_groups(children, Signal::SIGKILL);
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
