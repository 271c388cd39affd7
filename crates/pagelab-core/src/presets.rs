//! Machine presets: the TOML files of the repository's `machines/` folder, compiled
//! into the library so that `--machine skylake` works from anywhere. Each file cites
//! where its numbers come from; `machines/README.md` lists them.
//!
//! Adding a preset: a file `machines/<name>.toml` (the build finds it) and its row in
//! `machines/README.md`.

use crate::config::{ConfigError, MachineConfig};

pub use crate::config::PRESETS;

/// The names of the presets.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The preset built at run time from the processor it runs on ([`crate::host`]).
pub const HOST: &str = "host";

/// The configuration of preset `name` (or of this machine, [`HOST`]).
pub fn load(name: &str) -> Result<MachineConfig, ConfigError> {
    if name == HOST {
        return crate::host::Host::this_machine()
            .config()
            .map_err(ConfigError);
    }
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        return Err(ConfigError(format!(
            "no machine preset is named {name:?} (presets: {}, and {HOST}, this processor)",
            names().join(", ")
        )));
    };
    MachineConfig::from_toml(text, &format!("machines/{name}.toml"))
}

/// A preset as `pagelab machines` lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Described {
    pub name: &'static str,
    pub description: String,
    /// Each TLB level: its name, what it serves, its entries and shape, and where its
    /// misses go ("dtlb (data, 64 entries, 16 sets × 4 ways) → stlb").
    pub levels: Vec<String>,
    pub config: MachineConfig,
}

/// Every preset, described.
pub fn describe_all() -> Result<Vec<Described>, String> {
    names()
        .into_iter()
        .map(|name| {
            let config = load(name).map_err(|e| e.to_string())?;
            Ok(Described {
                name,
                description: config.description.clone(),
                levels: levels(&config)?,
                config,
            })
        })
        .collect()
}

/// This machine as `--machine host` builds it, described.
pub fn describe_host(host: crate::host::Host) -> Result<crate::host::Description, String> {
    let (config, notes) = host.config_with_notes()?;
    Ok(crate::host::Description {
        levels: levels(&config)?,
        host,
        notes,
        config,
    })
}

/// The TLB levels of a machine, one line each.
pub fn levels(config: &MachineConfig) -> Result<Vec<String>, String> {
    let machine = crate::Machine::build(config).map_err(|e| e.to_string())?;
    let tlb = machine.tlb();
    let mut lines = Vec::new();
    for l in tlb.levels() {
        let parent = l
            .parent_name(tlb)
            .map_or_else(|| "walk".to_string(), str::to_string);
        lines.push(format!(
            "{} ({}, {} {}, {}) → {parent}",
            l.name,
            l.serves.name(),
            l.entries(),
            if l.entries() == 1 { "entry" } else { "entries" },
            l.shape()
        ));
        // A range TLB or direct segment, looked up when the level misses.
        if let Some(r) = l.range() {
            lines.push(format!(
                "{} ({}, {} {}) beside {}",
                r.name,
                r.kind.name(),
                r.capacity(),
                if r.capacity() == 1 {
                    "entry"
                } else {
                    "entries"
                },
                l.name
            ));
        }
    }
    Ok(lines)
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
    fn a_range_tlb_is_listed_beside_its_level() {
        let config = load("sandy-bridge-rmm").unwrap();
        let lines = levels(&config).unwrap();
        assert!(
            lines.iter().any(|l| l.contains("32 entries) beside stlb")),
            "{lines:?}"
        );
        assert!(!levels(&load("skylake").unwrap())
            .unwrap()
            .iter()
            .any(|l| l.contains("beside")));
    }

    #[test]
    fn an_unknown_name_lists_the_presets() {
        let e = load("pentium").unwrap_err();
        assert!(e.0.contains("pentium"), "{e}");
        assert!(e.0.contains("skylake"), "{e}");
    }
}
