//! The machine presets, found rather than listed: every `machines/<name>.toml` of the
//! repository is compiled in under its name. This writes `PRESETS` (in the order of
//! their names) for `src/config/preset_texts.rs` to include.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo's manifest dir"));
    let dir = manifest.join("../../machines");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    names.sort();
    let mut out = String::new();
    writeln!(
        out,
        "/// (name, TOML text) of every preset, in the order of their names."
    )
    .unwrap();
    writeln!(out, "pub const PRESETS: &[(&str, &str)] = &[").unwrap();
    for name in &names {
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "machines/{name}.toml: a preset's name is lower-case letters, digits and -"
        );
        let path = dir.join(format!("{name}.toml"));
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo's out dir")).join("presets.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
