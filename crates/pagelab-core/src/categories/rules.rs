//! User-defined categories: allocations named by their call site or their size, read
//! from a TOML file of `[[category]]` tables, tried in order before the built-in
//! split by size:
//!
//! ```toml
//! [[category]]
//! name = "hash-table"
//! callsites = ["0x9f3c6a1e22b07d45"]   # as `pagelab trace info` lists them
//!
//! [[category]]
//! name = "huge-buffers"
//! min_size = "64M"                     # inclusive; max_size is exclusive
//!
//! [[category]]
//! name = "tables"
//! functions = ["make_table"]           # the function that called the allocator
//! ```
//!
//! A rule names the blocks of `malloc`, `calloc`, `realloc`, `posix_memalign` and
//! anonymous `mmap` that match every condition it gives (call site among those
//! listed, calling function among those listed, size within the range); the first
//! rule that matches wins. A function is known where the recorder named the call site
//! (a marker before its first allocation, from the program's symbols).

use crate::addr::ByteSize;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One user-defined category.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserCategory {
    pub name: String,
    /// Call-site hashes (hexadecimal with `0x`, or decimal): the block's must be one.
    #[serde(default, with = "hex_list")]
    pub callsites: Vec<u64>,
    /// Functions: the innermost frame of the block's named call site (the function
    /// that called the allocator) must be one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
    /// The smallest size that matches.
    #[serde(default)]
    pub min_size: Option<ByteSize>,
    /// The first size too large to match.
    #[serde(default)]
    pub max_size: Option<ByteSize>,
}

impl UserCategory {
    /// Whether a block of `size` bytes from `callsite`, whose innermost frame is the
    /// function `function` (if the call site is named), is this category's.
    #[inline]
    pub fn matches(&self, callsite: u64, size: u64, function: Option<&str>) -> bool {
        (self.callsites.is_empty() || self.callsites.contains(&callsite))
            && (self.functions.is_empty()
                || function.is_some_and(|f| self.functions.iter().any(|g| same_function(g, f))))
            && self.min_size.is_none_or(|m| size >= m.0)
            && self.max_size.is_none_or(|m| size < m.0)
    }
}

/// Whether a rule's function name `rule` names `function`: the same, or the same
/// before the parameter list C++ names carry (`make_table` names `make_table(int)`).
fn same_function(rule: &str, function: &str) -> bool {
    rule == function
        || function
            .split_once('(')
            .is_some_and(|(name, _)| name.trim() == rule)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    category: Vec<UserCategory>,
}

/// Check rules: names unique, not a built-in one, each with a condition.
pub fn check(rules: &[UserCategory]) -> Result<(), String> {
    if rules.len() > super::MAX_USER {
        return Err(format!(
            "{} categories: at most {} may be defined",
            rules.len(),
            super::MAX_USER
        ));
    }
    for (i, r) in rules.iter().enumerate() {
        let field = format!("category[{i}]");
        let valid = !r.name.is_empty()
            && r.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(format!(
                "{field}.name: {:?} is not a name (letters, digits, '-' and '_')",
                r.name
            ));
        }
        if super::Category::ALL.iter().any(|c| c.name() == r.name)
            || rules[..i].iter().any(|o| o.name == r.name)
        {
            return Err(format!("{field}.name: {:?} is already a category", r.name));
        }
        if r.callsites.is_empty()
            && r.functions.is_empty()
            && r.min_size.is_none()
            && r.max_size.is_none()
        {
            return Err(format!(
                "{field}: give callsites, functions, min_size or max_size (a rule without one would take every block)"
            ));
        }
        if let Some(f) = r.functions.iter().find(|f| f.trim().is_empty()) {
            return Err(format!("{field}.functions: {f:?} is not a function name"));
        }
        if r.max_size.is_some_and(|m| m.0 == 0) {
            return Err(format!("{field}.max_size: 0 matches no block"));
        }
        if r.callsites.is_empty()
            && r.functions.is_empty()
            && r.max_size.is_none()
            && r.min_size.is_some_and(|m| m.0 == 0)
        {
            return Err(format!(
                "{field}.min_size: 0 alone takes every block; give a size above 0, max_size or callsites"
            ));
        }
        if let (Some(lo), Some(hi)) = (r.min_size, r.max_size) {
            if lo.0 >= hi.0 {
                return Err(format!(
                    "{field}: min_size {} is not below max_size {}",
                    lo.0, hi.0
                ));
            }
        }
    }
    Ok(())
}

