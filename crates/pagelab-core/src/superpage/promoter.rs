//! A machine's promotion side as one component: the policy (none: base pages only),
//! the mechanism that gathers a superpage's data, and what the machine keeps for them
//! (the walking level's entries at a miss, the promotions' work, the memory
//! controller's cycles). Built here from `[promotion]` and `[mechanism]` against what
//! the rest of the machine offers ([`Surroundings`]); `machine/promote.rs` drives it.

use super::mechanism::{Gathered, Mechanism, MechanismConfig};
use super::{Context, Entry, PromotionConfig, PromotionPolicy};
use crate::addr::PageSize;

pub struct Promoter {
    /// The promotion policy (none: base pages only), asked for the size a fault maps.
    pub policy: Option<Box<dyn PromotionPolicy>>,
    pub mechanism: Box<dyn Mechanism>,
    /// The candidate sizes, ascending (empty without a policy).
    pub sizes: Vec<PageSize>,
    /// The largest page a fault or a promotion maps (the base page without a policy).
    pub largest: PageSize,
    /// Whether the policy is told of every TLB hit (`online`).
    pub follows_hits: bool,
    /// Scratch for the policy: the walking level's entries at a miss.
    pub entries: Vec<Entry>,
    /// Totals of the promotions' work, for their cycles.
    pub gathered: Gathered,
    /// Cycles the memory controller's lookups added (see `Counts::controller_lookups`).
    pub controller_cycles: f64,
}

/// What a promoter is built against: the rest of the machine, as far as its checks
/// and its defaults need it.
pub struct Surroundings<'a> {
    pub base: PageSize,
    /// The page sizes the page table maps.
    pub table_sizes: &'a [PageSize],
    /// Whether the page table is inverted (one entry per real frame).
    pub inverted_table: bool,
    /// The page sizes some TLB level on the data path holds.
    pub held: Vec<PageSize>,
    /// Whether data and instruction fetches miss into the same last TLB level.
    pub one_walking_level: bool,
    /// The entries of the TLB level whose data misses walk.
    pub walking_entries: usize,
    /// The largest block the buddy allocator gives (`frames.max_block`), if buddy.
    pub max_block: Option<PageSize>,
}

impl Promoter {
    /// The promoter the configuration asks for; errors name the field.
    pub fn build(
        promotion: &PromotionConfig,
        mechanism: &MechanismConfig,
        s: &Surroundings<'_>,
    ) -> Result<Promoter, String> {
        let sizes = candidate_sizes(promotion, s)?;
        if let Some(max) = s.max_block {
            if let Some(size) = sizes.iter().find(|&&size| size > max) {
                return Err(format!(
                    "promotion.sizes: {size} is larger than frames.max_block ({max}), so memory can never give a block for it"
                ));
            }
        }
        let none = matches!(promotion, PromotionConfig::None {});
        if matches!(mechanism, MechanismConfig::Remap(_)) && s.inverted_table && !none {
            return Err(
                "mechanism.kind: remap maps superpages to shadow frames, which an inverted page table (one entry per real frame) cannot hold".into(),
            );
        }
        let cx = Context {
            sizes: &sizes,
            base: s.base,
            table_sizes: s.table_sizes,
            one_walking_level: s.one_walking_level,
            walking_entries: s.walking_entries,
        };
        let policy = super::build(promotion, &cx)?;
        let mechanism = super::mechanism::build(mechanism)?;
        let largest = promotion
            .largest_page(&sizes)
            .map_or(s.base, |l| l.max(s.base));
        Ok(Promoter {
            follows_hits: policy.as_ref().is_some_and(|p| p.follows_hits()),
            policy,
            mechanism,
            sizes,
            largest,
            entries: Vec::new(),
            gathered: Gathered::default(),
            controller_cycles: 0.0,
        })
    }
}

/// The candidate superpage sizes of the promotion policy, ascending: those configured
/// (each must be larger than the base page and mapped by the page table) or, by
/// default, every size above the base page that the page table maps and some level on
/// the TLB's data path holds (a superpage only a first level holds still saves its
/// misses there, as on Sandy Bridge, whose second level holds only 4K pages).
fn candidate_sizes(promotion: &PromotionConfig, s: &Surroundings) -> Result<Vec<PageSize>, String> {
    let Some(named) = promotion.configured_sizes() else {
        return Ok(Vec::new());
    };
    let list = |v: &[PageSize]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut sizes = named.to_vec();
    sizes.sort();
    sizes.dedup();
    for size in &sizes {
        if *size <= s.base {
            return Err(format!(
                "promotion.sizes: {size} is not larger than the base page ({})",
                s.base
            ));
        }
        if !s.table_sizes.contains(size) {
            return Err(format!(
                "promotion.sizes: the page table cannot map {size} pages (it maps {}; set page_table.page_sizes)",
                list(s.table_sizes)
            ));
        }
    }
    if sizes.is_empty() {
        sizes = s
            .table_sizes
            .iter()
            .copied()
            .filter(|size| *size > s.base && s.held.contains(size))
            .collect();
        if sizes.is_empty() {
            return Err(format!(
                "promotion.sizes: no page size above the base page is both mapped by the page table ({}) and held by the TLB ({}); name the sizes",
                list(s.table_sizes),
                list(&s.held)
            ));
        }
    }
    Ok(sizes)
}
