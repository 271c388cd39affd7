//! The machine pagelab runs on, as a preset: `--machine host`. Its TLBs come from
//! CPUID ([`tlbs`]); its data caches and huge page sizes are read from Linux
//! ([`sysfs`]), the caches modelled with the base preset's latencies; what
//! CPUID does not tell (replacement, the latency of a second-level TLB hit, walk caches,
//! costs) comes from the named preset nearest to it — `skylake` for an Intel
//! processor, `zen4` for an AMD one — and [`Host::notes`] says which numbers did.
//! `pagelab machines --host` prints every number with its source.

pub mod cpuid;
mod preset;
pub mod sysfs;
pub mod tlbs;

use crate::addr::PageSize;
use cpuid::Cpuid;
use serde::Serialize;
use std::fmt;
use std::path::Path;

/// What was read of a machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Host {
    /// CPUID's vendor ("GenuineIntel", "AuthenticAMD") and brand string.
    pub vendor: String,
    pub brand: Option<String>,
    pub family: u32,
    pub model: u32,
    pub tlbs: Vec<tlbs::Tlb>,
    pub caches: Vec<sysfs::Cache>,
    /// The transparent huge page mode and the huge page sizes the kernel offers.
    pub thp: Option<String>,
    pub huge_page_sizes: Vec<PageSize>,
    /// The named preset the rest of the machine comes from.
    pub base: String,
    /// What could not be read, and what stands in for it.
    pub notes: Vec<String>,
}

impl Host {
    /// This processor and this kernel.
    pub fn this_machine() -> Host {
        Host::read(&cpuid::Live, Path::new("/sys"))
    }

    /// A machine from its CPUID answers and a `/sys` tree.
    pub fn read(c: &dyn Cpuid, sys: &Path) -> Host {
        let vendor = cpuid::vendor(c);
        let (family, model) = cpuid::family_model(c);
        let mut notes = Vec::new();
        let base = match vendor.as_str() {
            "GenuineIntel" => "skylake",
            "AuthenticAMD" | "HygonGenuine" => "zen4",
            other => {
                notes.push(format!(
                    "vendor {other:?} is neither Intel nor AMD: what CPUID does not tell comes from the skylake preset"
                ));
                "skylake"
            }
        };
        let tlbs = match base {
            "zen4" => tlbs::amd(c),
            _ => {
                let (from_2, see_18) = tlbs::intel_leaf_2(c);
                let from_18 = tlbs::intel_leaf_18(c);
                if see_18 || from_2.is_empty() {
                    from_18
                } else {
                    from_2
                }
            }
        };
        // CPUID.07H:EDX[15]: a hybrid part, whose leaves 2 and 18H describe the kind
        // of core the query ran on.
        if c.query(0, 0)[0] >= 7 && c.query(7, 0)[3] >> 15 & 1 == 1 {
            notes.push(
                "a hybrid processor (performance and efficiency cores): the TLBs are those of the core this ran on, which may differ from run to run".into(),
            );
        }
        let caches = sysfs::caches(sys);
        if caches.is_empty() {
            notes.push(format!(
                "no data caches under {}: none listed",
                sys.join("devices/system/cpu/cpu0/cache").display()
            ));
        }
        Host {
            brand: cpuid::brand(c),
            vendor,
            family,
            model,
            tlbs,
            caches,
            thp: sysfs::thp_mode(sys),
            huge_page_sizes: sysfs::huge_page_sizes(sys),
            base: base.to_string(),
            notes,
        }
    }

    /// The preset: a machine configuration named "host".
    pub fn config(&self) -> Result<crate::MachineConfig, String> {
        preset::config(self).map(|(c, _)| c)
    }

    /// The preset and the notes of what in it does not come from this machine.
    pub fn config_with_notes(&self) -> Result<(crate::MachineConfig, Vec<String>), String> {
        preset::config(self)
    }
}

/// What `pagelab machines --host --json` and `pagelab.host_machine()` give
/// (`presets::describe_host`): what was read, the preset made of it, its
/// levels one line each, and the notes of what in it does not come from this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Description {
    pub host: Host,
    pub notes: Vec<String>,
    pub levels: Vec<String>,
    pub config: crate::MachineConfig,
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.brand.as_deref().unwrap_or("unnamed processor");
        writeln!(
            f,
            "{name} ({}, family {:#x}, model {:#x})",
            self.vendor, self.family, self.model
        )?;
        writeln!(f, "TLBs:")?;
        if self.tlbs.is_empty() {
            writeln!(f, "  none described by CPUID")?;
        }
        for t in &self.tlbs {
            let sizes: Vec<String> = t.page_sizes.iter().map(|s| s.to_string()).collect();
            let shape = match t.ways {
                0 => "fully associative".to_string(),
                w => format!("{w}-way"),
            };
            writeln!(
                f,
                "  L{} {:<11} {:>5} entries, {shape}, {:<10} {}",
                t.level,
                format!("{:?}", t.side).to_lowercase(),
                t.entries,
                sizes.join("/"),
                t.source
            )?;
        }
        writeln!(f, "caches:")?;
        for c in &self.caches {
            writeln!(
                f,
                "  L{} {:<11} {:>10}, {}-way, {} sets, {}-byte lines   {}",
                c.level,
                c.kind.to_lowercase(),
                crate::addr::human_bytes(c.size_bytes),
                c.ways,
                c.sets,
                c.line_bytes,
                c.source
            )?;
        }
        let sizes: Vec<String> = self.huge_page_sizes.iter().map(|s| s.to_string()).collect();
        writeln!(
            f,
            "huge pages: transparent {}, sizes {}   /sys/kernel/mm",
            self.thp.as_deref().unwrap_or("unknown"),
            if sizes.is_empty() {
                "none".into()
            } else {
                sizes.join(", ")
            }
        )?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}
