//! Machine configurations from arbitrary text: parsing and building must end in a
//! configuration error naming what is wrong, never a panic or an abort; a machine
//! that builds runs a few references. (`max_memory` is held to 256M so that what the
//! estimate allows fits in the fuzzer's memory.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagelab_core::addr::ByteSize;
use pagelab_core::event::{AccessKind, Batch, MemRef};
use pagelab_core::{Machine, MachineConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut config) = MachineConfig::from_toml(text, "fuzz.toml") else {
        return;
    };
    config.max_memory = ByteSize(config.max_memory.0.min(256 << 20));
    let Ok(mut machine) = Machine::build(&config) else {
        return;
    };
    let refs = (0..64u64)
        .map(|i| {
            MemRef::new(
                i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20,
                8,
                AccessKind::Load,
            )
        })
        .collect();
    let _ = machine.run_batch(&Batch {
        refs,
        events: vec![],
    });
    let _ = machine.report();
});
