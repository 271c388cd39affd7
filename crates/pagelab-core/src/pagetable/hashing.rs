//! What the hashing structures share: the hash function, a bucket array with
//! collision chaining ([`Chained`], the hashed page table of Szmajda and Heiser,
//! "Variable Radix Page Table: A Page Table for Modern Architectures", ACSAC 2003,
//! §2.2 and Fig. 3), and the OS's list of mapped regions ([`Extents`]).
//!
//! Hashed structures key a page by (address space, page size, page number) and look
//! a mixed-size address space up with one probe per page size the table maps,
//! smallest first: the paper's "try multiple hash functions" workaround.

use super::mem::{shift_for, NodeMem};
use super::{MapError, Perms, Translation, UpdateCost, Walk};
use crate::addr::{Asid, PageSize, Pfn, PhysAddr};
use crate::frames::FrameAllocator;
use std::collections::BTreeMap;

/// What a hashed entry is tagged with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    pub asid: Asid,
    /// log2 of the page size.
    pub shift: u8,
    /// The page number at that size (or a cluster's number).
    pub tag: u64,
}

impl Key {
    /// A 64-bit mix of the key (multiply, xor-shift: the finalizer of SplitMix64).
    pub fn hash(self) -> u64 {
        let mut x = self.tag.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (self.asid.0 as u64) << 40
            ^ (self.shift as u64) << 56;
        x ^= x >> 30;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ x >> 31
    }
    /// The bucket of `1 << bits`.
    pub fn bucket(self, bits: u32) -> usize {
        (self.hash() >> (64 - bits)) as usize
    }
}

/// A lookup that probes each page size of `sizes` in turn: `probe` reads what it
/// must for one size (recording it in the walk) and gives the frame and rights of a
/// page of that size, if one maps the address.
#[inline]
pub(super) fn probe_sizes(
    sizes: &[PageSize],
    mut probe: impl FnMut(PageSize, &mut Walk) -> Option<(Pfn, Perms)>,
) -> Walk {
    let mut walk = Walk::new();
    for &size in sizes {
        if let Some((pfn, perms)) = probe(size, &mut walk) {
            walk.translation = Some(Translation { pfn, size, perms });
            break;
        }
    }
    walk
}

const NIL: u32 = u32::MAX;

struct Rec<R> {
    key: Option<Key>,
    val: R,
    next: u32,
}

/// What a bucket of a [`Chained`] table holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bucket {
    /// An 8-byte pointer to the first record of its chain, every record allocated
    /// apart: a lookup reads the pointer, then each record on the chain (the hash
    /// table of pointers that §5.2 of the VRPT paper implies, where "HPT and CPT must
    /// touch at least two [cache lines] to compute the hash and resolve collisions").
    #[default]
    Pointer,
    /// The chain's first record itself, overflow records chained behind it: a lookup
    /// without collision reads one record (Huck and Hays' layout, ISCA 1993).
    Entry,
}

/// Bytes of a bucket that holds a pointer.
const POINTER_BYTES: u64 = 8;

/// A hash table of records of `rec_bytes`, chained: each bucket holds its chain's
/// first record in place or a pointer to it ([`Bucket`]); the other records come
/// from the node memory. The bucket array is allocated from the frame allocator at
/// the first insert and kept.
pub(super) struct Chained<R> {
    bits: u32,
    rec_bytes: u64,
    bucket: Bucket,
    /// Each bucket's first record, then overflow records.
    recs: Vec<Rec<R>>,
    free: Vec<u32>,
    table: Option<PhysAddr>,
    /// Where each bucket's first record lives ([`Bucket::Pointer`] only).
    head_addr: Vec<PhysAddr>,
    overflow_addr: Vec<PhysAddr>,
    mem: NodeMem,
}

impl<R: Default> Chained<R> {
    /// `1 << bits` buckets (1..=30 bits) holding `bucket`, of records of `rec_bytes`.
    pub fn new(bits: u32, rec_bytes: u64, bucket: Bucket) -> Chained<R> {
        Chained {
            bits,
            rec_bytes,
            bucket,
            head_addr: match bucket {
                Bucket::Pointer => vec![PhysAddr(0); 1 << bits],
                Bucket::Entry => Vec::new(),
            },
            recs: (0..1usize << bits)
                .map(|_| Rec {
                    key: None,
                    val: R::default(),
                    next: NIL,
                })
                .collect(),
            free: Vec::new(),
            table: None,
            overflow_addr: Vec::new(),
            mem: NodeMem::default(),
        }
    }

    /// Host bytes [`Chained::new`] allocates for `buckets` buckets holding `bucket`.
    pub fn bucket_bytes(buckets: u64, bucket: Bucket) -> u64 {
        let head = match bucket {
            Bucket::Pointer => std::mem::size_of::<PhysAddr>(),
            Bucket::Entry => 0,
        };
        ((std::mem::size_of::<Rec<R>>() + head) as u64).saturating_mul(buckets)
    }

    fn buckets(&self) -> usize {
        1 << self.bits
    }

