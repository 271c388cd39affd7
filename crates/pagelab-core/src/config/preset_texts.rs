//! The texts of the machine presets (`machines/*.toml`), compiled in. They live in the
//! configuration module because a configuration may be a variant of one
//! (`variant_of`); `crate::presets` loads them by name.
//!
//! Adding a preset: a file `machines/<name>.toml`, and its name in the list below.

macro_rules! presets {
    ($($name:literal),* $(,)?) => {
        /// (name, TOML text) of every preset.
        pub const PRESETS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../../machines/", $name, ".toml"))),)*
        ];
    };
}

presets!(
    "pa-risc-32",
    "pa-risc-128",
    "alpha-21264",
    "mips-r4x00",
    "sandy-bridge",
    "sandy-bridge-rmm",
    "skylake",
    "zen4",
);
