//! The texts of the machine presets (`machines/*.toml`), compiled in: the build script
//! (`build.rs`) lists every file of the folder, so adding a preset is adding its file.
//! They live in the configuration module because a configuration may be a variant of
//! one (`variant_of`); `crate::presets` loads them by name.

include!(concat!(env!("OUT_DIR"), "/presets.rs"));
