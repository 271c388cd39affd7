/* radix.c -- integer radix sort in the style of SPLASH-2's RADIX, one process.

     radix [KEYS [RADIX [MAXKEY]]]      (defaults: 262144 1024 524288, SPLASH-2's)

   Stands in for `radix` of Fang, Zhang, Carter, McKee and Hsieh, "Online Superpage
   Promotion Revisited" (SIGMETRICS 2000), §4.2 and Table 1: "an
   integer radix sort program (based on the method of Blelloch et al.) run with the
   SPLASH-2 default arguments" (-n262144 -r1024 -m524288, one processor). Our own code,
   from that description and SPLASH-2's documented method, not SPLASH-2's source.

   KEYS 32-bit keys, uniform in 0 .. MAXKEY - 1 (splitmix64, fixed seed), are sorted
   digit by digit, least significant first, a digit being log2(RADIX) bits (RADIX a
   power of two; MAXKEY 524,288 = 2^19 and RADIX 1024: two passes). Each pass, as in
   Blelloch et al.'s counting method that SPLASH-2 follows:
     1. histogram: count the keys of each digit value (RADIX counters);
     2. prefix sum: each digit value's first rank in the output;
     3. permutation: each key, in order, goes to the next rank of its digit.
   The keys move between two arrays (from, to), swapped after each pass. The
   permutation writes RADIX streams at once, spread over the whole destination array
   (SPLASH-2 defaults: 1 MiB, 256 pages; 1,024 buckets of ~1 KiB), which neither a
   32- nor a 128-entry TLB covers (Table 1: 20 % and 16 % of the time in misses).

   It checks that the result is sorted and prints a checksum of it (the same arguments
   give the same output). Under `pagelab record --start-off` (recorder/include/
   pagelab.h) tracing starts with the first pass, after the keys are generated.

   Scale: the paper's run (the defaults) makes ~4.0 M data references; the catalogue
   sorts 1,048,576 keys (SPLASH-2's -n1048576, 4 times the default; ~16 M references),
   radix and MAXKEY as in the paper, so the passes and the scattered permutation are
   the same, over 1,024 pages instead of 256. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagelab.h"

#define KEY_SEED 0x4ad1u

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t x = (*s += 0x9e3779b97f4a7c15u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void *alloc(uint64_t bytes, const char *what)
{
    uint64_t align = (uint64_t)2 << 20;
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "radix: cannot allocate %s (%" PRIu64 " KiB)\n", what, bytes >> 10);
        exit(1);
    }
    return p;
}

/* One pass on the digit at bit `shift`: from[] -> to[], stable. */
static void pass(const uint32_t *from, uint32_t *to, uint64_t n, uint32_t *rank,
                 uint64_t radix, unsigned shift)
{
    uint32_t mask = (uint32_t)radix - 1;
    for (uint64_t d = 0; d < radix; d++)
        rank[d] = 0;
    for (uint64_t i = 0; i < n; i++)
        rank[(from[i] >> shift) & mask]++;
    uint32_t sum = 0;
    for (uint64_t d = 0; d < radix; d++) {
        uint32_t c = rank[d];
        rank[d] = sum;
        sum += c;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = from[i];
        to[rank[(k >> shift) & mask]++] = k;
    }
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "radix: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 4) {
        fprintf(stderr, "usage: radix [KEYS [RADIX [MAXKEY]]]   (defaults: 262144 1024 524288)\n");
        return 2;
    }
    uint64_t n = argc > 1 ? number(argv[1], "KEYS") : 262144;
    uint64_t radix = argc > 2 ? number(argv[2], "RADIX") : 1024;
    uint64_t maxkey = argc > 3 ? number(argv[3], "MAXKEY") : 524288;
    if (n < 1 || n > ((uint64_t)1 << 31) || radix < 2 || radix > ((uint64_t)1 << 24)
        || (radix & (radix - 1)) != 0 || maxkey < 1 || maxkey > ((uint64_t)1 << 32)) {
        fprintf(stderr, "radix: need 1 <= KEYS <= 2^31, RADIX a power of two from 2 to 2^24, "
                        "1 <= MAXKEY <= 2^32\n");
        return 2;
    }
    unsigned bits = 0, keybits = 0;
    while (((uint64_t)1 << bits) < radix)
        bits++;
    while (((uint64_t)1 << keybits) < maxkey)
        keybits++;

    uint32_t *from = alloc(n * 4, "keys"), *to = alloc(n * 4, "keys");
    uint32_t *rank = alloc(radix * 4, "ranks");
    uint64_t s = KEY_SEED, before = 0;
    for (uint64_t i = 0; i < n; i++) {
        from[i] = (uint32_t)(splitmix64(&s) % maxkey);
        before += from[i];
    }

    PAGELAB_START();
    unsigned passes = 0;
    for (unsigned shift = 0; shift < keybits || passes == 0; shift += bits) {
        pass(from, to, n, rank, radix, shift);
        uint32_t *t = from;
        from = to;
        to = t;
        passes++;
    }

    uint64_t after = 0, hash = 0, unsorted = 0;
    for (uint64_t i = 0; i < n; i++) {
        after += from[i];
        hash = (hash ^ from[i]) * 0x100000001b3u;
        unsorted += i > 0 && from[i - 1] > from[i];
    }
    if (unsorted || after != before) {
        fprintf(stderr, "radix: wrong result: %" PRIu64 " keys out of order\n", unsorted);
        return 1;
    }
    printf("radix: %" PRIu64 " keys below %" PRIu64 ", radix %" PRIu64 ", %u passes, "
           "sorted, first %" PRIu32 " last %" PRIu32 ", hash %016" PRIx64 "\n",
           n, maxkey, radix, passes, from[0], from[n - 1], hash);
    free(rank);
    free(to);
    free(from);
    return 0;
}
