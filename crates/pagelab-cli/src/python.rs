//! The Python interpreter the commands that need pagelab's Python package run (`report`
//! draws with matplotlib; `sweep --ray` reaches Ray): the one named with `--python`,
//! else `$PAGELAB_PYTHON`, else the repository's `.venv` (`make python` installs the
//! package there) next to this binary's `target/`, else `python3`.

use std::path::Path;

pub fn interpreter(named: Option<&str>) -> String {
    if let Some(p) = named {
        return p.to_string();
    }
    if let Ok(p) = std::env::var("PAGELAB_PYTHON") {
        if !p.is_empty() {
            return p;
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        // target/<profile>/pagelab -> the repository's .venv
        if let Some(repo) = exe.parent().and_then(Path::parent).and_then(Path::parent) {
            let venv = repo.join(".venv/bin/python");
            if venv.is_file() {
                return venv.display().to_string();
            }
        }
    }
    "python3".into()
}
