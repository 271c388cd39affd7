//! A promotion's memory traffic under virtualization: the guest's kernel copies and
//! clears guest-physical frames, and the data caches see their host frames. A guest
//! frame the host has not mapped yet (the fresh block a copy writes) is mapped by a
//! host fault first, as the copy's first write to it takes an EPT violation. The 2D
//! walks of the kernel's own accesses are not modelled: the copy loop's addresses are
//! taken as translated.

use super::Nested;
use crate::addr::{Pfn, PhysAddr, BASE_SHIFT};
use crate::cache::CacheHierarchy;
use crate::superpage::mechanism::Traffic;

pub struct HostTraffic<'a> {
    cache: &'a mut CacheHierarchy,
    nested: &'a mut Nested,
    /// The first host fault that could not be served (out of host memory); the
    /// traffic after it is dropped, and the promotion fails with it.
    pub error: Option<String>,
}

impl<'a> HostTraffic<'a> {
    pub fn new(cache: &'a mut CacheHierarchy, nested: &'a mut Nested) -> HostTraffic<'a> {
        HostTraffic {
            cache,
            nested,
            error: None,
        }
    }

    /// `f` with the host frames of `bytes` from guest frames `a` and `b` on, in
    /// pieces none of which crosses a host page (pieces of the host's smallest page,
    /// or the whole range when that is smaller and, guest frames being aligned to the
    /// guest's page, lies in one host page).
    fn each(
        &mut self,
        a: Pfn,
        b: Pfn,
        bytes: u64,
        f: &mut dyn FnMut(&mut CacheHierarchy, Pfn, Pfn, u64),
    ) {
        let step = self.nested.host_base().bytes().min(bytes).max(1);
        let mut done = 0;
        while done < bytes && self.error.is_none() {
            let piece = step.min(bytes - done);
            let at = |p: Pfn| PhysAddr(p.addr().0 + done);
            match (self.nested.touch(at(a)), self.nested.touch(at(b))) {
                (Ok(ha), Ok(hb)) => f(
                    self.cache,
                    Pfn(ha.0 >> BASE_SHIFT),
                    Pfn(hb.0 >> BASE_SHIFT),
                    piece,
                ),
                (Err(e), _) | (_, Err(e)) => self.error = Some(e),
            }
            done += piece;
        }
    }
}

impl Traffic for HostTraffic<'_> {
    fn copy(&mut self, from: Pfn, to: Pfn, bytes: u64) {
        self.each(from, to, bytes, &mut |c, a, b, n| c.copy(a, b, n));
    }
    fn clear(&mut self, to: Pfn, bytes: u64) {
        self.each(to, to, bytes, &mut |c, _, b, n| c.clear(b, n));
    }
    fn flush(&mut self, frame: Pfn, bytes: u64) {
        self.each(frame, frame, bytes, &mut |c, a, _, n| c.flush(a, n));
    }
}
