//! Where the repository's files are for a command that needs them (the workload
//! catalogue, the Python environment, the bundled traces): beside this binary's
//! `target/`, else where it was built from.

use std::path::{Path, PathBuf};

/// `relative` in the repository, the places to look, in order: next to the binary
/// (`target/<profile>/pagelab` -> the repository), then the source tree it was built from.
pub fn candidates(relative: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(repo) = exe.parent().and_then(Path::parent).and_then(Path::parent) {
            out.push(repo.join(relative));
        }
    }
    out.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(relative),
    );
    out
}
