//! Building a hierarchy from its configuration: levels, parents and paths checked,
//! errors naming the field.

use super::*;

impl Hierarchy {
    /// Resolve a TLB configuration; every level on each side's path must hold a page
    /// of `base_page` or smaller (or every reference would miss there).
    pub fn build(c: &TlbConfig, base_page: PageSize, seed: u64) -> Result<Hierarchy, String> {
        let (levels, flush_on_switch, prefix) = match c {
            TlbConfig::SetAssociative(s) => {
                let level = LevelConfig {
                    name: "tlb".into(),
                    serves: Serves::All,
                    parent: None,
                    hit_cycles: s.hit_cycles,
                    arrays: vec![SetAssocConfig {
                        hit_cycles: 0.0,
                        ..s.clone()
                    }],
                    range: None,
                };
                (vec![level], false, "tlb")
            }
            TlbConfig::Hierarchy(HierarchyConfig {
                flush_on_switch,
                levels,
            }) => (levels.clone(), *flush_on_switch, "tlb.levels"),
        };
        if levels.is_empty() {
            return Err("tlb.levels: name at least one level".into());
        }
        let single = matches!(c, TlbConfig::SetAssociative(_));
        let mut built: Vec<Level> = Vec::with_capacity(levels.len());
        for (i, l) in levels.iter().enumerate() {
            let here = if single {
                prefix.to_string()
            } else {
                format!("{prefix}[{i}]")
            };
            if l.name.is_empty() {
                return Err(format!("{here}.name: give the level a name"));
            }
            if levels[..i].iter().any(|o| o.name == l.name) {
                return Err(format!("{here}.name: {:?} names two levels", l.name));
            }
            crate::limits::check_cycles(&format!("{here}.hit_cycles"), l.hit_cycles)?;
            if l.arrays.is_empty() {
                return Err(format!("{here}.arrays: give the level at least one array"));
            }
            let parent = match &l.parent {
                None => None,
                Some(p) => match levels.iter().position(|o| &o.name == p) {
                    Some(j) if j > i => Some(j),
                    Some(_) => {
                        return Err(format!(
                        "{here}.parent: {p:?} must be listed after {:?} (levels go child first)",
                        l.name
                    ))
                    }
                    None => {
                        return Err(format!(
                            "{here}.parent: no level is named {p:?} (levels: {})",
                            levels
                                .iter()
                                .map(|o| o.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }
                },
            };
            let mut arrays = Vec::with_capacity(l.arrays.len());
            for (j, a) in l.arrays.iter().enumerate() {
                let field = if single {
                    prefix.to_string()
                } else {
                    format!("{here}.arrays[{j}]")
                };
                if !single && a.hit_cycles != 0.0 {
                    return Err(format!(
                        "{field}.hit_cycles: give hit cycles to the level ({here}.hit_cycles), not to an array"
                    ));
                }
                arrays.push(AnyArray::build(
                    a,
                    crate::tlb::array_seed(seed, &field),
                    &field,
                )?);
            }
            if l.range.is_some() && levels[..i].iter().any(|o| o.range.is_some()) {
                return Err(format!(
                    "{here}.range: only one level may have a range TLB or direct segment"
                ));
            }
            let range = match &l.range {
                Some(r) => Some(Box::new(crate::range::RangeTlb::build(
                    r,
                    &format!("{here}.range"),
                    l.hit_cycles,
                    crate::tlb::array_seed(seed, &format!("{here}.range")),
                )?)),
                None => None,
            };
            let mut level = Level {
                name: l.name.clone(),
                serves: l.serves,
                hit_cycles: l.hit_cycles,
                arrays,
                range,
                range_fill: l.range.as_ref().map_or(Default::default(), |r| r.fill),
                parent,
                base_array: None,
                hits: [0; 64],
                misses: [0; 64],
            };
            level.base_array = level
                .fill_array(base_page)
                .and_then(|(k, size)| (size == base_page).then_some(k));
            built.push(level);
        }
        let mut paths: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
        for (side, what) in [
            (DATA, "data references"),
            (INSTRUCTION, "instruction fetches"),
        ] {
            let Some(first) = built.iter().position(|l| l.serves.covers(side)) else {
                return Err(format!(
                    "tlb.levels: no level serves {what} (set serves = \"all\" on one)"
                ));
            };
            let mut at = Some(first);
            while let Some(i) = at {
                let l = &built[i];
                if !l.serves.covers(side) {
                    return Err(format!(
                        "{prefix}[{i}].serves: {:?} is on the path of {what} but serves {:?}",
                        l.name, l.serves
                    ));
                }
                if l.min_page_bytes() > base_page.bytes() {
                    return Err(format!(
                        "{}.page_sizes: level {:?} holds no page of {base_page} (base_page) or less, \
                         so every reference would miss there",
                        if single { prefix.to_string() } else { format!("{prefix}[{i}].arrays") },
                        l.name
                    ));
                }
                paths[side].push(i);
                at = l.parent;
            }
        }
        if let Some(l) = built
            .iter()
            .enumerate()
            .find(|(i, _)| !paths[DATA].contains(i) && !paths[INSTRUCTION].contains(i))
        {
            return Err(format!(
                "{prefix}[{}]: level {:?} is on no path: no reference reaches it (make it a parent, or list it first for its side)",
                l.0, l.1.name
            ));
        }
        Ok(Hierarchy {
            levels: built,
            first: [paths[DATA][0], paths[INSTRUCTION][0]],
            paths,
            flush_on_switch,
            base_page,
            invalidations: 0,
        })
    }
}
