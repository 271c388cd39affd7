//! The simulator's own large tables (page-table arenas, trace batches) are read at
//! random; on 4 KiB pages the host's TLB misses on them as often as the simulated one
//! does. Where Linux offers transparent huge pages on request (`madvise` mode), ask for
//! 2 MiB pages for such buffers. A hint only: where it is refused nothing changes.

/// Ask for huge pages under the 2 MiB-aligned part of `v`'s allocation (its capacity).
pub fn advise<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let aligned = (start + HUGE - 1) & !(HUGE - 1);
        if end >= aligned + HUGE {
            let len = (end - aligned) & !(HUGE - 1);
            // SAFETY: the range lies inside memory this Vec owns; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its contents.
            unsafe {
                libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