    /// Bytes of one bucket.
    fn bucket_width(&self) -> u64 {
        match self.bucket {
            Bucket::Pointer => POINTER_BYTES,
            Bucket::Entry => self.rec_bytes,
        }
    }

    /// Where record `i` lives.
    pub fn addr(&self, i: u32) -> PhysAddr {
        let i = i as usize;
        match (i.checked_sub(self.buckets()), self.bucket) {
            (None, Bucket::Entry) => {
                PhysAddr(self.table.map_or(0, |t| t.0) + i as u64 * self.rec_bytes)
            }
            (None, Bucket::Pointer) => self.head_addr[i],
            (Some(o), _) => self.overflow_addr[o],
        }
    }

    /// The record tagged `key`, calling `read` with the address of every bucket
    /// pointer and record read on the way (none before the first insert: there is no
    /// table yet).
    #[inline]
    pub fn find(&self, key: Key, mut read: impl FnMut(PhysAddr)) -> Option<u32> {
        let table = self.table?;
        let mut i = key.bucket(self.bits) as u32;
        if self.bucket == Bucket::Pointer {
            read(PhysAddr(table.0 + i as u64 * POINTER_BYTES));
            self.recs[i as usize].key?;
        }
        loop {
            read(self.addr(i));
            let r = &self.recs[i as usize];
            if r.key == Some(key) {
                return Some(i);
            }
            if r.next == NIL {
                return None;
            }
            i = r.next;
        }
    }

    pub fn get(&self, i: u32) -> &R {
        &self.recs[i as usize].val
    }

    pub fn get_mut(&mut self, i: u32) -> &mut R {
        &mut self.recs[i as usize].val
    }

    /// Add a record for `key` (which has none): in its bucket if that is empty, else
    /// as an overflow record second in the chain.
    pub fn insert(
        &mut self,
        key: Key,
        val: R,
        frames: &mut dyn FrameAllocator,
        cost: &mut UpdateCost,
    ) -> Result<u32, MapError> {
        if self.table.is_none() {
            let bytes = self.buckets() as u64 * self.bucket_width();
            self.table = Some(self.mem.alloc(shift_for(bytes), frames)?);
            cost.clear(bytes);
        }
        let b = key.bucket(self.bits);
        cost.reads += 1;
        cost.writes += 1;
        if self.recs[b].key.is_none() {
            if self.bucket == Bucket::Pointer {
                // The record apart, then the bucket's pointer to it.
                self.head_addr[b] = self.mem.alloc(shift_for(self.rec_bytes), frames)?;
                cost.writes += 1;
            }
            self.recs[b].key = Some(key);
            self.recs[b].val = val;
            return Ok(b as u32);
        }
        let addr = self.mem.alloc(shift_for(self.rec_bytes), frames)?;
        let rec = Rec {
            key: Some(key),
            val,
            next: self.recs[b].next,
        };
        let j = match self.free.pop() {
            Some(j) => {
                self.recs[j as usize] = rec;
                let o = j as usize - self.buckets();
                self.overflow_addr[o] = addr;
                j
            }
            None => {
                self.recs.push(rec);
                self.overflow_addr.push(addr);
                self.recs.len() as u32 - 1
            }
        };
        self.recs[b].next = j;
        cost.writes += 1;
        Ok(j)
    }

    /// Remove record `i`. A bucket's own record is replaced by the next in its chain.
    pub fn remove(&mut self, i: u32, frames: &mut dyn FrameAllocator, cost: &mut UpdateCost) {
        let key = self.recs[i as usize].key.expect("a live record");
        let b = key.bucket(self.bits) as u32;
        let gone = if i == b {
            let next = self.recs[b as usize].next;
            if next == NIL {
                let r = &mut self.recs[b as usize];
                (r.key, r.val) = (None, R::default());
                cost.writes += 1;
                if self.bucket == Bucket::Pointer {
                    let addr = self.head_addr[b as usize];
                    self.mem.free(addr, shift_for(self.rec_bytes), frames);
                }
                return;
            }
            if self.bucket == Bucket::Pointer {
                // The pointer moves to the next record, whose memory stays; the
                // head's goes back below, in the place of the next's.
                let o = next as usize - self.buckets();
                std::mem::swap(&mut self.head_addr[b as usize], &mut self.overflow_addr[o]);
            }
            // The next record moves into the bucket.
            let moved = std::mem::replace(
                &mut self.recs[next as usize],
                Rec {
                    key: None,
                    val: R::default(),
                    next: NIL,
                },
            );
            self.recs[b as usize] = moved;
            cost.reads += 1;
            next
        } else {
            let mut p = b;
            while self.recs[p as usize].next != i {
                p = self.recs[p as usize].next;
                cost.reads += 1;
            }
            self.recs[p as usize].next = self.recs[i as usize].next;
            let r = &mut self.recs[i as usize];
            (r.key, r.val, r.next) = (None, R::default(), NIL);
            i
        };
        cost.writes += 1;
        let addr = self.overflow_addr[gone as usize - self.buckets()];
        self.mem.free(addr, shift_for(self.rec_bytes), frames);
        self.free.push(gone);
    }

