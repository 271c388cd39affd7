// The standard benchmark generator, kept here so the benchmark runs from a clone
// alone. Do not edit: the standard trace's reference results (0.254017 and 0.224331,
// checked by `pagelab-bench --expect-standard`; docs/performance.md) hold for this
// exact generator.
// Synthetic page-reference trace generator (deterministic).
// Writes three files with the same reference stream:
//   <out>.va.u64      raw little-endian u64 virtual addresses
//   <out>.vpn.u64     raw little-endian u64 virtual page numbers (va >> 12)
//   <out>.vpn.oracleGeneral.bin  libCacheSim oracleGeneral records
//        struct { u32 real_time; u64 obj_id; u32 obj_size; i64 next_access_vtime; } (24 B, packed)
//        real_time = i / 1e6, obj_id = vpn, obj_size = 4096, next_access_vtime = -1
use std::fs::File;
use std::io::{BufWriter, Write};

struct Rng(u64, u64, u64, u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        let mut s = seed;
        let mut sm = || {
            s = s.wrapping_add(0x9E3779B97F4A7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
            z ^ (z >> 31)
        };
        Rng(sm(), sm(), sm(), sm())
    }
    #[inline]
    fn next(&mut self) -> u64 {
        let r = (self.1.wrapping_mul(5)).rotate_left(7).wrapping_mul(9);
        let t = self.1 << 17;
        self.2 ^= self.0;
        self.3 ^= self.1;
        self.1 ^= self.2;
        self.0 ^= self.3;
        self.2 ^= t;
        self.3 = self.3.rotate_left(45);
        r
    }
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    #[inline]
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

const PAGE: u64 = 4096;
const HEAP_BASE: u64 = 0x7f12_0000_0000; // 4 GiB heap region
const HEAP_PAGES: u64 = 1 << 20; // 4 GiB / 4 KiB
const STACK_TOP: u64 = 0x7ffd_8000_0000;
const STACK_BYTES: u64 = 32 * 1024; // hot stack window

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(100_000_000);
    let out = args.get(2).cloned().unwrap_or("trace".to_string());
    let seed: u64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(42);
    let theta: f64 = 0.99;

    // Zipf CDF over HEAP_PAGES ranks
    let np = HEAP_PAGES as usize;
    let mut cdf = vec![0f64; np];
    let mut acc = 0.0;
    for i in 0..np {
        acc += 1.0 / ((i + 1) as f64).powf(theta);
        cdf[i] = acc;
    }
    for v in cdf.iter_mut() {
        *v /= acc;
    }
    // rank -> page permutation (bijective on 2^20): scatter hot pages over the heap
    let perm = |r: u64| -> u64 { (r.wrapping_mul(0x9E3779B1) .wrapping_add(0x12345)) & (HEAP_PAGES - 1) };

    let mut rng = Rng::new(seed);
    let mut wva = BufWriter::with_capacity(1 << 22, File::create(format!("{out}.va.u64")).unwrap());
    let mut wvpn = BufWriter::with_capacity(1 << 22, File::create(format!("{out}.vpn.u64")).unwrap());
    let mut wog = BufWriter::with_capacity(
        1 << 22,
        File::create(format!("{out}.vpn.oracleGeneral.bin")).unwrap(),
    );

    let mut i: u64 = 0;
    let mut counts = [0u64; 4];
    let heap_bytes = HEAP_PAGES * PAGE;
    while i < n {
        // pick a phase
        let len = 4096 + rng.below(1 << 18);
        let p = rng.below(100);
        let kind = if p < 30 { 0 } else if p < 45 { 1 } else if p < 90 { 2 } else { 3 };
        // phase state
        let mut pos = rng.below(heap_bytes) & !63;
        let elem = if rng.below(2) == 0 { 8 } else { 64 };
        let strides = [4096u64, 4160, 8192, 65600, 2 * 1024 * 1024 + 4096];
        let stride = strides[rng.below(strides.len() as u64) as usize];
        let mut burst_left = 0u64;
        let mut burst_addr = 0u64;
        let mut j = 0;
        while j < len && i < n {
            let va;
            if rng.below(4) == 0 {
                // stack / locals: random 8-byte slot in a 32 KiB window below STACK_TOP
                va = STACK_TOP - 8 - (rng.below(STACK_BYTES / 8) * 8);
                counts[3] += 1;
            } else {
                match kind {
                    0 => {
                        // sequential scan with 8 B or 64 B element stride
                        va = HEAP_BASE + pos;
                        pos = (pos + elem) % heap_bytes;
                        counts[0] += 1;
                    }
                    1 => {
                        // strided (column walk)
                        va = HEAP_BASE + pos;
                        pos = (pos + stride) % heap_bytes;
                        counts[1] += 1;
                    }
                    3 => {
                        // uniform random probes into a 64 MiB table (hash-table like)
                        va = HEAP_BASE + (pos & !((64u64 << 20) - 1) & (heap_bytes - 1))
                            + (rng.below((64u64 << 20) / 8) * 8);
                        counts[1] += 1;
                    }
                    _ => {
                        // zipfian object accesses: pick a page by Zipf rank, touch a small
                        // burst of 1..8 consecutive words in one object
                        if burst_left == 0 {
                            let u = rng.unit();
                            let r = cdf.partition_point(|&c| c < u) as u64;
                            let page = perm(r.min(HEAP_PAGES - 1));
                            burst_addr = HEAP_BASE + page * PAGE + (rng.below(PAGE / 64) * 64);
                            burst_left = 1 + rng.below(8);
                        }
                        va = burst_addr;
                        burst_addr += 8;
                        burst_left -= 1;
                        counts[2] += 1;
                    }
                }
            }
            let vpn = va >> 12;
            wva.write_all(&va.to_le_bytes()).unwrap();
            wvpn.write_all(&vpn.to_le_bytes()).unwrap();
            let mut rec = [0u8; 24];
            rec[0..4].copy_from_slice(&((i / 1_000_000) as u32).to_le_bytes());
            rec[4..12].copy_from_slice(&vpn.to_le_bytes());
            rec[12..16].copy_from_slice(&(4096u32).to_le_bytes());
            rec[16..24].copy_from_slice(&(-1i64).to_le_bytes());
            wog.write_all(&rec).unwrap();
            i += 1;
            j += 1;
        }
    }
    wva.flush().unwrap();
    wvpn.flush().unwrap();
    wog.flush().unwrap();
    eprintln!(
        "wrote {n} refs: seq {} strided+table {} zipf {} stack {}",
        counts[0], counts[1], counts[2], counts[3]
    );
}
