//! CPUID, live or recorded: the registers a leaf and sub-leaf give. A recorded dump is
//! text, one query a line, as `pagelab machines --host --cpuid` prints it:
//!
//! ```text
//! # a comment
//! 80000006 0: 5c002200 6c004200 04006140 0a009140
//! ```
//!
//! (leaf and sub-leaf, then EAX EBX ECX EDX, all hexadecimal but the sub-leaf). A
//! query the dump lacks reads as zeros, as a leaf past the processor's maximum does.

use std::collections::BTreeMap;

/// Where CPUID answers come from.
pub trait Cpuid {
    /// EAX, EBX, ECX, EDX of `leaf` with ECX = `sub`.
    fn query(&self, leaf: u32, sub: u32) -> [u32; 4];
}

/// The processor this runs on.
pub struct Live;

impl Cpuid for Live {
    #[cfg(target_arch = "x86_64")]
    fn query(&self, leaf: u32, sub: u32) -> [u32; 4] {
        // SAFETY: CPUID is available on every x86-64 processor and has no effect
        // beyond its result registers.
        #[allow(unused_unsafe)]
        let r = unsafe { std::arch::x86_64::__cpuid_count(leaf, sub) };
        [r.eax, r.ebx, r.ecx, r.edx]
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn query(&self, _leaf: u32, _sub: u32) -> [u32; 4] {
        [0; 4]
    }
}

/// A dump: queries and their answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    answers: BTreeMap<(u32, u32), [u32; 4]>,
}

impl Recorded {
    /// Parse a dump; an error names the line.
    pub fn parse(text: &str) -> Result<Recorded, String> {
        let mut answers = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || {
                format!(
                    "line {}: expected \"LEAF SUB: EAX EBX ECX EDX\" (hexadecimal), got {line:?}",
                    i + 1
                )
            };
            let (query, regs) = line.split_once(':').ok_or_else(bad)?;
            let mut q = query.split_whitespace();
            let leaf = q
                .next()
                .and_then(|l| u32::from_str_radix(l.trim_start_matches("0x"), 16).ok())
                .ok_or_else(bad)?;
            let sub = q.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
            let regs: Vec<u32> = regs
                .split_whitespace()
                .map(|r| u32::from_str_radix(r.trim_start_matches("0x"), 16))
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            let regs: [u32; 4] = regs.try_into().map_err(|_| bad())?;
            answers.insert((leaf, sub), regs);
        }
        Ok(Recorded { answers })
    }

    /// The queries pagelab reads, asked of `cpuid`: what `pagelab machines --host
    /// --cpuid` prints, and what a test replays.
    pub fn dump(cpuid: &dyn Cpuid) -> Recorded {
        let mut answers = BTreeMap::new();
        let max = cpuid.query(0, 0)[0];
        let max_ext = cpuid.query(0x8000_0000, 0)[0];
        let mut ask = |leaf: u32, sub: u32| {
            answers.insert((leaf, sub), cpuid.query(leaf, sub));
        };
        for leaf in [0, 1, 2] {
            ask(leaf, 0);
        }
        if max >= 7 {
            ask(7, 0);
        }
        if max >= 0x18 {
            let subs = cpuid.query(0x18, 0)[0].min(64);
            for sub in 0..=subs {
                ask(0x18, sub);
            }
        }
        for leaf in [0x8000_0000u32, 0x8000_0001, 0x8000_0002, 0x8000_0003]
            .into_iter()
            .chain([0x8000_0004, 0x8000_0005, 0x8000_0006, 0x8000_0019])
        {
            if leaf <= max_ext.max(0x8000_0000) {
                ask(leaf, 0);
            }
        }
        Recorded { answers }
    }

    /// As text, one query a line.
    pub fn to_text(&self) -> String {
        self.answers
            .iter()
            .map(|((leaf, sub), [a, b, c, d])| {
                format!("{leaf:08x} {sub}: {a:08x} {b:08x} {c:08x} {d:08x}\n")
            })
            .collect()
    }
}

impl Cpuid for Recorded {
    fn query(&self, leaf: u32, sub: u32) -> [u32; 4] {
        self.answers.get(&(leaf, sub)).copied().unwrap_or([0; 4])
    }
}

/// The vendor string of leaf 0 ("GenuineIntel", "AuthenticAMD").
pub fn vendor(cpuid: &dyn Cpuid) -> String {
    let [_, b, c, d] = cpuid.query(0, 0);
    text_of(&[b, d, c])
}

/// The brand string of leaves 0x80000002-4, if the processor has them.
pub fn brand(cpuid: &dyn Cpuid) -> Option<String> {
    if cpuid.query(0x8000_0000, 0)[0] < 0x8000_0004 {
        return None;
    }
    let regs: Vec<u32> = (0x8000_0002..=0x8000_0004)
        .flat_map(|l| cpuid.query(l, 0))
        .collect();
    let s = text_of(&regs);
    (!s.is_empty()).then_some(s)
}

/// Family and model as Intel and AMD both compute them from leaf 1 (the extended
/// fields added when the base family is 0xF, and the extended model for family 6 too).
pub fn family_model(cpuid: &dyn Cpuid) -> (u32, u32) {
    let a = cpuid.query(1, 0)[0];
    let base_family = (a >> 8) & 0xF;
    let base_model = (a >> 4) & 0xF;
    let family = if base_family == 0xF {
        base_family + ((a >> 20) & 0xFF)
    } else {
        base_family
    };
    let model = if base_family == 0xF || base_family == 6 {
        ((a >> 16) & 0xF) << 4 | base_model
    } else {
        base_model
    };
    (family, model)
}

fn text_of(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string()
}
