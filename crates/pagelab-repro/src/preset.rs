//! What the claims about machines read from pagelab's presets: the data TLB's entries
//! and reach.

/// A preset's data TLB.
pub struct DataTlb {
    /// Entries of the levels serving data only (L1), and of those serving all (L2).
    pub l1_entries: f64,
    pub l2_entries: f64,
    /// Every data array's entries times its largest page, in bytes.
    pub reach_bytes: f64,
    pub base_page_bytes: f64,
}

/// The data TLB of the preset `name`, read from its configuration.
pub fn data_tlb(name: &str) -> Result<DataTlb, String> {
    let config = pagelab_core::presets::load(name).map_err(|e| e.to_string())?;
    let value: toml::Value = toml::from_str(&config.to_toml()).map_err(|e| e.to_string())?;
    let levels = value
        .get("tlb")
        .and_then(|t| t.get("levels"))
        .and_then(toml::Value::as_array)
        .ok_or_else(|| format!("{name} has no TLB levels"))?;
    let mut tlb = DataTlb {
        l1_entries: 0.0,
        l2_entries: 0.0,
        reach_bytes: 0.0,
        base_page_bytes: config.base_page.bytes() as f64,
    };
    for level in levels {
        let serves = level.get("serves").and_then(toml::Value::as_str);
        let arrays = level.get("arrays").and_then(toml::Value::as_array);
        let (Some(serves), Some(arrays)) = (serves, arrays) else {
            continue;
        };
        if serves == "instruction" {
            continue;
        }
        for a in arrays {
            let n = |k: &str| a.get(k).and_then(toml::Value::as_integer).unwrap_or(0) as f64;
            let count = n("sets") * n("ways");
            let largest = a
                .get("page_sizes")
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str)
                .filter_map(|s| pagelab_core::PageSize::parse(s).ok())
                .map(|s| s.bytes())
                .max()
                .unwrap_or(0);
            tlb.reach_bytes += count * largest as f64;
            if serves == "data" {
                tlb.l1_entries += count;
            } else {
                tlb.l2_entries += count;
            }
        }
    }
    Ok(tlb)
}
