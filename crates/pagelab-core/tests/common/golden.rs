//! Golden files: counts checked against a file in `tests/golden/`, or written to it
//! when `PAGELAB_BLESS` is set (a change meant to alter results regenerates the file,
//! and the file's diff goes into the commit that explains it).

use std::path::{Path, PathBuf};

/// The golden file `name` of `tests/golden/`.
pub fn file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compare `now` with the golden file at `path` line by line (or write it, when
/// blessing); `test` is the test target that regenerates it.
pub fn check(path: &Path, now: &str, test: &str) {
    let bless = format!("PAGELAB_BLESS=1 cargo test --release -p pagelab-core --test {test}");
    if std::env::var_os("PAGELAB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, now).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (make it with {bless})", path.display()));
    let mut differ = Vec::new();
    let (now_lines, expected_lines): (Vec<_>, Vec<_>) =
        (now.lines().collect(), expected.lines().collect());
    for i in 0..now_lines.len().max(expected_lines.len()) {
        let (a, b) = (expected_lines.get(i), now_lines.get(i));
        if a != b {
            differ.push(format!(
                "  expected {}\n  now      {}",
                a.unwrap_or(&"(nothing)"),
                b.unwrap_or(&"(nothing)")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} runs count differently from {} (if the change is meant to alter results, \
         regenerate it: {bless}):\n{}",
        differ.len(),
        expected_lines.len(),
        path.display(),
        differ[..differ.len().min(20)].join("\n")
    );
}
