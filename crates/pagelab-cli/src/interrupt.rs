//! SIGINT and SIGTERM while `pagelab record` runs: caught rather than fatal, so that
//! the recorded program is stopped, the trace it wrote so far is finished, and the
//! command exits as a shell would report the signal (128 + its number).

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the program has to end after SIGTERM before it is killed outright (a
/// program killed outright leaves its stream cut short: the trace keeps what arrived).
const GRACE: Duration = Duration::from_millis(1500);

/// SIGINT and SIGTERM caught, from [`Interrupts::catch`] on; the hooks are removed
/// when the value is dropped, just before `pagelab record` ends (signal-hook leaves its
/// own handler in place, so a signal after that is not fatal: the command is exiting).
pub struct Interrupts {
    received: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    pub fn catch() -> std::io::Result<Interrupts> {
        let received = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            ids.push(signal_hook::flag::register_usize(
                sig,
                Arc::clone(&received),
                sig as usize,
            )?);
        }
        Ok(Interrupts { received, ids })
    }

    /// The signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }

    /// Watch, on a thread of its own, for a signal while `pid` runs: then ask it to
    /// end (SIGTERM), and kill it if it has not ended after a grace period. The
    /// watch ends when the returned guard is dropped.
    pub fn stop_on_signal(&self, pid: u32) -> Watch {
        let done = Arc::new(AtomicBool::new(false));
        let (received, finished) = (Arc::clone(&self.received), Arc::clone(&done));
        let pid = Pid::from_raw(pid as i32);
        std::thread::spawn(move || {
            while !finished.load(Ordering::SeqCst) {
                if received.load(Ordering::SeqCst) != 0 {
                    let _ = kill(pid, Signal::SIGTERM);
                    let asked = Instant::now();
                    while !finished.load(Ordering::SeqCst) {
                        if asked.elapsed() > GRACE {
                            let _ = kill(pid, Signal::SIGKILL);
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Watch(done)
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Ends its watch when dropped (the program was waited for).
pub struct Watch(Arc<AtomicBool>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The name of signal `sig` ("SIGINT"), or its number.
pub fn name(sig: i32) -> String {
    Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
}

/// SIGINT and SIGTERM while a command that runs other programs and keeps temporary
/// files runs (`pagelab advise`): its children are asked to end (SIGTERM, then
/// SIGKILL after the grace period), its temporary files removed, and the process
/// exits as a shell reports the signal, wherever the command was, even when only
/// its own process was signalled. (Killed outright, it cannot clean up: its
/// children are then ended by the kernel, as [`end_with_parent`] asks.)
pub struct Supervisor {
    state: Arc<std::sync::Mutex<Supervised>>,
    done: Arc<AtomicBool>,
    interrupts: Interrupts,
}

#[derive(Default)]
struct Supervised {
    children: Vec<Pid>,
    files: Vec<std::path::PathBuf>,
}

impl Supervisor {
    pub fn start() -> std::io::Result<Supervisor> {
        let interrupts = Interrupts::catch()?;
        let state = Arc::new(std::sync::Mutex::new(Supervised::default()));
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
                let (children, files) = {
                    let s = watched.lock().unwrap_or_else(|e| e.into_inner());
                    (s.children.clone(), s.files.clone())
                };
                end_all(&children);
                for f in &files {
                    let _ = std::fs::remove_file(f);
                }
                eprintln!(
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

    /// Stop the child `pid` on a signal until the returned guard is dropped (after it
    /// was waited for).
    pub fn child(&self, pid: u32) -> Supervising<'_> {
        let pid = Pid::from_raw(pid as i32);
        self.with(|s| s.children.push(pid));
        Supervising {
            supervisor: self,
            what: What::Child(pid),
        }
    }

    /// Remove the file at `path` on a signal, and when the returned guard is dropped.
    pub fn temporary(&self, path: &std::path::Path) -> Supervising<'_> {
        self.with(|s| s.files.push(path.to_path_buf()));
        Supervising {
            supervisor: self,
            what: What::File(path.to_path_buf()),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

enum What {
    Child(Pid),
    File(std::path::PathBuf),
}

/// A child or a temporary file under a [`Supervisor`], until dropped.
pub struct Supervising<'a> {
    supervisor: &'a Supervisor,
    what: What,
}

impl Drop for Supervising<'_> {
    fn drop(&mut self) {
        match &self.what {
            What::Child(pid) => self.supervisor.with(|s| s.children.retain(|c| c != pid)),
            What::File(path) => {
                let _ = std::fs::remove_file(path);
                self.supervisor.with(|s| s.files.retain(|f| f != path));
            }
        }
    }
}

/// Ask every process of `children` to end; kill those still running after the grace
/// period; return once all have ended (exited, even if not yet waited for).
fn end_all(children: &[Pid]) {
    for &pid in children {
        let _ = kill(pid, Signal::SIGTERM);
    }
    let asked = Instant::now();
    while !children.iter().all(|&p| ended(p)) {
        if asked.elapsed() > GRACE {
            for &pid in children {
                let _ = kill(pid, Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` has ended: gone, or a zombie waiting to be reaped.
fn ended(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Ask the kernel to send SIGTERM to the command's child when this process dies,
/// however it dies (killed outright included): to call before spawning it.
pub fn end_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only prctl, which is async-signal-safe, runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)?;
            Ok(())
        });
    }
}