    /// Bytes of the bucket array and the overflow records' frames.
    pub fn bytes(&self) -> u64 {
        self.mem.bytes()
    }
}

/// The regions an address space has mapped, as the OS keeps them apart from the
/// page table (a VM map): a hashed table cannot tell by itself whether a new page
/// overlaps a page of another size without probing every smaller page inside it.
/// Consulting it is not a table reference and it is not part of the footprint.
#[derive(Default)]
pub(super) struct Extents(BTreeMap<(Asid, u64), u64>);

impl Extents {
    /// Whether any region of `asid` shares a byte with `[first, last]`.
    pub fn overlaps(&self, asid: Asid, first: u64, last: u64) -> bool {
        self.0
            .range((asid, 0)..=(asid, last))
            .next_back()
            .is_some_and(|(_, &end)| end >= first)
    }
    pub fn insert(&mut self, asid: Asid, first: u64, last: u64) {
        self.0.insert((asid, first), last);
    }
    pub fn remove(&mut self, asid: Asid, first: u64) {
        self.0.remove(&(asid, first));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SimpleAllocator;

    fn key(tag: u64) -> Key {
        Key {
            asid: Asid(0),
            shift: 12,
            tag,
        }
    }

    #[test]
    fn chains_grow_and_shrink_in_place() {
        for bucket in [Bucket::Entry, Bucket::Pointer] {
            let mut frames = SimpleAllocator::new(1 << 16);
            let mut t: Chained<u64> = Chained::new(1, 32, bucket);
            let mut cost = UpdateCost::NONE;
            // Two buckets: five keys collide somewhere.
            let ids: Vec<u32> = (0..5)
                .map(|k| t.insert(key(k), k * 10, &mut frames, &mut cost).unwrap())
                .collect();
            let heads: std::collections::HashSet<usize> =
                (0..5).map(|k| key(k).bucket(1)).collect();
            let chained = 5 - heads.len() as u64;
            // A pointer bucket's first record is written apart, then the pointer.
            let pointers = match bucket {
                Bucket::Pointer => heads.len() as u64,
                Bucket::Entry => 0,
            };
            assert_eq!(
                cost.writes,
                1 + 5 + chained + pointers,
                "{bucket:?}: table cleared, 5 records, links"
            );
            for k in 0..5u64 {
                let mut reads = 0;
                let i = t.find(key(k), |_| reads += 1).unwrap();
                assert_eq!(*t.get(i), k * 10);
                let first = (bucket == Bucket::Pointer) as u32;
                assert!((1 + first..=4 + first).contains(&reads), "{bucket:?}");
            }
            assert_eq!(t.find(key(99), |_| ()), None);
            for (k, &i) in ids.iter().enumerate() {
                let i = t.find(key(k as u64), |_| ()).unwrap_or(i);
                t.remove(i, &mut frames, &mut cost);
                assert_eq!(t.find(key(k as u64), |_| ()), None);
                for later in k as u64 + 1..5 {
                    assert_eq!(*t.get(t.find(key(later), |_| ()).unwrap()), later * 10);
                }
            }
            assert_eq!(
                t.bytes(),
                4096,
                "{bucket:?}: only the bucket array's frame remains"
            );
        }
    }

    #[test]
    fn a_pointer_bucket_is_read_before_its_records() {
        let mut frames = SimpleAllocator::new(1 << 16);
        let mut t: Chained<u64> = Chained::new(4, 32, Bucket::Pointer);
        let mut cost = UpdateCost::NONE;
        let i = t.insert(key(7), 70, &mut frames, &mut cost).unwrap();
        let table = t.table.unwrap();
        let mut read = Vec::new();
        assert_eq!(t.find(key(7), |a| read.push(a)), Some(i));
        let b = key(7).bucket(4) as u64;
        assert_eq!(read, vec![PhysAddr(table.0 + 8 * b), t.addr(i)]);
        assert_ne!(t.addr(i).0 >> 12, table.0 >> 12, "the record lives apart");
        // An empty bucket: its null pointer only.
        let other = (0..).map(key).find(|k| k.bucket(4) as u64 != b).unwrap();
        let mut n = 0;
        assert_eq!(t.find(other, |_| n += 1), None);
        assert_eq!(n, 1);
        // 16 pointers (one frame) and one 32-byte record (another).
        assert_eq!(t.bytes(), 2 * 4096);
    }

    #[test]
    fn extents_overlap() {
        let mut e = Extents::default();
        e.insert(Asid(1), 0x1000, 0x1fff);
        e.insert(Asid(1), 0x20_0000, 0x3f_ffff);
        assert!(e.overlaps(Asid(1), 0x1800, 0x1800));
        assert!(e.overlaps(Asid(1), 0, 0x1000));
        assert!(!e.overlaps(Asid(1), 0x2000, 0x1f_ffff));
        assert!(!e.overlaps(Asid(2), 0x1000, 0x1fff));
        assert!(e.overlaps(Asid(1), 0x3f_ffff, u64::MAX));
        e.remove(Asid(1), 0x1000);
        assert!(!e.overlaps(Asid(1), 0x1800, 0x1800));
    }
}
