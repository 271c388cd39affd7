//! A promotion's memory traffic under virtualization: the guest's kernel copies and
//! clears guest-physical frames. A guest frame the host has not mapped yet (the fresh
//! block a copy writes) is mapped by a host fault first, as the copy's first write to
//! it takes an EPT violation, with or without a cache model; with one, the traffic
//! reaches the data caches at the host frames. The 2D walks of the kernel's own
//! accesses are not modelled: the copy loop's addresses are taken as translated.

use super::Nested;
use crate::addr::{Pfn, PhysAddr, BASE_SHIFT};
use crate::cache::CacheHierarchy;
use crate::superpage::mechanism::Traffic;

pub(crate) struct HostTraffic<'a> {
    cache: Option<&'a mut CacheHierarchy>,
    nested: &'a mut Nested,
    /// The first host fault that could not be served (out of host memory); the
    /// traffic after it is dropped, and the promotion fails with it.
    pub(crate) error: Option<String>,
}

impl<'a> HostTraffic<'a> {
    pub(crate) fn new(
        cache: Option<&'a mut CacheHierarchy>,
        nested: &'a mut Nested,
    ) -> HostTraffic<'a> {
        HostTraffic {
            cache,
            nested,
            error: None,
        }
    }

    /// `f` with the host frames of `bytes` from guest frames `a` and `b` on (`b` none:
    /// `a` alone), in pieces none of which crosses a host page: pieces of the host's
    /// smallest page, or the whole range when that is smaller and, guest frames being
    /// aligned to the guest's page, lies in one host page.
    fn each(
        &mut self,
        a: Pfn,
        b: Option<Pfn>,
        bytes: u64,
        f: &mut dyn FnMut(&mut CacheHierarchy, Pfn, Pfn, u64),
    ) {
        let step = self.nested.host_base().bytes().min(bytes).max(1);
        let mut done = 0;
        while done < bytes && self.error.is_none() {
            let piece = step.min(bytes - done);
            let at = |p: Pfn| PhysAddr(p.addr().0 + done);
            let host = self.nested.touch(at(a)).and_then(|ha| match b {
                Some(b) => Ok((ha, self.nested.touch(at(b))?)),
                None => Ok((ha, ha)),
            });
            match host {
                Ok((ha, hb)) => {
                    if let Some(cache) = self.cache.as_deref_mut() {
                        let frame = |p: PhysAddr| Pfn(p.0 >> BASE_SHIFT);
                        f(cache, frame(ha), frame(hb), piece);
                    }
                }
                Err(e) => self.error = Some(e),
            }
            done += piece;
        }
    }
}

impl Traffic for HostTraffic<'_> {
    fn copy(&mut self, from: Pfn, to: Pfn, bytes: u64) {
        self.each(from, Some(to), bytes, &mut |c, a, b, n| c.copy(a, b, n));
    }
    fn clear(&mut self, to: Pfn, bytes: u64) {
        self.each(to, None, bytes, &mut |c, b, _, n| c.clear(b, n));
    }
    fn flush(&mut self, frame: Pfn, bytes: u64) {
        self.each(frame, None, bytes, &mut |c, a, _, n| c.flush(a, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheConfig;
    use crate::virt::VirtualizationConfig;

    /// An 8 KiB guest page over 4 KiB host pages: each half is looked up (and mapped)
    /// apart, and every line goes through the caches once each way.
    #[test]
    fn a_guest_page_larger_than_the_host_page_is_copied_host_page_by_host_page() {
        let mut nested = Nested::build(&VirtualizationConfig::default(), 1).unwrap();
        let mut cache = CacheHierarchy::new(&CacheConfig::typical()).unwrap();
        let mut host = HostTraffic::new(Some(&mut cache), &mut nested);
        host.copy(Pfn(0x100), Pfn(0x202), 8192);
        host.clear(Pfn(0x300), 8192);
        assert!(host.error.is_none());
        // Two host pages under each of the three guest pages.
        assert_eq!(nested.report().host_faults, 6);
        for gpa in [
            0x10_0000, 0x10_1000, 0x20_2000, 0x20_3000, 0x30_0000, 0x30_1000,
        ] {
            assert!(nested.lookup(PhysAddr(gpa)).is_some(), "{gpa:#x}");
        }
        let l1 = &cache.report().levels[0];
        // 128 lines read and 128 written by the copy, 128 written by the clear.
        assert_eq!(l1.hits.copy + l1.misses.copy, 3 * 128);
    }

    /// Without caches the host still maps what the copy writes.
    #[test]
    fn without_caches_the_host_maps_what_a_copy_writes() {
        let mut nested = Nested::build(&VirtualizationConfig::default(), 1).unwrap();
        let mut host = HostTraffic::new(None, &mut nested);
        host.copy(Pfn(0x100), Pfn(0x200), 4096);
        assert_eq!(nested.report().host_faults, 2);
    }
}
