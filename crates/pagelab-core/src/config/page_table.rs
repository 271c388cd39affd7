//! The `[page_table]` section: one options struct per structure, each with the checks
//! its values need (errors name `page_table.<field>`).

use super::*;

/// The page table, by kind (papers/variable-radix-page-table.md compares them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PageTableConfig {
    /// x86-64 multi-level radix table.
    Radix(RadixConfig),
    /// Virtual linear array, its pages mapped by a radix table.
    Linear(LinearConfig),
    /// Hashed table with collision chaining (Huck and Hays).
    Hashed(HashedConfig),
    /// Clustered table: hashed, several adjacent PTEs per entry (Talluri, Hill, Khalidi).
    Clustered(ClusteredConfig),
    /// Inverted table (an entry per frame) with a hash anchor table.
    Inverted(InvertedConfig),
    /// Guarded page table: path compression, fixed radix (Liedtke, Elphinstone).
    Guarded(GuardedConfig),
    /// Variable radix page table: path and level compression (Szmajda and Heiser).
    VariableRadix(VariableRadixConfig),
}

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig::Radix(RadixConfig::default())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// 4 (48-bit virtual addresses) or 5 (57-bit, LA57). Default 4.
    pub levels: u32,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig { levels: 4 }
    }
}

fn default_page_sizes() -> Vec<PageSize> {
    vec![PageSize::K4, PageSize::M2, PageSize::G1]
}

/// `page_sizes` of a table: some, each at least 4K and at most `max`.
fn check_page_sizes(sizes: &[PageSize], max: PageSize) -> Result<(), String> {
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
fn check_power_of_two(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "page_table.{field}: {v} must be a power of two from {lo} to {hi}"
        ))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinearConfig {
    /// Page sizes mapped, each expanded into 4K PTEs. Default ["4K", "2M"] (up to
    /// "1G", which writes 262144 PTEs).
    pub page_sizes: Vec<PageSize>,
    /// Entries of the nested TLB that holds the translations of the table's own
    /// pages (0: every lookup walks the root table first). Default 16.
    pub nested_tlb: usize,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            page_sizes: vec![PageSize::K4, PageSize::M2],
            nested_tlb: 16,
        }
    }
}

impl LinearConfig {
    pub fn check(&self) -> Result<(), String> {
        check_page_sizes(&self.page_sizes, PageSize::G1)?;
        if self.nested_tlb > 4096 {
            return Err(format!(
                "page_table.nested_tlb: {} entries is more than 4096",
                self.nested_tlb
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HashedConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30), one 32-byte entry in
    /// place each. Default 65536 (2 MiB).
    pub buckets: u64,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for HashedConfig {
    fn default() -> Self {
        HashedConfig {
            buckets: 1 << 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl HashedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusteredConfig {
    /// Buckets of the hash table (a power of two, 2 to 2^30), one cluster in place
    /// each. Default 16384.
    pub buckets: u64,
    /// PTEs per cluster (a power of two, 1 to 512). Default 16, as in the paper.
    pub subblock_factor: u64,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for ClusteredConfig {
    fn default() -> Self {
        ClusteredConfig {
            buckets: 1 << 14,
            subblock_factor: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl ClusteredConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("buckets", self.buckets, 2, 1 << 30)?;
        check_power_of_two("subblock_factor", self.subblock_factor, 1, 512)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InvertedConfig {
    /// Physical memory the table has an entry per frame of; frames beyond it cannot
    /// be mapped, so it should be `frames.memory`. Default 64 GiB.
    pub memory: ByteSize,
    /// Hash anchor table entries (a power of two, 2 to 2^32). Default: the number of
    /// frames, rounded up to a power of two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hat_entries: Option<u64>,
    /// Page sizes mapped, one hash probe each. Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for InvertedConfig {
    fn default() -> Self {
        InvertedConfig {
            memory: ByteSize(64 << 30),
            hat_entries: None,
            page_sizes: default_page_sizes(),
        }
    }
}

impl InvertedConfig {
    /// Frames covered.
    pub fn frames(&self) -> u64 {
        self.memory.0 >> crate::addr::BASE_SHIFT
    }
    /// HAT entries.
    pub fn hat(&self) -> u64 {
        self.hat_entries
            .unwrap_or_else(|| self.frames().max(2).next_power_of_two())
    }
    pub fn check(&self) -> Result<(), String> {
        let frames = self.frames();
        if frames == 0 || frames > 1 << 36 || self.memory.0 % 4096 != 0 {
            return Err(format!(
                "page_table.memory: {} must be a whole number of 4K frames, at most 256T",
                format_bytes(self.memory.0)
            ));
        }
        check_power_of_two("hat_entries", self.hat(), 2, 1 << 32)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardedConfig {
    /// Entries per node (a power of two, 2 to 65536). Default 16, the radix
    /// Elphinstone found best.
    pub radix: u64,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for GuardedConfig {
    fn default() -> Self {
        GuardedConfig {
            radix: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl GuardedConfig {
    pub fn check(&self) -> Result<(), String> {
        check_power_of_two("radix", self.radix, 2, 1 << 16)?;
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VariableRadixConfig {
    /// log2 of the entries of a new node (1 to 16). Default 4.
    pub node_bits: u32,
    /// log2 of the entries of the widest node level compression may build (at
    /// least `node_bits`, at most 20). Default 16 (2 MiB of 32-byte entries).
    pub max_node_bits: u32,
    /// Page sizes mapped (any, from 4K). Default ["4K", "2M", "1G"].
    pub page_sizes: Vec<PageSize>,
}

impl Default for VariableRadixConfig {
    fn default() -> Self {
        VariableRadixConfig {
            node_bits: 4,
            max_node_bits: 16,
            page_sizes: default_page_sizes(),
        }
    }
}

impl VariableRadixConfig {
    pub fn check(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.node_bits) {
            return Err(format!(
                "page_table.node_bits: {} must be from 1 to 16",
                self.node_bits
            ));
        }
        if !(self.node_bits..=20).contains(&self.max_node_bits) {
            return Err(format!(
                "page_table.max_node_bits: {} must be from node_bits ({}) to 20",
                self.max_node_bits, self.node_bits
            ));
        }
        check_page_sizes(&self.page_sizes, PageSize::from_shift(48).expect("valid"))
    }
}
