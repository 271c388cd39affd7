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
    pub(crate) received: Arc<AtomicUsize>,
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
