//! asap on Fang et al.'s §4.1 microbenchmark, counted by hand: one pass over 1,024
//! pages of 4K in address order, on pa-risc-32 (superpages of 8K to 4M: ten sizes
//! above the base page), promoting by copying.
//!
//! As §3.1 defines it, asap promotes a superpage "as soon as all of its component
//! pages have been referenced": each aligned block of 2^k pages (k = 1..10) is
//! promoted when its last page is first touched, and the promotion copies all 2^k of
//! its pages (the smaller superpages inside it included). Every level copies every
//! page once: 10 × 1,024 = 10,240 pages copied in 1,023 promotions (512 + 256 + … +
//! 1), about ten copies a page, as the paper's 88,000 cycles a TLB miss under copying
//! imply (§5.1: about eleven times §3.1's 8,000 cycles a page).
//!
//! Promoting only the largest candidate a reference completes skips the smaller
//! blocks completed by the same reference: page n, with t trailing one bits, promotes
//! the block of 2^t pages only. Pages with exactly t trailing ones number
//! 1,024 / 2^(t+1) for t = 1..9, each copying 2^t pages (512 a level), and page 1,023
//! copies all 1,024: 9 × 512 + 1,024 = 5,632 pages in 1 + 2 + … + 256 + 1 = 512
//! promotions.

use pagelab_core::config::AsapConfig;
use pagelab_core::superpage::PromotionConfig;
use pagelab_core::trace::synthetic;
use pagelab_core::{presets, Machine};

fn copied(each_size: bool) -> (u64, u64) {
    let mut c = presets::load("pa-risc-32").unwrap();
    c.promotion = PromotionConfig::Asap(AsapConfig {
        each_size,
        ..AsapConfig::default()
    });
    let mut m = Machine::build(&c).unwrap();
    let mut r = synthetic::parse("column-walk:iterations=1,rows=1024").unwrap();
    m.run_trace(r.as_mut(), std::path::Path::new("column-walk"), |_, _| {})
        .unwrap();
    let counts = m.report().counts;
    (counts.pages_copied, counts.promotions)
}

#[test]
fn asap_promotes_every_size_in_turn_copying_each_page_ten_times() {
    assert_eq!(copied(true), (10_240, 1_023));
}

#[test]
fn asap_promoting_only_the_largest_block_copies_fewer_pages() {
    assert_eq!(copied(false), (5_632, 512));
}
