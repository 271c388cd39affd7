//! What range translations add to a run: eager paging acting on the trace's events,
//! in order with the references (`crate::range`).

use super::*;

impl Machine {
    /// The range tables of every address space (empty without eager paging).
    pub fn range_tables(&self) -> &crate::range::RangeTables {
        &self.ranges
    }

    /// A decoupled run of a batch with events that change the page table (eager
    /// paging): the references between two events run decoupled, their walks are
    /// done, then the events act, in order, as they would in order.
    #[cold]
    pub(super) fn run_split(&mut self, batch: &Batch) -> Result<(), SimError> {
        let (mut from, mut asid) = (0, self.current_asid);
        for (at, event) in &batch.events {
            let at = (*at).min(batch.refs.len());
            if at > from {
                self.run_refs::<true>(&batch.refs[from..at], &[])?;
                from = at;
            }
            self.walk_deferred()?;
            match event {
                Event::SwitchAddressSpace { asid: next } => asid = *next,
                e => self.eager_event(asid, e)?,
            }
        }
        self.run_refs::<true>(&batch.refs[from..], &[])?;
        self.walk_deferred()
    }

    /// Eager paging acts on an event of address space `asid`; what it unmaps leaves
    /// the TLBs and the walk caches.
    #[cold]
    pub(super) fn eager_event(&mut self, asid: Asid, event: &Event) -> Result<(), SimError> {
        let Some(eager) = self.eager.as_mut() else {
            return Ok(());
        };
        let reference = self.counts.references;
        self.peak_frames = self.peak_frames.max(self.walker.frames.used_frames());
        let w = &mut self.walker;
        let freed = eager
            .on_event(
                asid,
                event,
                &mut w.page_table,
                w.frames.as_mut(),
                &mut self.ranges,
            )
            .map_err(|message| SimError { reference, message })?;
        if let Some((asid, from, to)) = freed {
            self.forget_last_page();
            let bytes = (to - from) << crate::addr::BASE_SHIFT;
            self.tlb
                .invalidate_range(asid, VirtAddr(from << crate::addr::BASE_SHIFT), bytes);
            self.tlb.invalidate_ranges(asid, from, to);
            self.walker.walk_caches.flush_all();
        }
        self.peak_frames = self.peak_frames.max(self.walker.frames.used_frames());
        Ok(())
    }
}
