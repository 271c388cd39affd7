//! What a sweep's traces name: a trace file or folder, a synthetic workload
//! (`synthetic:column-walk:iterations=64`), or, for the page-table comparison, a
//! synthetic layout (`layout:dense`).

use pagelab_core::trace::TraceReader;
use std::path::Path;

/// What a sweep's trace names before a synthetic workload's description
/// (`synthetic:column-walk:iterations=64`, as `simulate --synthetic` takes it).
pub const SYNTHETIC: &str = "synthetic:";

/// The description of the synthetic workload a sweep's trace names, if it names one.
pub fn synthetic(trace: &Path) -> Option<&str> {
    trace.to_str()?.strip_prefix(SYNTHETIC)
}

/// What a sweep's trace names before a synthetic page-table layout
/// (`layout:sparse`, as `pagetables compare --layout` takes it).
pub const LAYOUT: &str = "layout:";

/// The layout a sweep's trace names, if it names one.
pub fn layout(trace: &Path) -> Option<&str> {
    trace.to_str()?.strip_prefix(LAYOUT)
}

/// The references of a sweep's trace: a trace file or folder, or a synthetic workload.
pub fn open_trace(trace: &Path) -> Result<Box<dyn TraceReader + Send>, String> {
    match synthetic(trace) {
        Some(spec) => pagelab_core::trace::synthetic::parse(spec),
        None => pagelab_core::trace::open(trace, None).map_err(|e| e.to_string()),
    }
}
