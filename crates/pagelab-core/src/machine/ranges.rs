//! What range translations add to a run: eager paging acting on the trace's events,
//! in order with the references (`crate::range`).

use super::*;

impl Machine {
    /// The range tables of every address space (empty without eager paging).
    pub fn range_tables(&self) -> &crate::range::RangeTables {
        &self.ranges.tables
    }

    /// A decoupled run of a batch with events that change the page table (eager
    /// paging): the references between two such events run decoupled, their walks
    /// are done, then the event acts, as it would in order. Events that map or unmap
    /// nothing (malloc, free, markers) do not split the batch.
    #[cold]
    pub(super) fn run_split(&mut self, batch: &Batch) -> Result<(), SimError> {
        let (mut from, mut asid) = (0, self.current_asid);
        for (at, event) in &batch.events {
            match event {
                Event::SwitchAddressSpace { asid: next } => {
                    asid = *next;
                    continue;
                }
                e if crate::range::memory_change(e).is_none() => continue,
                _ => {}
            }
            let at = (*at).min(batch.refs.len());
            if at > from {
                self.run_refs::<true>(&batch.refs[from..at], &[])?;
                from = at;
            }
            self.walk_deferred()?;
            self.eager_event(asid, event)?;
        }
        self.run_refs::<true>(&batch.refs[from..], &[])?;
        self.walk_deferred()
    }

    /// Eager paging acts on an event of address space `asid`; what it unmaps leaves
    /// the TLBs and the walk caches.
    #[cold]
    pub(super) fn eager_event(&mut self, asid: Asid, event: &Event) -> Result<(), SimError> {
        let crate::range::Ranges { tables, eager, .. } = &mut self.ranges;
        let Some(eager) = eager.as_mut() else {
            return Ok(());
        };
        let reference = self.counts.references;
        self.peak_frames = self.peak_frames.max(self.walker.frames.used_frames());
        let w = &mut self.walker;
        let freed = eager
            .on_event(asid, event, &mut w.page_table, w.frames.as_mut(), tables)
            .map_err(|message| SimError { reference, message })?;
        if let Some((asid, from, to)) = freed {
            self.forget_last_page();
            match (to - from).checked_mul(1 << crate::addr::BASE_SHIFT) {
                Some(bytes) => self.tlb.invalidate_range(
                    asid,
                    VirtAddr(from << crate::addr::BASE_SHIFT),
                    bytes,
                ),
                // More than the address space: every entry of the process goes.
                None => self.tlb.flush_asid(asid),
            }
            self.tlb.invalidate_ranges(asid, from, to);
            self.walker.walk_caches.flush_all();
        }
        self.peak_frames = self.peak_frames.max(self.walker.frames.used_frames());
        Ok(())
    }
}
