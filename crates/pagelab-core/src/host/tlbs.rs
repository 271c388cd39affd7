//! The TLBs CPUID describes, decoded from the leaves each vendor documents:
//!
//! - Intel, leaf 18H (deterministic address translation parameters): one sub-leaf per
//!   structure, its type, level, page sizes, ways and sets; and before it, leaf 2's
//!   one-byte descriptors (Intel 64 and IA-32 Architectures Software Developer's
//!   Manual, Vol. 2A, CPUID, Table 3-12), of which descriptor FEH sends to leaf 18H.
//! - AMD, leaves 80000005H (L1 TLBs), 80000006H (L2 TLBs) and 80000019H (1G-page
//!   TLBs): entries and an associativity code per page size and side (AMD64
//!   Architecture Programmer's Manual, Vol. 3, Appendix E.4).
//!
//! Page sizes are those of x86-64's long mode: a "2M or 4M" entry holds 2M pages, and
//! 4M-only structures (for 32-bit paging) are left out.

use crate::addr::PageSize;
use serde::Serialize;

use super::cpuid::Cpuid;

/// Which references a TLB translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Data,
    Instruction,
    Unified,
    /// Intel's store-only TLBs (leaf 18H type 5), which pagelab does not model.
    Store,
}

/// One TLB structure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tlb {
    /// 1 for the first level.
    pub level: u8,
    pub side: Side,
    pub page_sizes: Vec<PageSize>,
    pub entries: u32,
    /// Ways; 0 for fully associative.
    pub ways: u32,
    /// Where the numbers come from ("CPUID 18H.3", "CPUID 2, descriptor C3H").
    pub source: String,
}

impl Tlb {
    fn new(
        level: u8,
        side: Side,
        sizes: &[PageSize],
        entries: u32,
        ways: u32,
        source: String,
    ) -> Tlb {
        Tlb {
            level,
            side,
            page_sizes: sizes.to_vec(),
            entries,
            ways,
            source,
        }
    }
}

const K4: PageSize = PageSize::K4;
const M2: PageSize = PageSize::M2;
const G1: PageSize = PageSize::G1;

/// Intel's leaf 18H, if the processor has it: every valid sub-leaf.
pub fn intel_leaf_18(c: &dyn Cpuid) -> Vec<Tlb> {
    if c.query(0, 0)[0] < 0x18 {
        return Vec::new();
    }
    let last = c.query(0x18, 0)[0].min(64);
    let mut out = Vec::new();
    for sub in 0..=last {
        let [_, b, cx, d] = c.query(0x18, sub);
        let side = match d & 0x1F {
            1 | 4 => Side::Data, // data; load-only (filled by loads and stores)
            2 => Side::Instruction,
            3 => Side::Unified,
            5 => Side::Store,
            _ => continue, // 0: not a structure
        };
        let sizes: Vec<PageSize> = [(0, K4), (1, M2), (3, G1)]
            .into_iter()
            .filter(|(bit, _)| b >> bit & 1 == 1)
            .map(|(_, s)| s)
            .collect();
        if sizes.is_empty() {
            continue; // 4M only: 32-bit paging
        }
        let ways = b >> 16;
        let fully = d >> 8 & 1 == 1;
        let entries = ways * cx;
        out.push(Tlb::new(
            ((d >> 5) & 7) as u8,
            side,
            &sizes,
            entries,
            if fully { 0 } else { ways },
            format!("CPUID 18H.{sub}"),
        ));
    }
    out
}

