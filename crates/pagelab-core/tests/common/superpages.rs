//! What the superpage tests (superpages_integrity.rs, superpages_pressure.rs) share:
//! candidate page sizes and the online policies' options, built in one line.

use pagelab_core::config::OnlineConfig;
use pagelab_core::PageSize;

/// The page sizes from 2^`from` to 2^`to` bytes.
pub fn sizes(from: u32, to: u32) -> Vec<PageSize> {
    (from..=to)
        .map(|s| PageSize::from_shift(s).unwrap())
        .collect()
}

/// Online (or approx-online) options: `threshold`, and candidate `sizes`.
pub fn online(threshold: u64, sizes: Vec<PageSize>) -> OnlineConfig {
    OnlineConfig {
        sizes,
        threshold,
        ..OnlineConfig::default()
    }
}
