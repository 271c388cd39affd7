//! The memory estimate a configuration is checked against before it is built
//! (`machine::estimate`) against what building it allocates, counted by the global
//! allocator: the estimate must cover it, and not overstate it by much.

use pagelab_core::config::MachineConfig;
use pagelab_core::machine::{estimate, Machine};
use pagelab_core::presets;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

struct Counting;

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size() as u64, Relaxed) + layout.size() as u64;
        PEAK.fetch_max(live, Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size() as u64, Relaxed) + layout.size() as u64;
        PEAK.fetch_max(live, Relaxed);
        System.alloc_zeroed(layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counters are global.
static ONE: Mutex<()> = Mutex::new(());

/// The most bytes live at once while `config` is built, above what was live before.
fn measured(config: &MachineConfig) -> u64 {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let machine = Machine::build(config).unwrap_or_else(|e| panic!("{}: {e}", config.name));
    let peak = PEAK.load(Relaxed) - before;
    drop(machine);
    peak
}

fn configs() -> Vec<MachineConfig> {
    let mut all: Vec<MachineConfig> = presets::names()
        .into_iter()
        .map(|n| presets::load(n).unwrap())
        .collect();
    let toml = |text: &str| MachineConfig::from_toml(text, "test").unwrap();
    all.push(MachineConfig::default());
    all.push(toml(
        "name = \"hashed\"\n[page_table]\nkind = \"hashed\"\nbuckets = 4194304",
    ));
    all.push(toml(
        "name = \"clustered\"\n[page_table]\nkind = \"clustered\"\nbuckets = 1048576",
    ));
    all.push(toml(
        "name = \"big-tlb\"\n[tlb]\nkind = \"set-associative\"\nsets = 65536\nways = 16\nreplacement = \"lru\"",
    ));
    all.push(toml(
        "name = \"fa\"\n[tlb]\nkind = \"set-associative\"\nsets = 1\nways = 65536\nreplacement = \"lru\"",
    ));
    all.push(toml(
        "name = \"caches\"\n[cache]\n[[cache.levels]]\nname = \"llc\"\nsets = 65536\nways = 16\n",
    ));
    all.push(toml(
        "name = \"wired\"\n[frames]\nkind = \"buddy\"\nmemory = \"4G\"\nwired = 0.5\n",
    ));
    all.push(toml(
        "name = \"virtualized\"\n[virtualization]\nhost_page_table = { kind = \"hashed\", buckets = 4194304 }\n\
         host_frames = { kind = \"buddy\", memory = \"4G\", wired = 0.5 }\n\
         nested_tlb = { sets = 4096, ways = 16 }\n",
    ));
    all
}

#[test]
fn the_estimate_covers_what_building_allocates() {
    let _one = ONE.lock().unwrap();
    for config in configs() {
        let (estimate, _) = estimate::total(&config);
        let got = measured(&config);
        eprintln!("{}: estimate {estimate}, allocated {got}", config.name);
        // Small things (names, boxes, the report's vectors) are not estimated.
        let slack = 1 << 20;
        assert!(
            got <= estimate + slack,
            "{}: building allocated {got} bytes, the estimate says {estimate}",
            config.name
        );
        assert!(
            estimate <= 4 * got + slack,
            "{}: the estimate ({estimate}) is far above what building allocated ({got})",
            config.name
        );
    }
}

#[test]
fn a_machine_over_max_memory_is_refused_before_it_is_built() {
    let _one = ONE.lock().unwrap();
    let huge = MachineConfig::from_toml(
        "[page_table]\nkind = \"hashed\"\nbuckets = 1073741824",
        "huge.toml",
    )
    .unwrap();
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let e = Machine::build(&huge).err().unwrap().to_string();
    assert!(
        PEAK.load(Relaxed) - before < 1 << 20,
        "nothing large is allocated"
    );
    assert!(e.contains("more than max_memory (4G)"), "{e}");
    assert!(e.contains("page_table.buckets takes"), "{e}");
    assert!(!e.contains('\n'));
}
