//! A trace read ahead on a thread of its own: the reader decodes (and decompresses)
//! the next parts while the simulation runs the current one, and hands them over
//! through a bounded queue, so that memory stays constant whatever the trace's
//! length. The parts' buffers go back to the reading thread to be filled again.
//!
//! The simulation asks for parts as [`TraceReader::next_batch`] or
//! [`TraceReader::next_plain`] gives them ([`Want`]); what it wants changes at most
//! once in a run, from whole batches to plain parts (when a warm-up ends), and a whole
//! batch serves where a plain part would, so parts read before the change are run as
//! they came. The counts are those of a run that reads in turn.

use super::{Part, TraceError, TraceReader};
use crate::event::{Batch, PlainBatch};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

/// Whether the host has a core to spare for a second thread (the data caches', or a
/// reader's).
pub fn spare_core() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Parts read and waiting for the simulation, at most.
const DEPTH: usize = 4;

/// What the simulation asks the reader for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// [`TraceReader::next_batch`].
    Batches,
    /// [`TraceReader::next_plain`] with `fetches`.
    Plain { fetches: bool },
}

impl Want {
    fn code(self) -> u8 {
        match self {
            Want::Batches => 0,
            Want::Plain { fetches: false } => 1,
            Want::Plain { fetches: true } => 2,
        }
    }
    fn from_code(c: u8) -> Want {
        match c {
            0 => Want::Batches,
            c => Want::Plain { fetches: c == 2 },
        }
    }
}

/// Where the simulation takes its parts from: a reader read in turn, or one read
/// ahead. Fills `plain` or `batch` (as `next_plain` does) with the next part.
pub trait Parts {
    fn next(
        &mut self,
        want: Want,
        plain: &mut PlainBatch,
        batch: &mut Batch,
    ) -> Result<Part, TraceError>;
    /// The reader's input position after the part last given (for progress).
    fn position(&self) -> u64;
}

impl<R: TraceReader + ?Sized> Parts for &mut R {
    fn next(
        &mut self,
        want: Want,
        plain: &mut PlainBatch,
        batch: &mut Batch,
    ) -> Result<Part, TraceError> {
        read(*self, want, plain, batch)
    }
    fn position(&self) -> u64 {
        TraceReader::position(*self)
    }
}

fn read<R: TraceReader + ?Sized>(
    reader: &mut R,
    want: Want,
    plain: &mut PlainBatch,
    batch: &mut Batch,
) -> Result<Part, TraceError> {
    match want {
        Want::Batches => {
            plain.clear();
            Ok(if reader.next_batch(batch)? {
                Part::Full
            } else {
                Part::End
            })
        }
        Want::Plain { fetches } => reader.next_plain(fetches, plain, batch),
    }
}

/// A part read ahead, with its buffers and the reader's position after it.
struct Filled {
    part: Part,
    plain: PlainBatch,
    batch: Batch,
    position: u64,
}

/// The simulation's end of a reader read ahead.
struct Ahead<'a> {
    parts: Receiver<Result<Filled, TraceError>>,
    back: Sender<(PlainBatch, Batch)>,
    want: &'a AtomicU8,
    position: u64,
    /// The trace's end was given: every later part is the end again.
    ended: bool,
}

impl Parts for Ahead<'_> {
    fn next(
        &mut self,
        want: Want,
        plain: &mut PlainBatch,
        batch: &mut Batch,
    ) -> Result<Part, TraceError> {
        if self.ended {
            plain.clear();
            batch.clear();
            return Ok(Part::End);
        }
        self.want.store(want.code(), Ordering::Relaxed);
        // The reading thread sends until the trace's end or an error; it stops without
        // either only by a panic, which the scope then raises here.
        let Ok(filled) = self.parts.recv() else {
            panic!("the thread reading the trace ahead stopped (it panicked)");
        };
        let mut f = filled?;
        self.ended = f.part == Part::End;
        std::mem::swap(plain, &mut f.plain);
        std::mem::swap(batch, &mut f.batch);
        self.position = f.position;
        // The buffers of the part before go back to be filled again (the thread may
        // have ended: then they are dropped).
        let _ = self.back.send((f.plain, f.batch));
        Ok(f.part)
    }
    fn position(&self) -> u64 {
        self.position
    }
}

/// Run `simulate` over the parts of `reader`, read ahead on a thread of its own,
/// starting with what `want` asks. When `simulate` returns (at the trace's end or
/// early), the thread stops once its read in progress is done. If no thread can be
/// had, `simulate` reads in turn.
pub fn read_ahead<T, S: FnOnce(&mut dyn Parts) -> T>(
    reader: &mut dyn TraceReader,
    want: Want,
    simulate: S,
) -> T {
    let code = AtomicU8::new(want.code());
    let (to_simulation, parts) = sync_channel(DEPTH);
    let (back, buffers) = channel::<(PlainBatch, Batch)>();
    let mut in_turn = None;
    let ahead = std::thread::scope(|s| {
        let code = &code;
        let reader = &mut *reader;
        let spawned = std::thread::Builder::new()
            .name("pagelab-reader".into())
            .spawn_scoped(s, move || loop {
                let (mut plain, mut batch) = buffers.try_recv().unwrap_or_default();
                let want = Want::from_code(code.load(Ordering::Relaxed));
                let filled = read(reader, want, &mut plain, &mut batch).map(|part| Filled {
                    part,
                    plain,
                    batch,
                    position: reader.position(),
                });
                let last = !matches!(
                    filled,
                    Ok(Filled {
                        part: Part::Plain | Part::Full,
                        ..
                    })
                );
                // The simulation stopped early: nothing more to read.
                if to_simulation.send(filled).is_err() || last {
                    return;
                }
            });
        if spawned.is_err() {
            in_turn = Some(simulate);
            return None;
        }
        let mut ahead = Ahead {
            parts,
            back,
            want: code,
            position: 0,
            ended: false,
        };
        // Dropping `ahead` when `simulate` returns lets the thread's next send fail.
        Some(simulate(&mut ahead))
    });
    match (ahead, in_turn) {
        (Some(t), _) => t,
        (None, Some(simulate)) => simulate(&mut &mut *reader),
        (None, None) => unreachable!("simulate runs one way or the other"),
    }
}
