//! How the page daemon picks its victims among the inactive base pages its clock finds
//! (`paging.daemon`): one file per choice, each listed once in [`for_each_daemon!`],
//! from which [`DaemonKind`], its names and its build are made (docs/EXTENDING.md).

mod clock;
mod contiguity;

pub use clock::Clock;
pub use contiguity::{choose_for_contiguity, Contiguity};

use super::Key;
use crate::addr::Pfn;
use serde::{Deserialize, Serialize};

/// Every victim choice: `"name" => Variant(Type)`, with its doc line.
#[macro_export]
macro_rules! for_each_daemon {
    ($m:ident) => {
        $m! {
            /// Second chance (clock) over the resident mappings, in the order they
            /// were made.
            "clock" => Clock(Clock),
            /// Clock's inactive pages, those whose frames complete a free block of a
            /// superpage size first ("contiguity-aware page daemon"; needs
            /// `frames.kind = "buddy"`).
            "contiguity" => Contiguity(Contiguity),
        }
    };
}

/// An inactive base page the daemon weighs: its mapping, the real frame behind it,
/// and whether reclaiming it frees that frame.
#[derive(Clone, Copy, Debug)]
pub struct Victim {
    pub key: Key,
    pub frame: Pfn,
    pub frees: bool,
    pub dirty: bool,
}

/// What a choice may look at besides the victims: the free frames of a block.
pub struct Frames<'a> {
    /// log2 of the base frames of the smallest superpage size (the block weighed).
    pub order: u32,
    /// The base frames of one page.
    pub per_page: u64,
    /// The free frames of the aligned block of 2^order frames holding a frame.
    pub free_in: &'a dyn Fn(Pfn, u32) -> u64,
}

/// A page daemon's choice of victims.
pub trait VictimChoice: Send {
    /// Whether it weighs a window of inactive pages at once (`paging.contiguity_window`)
    /// through [`choose`](Self::choose); if not, the daemon reclaims each inactive
    /// page as its hand finds it.
    fn weighs(&self) -> bool {
        false
    }
    /// The victims to reclaim (at least `need` of them when there are), in order.
    fn choose(&self, victims: &[Victim], need: usize, frames: &Frames) -> Vec<usize> {
        let _ = frames;
        (0..victims.len().min(need)).collect()
    }
    /// Whether the file cache of `frames.cached` is freed block by block for
    /// superpages (rather than oldest page first).
    fn frees_blocks(&self) -> bool {
        false
    }
}

macro_rules! make_daemon_kind {
    ($($(#[doc = $doc:literal])* $name:literal => $variant:ident($ty:ident),)*) => {
        /// The page daemon's choice of victims (`paging.daemon`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub enum DaemonKind {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl DaemonKind {
            /// Every choice, in the registry's order.
            pub const ALL: &'static [DaemonKind] = &[$(DaemonKind::$variant),*];
            /// Their names, as `paging.daemon` takes them.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(DaemonKind::$variant => $name,)*
                }
            }

            /// The choice, checked against the machine: `buddy` whether frames come
            /// from the buddy allocator. Errors name `paging.daemon`.
            pub fn build(self, buddy: bool) -> Result<Box<dyn VictimChoice>, String> {
                match self {
                    $(DaemonKind::$variant => Ok(Box::new($ty::build(buddy)?)),)*
                }
            }
        }
    };
}
for_each_daemon!(make_daemon_kind);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        for (kind, name) in DaemonKind::ALL.iter().zip(DaemonKind::NAMES) {
            let parsed: DaemonKind =
                serde::Deserialize::deserialize(serde::de::value::StrDeserializer::<
                    serde::de::value::Error,
                >::new(name))
                .unwrap();
            assert_eq!((parsed, kind.name()), (*kind, *name));
        }
    }
}
