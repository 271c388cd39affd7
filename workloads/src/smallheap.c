/* smallheap.c -- lookups in a chained hash table of small heap blocks: all its data
   are small-dynamic in pagelab's categories (the brk heap) and span a few MiB, a
   footprint the TLBs nearly cover, so huge pages should bring it little; the
   counterpart of randread.c when `pagelab advise` compares mappings.

     smallheap [LOOKUPS [KEYS]]

   KEYS (default 100,000) nodes, each a 48-byte malloc (a 64-byte chunk of glibc's: a
   key, the next node of its chain, four words of value), are made one at a time and
   pushed onto 32,768 chains by the key's low bits; the chains' heads sit in 8 blocks
   of 4,096 pointers (32 KiB each), so that no block reaches 128 KiB. Keys are
   splitmix64 of 0 .. KEYS - 1 (fixed seeds). Then LOOKUPS (default 50,000,000)
   lookups of keys drawn at random among them (xorshift64, fixed seed): hash, walk the
   chain, add the node's four value words to the checksum. Lookups are independent of
   one another.

   It prints the checksum (the same arguments give the same one) and the seconds the
   lookups took (CLOCK_MONOTONIC), on one line; with PAGELAB_REPORT_HUGE=1 a second
   line, the AnonHugePages of the process at the end (hugereport.h). Under `pagelab
   record --start-off` (recorder/include/pagelab.h) tracing starts with the first
   lookup. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hugereport.h"
#include "pagelab.h"

#define KEY_SEED    0x6b657973u
#define LOOKUP_SEED 0x100c0b5eed5u
#define SEG_BITS    12               /* 4,096 heads a block: 32 KiB */
#define SEGS        8

struct node {
    uint64_t key;
    struct node *next;
    uint64_t value[4];
};

static struct node **heads[SEGS];

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static struct node **chain(uint64_t key)
{
    return &heads[(key >> SEG_BITS) % SEGS][key & ((1u << SEG_BITS) - 1)];
}

static void build(uint64_t keys)
{
    for (int s = 0; s < SEGS; s++) {
        heads[s] = calloc((size_t)1 << SEG_BITS, sizeof *heads[s]);
        if (!heads[s]) {
            fprintf(stderr, "smallheap: out of memory\n");
            exit(1);
        }
    }
    for (uint64_t i = 0; i < keys; i++) {
        struct node *n = malloc(sizeof *n);
        if (!n) {
            fprintf(stderr, "smallheap: out of memory\n");
            exit(1);
        }
        n->key = splitmix64(KEY_SEED + i);
        for (int j = 0; j < 4; j++)
            n->value[j] = n->key * (2 * j + 1);
        struct node **h = chain(n->key);
        n->next = *h;
        *h = n;
    }
}

/* N lookups of keys drawn from generator state *x; returns the sum of their values. */
static uint64_t lookup(uint64_t keys, uint64_t *x, uint64_t n)
{
    uint64_t r = *x, sum = 0;
    for (uint64_t k = 0; k < n; k++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        uint64_t key = splitmix64(KEY_SEED + (uint64_t)(((unsigned __int128)r * keys) >> 64));
        for (const struct node *p = *chain(key); p; p = p->next)
            if (p->key == key) {
                sum += p->value[0] + p->value[1] + p->value[2] + p->value[3];
                break;
            }
    }
    *x = r;
    return sum;
}

static uint64_t number(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "smallheap: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "usage: smallheap [LOOKUPS [KEYS]]  (default 50000000 lookups, 100000 keys)\n");
        return 2;
    }
    uint64_t lookups = argc > 1 ? number(argv[1], "LOOKUPS") : 50000000;
    uint64_t keys = argc > 2 ? number(argv[2], "KEYS") : 100000;
    if (keys < 1 || keys > 100000000) {
        fprintf(stderr, "smallheap: need 1 <= KEYS <= 100000000\n");
        return 2;
    }
    build(keys);

    struct timespec t0, t1;
    uint64_t x = LOOKUP_SEED;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PAGELAB_START();
    uint64_t sum = lookup(keys, &x, lookups);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    printf("smallheap: %" PRIu64 " keys, %" PRIu64 " lookups, checksum 0x%016" PRIx64 ", %.3f s\n",
           keys, lookups, sum, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    report_huge_pages();
    return 0;
}