/// Read and check the rules of a TOML file; errors name the file and the field.
pub fn load(path: &Path) -> Result<Vec<UserCategory>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parse and check rules from TOML text; errors start with `origin`.
pub fn parse(text: &str, origin: &str) -> Result<Vec<UserCategory>, String> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        match line {
            Some(n) => format!("{origin}: line {n}: {}", e.message()),
            None => format!("{origin}: {}", e.message()),
        }
    })?;
    check(&file.category).map_err(|e| format!("{origin}: {e}"))?;
    Ok(file.category)
}

/// Call sites as strings ("0x…" or decimal) or integers.
mod hex_list {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Item {
        Int(u64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|c| format!("{c:#018x}")))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        Vec::<Item>::deserialize(d)?
            .into_iter()
            .map(|item| match item {
                Item::Int(n) => Ok(n),
                Item::Text(t) => {
                    let t = t.trim();
                    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                        Some(hex) => u64::from_str_radix(hex, 16),
                        None => t.parse(),
                    };
                    parsed.map_err(|_| {
                        serde::de::Error::custom(format!("callsites: {t:?} is not a number"))
                    })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<UserCategory>, String> {
        let f: File = toml::from_str(text).map_err(|e| e.message().to_string())?;
        check(&f.category)?;
        Ok(f.category)
    }

    #[test]
    fn rules_parse_match_and_refuse_what_cannot_work() {
        let r = parse(
            "[[category]]\nname = \"table\"\ncallsites = [\"0xff\", 7]\n\
             [[category]]\nname = \"big\"\nmin_size = \"1M\"\nmax_size = \"1G\"\n",
        )
        .unwrap();
        assert_eq!(r[0].callsites, [255, 7]);
        assert!(r[0].matches(255, 1, None) && !r[0].matches(8, 1, None));
        assert!(r[1].matches(0, 1 << 20, None) && !r[1].matches(0, (1 << 20) - 1, None));
        assert!(!r[1].matches(0, 1 << 30, None));
        let f = parse("[[category]]\nname = \"t\"\nfunctions = [\"make_table\"]\n").unwrap();
        assert!(f[0].matches(9, 1, Some("make_table")));
        assert!(!f[0].matches(9, 1, Some("main")) && !f[0].matches(9, 1, None));
        assert!(f[0].matches(9, 1, Some("make_table(int)")));
        assert!(!f[0].matches(9, 1, Some("make_table_2(int)")));
        for (text, says) in [
            (
                "[[category]]\nname = \"x\"\nfunctions = [\" \"]\n",
                "not a function name",
            ),
            ("[[category]]\nname = \"static\"\nmin_size = 1\n", "already"),
            ("[[category]]\nname = \"a b\"\nmin_size = 1\n", "not a name"),
            ("[[category]]\nname = \"x\"\n", "give callsites, functions"),
            (
                "[[category]]\nname = \"x\"\nmin_size = 0\n",
                "takes every block",
            ),
            (
                "[[category]]\nname = \"x\"\nmax_size = 0\n",
                "matches no block",
            ),
            (
                "[[category]]\nname = \"x\"\nmin_size = 9\nmax_size = 9\n",
                "not below",
            ),
            (
                "[[category]]\nname = \"x\"\ncallsites = [\"0xzz\"]\n",
                "not a number",
            ),
            ("[[category]]\nname = \"x\"\nsize = 1\n", "unknown field"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
