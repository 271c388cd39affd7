//! What an event of a trace does to a process's memory, in 4K pages: the one reading
//! of the recorded allocation events (recorder/FORMAT.md) that eager paging and the
//! contiguity analysis share.
//!
//! - a segment of the memory map, an `mmap`, or an `mprotect` to some access maps its
//!   pages (with the event's protection; an inaccessible one, `PROT_NONE`, maps
//!   nothing: glibc reserves arenas and guard pages so, and makes them accessible by
//!   `mprotect` as it uses them);
//! - the heap grown by `brk` maps the new pages, read-write; shrunk, unmaps them;
//! - `munmap` unmaps its pages;
//! - `mremap` (whose old size the recorder writes in `flags`) moves or resizes: a move
//!   unmaps the old extent and maps the new one, an in-place growth maps the new tail,
//!   a shrink unmaps the old tail; the new pages are taken as read-write (the event
//!   does not carry the protection).
//!
//! `malloc`, `free` and the rest change the program's heap, not its mappings.

use crate::addr::BASE_SHIFT;
use crate::event::{AllocOp, Event};

/// Pages unmapped, then pages mapped, by one event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryChange {
    /// Pages `[from, to)` unmapped.
    pub unmap: Option<(u64, u64)>,
    /// Pages `[from, to)` mapped, with their protection (1 read, 2 write, 4 execute).
    pub map: Option<(u64, u64, u8)>,
}

/// The 4K page holding byte address `a`.
pub fn page(a: u64) -> u64 {
    a >> BASE_SHIFT
}

/// The first 4K page wholly at or above byte address `a`.
pub fn page_up(a: u64) -> u64 {
    a.div_ceil(1 << BASE_SHIFT)
}

/// The pages `[page(addr), page_up(addr + size))`, or none if empty.
fn span(addr: u64, size: u64) -> Option<(u64, u64)> {
    let (from, to) = (page(addr), page_up(addr.saturating_add(size)));
    (from < to).then_some((from, to))
}

fn mapped(span: Option<(u64, u64)>, prot: u8) -> Option<(u64, u64, u8)> {
    span.filter(|_| prot != 0).map(|(f, t)| (f, t, prot))
}

/// What `event` does to the memory of the process it belongs to; `None` if nothing.
pub fn memory_change(event: &Event) -> Option<MemoryChange> {
    let a = match event {
        Event::Segment(s) => {
            let map = mapped(span(s.start, s.end.saturating_sub(s.start)), s.perms & 7);
            return map.map(|m| MemoryChange {
                map: Some(m),
                unmap: None,
            });
        }
        Event::Alloc(a) => a,
        _ => return None,
    };
    let prot = (a.flags & 7) as u8;
    let change = match a.op {
        AllocOp::Mmap | AllocOp::Mprotect => MemoryChange {
            map: mapped(span(a.addr, a.size), prot),
            unmap: None,
        },
        AllocOp::Munmap => MemoryChange {
            unmap: span(a.old_addr, a.size),
            map: None,
        },
        AllocOp::Brk if a.addr > a.old_addr => MemoryChange {
            map: mapped(Some((page_up(a.old_addr), page_up(a.addr))), 3).filter(|(f, t, _)| f < t),
            unmap: None,
        },
        AllocOp::Brk if a.addr < a.old_addr => MemoryChange {
            unmap: Some((page_up(a.addr), page_up(a.old_addr))).filter(|(f, t)| f < t),
            map: None,
        },
        AllocOp::Mremap => {
            let old = span(a.old_addr, a.flags);
            let new = span(a.addr, a.size);
            if a.addr == a.old_addr {
                let old_end = old.map_or(page(a.addr), |o| o.1);
                let new_end = new.map_or(page(a.addr), |n| n.1);
                MemoryChange {
                    unmap: (new_end < old_end).then_some((new_end, old_end)),
                    map: mapped(new, 3),
                }
            } else {
                MemoryChange {
                    unmap: old,
                    map: mapped(new, 3),
                }
            }
        }
        _ => return None,
    };
    (change != MemoryChange::default()).then_some(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Alloc;

    fn alloc(op: AllocOp, addr: u64, size: u64, old_addr: u64, flags: u64) -> Event {
        Event::Alloc(Alloc {
            op,
            addr,
            size,
            old_addr,
            flags,
            callsite: 0,
        })
    }

    #[test]
    fn each_event_maps_and_unmaps_what_the_format_says() {
        let change = |e: Event| memory_change(&e);
        let map = |f, t, p| {
            Some(MemoryChange {
                map: Some((f, t, p)),
                unmap: None,
            })
        };
        let unmap = |f, t| {
            Some(MemoryChange {
                unmap: Some((f, t)),
                map: None,
            })
        };
        // mmap of 2 pages and a byte, read-write: 3 pages; PROT_NONE: nothing.
        assert_eq!(
            change(alloc(AllocOp::Mmap, 0x10000, 0x2001, 0, 3)),
            map(16, 19, 3)
        );
        assert_eq!(change(alloc(AllocOp::Mmap, 0x10000, 0x2000, 0, 0)), None);
        // mprotect to read-write maps; to none does nothing.
        assert_eq!(
            change(alloc(AllocOp::Mprotect, 0x10000, 0x1000, 0x10000, 3)),
            map(16, 17, 3)
        );
        assert_eq!(
            change(alloc(AllocOp::Mprotect, 0x10000, 0x1000, 0x10000, 0)),
            None
        );
        assert_eq!(
            change(alloc(AllocOp::Munmap, 0, 0x3000, 0x10000, 0)),
            unmap(16, 19)
        );
        // brk from 0x10800 up to 0x12800: pages 17 and 18 (16 was partly there).
        assert_eq!(
            change(alloc(AllocOp::Brk, 0x12800, 0x2000, 0x10800, 0)),
            map(17, 19, 3)
        );
        assert_eq!(
            change(alloc(AllocOp::Brk, 0x10800, 0x2000, 0x12800, 0)),
            unmap(17, 19)
        );
        // A small brk inside a page maps nothing new.
        assert_eq!(
            change(alloc(AllocOp::Brk, 0x10900, 0x100, 0x10800, 0)),
            None
        );
        // mremap: moved (old size 2 pages in flags), grown in place, shrunk in place.
        assert_eq!(
            change(alloc(AllocOp::Mremap, 0x40000, 0x3000, 0x10000, 0x2000)),
            Some(MemoryChange {
                unmap: Some((16, 18)),
                map: Some((64, 67, 3)),
            })
        );
        assert_eq!(
            change(alloc(AllocOp::Mremap, 0x10000, 0x3000, 0x10000, 0x2000)),
            map(16, 19, 3)
        );
        assert_eq!(
            change(alloc(AllocOp::Mremap, 0x10000, 0x1000, 0x10000, 0x3000)),
            Some(MemoryChange {
                unmap: Some((17, 19)),
                map: Some((16, 17, 3)),
            })
        );
        assert_eq!(change(alloc(AllocOp::Malloc, 0x10000, 64, 0, 0)), None);
        assert_eq!(change(alloc(AllocOp::Free, 0, 0, 0x10000, 0)), None);
    }
}
