//! A cache hierarchy on a thread of its own, fed streams of references
//! ([`CacheHierarchy::access_stream`]) in order through a bounded queue: the thread
//! that makes the references goes on while the caches take them, and the streams'
//! buffers go back to it to be filled again, so memory stays bounded. The hierarchy
//! sees the same references in the same order as it would on the caller's thread,
//! so every count is the same.

use super::CacheHierarchy;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Streams handed over and not yet given back: enough that a batch of many walks (a
/// stretch of TLB misses) waits in the queue while the caches still read easier ones,
/// instead of stopping the thread that makes them (2 to 8: `skylake` on the standard
/// trace from 44–48 to 49–51 M refs/s, and about 3 MB more at its peak).
const DEPTH: usize = 8;

pub struct CacheWorker {
    work: SyncSender<Vec<u64>>,
    done: Receiver<Vec<u64>>,
    in_flight: usize,
    thread: Option<JoinHandle<CacheHierarchy>>,
}

impl std::fmt::Debug for CacheWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheWorker")
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl CacheWorker {
    /// Start a thread that owns `cache`; `Err(cache)` back if no thread can start.
    pub fn start(cache: CacheHierarchy) -> Result<CacheWorker, CacheHierarchy> {
        let (work, todo) = sync_channel::<Vec<u64>>(DEPTH);
        // Room for every buffer in flight: the thread never waits to give one back.
        let (give_back, done) = sync_channel::<Vec<u64>>(DEPTH);
        // The hierarchy follows once the thread runs, so that a failed start keeps it.
        let (hand_over, receive) = sync_channel::<CacheHierarchy>(1);
        let thread = std::thread::Builder::new()
            .name("pagelab-caches".into())
            .spawn(move || {
                let mut cache = receive.recv().expect("the hierarchy is handed over");
                while let Ok(mut stream) = todo.recv() {
                    cache.access_stream(&stream);
                    stream.clear();
                    // Never full (see above); after `finish`, nobody takes it.
                    let _ = give_back.try_send(stream);
                }
                cache
            });
        let Ok(thread) = thread else {
            return Err(cache);
        };
        hand_over
            .send(cache)
            .expect("the thread waits for the hierarchy");
        Ok(CacheWorker {
            work,
            done,
            in_flight: 0,
            thread: Some(thread),
        })
    }

    /// Hand `stream` over to the caches; it is left empty, holding the buffer of an
    /// earlier stream when one is free. Waits while [`DEPTH`] streams are in flight.
    pub fn submit(&mut self, stream: &mut Vec<u64>) {
        let full = std::mem::take(stream);
        let back = if self.in_flight == DEPTH {
            self.done.recv().ok()
        } else {
            self.done.try_recv().ok()
        };
        if let Some(buffer) = back {
            *stream = buffer;
            self.in_flight -= 1;
        }
        if self.work.send(full).is_err() {
            self.raise();
        }
        self.in_flight += 1;
    }

    /// Wait for every stream handed over to be read: the hierarchy back, every
    /// reference counted.
    pub fn finish(mut self) -> CacheHierarchy {
        let thread = self.thread.take().expect("joined once");
        drop(self);
        match thread.join() {
            Ok(cache) => cache,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// The thread ended while streams were coming, which only a panic there does:
    /// raise it here.
    #[cold]
    fn raise(&mut self) -> ! {
        match self.thread.take().map(JoinHandle::join) {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            _ => panic!("the caches' thread ended while references were still coming"),
        }
    }
}
