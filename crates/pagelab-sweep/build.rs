//! The build's identity for run keys: pagelab's version and, in a git checkout, the
//! commit it was built from, so results of different code are never taken for each
//! other even between releases. Without git (a source archive), the version alone.

use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty());
    let build = match commit {
        Some(c) => format!("{version}+{c}"),
        None => version,
    };
    println!("cargo:rustc-env=PAGELAB_BUILD={build}");
    // A new commit or checkout changes HEAD or the branch it names.
    // (Only paths that exist: a missing one would rerun this script at every build.)
    for path in [
        "../../.git/HEAD",
        "../../.git/refs/heads",
        "../../.git/packed-refs",
    ] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
