//! Unit tests of `hierarchy`.

use super::*;
use crate::addr::Pfn;
use crate::pagetable::Perms;

fn level(
    name: &str,
    serves: Serves,
    parent: Option<&str>,
    sets: usize,
    ways: usize,
) -> LevelConfig {
    LevelConfig {
        name: name.into(),
        serves,
        parent: parent.map(Into::into),
        hit_cycles: 0.0,
        arrays: vec![SetAssocConfig {
            sets,
            ways,
            ..SetAssocConfig::default()
        }],
        range: None,
    }
}

fn hierarchy(levels: Vec<LevelConfig>) -> Result<Hierarchy, String> {
    Hierarchy::build(
        &TlbConfig::Hierarchy(HierarchyConfig {
            flush_on_switch: false,
            levels,
        }),
        PageSize::K4,
        0,
    )
}

fn t4k(pfn: u64) -> Translation {
    Translation {
        pfn: Pfn(pfn),
        size: PageSize::K4,
        perms: Perms::RW,
    }
}

#[test]
fn split_l1s_share_a_unified_l2() {
    let mut h = hierarchy(vec![
        level("l1d", Serves::Data, Some("l2"), 1, 2),
        level("l1i", Serves::Instruction, Some("l2"), 1, 2),
        level("l2", Serves::All, None, 1, 8),
    ])
    .unwrap();
    assert_eq!(h.path_names(DATA), ["l1d", "l2"]);
    assert_eq!(h.path_names(INSTRUCTION), ["l1i", "l2"]);
    let (asid, va) = (Asid(0), VirtAddr(0x5000));
    let walks = std::cell::Cell::new(0);
    let walk = || -> Result<Translation, ()> {
        walks.set(walks.get() + 1);
        Ok(t4k(9))
    };
    // Data miss: walks, fills l1d and l2.
    assert_eq!(h.access(DATA, asid, va), None);
    assert_eq!(h.miss(DATA, asid, va, walk), Ok(Some(PageSize::K4)));
    // The fetch of the same page misses l1i but hits l2: no walk.
    assert_eq!(h.access(INSTRUCTION, asid, va), None);
    assert_eq!(h.miss(INSTRUCTION, asid, va, walk), Ok(Some(PageSize::K4)));
    assert_eq!(walks.get(), 1);
    assert_eq!(h.access(INSTRUCTION, asid, va), Some(PageSize::K4));
    let l = h.levels();
    assert_eq!((l[0].hits(), l[0].misses()), (0, 1));
    assert_eq!((l[1].hits(), l[1].misses()), (1, 1));
    assert_eq!((l[2].hits(), l[2].misses()), (1, 1));
    // Invalidation reaches every level.
    h.invalidate_range(asid, va, 4096);
    assert_eq!(h.access(INSTRUCTION, asid, va), None);
    assert_eq!(h.miss(INSTRUCTION, asid, va, walk), Ok(Some(PageSize::K4)));
    assert_eq!(walks.get(), 2);
}

#[test]
fn configuration_errors_name_the_field() {
    let cases: Vec<(Vec<LevelConfig>, &str)> = vec![
        (vec![], "tlb.levels"),
        (
            vec![
                level("l2", Serves::All, None, 1, 8),
                level("l1", Serves::All, Some("l2"), 1, 2),
            ],
            "tlb.levels[1].parent",
        ),
        (
            vec![level("l1", Serves::All, Some("l3"), 1, 2)],
            "no level is named \"l3\"",
        ),
        (
            vec![level("l1d", Serves::Data, None, 1, 2)],
            "no level serves instruction fetches",
        ),
        (
            vec![
                level("l1i", Serves::Instruction, Some("l2"), 1, 2),
                level("l1d", Serves::Data, None, 1, 2),
                level("l2", Serves::Data, None, 1, 2),
            ],
            "tlb.levels[2].serves",
        ),
        (
            vec![
                level("a", Serves::All, None, 1, 2),
                level("b", Serves::All, None, 1, 2),
            ],
            "tlb.levels[1]: level \"b\" is on no path",
        ),
        (
            vec![level("a", Serves::All, None, 0, 2)],
            "tlb.levels[0].arrays[0].sets",
        ),
        (
            vec![
                level("a", Serves::All, None, 1, 2),
                level("a", Serves::All, None, 1, 2),
            ],
            "names two levels",
        ),
    ];
    for (levels, want) in cases {
        let e = hierarchy(levels).err().unwrap();
        assert!(e.contains(want), "{e} (wanted {want})");
    }
    let mut big = level("l1", Serves::All, None, 1, 2);
    big.arrays[0].page_sizes = vec![PageSize::M2];
    let e = hierarchy(vec![big]).err().unwrap();
    assert!(e.contains("tlb.levels[0].arrays.page_sizes"), "{e}");
}

#[test]
fn a_superpage_fills_the_array_of_its_size() {
    let mut l1 = level("l1", Serves::All, None, 1, 2);
    l1.arrays.push(SetAssocConfig {
        sets: 1,
        ways: 2,
        page_sizes: vec![PageSize::M2],
        ..SetAssocConfig::default()
    });
    let mut h = hierarchy(vec![l1]).unwrap();
    let huge = Translation {
        pfn: Pfn(512),
        size: PageSize::M2,
        perms: Perms::RW,
    };
    let va = VirtAddr(0x20_1234);
    assert_eq!(
        h.miss(DATA, Asid(0), va, || Ok::<_, ()>(huge)),
        Ok(Some(PageSize::M2))
    );
    assert_eq!(
        h.access(DATA, Asid(0), VirtAddr(0x3f_0000)),
        Some(PageSize::M2)
    );
    let sizes = h.levels()[0].by_size();
    assert_eq!(sizes.len(), 1);
    assert_eq!(
        (sizes[0].size.as_str(), sizes[0].hits, sizes[0].misses),
        ("2M", 1, 1)
    );
}
