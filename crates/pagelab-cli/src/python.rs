//! The Python interpreter the commands that need pagelab's Python package run (`report`
//! draws with matplotlib; `sweep --ray` reaches Ray): the one named with `--python`,
//! else `$PAGELAB_PYTHON`, else the repository's `.venv` (`make python` installs the
//! package there; `crate::repository`), else `python3`.

pub fn interpreter(named: Option<&str>) -> String {
    if let Some(p) = named {
        return p.to_string();
    }
    if let Ok(p) = std::env::var("PAGELAB_PYTHON") {
        if !p.is_empty() {
            return p;
        }
    }
    crate::repository::candidates(".venv/bin/python")
        .into_iter()
        .find(|p| p.is_file())
        .map_or_else(|| "python3".into(), |p| p.display().to_string())
}
