//! Helpers shared by the integration tests: configuration pieces built in one line.
#![allow(dead_code)]

use pagelab_core::config::{LevelConfig, Serves, SetAssocConfig};
use pagelab_core::PageSize;

/// A `sets × ways` LRU array holding `sizes`.
pub fn array(sets: usize, ways: usize, sizes: &[PageSize]) -> SetAssocConfig {
    SetAssocConfig {
        sets,
        ways,
        page_sizes: sizes.to_vec(),
        ..SetAssocConfig::default()
    }
}

/// A level of a hierarchy (hit_cycles 1).
pub fn level(
    name: &str,
    serves: Serves,
    parent: Option<&str>,
    arrays: Vec<SetAssocConfig>,
) -> LevelConfig {
    LevelConfig {
        name: name.into(),
        serves,
        parent: parent.map(Into::into),
        hit_cycles: 1.0,
        arrays,
    }
}
