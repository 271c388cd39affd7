//! Hints to the host about the simulator's own memory. Its large tables (page-table
//! arenas, trace batches) are read at random; on 4 KiB pages the host's TLB misses on them as often as the simulated one
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

/// Ask the host processor to bring the cache line holding `x` into its caches, ahead
/// of a read (a hint: nothing else changes).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally, cannot fault, and `x` is a
    // valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(x as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
