//! What Linux says of this machine under `/sys`: the data caches of CPU 0
//! (`devices/system/cpu/cpu0/cache/index*`), the transparent huge page mode
//! (`kernel/mm/transparent_hugepage/enabled`) and the huge page sizes the kernel
//! offers (`kernel/mm/hugepages/hugepages-*kB`). A root other than `/sys` is for
//! tests.

use crate::addr::PageSize;
use serde::Serialize;
use std::path::Path;

/// One cache level of CPU 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cache {
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    pub size_bytes: u64,
    pub ways: u64,
    pub sets: u64,
    pub line_bytes: u64,
    /// The folder read.
    pub source: String,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// "32K", "1024K", "32768K" as bytes.
fn size_of(text: &str) -> Option<u64> {
    let (n, unit) = match text.strip_suffix(['K', 'M', 'G']) {
        Some(n) => (n, text.chars().last()?),
        None => (text, ' '),
    };
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        'K' => n << 10,
        'M' => n << 20,
        'G' => n << 30,
        _ => n,
    })
}

/// The caches of CPU 0, closest first; those that cannot be read are left out.
pub fn caches(sys: &Path) -> Vec<Cache> {
    let dir = sys.join("devices/system/cpu/cpu0/cache");
    let mut out = Vec::new();
    for i in 0..16 {
        let d = dir.join(format!("index{i}"));
        if !d.is_dir() {
            break;
        }
        let num = |f: &str| read(&d.join(f)).and_then(|s| s.parse::<u64>().ok());
        let (Some(level), Some(kind), Some(size)) = (
            num("level"),
            read(&d.join("type")),
            read(&d.join("size")).and_then(|s| size_of(&s)),
        ) else {
            continue;
        };
        out.push(Cache {
            level: level as u32,
            kind,
            size_bytes: size,
            ways: num("ways_of_associativity").unwrap_or(0),
            sets: num("number_of_sets").unwrap_or(0),
            line_bytes: num("coherency_line_size").unwrap_or(0),
            source: d.display().to_string(),
        });
    }
    out
}

/// The transparent huge page mode: the bracketed word of
/// `kernel/mm/transparent_hugepage/enabled` ("always", "madvise", "never").
pub fn thp_mode(sys: &Path) -> Option<String> {
    let text = read(&sys.join("kernel/mm/transparent_hugepage/enabled"))?;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

/// The huge page sizes the kernel offers, smallest first.
pub fn huge_page_sizes(sys: &Path) -> Vec<PageSize> {
    let Ok(entries) = std::fs::read_dir(sys.join("kernel/mm/hugepages")) else {
        return Vec::new();
    };
    let mut sizes: Vec<PageSize> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let kb: u64 = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let bytes = kb << 10;
            bytes
                .is_power_of_two()
                .then(|| PageSize::from_shift(bytes.trailing_zeros()))
                .flatten()
        })
        .collect();
    sizes.sort();
    sizes.dedup();
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_recorded_tree() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path();
        for (i, (level, kind, size, ways, sets)) in [
            (1, "Data", "32K", 8, 64),
            (1, "Instruction", "32K", 8, 64),
            (2, "Unified", "1024K", 8, 2048),
            (3, "Unified", "32768K", 16, 32768),
        ]
        .into_iter()
        .enumerate()
        {
            let d = sys.join(format!("devices/system/cpu/cpu0/cache/index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("level", level.to_string()),
                ("type", kind.to_string()),
                ("size", size.to_string()),
                ("ways_of_associativity", ways.to_string()),
                ("number_of_sets", sets.to_string()),
                ("coherency_line_size", "64".to_string()),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        let mm = sys.join("kernel/mm");
        std::fs::create_dir_all(mm.join("transparent_hugepage")).unwrap();
        std::fs::write(
            mm.join("transparent_hugepage/enabled"),
            "always [madvise] never\n",
        )
        .unwrap();
        for d in ["hugepages-1048576kB", "hugepages-2048kB"] {
            std::fs::create_dir_all(mm.join("hugepages").join(d)).unwrap();
        }
        let c = caches(sys);
        assert_eq!(c.len(), 4);
        assert_eq!(
            (c[2].level, c[2].size_bytes, c[2].ways, c[2].sets),
            (2, 1 << 20, 8, 2048)
        );
        assert_eq!(c[3].size_bytes, 32 << 20);
        assert_eq!(thp_mode(sys).as_deref(), Some("madvise"));
        assert_eq!(huge_page_sizes(sys), [PageSize::M2, PageSize::G1]);
        // Nothing there: nothing found, no error.
        let empty = tempfile::tempdir().unwrap();
        assert!(caches(empty.path()).is_empty() && thp_mode(empty.path()).is_none());
    }
}
