//! Several traces as the processes of one machine: a round-robin scheduler runs each
//! for a quantum of references in turn. The references of trace `i` (counting from 0)
//! run in address space `i + 1` (whatever address space they carried), so that the
//! processes share nothing; a trace that ends leaves the rotation. Events stay with
//! the references they came with; a trace's own address-space switches are dropped
//! (the trace is one process here).

use super::{Metadata, TraceError, TraceReader};
use crate::addr::Asid;
use crate::event::{Batch, Event};

struct Process {
    reader: Box<dyn TraceReader + Send>,
    asid: Asid,
    /// The reader's current batch and how far into it the scheduler has run.
    batch: Batch,
    next: usize,
    /// Position of the next event of `batch` to hand on.
    next_event: usize,
    done: bool,
}

pub struct Interleaved {
    processes: Vec<Process>,
    quantum: usize,
    /// The process running and what is left of its quantum.
    current: usize,
    left: usize,
    metadata: Metadata,
}

impl Interleaved {
    /// `quantum` references per turn (at least 1). At most 65535 traces.
    pub fn new(
        readers: Vec<Box<dyn TraceReader + Send>>,
        quantum: usize,
    ) -> Result<Interleaved, String> {
        if readers.is_empty() {
            return Err("interleaving needs at least one trace".into());
        }
        if readers.len() >= u16::MAX as usize {
            return Err(format!(
                "{} traces are more than the 65534 address spaces",
                readers.len()
            ));
        }
        if quantum == 0 {
            return Err("quantum: must be at least one reference".into());
        }
        let metadata = readers[0].metadata().clone();
        Ok(Interleaved {
            processes: readers
                .into_iter()
                .enumerate()
                .map(|(i, reader)| Process {
                    reader,
                    asid: Asid(i as u16 + 1),
                    batch: Batch::default(),
                    next: 0,
                    next_event: 0,
                    done: false,
                })
                .collect(),
            quantum,
            current: 0,
            left: quantum,
            metadata,
        })
    }
}

impl TraceReader for Interleaved {
    fn next_batch(&mut self, out: &mut Batch) -> Result<bool, TraceError> {
        out.clear();
        let target = super::BATCH_REFS;
        while out.refs.len() < target {
            if self.processes.iter().all(|p| p.done) {
                break;
            }
            let p = &mut self.processes[self.current];
            if !p.done && p.next == p.batch.refs.len() {
                // Events after the last reference of a batch belong before the next.
                p.batch.clear();
                p.next = 0;
                p.next_event = 0;
                if !p.reader.next_batch(&mut p.batch)? {
                    p.done = true;
                }
            }
            if p.done {
                self.current = (self.current + 1) % self.processes.len();
                self.left = self.quantum;
                continue;
            }
            let take = self
                .left
                .min(p.batch.refs.len() - p.next)
                .min(target - out.refs.len());
            let start = p.next;
            while let Some((at, ev)) = p.batch.events.get(p.next_event) {
                let at = *at;
                if at >= start + take && !(at == p.batch.refs.len() && start + take == at) {
                    break;
                }
                if !matches!(ev, Event::SwitchAddressSpace { .. }) {
                    out.events.push((out.refs.len() + (at - start), ev.clone()));
                }
                p.next_event += 1;
            }
            out.refs
                .extend(p.batch.refs[start..start + take].iter().map(|r| {
                    let mut r = *r;
                    r.asid = p.asid;
                    r
                }));
            p.next += take;
            self.left -= take;
            if self.left == 0 {
                self.current = (self.current + 1) % self.processes.len();
                self.left = self.quantum;
            }
        }
        Ok(!out.refs.is_empty() || !out.events.is_empty())
    }

    fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    fn position(&self) -> u64 {
        self.processes.iter().map(|p| p.reader.position()).sum()
    }

    fn warning(&self) -> Option<&str> {
        self.processes.iter().find_map(|p| p.reader.warning())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AccessKind, MemRef};

    /// A reader over fixed references, in batches of `per_batch`.
    struct Fixed {
        refs: Vec<MemRef>,
        at: usize,
        per_batch: usize,
        metadata: Metadata,
    }

    impl TraceReader for Fixed {
        fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
            batch.clear();
            let end = (self.at + self.per_batch).min(self.refs.len());
            batch.refs.extend_from_slice(&self.refs[self.at..end]);
            self.at = end;
            Ok(!batch.refs.is_empty())
        }
        fn metadata(&self) -> &Metadata {
            &self.metadata
        }
        fn position(&self) -> u64 {
            self.at as u64
        }
    }

    fn fixed(base: u64, n: u64, per_batch: usize) -> Box<dyn TraceReader + Send> {
        Box::new(Fixed {
            refs: (0..n)
                .map(|i| MemRef::new(base + i, 1, AccessKind::Load))
                .collect(),
            at: 0,
            per_batch,
            metadata: Metadata::default(),
        })
    }

    #[test]
    fn round_robin_by_quantum_until_each_ends() {
        let mut il = Interleaved::new(
            vec![fixed(100, 5, 2), fixed(200, 2, 3), fixed(300, 4, 1)],
            2,
        )
        .unwrap();
        let mut all = Vec::new();
        let mut batch = Batch::default();
        while il.next_batch(&mut batch).unwrap() {
            all.extend(batch.refs.iter().map(|r| (r.asid.0, r.addr.0)));
        }
        assert_eq!(
            all,
            [
                (1, 100),
                (1, 101),
                (2, 200),
                (2, 201),
                (3, 300),
                (3, 301),
                (1, 102),
                (1, 103),
                (3, 302),
                (3, 303),
                (1, 104),
            ]
        );
        assert!(Interleaved::new(vec![fixed(0, 1, 1)], 0).is_err());
    }
}
