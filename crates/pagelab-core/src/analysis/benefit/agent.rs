//! The online agent's choice (Cașcaval et al., "Multiple Page Size Modeling and
//! Optimization", PACT 2005, §4): the mapping with the most benefit whose large pages
//! fit in those available. The model is additive (§3.2), so a mapping of several
//! categories is credited the sum of their base mappings' benefits and needs the sum of
//! their large pages; the analysed all-large mapping is a candidate too, and stands for
//! the sum of the categories it covers. A program that fails the significance test
//! stays on small pages.

use super::Row;
use serde::Serialize;

/// The large pages available: a number of pages of the mapping's size, or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Budget {
    Pages(u64),
    Bytes(u64),
}

impl Budget {
    /// "512" (pages) or "1G" (bytes); a negative or malformed one is an error naming
    /// it.
    pub fn parse(text: &str) -> Result<Budget, String> {
        let t = text.trim();
        if t.starts_with('-') {
            return Err(format!(
                "--budget {t}: a budget of large pages cannot be negative"
            ));
        }
        if let Ok(n) = t.parse::<u64>() {
            return Ok(Budget::Pages(n));
        }
        crate::addr::parse_bytes(t)
            .map(Budget::Bytes)
            .map_err(|e| format!("--budget {t}: not a number of pages or a size in bytes ({e})"))
    }

    fn fits(self, pages: u64, page_bytes: u64) -> bool {
        match self {
            Budget::Pages(n) => pages <= n,
            Budget::Bytes(b) => pages.saturating_mul(page_bytes) <= b,
        }
    }
}

/// What the agent chose.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Choice {
    /// "all small", a row's mapping, or categories joined by "+" at a size.
    pub mapping: String,
    pub page_size: Option<String>,
    pub categories: Vec<String>,
    pub large_pages: u64,
    pub benefit_cycles: f64,
    /// Credited as the sum of base mappings (not analysed as one).
    pub additive: bool,
    pub why: String,
}

/// The choice among `rows` (the first "all small"), within `budget` if there is one.
pub fn choose(rows: &[Row], budget: Option<Budget>, significant: bool) -> Choice {
    let small = |why: String| Choice {
        mapping: "all small".into(),
        page_size: None,
        categories: Vec::new(),
        large_pages: 0,
        benefit_cycles: 0.0,
        additive: false,
        why,
    };
    if !significant {
        return small("the program fails the significance test: large pages cannot pay".into());
    }
    let fits = |pages: u64, size: &str| {
        let bytes = crate::PageSize::parse(size).map_or(0, |s| s.bytes());
        budget.is_none_or(|b| b.fits(pages, bytes))
    };
    let mut best: Option<Choice> = None;
    let mut consider = |c: Choice| {
        let better = match &best {
            None => c.benefit_cycles > 0.0,
            Some(b) => {
                c.benefit_cycles > b.benefit_cycles
                    || (c.benefit_cycles == b.benefit_cycles && c.large_pages < b.large_pages)
            }
        };
        if better {
            best = Some(c);
        }
    };
    let mut sizes: Vec<&str> = rows.iter().filter_map(|r| r.page_size.as_deref()).collect();
    sizes.dedup();
    for size in sizes {
        let at: Vec<&Row> = rows
            .iter()
            .filter(|r| r.page_size.as_deref() == Some(size))
            .collect();
        for r in &at {
            if fits(r.large_pages, size) {
                consider(Choice {
                    mapping: r.mapping.clone(),
                    page_size: Some(size.to_string()),
                    categories: r.categories.clone(),
                    large_pages: r.large_pages,
                    benefit_cycles: r.benefit_cycles,
                    additive: false,
                    why: String::new(),
                });
            }
        }
        // Sums of two or more base mappings that gain.
        let base: Vec<&&Row> = at
            .iter()
            .filter(|r| r.categories.len() == 1 && !r.all && r.benefit_cycles > 0.0)
            .collect();
        if base.len() > 16 {
            continue;
        }
        for set in 1u32..1 << base.len() {
            if set.count_ones() < 2 {
                continue;
            }
            let chosen: Vec<&&&Row> = (0..base.len())
                .filter(|i| set >> i & 1 != 0)
                .map(|i| &base[i])
                .collect();
            let pages = chosen.iter().map(|r| r.large_pages).sum();
            if !fits(pages, size) {
                continue;
            }
            let categories: Vec<String> = chosen.iter().map(|r| r.categories[0].clone()).collect();
            // A set analysed as one mapping (all large, when only these categories
            // are referenced) is taken as analysed, not as a sum.
            let analysed = at.iter().any(|r| {
                r.categories.len() == categories.len()
                    && categories.iter().all(|c| r.categories.contains(c))
            });
            if analysed {
                continue;
            }
            consider(Choice {
                mapping: format!("{}@{size}", categories.join("+")),
                page_size: Some(size.to_string()),
                categories,
                large_pages: pages,
                benefit_cycles: chosen.iter().map(|r| r.benefit_cycles).sum(),
                additive: true,
                why: String::new(),
            });
        }
    }
    match best {
        Some(mut c) => {
            c.why = match budget {
                Some(_) => "the most benefit within the budget".into(),
                None => "the most benefit (no budget given)".into(),
            };
            c
        }
        None if budget.is_some() => small("no mapping that gains fits the budget".into()),
        None => small("no mapping gains over small pages".into()),
    }
}

/// The ranking error of §5.3.2: the mean distance between the predicted and the
/// measured PMB of each mapping, in points of percent. Mappings either side leaves
/// unranked are left out; None if none is left.
pub fn ranking_error(pairs: &[(Option<f64>, Option<f64>)]) -> Option<f64> {
    let d: Vec<f64> = pairs
        .iter()
        .filter_map(|&(p, m)| Some((p? - m?).abs()))
        .collect();
    (!d.is_empty()).then(|| d.iter().sum::<f64>() / d.len() as f64)
}
