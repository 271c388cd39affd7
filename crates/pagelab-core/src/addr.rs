//! Strong types for the quantities of address translation: virtual and physical
//! addresses, virtual page numbers, physical frame numbers, page sizes and
//! address-space ids. Mixing them up is a type error, not a wrong number.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A virtual address (byte granularity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VirtAddr(pub u64);

/// A physical address (byte granularity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysAddr(pub u64);

/// A virtual page number: a virtual address divided by the size of the page that holds it.
/// The size is not stored; whoever holds a `Vpn` knows which size it counts in
/// (a TLB key pairs it with its `PageSize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vpn(pub u64);

/// A physical frame number, always counted in base (4 KiB) frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pfn(pub u64);

/// An address-space id (a process, or a PCID / ASID tag).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Asid(pub u16);

/// log2 of the base frame size used for physical memory (4 KiB).
pub const BASE_SHIFT: u32 = 12;

impl VirtAddr {
    #[inline]
    pub fn vpn(self, size: PageSize) -> Vpn {
        Vpn(self.0 >> size.shift())
    }
    #[inline]
    pub fn offset_in(self, size: PageSize) -> u64 {
        self.0 & (size.bytes() - 1)
    }
}

impl Vpn {
    /// The first virtual address of this page.
    #[inline]
    pub fn base(self, size: PageSize) -> VirtAddr {
        VirtAddr(self.0 << size.shift())
    }
}

impl Pfn {
    #[inline]
    pub fn addr(self) -> PhysAddr {
        PhysAddr(self.0 << BASE_SHIFT)
    }
}

impl PhysAddr {
    /// The 64-byte cache line that holds this address.
    #[inline]
    pub fn line(self) -> u64 {
        self.0 >> 6
    }
}

/// A page size, a power of two from 1 KiB to 2^48 bytes, stored as its log2.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageSize(u8);

impl PageSize {
    pub const K4: PageSize = PageSize(12);
    pub const K8: PageSize = PageSize(13);
    pub const K64: PageSize = PageSize(16);
    pub const K512: PageSize = PageSize(19);
    pub const M2: PageSize = PageSize(21);
    pub const M4: PageSize = PageSize(22);
    pub const G1: PageSize = PageSize(30);

    /// A page size from its log2; `None` outside 2^10..=2^48.
    pub const fn from_shift(shift: u32) -> Option<PageSize> {
        if shift >= 10 && shift <= 48 {
            Some(PageSize(shift as u8))
        } else {
            None
        }
    }
    #[inline]
    pub const fn shift(self) -> u32 {
        self.0 as u32
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        1u64 << self.0
    }
    /// How many base (4 KiB) frames one page of this size spans (1 for sizes ≤ 4 KiB).
    pub const fn base_frames(self) -> u64 {
        if self.0 as u32 <= BASE_SHIFT {
            1
        } else {
            1u64 << (self.0 as u32 - BASE_SHIFT)
        }
    }

    /// Parse "4K", "4KiB", "2M", "2MB", "1G", "8192".
    pub fn parse(text: &str) -> Result<PageSize, String> {
        let bytes = parse_bytes(text)?;
        if !bytes.is_power_of_two() {
            return Err(format!("page size {text:?} is not a power of two"));
        }
        PageSize::from_shift(bytes.trailing_zeros())
            .ok_or_else(|| format!("page size {text:?} is outside 1K..256T"))
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.bytes()))
    }
}

impl fmt::Debug for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PageSize({self})")
    }
}

impl Serialize for PageSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        PageSize::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Parse a byte count with an optional binary suffix: "4096", "4K", "4KiB", "16GiB", "2 MB".
/// Suffixes are binary (K = 1024) as is usual for memory.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("{text:?} is not a byte count (expected e.g. 4096, 4K, 2MiB, 16GiB)")
    })?;
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "{text:?} has an unknown size suffix (use K, M, G or T)"
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} does not fit in 64 bits"))
}

/// Format a byte count with the largest binary suffix that divides it exactly.
pub fn format_bytes(bytes: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{}", bytes >> shift, suffix);
        }
    }
    format!("{bytes}")
}

/// A byte count for a person: "930.5 MiB", "4.0 KiB", "512.0 B" (binary units, one
/// decimal). [`format_bytes`] writes the exact count a configuration reads back.
pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    // (Past 1023.95 the next unit: never "1024.0 MiB".)
    while v >= 1023.95 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

/// A byte count written as "64G", "512MiB" or a plain integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(t) => parse_bytes(&t)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_parse_and_print() {
        assert_eq!(PageSize::parse("4K").unwrap(), PageSize::K4);
        assert_eq!(PageSize::parse("2MiB").unwrap(), PageSize::M2);
        assert_eq!(PageSize::parse("1G").unwrap().bytes(), 1 << 30);
        assert_eq!(PageSize::parse("8192").unwrap(), PageSize::K8);
        assert_eq!(PageSize::M2.to_string(), "2M");
        assert_eq!(PageSize::M2.base_frames(), 512);
        assert!(PageSize::parse("3K").is_err());
        assert!(PageSize::parse("4Q").is_err());
        assert!(PageSize::parse("16").is_err());
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("16GiB").unwrap(), 16 << 30);
        assert_eq!(parse_bytes("2 MB").unwrap(), 2 << 20);
        assert!(parse_bytes("99999999999T").is_err());
        assert_eq!(format_bytes(3 << 20), "3M");
        assert_eq!(format_bytes(1000), "1000");
    }

    #[test]
    fn vpn_round_trip() {
        let va = VirtAddr(0x7f12_3456_789a);
        assert_eq!(va.vpn(PageSize::K4), Vpn(0x7f12_3456_7));
        assert_eq!(
            va.vpn(PageSize::K4).base(PageSize::K4),
            VirtAddr(0x7f12_3456_7000)
        );
        assert_eq!(va.offset_in(PageSize::M2), 0x1_6789a);
    }
}
