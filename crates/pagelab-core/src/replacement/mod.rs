//! Replacement policies: small policy objects that a set-associative array consults —
//! a TLB array, a walk cache or a data cache level.
//! A policy keeps its own per-set state and never sees tags; the array owns storage.
//!
//! Adding a policy: a file here implementing [`Replacement`], and one line in
//! [`for_each_policy!`] naming it (see docs/EXTENDING.md).

mod fifo;
mod linked_lru;
mod lru;
mod nru;
mod plru;
mod random;
mod stamps;

pub use fifo::Fifo;
pub use lru::Lru;
pub use nru::Nru;
pub use plru::{PackedPlru, TreePlru};
pub use random::Random;

/// The choices an array delegates. `set` < sets, `way` < ways, as given to `new`.
pub trait Replacement: 'static {
    fn new(sets: usize, ways: usize, seed: u64) -> Self
    where
        Self: Sized;
    /// `way` of `set` was hit. A hit on the way hit or filled just before it in the
    /// same set must change nothing (the machine, and the walk caches, credit such
    /// repeated hits without a lookup).
    fn hit(&mut self, set: usize, way: usize);
    /// `way` of `set` was filled with a new entry (a free way, or the victim).
    /// By default a fill counts as a hit.
    #[inline]
    fn fill(&mut self, set: usize, way: usize) {
        self.hit(set, way)
    }
    /// Every way of `set` is valid; choose one to evict.
    fn victim(&mut self, set: usize) -> usize;
    /// `way` of `set` was invalidated (by a flush or shootdown).
    fn invalidate(&mut self, _set: usize, _way: usize) {}
}

/// A policy's choices as a loop over references makes them (see
/// [`crate::tlb::set_assoc::Scan`]): the policy itself, or its state lent to the loop
/// ([`plru::PackedPlru`]), which makes exactly the same choices.
pub trait SetPolicy {
    fn hit(&mut self, set: usize, way: usize);
    fn fill(&mut self, set: usize, way: usize);
    fn victim(&mut self, set: usize) -> usize;
}

impl<R: Replacement> SetPolicy for &mut R {
    #[inline(always)]
    fn hit(&mut self, set: usize, way: usize) {
        Replacement::hit(*self, set, way)
    }
    #[inline(always)]
    fn fill(&mut self, set: usize, way: usize) {
        Replacement::fill(*self, set, way)
    }
    #[inline(always)]
    fn victim(&mut self, set: usize) -> usize {
        Replacement::victim(*self, set)
    }
}

/// The policies, by configuration name. The macro hands the list to `$m`, which
/// builds whatever needs all of them (the TLB enum, the name list).
#[macro_export]
macro_rules! for_each_policy {
    ($m:ident) => {
        $m! {
            "lru" => Lru,
            "nru" => Nru,
            "plru" => TreePlru,
            "fifo" => Fifo,
            "random" => Random,
        }
    };
}

macro_rules! define_any_replacement {
    ($($name:literal => $policy:ident,)*) => {
        /// Every policy as one type, chosen by name, for arrays that are not generic
        /// over their policy (data cache levels): calls dispatch with a `match`.
        #[derive(Clone, Debug)]
        pub enum AnyReplacement {
            $($policy($policy),)*
        }

        /// The policies' names, as configurations give them.
        pub const NAMES: &[&str] = &[$($name),*];

        impl AnyReplacement {
            /// The policy named `name`, or `None`.
            pub fn named(name: &str, sets: usize, ways: usize, seed: u64) -> Option<AnyReplacement> {
                match name {
                    $($name => Some(AnyReplacement::$policy($policy::new(sets, ways, seed))),)*
                    _ => None,
                }
            }
            #[inline]
            pub fn hit(&mut self, set: usize, way: usize) {
                match self { $(AnyReplacement::$policy(p) => p.hit(set, way),)* }
            }
            #[inline]
            pub fn fill(&mut self, set: usize, way: usize) {
                match self { $(AnyReplacement::$policy(p) => p.fill(set, way),)* }
            }
            #[inline]
            pub fn victim(&mut self, set: usize) -> usize {
                match self { $(AnyReplacement::$policy(p) => p.victim(set),)* }
            }
            pub fn invalidate(&mut self, set: usize, way: usize) {
                match self { $(AnyReplacement::$policy(p) => p.invalidate(set, way),)* }
            }
        }
    };
}

crate::for_each_policy!(define_any_replacement);
