//! The machine's side of virtualized translation (`crate::virt`): the walker makes
//! every walk two-dimensional; here, what checks look up of the two tables and of
//! the caches they address.

use super::Machine;
use crate::addr::{Asid, PhysAddr, VirtAddr};
use crate::pagetable::Translation;

impl Machine {
    /// The guest's translation of `va` (the native one without `[virtualization]`),
    /// counting nothing: for checks.
    pub fn guest_translation(&self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        self.walker.page_table.as_ref().walk(asid, va).translation
    }

    /// What a TLB entry for `va` holds, from the tables and counting nothing: the
    /// guest translation composed with the host's under `[virtualization]` (the host
    /// frame, the smaller of the two pages), else the translation. For checks.
    pub fn entry_of(&self, asid: Asid, va: VirtAddr) -> Option<Translation> {
        self.walker.entry_of(asid, va)
    }

    /// The host's translation of the guest-physical address `gpa` under
    /// `[virtualization]`, counting nothing: for checks.
    pub fn host_translation(&self, gpa: PhysAddr) -> Option<Translation> {
        self.walker.nested.as_ref()?.lookup(gpa)
    }

    /// The data caches, if modelled. For checks.
    pub fn caches(&self) -> Option<&crate::cache::CacheHierarchy> {
        self.walker.cache.as_ref()
    }
}
