//! What every structure's options in `[page_table]` share: the trait that builds the
//! structure from them, and the checks of common fields (errors name
//! `page_table.<field>`).

use crate::addr::PageSize;

/// A structure's options (a `[page_table]` section of its `kind`), listed in
/// [`for_each_page_table!`](crate::for_each_page_table): checked and built here.
pub trait TableOptions: Default {
    type Table: super::PageTable;
    /// Check the options (each error names `page_table.<field>`) and build an empty
    /// table.
    fn build(&self) -> Result<Self::Table, String>;
    /// What [`TableOptions::build`] allocates, in bytes, with the field that sets it
    /// (most structures allocate as pages are mapped: none). Checked before building.
    fn preallocated(&self) -> (&'static str, u64) {
        ("kind", 0)
    }
}

/// The page sizes most structures map by default.
pub fn default_page_sizes() -> Vec<PageSize> {
    vec![PageSize::K4, PageSize::M2, PageSize::G1]
}

/// `page_sizes` of a table: some, each at least 4K and at most `max`.
pub fn check_page_sizes(sizes: &[PageSize], max: PageSize) -> Result<(), String> {
    if sizes.is_empty() {
        return Err("page_table.page_sizes: the table must map at least one page size".into());
    }
    match sizes.iter().find(|&&s| s < PageSize::K4 || s > max) {
        Some(s) => Err(format!(
            "page_table.page_sizes: {s} is outside the sizes this table maps (4K to {max})"
        )),
        None => Ok(()),
    }
}

/// `field` must be a power of two in `lo..=hi`.
pub fn check_power_of_two(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "page_table.{field}: {v} must be a power of two from {lo} to {hi}"
        ))
    }
}