/// One leaf-2 TLB descriptor: level, side, page sizes, entries, ways (0: fully).
type Descriptor = (u8, u8, Side, &'static [PageSize], u32, u32);

/// Leaf 2's TLB descriptors in long mode (SDM Vol. 2A, Table 3-12); a byte may describe
/// two structures (63H, C3H).
const DESCRIPTORS: &[Descriptor] = &[
    (0x01, 1, Side::Instruction, &[K4], 32, 4),
    (0x03, 1, Side::Data, &[K4], 64, 4),
    (0x4F, 1, Side::Instruction, &[K4], 32, 0),
    (0x50, 1, Side::Instruction, &[K4, M2], 64, 0),
    (0x51, 1, Side::Instruction, &[K4, M2], 128, 0),
    (0x52, 1, Side::Instruction, &[K4, M2], 256, 0),
    (0x55, 1, Side::Instruction, &[M2], 7, 0),
    (0x57, 1, Side::Data, &[K4], 16, 4),
    (0x59, 1, Side::Data, &[K4], 16, 0),
    (0x5A, 1, Side::Data, &[M2], 32, 4),
    (0x5B, 1, Side::Data, &[K4], 64, 0),
    (0x5C, 1, Side::Data, &[K4], 128, 0),
    (0x5D, 1, Side::Data, &[K4], 256, 0),
    (0x61, 1, Side::Instruction, &[K4], 48, 0),
    (0x63, 1, Side::Data, &[M2], 32, 4),
    (0x63, 1, Side::Data, &[G1], 4, 4),
    (0x64, 1, Side::Data, &[K4], 512, 4),
    (0x6A, 1, Side::Data, &[K4], 64, 8),
    (0x6B, 1, Side::Data, &[K4], 256, 8),
    (0x6C, 1, Side::Data, &[M2], 128, 8),
    (0x6D, 1, Side::Data, &[G1], 16, 0),
    (0x76, 1, Side::Instruction, &[M2], 8, 0),
    (0xA0, 1, Side::Data, &[K4], 32, 0),
    (0xB0, 1, Side::Instruction, &[K4], 128, 4),
    (0xB1, 1, Side::Instruction, &[M2], 8, 4),
    (0xB2, 1, Side::Instruction, &[K4], 64, 4),
    (0xB3, 1, Side::Data, &[K4], 128, 4),
    (0xB4, 1, Side::Data, &[K4], 256, 4),
    (0xB5, 1, Side::Instruction, &[K4], 64, 8),
    (0xB6, 1, Side::Instruction, &[K4], 128, 8),
    (0xBA, 1, Side::Data, &[K4], 64, 4),
    (0xC0, 1, Side::Data, &[K4], 8, 4),
    (0xC1, 2, Side::Unified, &[K4, M2], 1024, 8),
    (0xC2, 1, Side::Data, &[K4, M2], 16, 4),
    (0xC3, 2, Side::Unified, &[K4, M2], 1536, 6),
    (0xC3, 2, Side::Unified, &[G1], 16, 4),
    (0xC4, 1, Side::Data, &[M2], 32, 4),
    (0xCA, 2, Side::Unified, &[K4], 512, 4),
];

/// Intel's leaf 2: the TLBs its descriptors name, and whether one (FEH) sends to leaf
/// 18H instead.
pub fn intel_leaf_2(c: &dyn Cpuid) -> (Vec<Tlb>, bool) {
    let regs = c.query(2, 0);
    let mut out = Vec::new();
    let mut see_18 = false;
    for (i, r) in regs.iter().enumerate() {
        if r >> 31 == 1 {
            continue; // no descriptors in this register
        }
        for (k, byte) in r.to_le_bytes().into_iter().enumerate() {
            if (i == 0 && k == 0) || byte == 0 {
                continue; // EAX's low byte is a count
            }
            if byte == 0xFE {
                see_18 = true;
            }
            for &(_, level, side, sizes, entries, ways) in
                DESCRIPTORS.iter().filter(|d| d.0 == byte)
            {
                out.push(Tlb::new(
                    level,
                    side,
                    sizes,
                    entries,
                    ways,
                    format!("CPUID 2, descriptor {byte:02X}H"),
                ));
            }
        }
    }
    (out, see_18)
}

/// An AMD 8-bit L1 associativity: 1 direct mapped, FFH fully (0), else the ways.
fn l1_ways(code: u32) -> u32 {
    match code {
        0xFF => 0,
        n => n,
    }
}

/// An AMD 4-bit L2 associativity code as ways (0: fully); the newer manuals give some
/// codes as a range ("8 to 15 ways"): its least. `None`: disabled or not a TLB code.
fn l2_ways(code: u32) -> Option<u32> {
    Some(match code {
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        5 => 6,
        6 => 8,
        8 => 16,
        0xA => 32,
        0xB => 48,
        0xC => 64,
        0xD => 96,
        0xE => 128,
        0xF => 0,
        _ => return None,
    })
}

/// The data (high half) and instruction (low half) TLBs of an AMD register whose
/// halves give a 4-bit associativity code and 12 bits of entries.
fn l2(r: u32, size: PageSize, register: &str, level: u8) -> Vec<Tlb> {
    [(r >> 16, Side::Data), (r & 0xFFFF, Side::Instruction)]
        .into_iter()
        .filter_map(|(half, side)| {
            let ways = l2_ways(half >> 12)?;
            let source = format!("CPUID {register}");
            Some(Tlb::new(level, side, &[size], half & 0xFFF, ways, source))
        })
        .collect()
}

/// AMD's leaves 80000005H, 80000006H and 80000019H. AMD documents each TLB by page
/// size, but one structure holds every size it lists (its optimization guides give one
/// entry count per level and side): two sizes of a level and side with the same
/// entries are one structure here, with the associativity given for the smaller.
pub fn amd(c: &dyn Cpuid) -> Vec<Tlb> {
    let max = c.query(0x8000_0000, 0)[0];
    let mut out: Vec<Tlb> = Vec::new();
    let mut add = |t: Tlb| {
        if t.entries == 0 {
            return;
        }
        match out
            .iter_mut()
            .find(|o| (o.level, o.side, o.entries) == (t.level, t.side, t.entries))
        {
            Some(o) => {
                o.page_sizes.extend(t.page_sizes);
                o.source = format!("{}, {}", o.source, t.source);
            }
            None => out.push(t),
        }
    };
    // (register, page size): the halves of each register are data (high) and
    // instruction (low).
    if max >= 0x8000_0005 {
        let [a, b, _, _] = c.query(0x8000_0005, 0);
        for (r, size, reg) in [(b, K4, "EBX"), (a, M2, "EAX")] {
            for (half, side) in [(r >> 16, Side::Data), (r & 0xFFFF, Side::Instruction)] {
                let t = Tlb::new(
                    1,
                    side,
                    &[size],
                    half & 0xFF,
                    l1_ways(half >> 8),
                    format!("CPUID 80000005H.{reg}"),
                );
                add(t);
            }
        }
    }
    if max >= 0x8000_0006 {
        let [a, b, _, _] = c.query(0x8000_0006, 0);
        l2(b, K4, "80000006H.EBX", 2).into_iter().for_each(&mut add);
        l2(a, M2, "80000006H.EAX", 2).into_iter().for_each(&mut add);
    }
    if max >= 0x8000_0019 {
        let [a, b, _, _] = c.query(0x8000_0019, 0);
        l2(a, G1, "80000019H.EAX", 1).into_iter().for_each(&mut add);
        l2(b, G1, "80000019H.EBX", 2).into_iter().for_each(&mut add);
    }
    out
}
