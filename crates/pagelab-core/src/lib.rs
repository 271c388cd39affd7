//! pagelab core: a laboratory for address translation. Trace readers and writers, TLB
//! models, page tables, physical memory, cost models and the machine that composes
//! them — a pure Rust library, with no command-line or Python concerns.

pub mod addr;
pub mod analysis;
pub mod cache;
pub mod categories;
pub mod config;
pub mod cost;
pub mod counts;
pub mod event;
pub mod frames;
pub mod host;
pub mod hugemem;
pub mod limits;
pub mod machine;
pub mod page_set;
pub mod pagetable;
pub mod presets;
pub mod pressure;
pub mod range;
pub mod replacement;
pub mod report_columns;
pub mod rng;
pub mod superpage;
pub mod tlb;
pub mod trace;
pub mod virt;
pub mod whole_file;

pub use addr::{Asid, PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
pub use config::MachineConfig;
pub use event::{AccessKind, Batch, Event, MemRef};
pub use machine::{Machine, RepeatMode, Report};

/// What a caught panic (a bug in pagelab) says, as the error a caller reports:
/// `pagelab internal error (please report): …`.
pub fn internal_error(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("pagelab internal error (please report): {what}")
}
