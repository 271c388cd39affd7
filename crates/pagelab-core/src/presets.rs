//! Machine presets: the TOML files of the repository's `machines/` folder, compiled
//! into the library so that `--machine skylake` works from anywhere. Each file cites
//! where its numbers come from; `machines/README.md` lists them.
//!
//! Adding a preset: a file `machines/<name>.toml`, and its name in the list in
//! `config/preset_texts.rs`.

use crate::config::{ConfigError, MachineConfig};

pub use crate::config::PRESETS;

/// The names of the presets.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The configuration of preset `name`.
pub fn load(name: &str) -> Result<MachineConfig, ConfigError> {
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        return Err(ConfigError(format!(
            "no machine preset is named {name:?} (presets: {})",
            names().join(", ")
        )));
    };
    MachineConfig::from_toml(text, &format!("machines/{name}.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;

    #[test]
    fn every_preset_loads_and_builds_under_its_name() {
        for name in names() {
            let config = load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(config.name, name, "machines/{name}.toml: name");
            assert!(!config.description.is_empty(), "{name}: description");
            Machine::build(&config).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn an_unknown_name_lists_the_presets() {
        let e = load("pentium").unwrap_err();
        assert!(e.0.contains("pentium"), "{e}");
        assert!(e.0.contains("skylake"), "{e}");
    }
}
