/* pagelab calibrate's measurements, run natively: the core clock; an anonymous
 * zero-fill page fault of 4 KiB and of 2 MiB (transparent huge pages, zeroing
 * included); a 4 KiB page cleared and copied from memory; and the latency of a load
 * whose page misses the TLBs, by footprint, with 4 KiB and with 2 MiB pages (a
 * pointer chase over one line per 4 KiB page in a random cycle, so nothing is
 * prefetched: the difference between the two is what the walks cost at that
 * footprint, where the page-table entries sit in the caches). Given the sizes of the
 * data caches, also the load-to-use latency of each (a chase over every line of a
 * footprint that fits it, on 2 MiB pages) and of memory (over every line of four times
 * the largest, 256 MiB at least). And the data TLBs' reach: loads over one line in
 * each of 16 to 16,384 pages, with 4 KiB and with 2 MiB pages.
 *
 *   calibrate [--quick] [--cache BYTES]...
 *   calibrate --clock      (the core clock alone)
 *
 * Each figure is measured several times; the output (standard output, one JSON
 * object) gives each as {median, min, max, runs}, in core cycles. Progress goes to
 * standard error. `make native` builds this into target/native/calibrate.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define KB 1024UL
#define MB (1024UL * KB)
#define MAX_RUNS 9

static int runs = 7;
static int steps, step;
/* Loads a chase makes each run: 0 for its default (by footprint). */
static size_t chase_loads;

typedef struct {
    double median, min, max;
} stats;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static stats stats_of(double *v, int n, double scale) {
    qsort(v, n, sizeof *v, cmp);
    stats s = {v[n / 2] * scale, v[0] * scale, v[n - 1] * scale};
    return s;
}

static void progress(const char *what) {
    fprintf(stderr, "calibrate: %s (%d of %d)\n", what, ++step, steps);
}

static char *map_aligned(size_t bytes, int advice) {
    char *raw = mmap(NULL, bytes + 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("calibrate: mmap");
        exit(1);
    }
    char *p = (char *)(((uintptr_t)raw + 2 * MB - 1) & ~(2 * MB - 1));
    /* What lies outside the aligned region goes back: the caller unmaps `bytes` at p. */
    if (p > raw)
        munmap(raw, p - raw);
    if (raw + bytes + 2 * MB > p + bytes)
        munmap(p + bytes, raw + bytes + 2 * MB - (p + bytes));
    /* A kernel without transparent huge pages refuses MADV_HUGEPAGE: the run goes on
     * with 4 KiB pages, and its huge-page share says so. */
    if (madvise(p, bytes, advice) != 0 && advice != MADV_HUGEPAGE) {
        perror("calibrate: madvise");
        exit(1);
    }
    return p;
}

/* The share of `bytes` this process holds in huge pages (AnonHugePages). */
static double huge_share(size_t bytes) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    unsigned long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * KB / (double)bytes;
}

/* Core cycles per ns: a chain of dependent additions retires one a cycle; the
 * fastest run is the clock undisturbed. */
static stats clock_ghz(void) {
    double v[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        uint64_t x = r, n = 20000000;
        double t = now_ns();
        for (uint64_t i = 0; i < n; i++)
            __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                             "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                             : "+r"(x));
        v[r] = 8 * n / (now_ns() - t);
    }
    return stats_of(v, runs, 1.0);
}

/* Cycles per fault touching each `step` of a fresh region of `bytes`. */
static stats fault(size_t bytes, size_t stride, int advice, double ghz, double *share) {
    double v[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        char *p = map_aligned(bytes, advice);
        double t = now_ns();
        for (size_t i = 0; i < bytes; i += stride)
            p[i] = 1;
        v[r] = (now_ns() - t) / (bytes / stride);
        if (share)
            *share = huge_share(bytes);
        munmap(p, bytes);
    }
    return stats_of(v, runs, ghz);
}

/* Cycles per 4 KiB page cleared or copied from memory (a region far beyond the caches). */
static stats page_op(size_t bytes, int copy, double ghz) {
    char *dst = map_aligned(bytes, MADV_NOHUGEPAGE), *src = map_aligned(bytes, MADV_NOHUGEPAGE);
    memset(dst, 1, bytes);
    memset(src, 2, bytes);
    size_t pages = bytes / (4 * KB);
    double v[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        double t = now_ns();
        for (size_t i = 0; i < pages; i++) {
            if (copy)
                memcpy(dst + i * 4 * KB, src + i * 4 * KB, 4 * KB);
            else
                memset(dst + i * 4 * KB, r, 4 * KB);
            __asm__ volatile("" ::"r"(dst) : "memory");
        }
        v[r] = (now_ns() - t) / pages;
    }
    munmap(dst, bytes);
    munmap(src, bytes);
    return stats_of(v, runs, ghz);
}

/* A chase's cycle of lines: one line in each `stride` bytes of `bytes` (a stride of
 * 4 KiB puts each line on a page of its own; of 64, every line is read), the pages
 * 4 KiB or 2 MiB (`advice`), in a random order; lines spread over the cache sets.
 * Made once, timed as often as asked. */
typedef struct {
    char *mem;
    size_t map_bytes;
    char **start;
    size_t bytes;
} chain;

static chain chain_make(size_t bytes, size_t stride, int advice, double *share) {
    size_t pages = bytes / stride;
    chain c = {NULL, bytes < 2 * MB ? 2 * MB : bytes, NULL, bytes};
    char *p = map_aligned(c.map_bytes, advice);
    memset(p, 0, bytes);
    if (share)
        *share = huge_share(c.map_bytes);
    size_t *order = malloc(pages * sizeof *order);
    if (!order) {
        fprintf(stderr, "calibrate: no memory for a chase over %zu lines\n", pages);
        exit(1);
    }
    for (size_t i = 0; i < pages; i++)
        order[i] = i;
    uint64_t s = 88172645463325252ULL;
    for (size_t i = pages - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t j = s % (i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (size_t i = 0; i < pages; i++) {
        size_t a = order[i], b = order[(i + 1) % pages];
        *(char **)(p + a * stride + (a + a / 32) % (stride / 64) * 64) =
            p + b * stride + (b + b / 32) % (stride / 64) * 64;
    }
    c.mem = p;
    c.start = (char **)(p + order[0] * stride + (order[0] + order[0] / 32) % (stride / 64) * 64);
    free(order);
    return c;
}

/* Nanoseconds per load of one run of the chase: `chase_loads` loads, or by default
 * about a tenth of a second at memory latency (more loads when they are fast). */
static double chain_time(const chain *c) {
    size_t n = chase_loads ? chase_loads : c->bytes > 8 * MB ? 1500000 : 6000000;
    char **q = c->start;
    double t = now_ns();
    for (size_t i = 0; i < n; i++)
        q = (char **)*q;
    double ns = (now_ns() - t) / n;
    __asm__ volatile("" ::"r"(q));
    return ns;
}

static void chain_free(chain *c) {
    munmap(c->mem, c->map_bytes);
}

/* Cycles per load of a chase (see chain_make), each run timed. */
static stats chase(size_t bytes, size_t stride, int advice, double ghz, double *share) {
    chain c = chain_make(bytes, stride, advice, share);
    double v[MAX_RUNS];
    for (int r = 0; r < runs; r++)
        v[r] = chain_time(&c);
    chain_free(&c);
    return stats_of(v, runs, ghz);
}

static void print_stats(const char *name, stats s, const char *after) {
    printf("  \"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"runs\": %d}%s\n", name, s.median,
           s.min, s.max, runs, after);
}

int main(int argc, char **argv) {
    int quick = 0, ncache = 0, clock_only = 0;
    size_t cache[8], largest = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--clock") == 0) {
            clock_only = 1;
        } else if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc) {
            char *end;
            unsigned long long n = strtoull(argv[++i], &end, 10);
            if (ncache == 8) {
                fprintf(stderr, "calibrate: at most 8 caches\n");
                return 2;
            }
            cache[ncache] = (size_t)n;
            if (*end || n < 4 * KB || n > 4096ULL * MB) {
                fprintf(stderr, "calibrate: --cache %s: a size in bytes from 4096 to 4 GiB\n", argv[i]);
                return 2;
            }
            largest = cache[ncache] > largest ? cache[ncache] : largest;
            ncache++;
        } else {
            fprintf(stderr, "calibrate: unknown argument %s (usage: calibrate [--quick] [--clock] [--cache BYTES]...)\n",
                    argv[i]);
            return 2;
        }
    }
    static const size_t full[] = {16 * KB, 256 * KB, 4 * MB, 64 * MB, 512 * MB};
    static const size_t small[] = {16 * KB, 256 * KB, 64 * MB};
    const size_t *footprints = quick ? small : full;
    int nf = quick ? 3 : 5;
    size_t fault_bytes = quick ? 64 * MB : 256 * MB, op_bytes = quick ? 64 * MB : 256 * MB;
    if (quick)
        runs = 3;
    if (clock_only) { /* the core clock alone, at once: what `advise` converts cycles with */
        stats ghz = clock_ghz();
        printf("{\n");
        print_stats("clock_ghz", ghz, "");
        printf("}\n");
        return 0;
    }
    steps = 7 + 2 * nf + (ncache ? ncache + 1 : 0);
    progress("core clock");
    stats ghz = clock_ghz();
    double g = ghz.max; /* the fastest run: the clock undisturbed */
    double share_2m = 0;
    progress("4 KiB page faults");
    stats f4k = fault(fault_bytes, 4 * KB, MADV_NOHUGEPAGE, g, NULL);
    progress("2 MiB page faults");
    stats f2m = fault(2 * fault_bytes, 2 * MB, MADV_HUGEPAGE, g, &share_2m);
    progress("4 KiB pages cleared");
    stats zero = page_op(op_bytes, 0, g);
    progress("4 KiB pages copied");
    stats copy = page_op(op_bytes, 1, g);
    stats lat[2][5];
    double share[5] = {0};
    for (int i = 0; i < nf; i++) {
        char what[64];
        snprintf(what, sizeof what, "loads over %zu KiB, 4 KiB pages", footprints[i] / KB);
        progress(what);
        lat[0][i] = chase(footprints[i], 4 * KB, MADV_NOHUGEPAGE, g, NULL);
        snprintf(what, sizeof what, "loads over %zu KiB, 2 MiB pages", footprints[i] / KB);
        progress(what);
        lat[1][i] = chase(footprints[i], 4 * KB, MADV_HUGEPAGE, g, &share[i]);
    }
    /* Each cache level, then memory: every line of the footprint, on 2 MiB pages. */
    stats level[9];
    size_t level_bytes[9];
    double level_share[9] = {0};
    for (int i = 0; i <= ncache && ncache > 0; i++) {
        char what[64];
        /* The first level over half its size; a further one over an eighth of its size
         * but four times the level before at least (its share of a last-level cache
         * shared with other cores, or other guests, can be far less than its size);
         * memory over four times the largest, 256 MiB at least. */
        size_t bytes = i == 0 ? cache[0] / 2
                       : i < ncache ? (cache[i] / 8 > 4 * cache[i - 1] ? cache[i] / 8 : 4 * cache[i - 1])
                                    : (4 * largest > 256 * MB ? 4 * largest : 256 * MB);
        if (bytes >= 2 * MB) /* whole huge pages */
            bytes = (bytes + 2 * MB - 1) / (2 * MB) * (2 * MB);
        if (i < ncache && bytes > cache[i] / 2) /* and within the level */
            bytes = cache[i] / 2;
        level_bytes[i] = bytes;
        if (i < ncache)
            snprintf(what, sizeof what, "every line of %zu KiB", bytes / KB);
        else
            snprintf(what, sizeof what, "every line of %zu MiB (memory)", bytes / MB);
        progress(what);
        level[i] = chase(bytes, 64, MADV_HUGEPAGE, g, &level_share[i]);
    }
    /* The data TLBs' reach: loads over one line in each of N pages, N stepping
     * through the sizes TLBs have, with 4 KiB and with 2 MiB pages (where the lines,
     * the same ones, fit in few TLB entries). Where N passes the first level, a 4 KiB
     * load pays a second-level TLB hit; where it passes the last, a walk. */
    static const size_t reach[] = {16,   32,   48,   64,   96,   128,  192,  256,  384,  512,  768,
                                   1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 12288, 16384};
    enum { NREACH = sizeof reach / sizeof reach[0], ALLOCATIONS = 3 };
    /* The two chases of a footprint are timed in turn, and each pair's difference
     * kept: what drifts between runs (the clock, another guest) falls on both. */
    stats reach_4k[NREACH], reach_2m[NREACH], reach_d[NREACH];
    double reach_share[NREACH];
    progress("TLB reach");
    chase_loads = 1000000; /* a run of a few milliseconds: within the caches */
    /* Each footprint on three allocations of each kind (where their frames fall in the
     * caches differs), their pairs pooled; the huge-page share, the least of the three. */
    for (int i = 0; i < NREACH; i++) {
        reach_share[i] = 1.0;
        double t4[ALLOCATIONS * MAX_RUNS], t2[ALLOCATIONS * MAX_RUNS], d[ALLOCATIONS * MAX_RUNS];
        int n = 0;
        for (int k = 0; k < ALLOCATIONS; k++) {
            chain small = chain_make(reach[i] * 4 * KB, 4 * KB, MADV_NOHUGEPAGE, NULL);
            double share;
            chain large = chain_make(reach[i] * 4 * KB, 4 * KB, MADV_HUGEPAGE, &share);
            reach_share[i] = share < reach_share[i] ? share : reach_share[i];
            for (int r = 0; r < runs; r++, n++) {
                t4[n] = chain_time(&small);
                t2[n] = chain_time(&large);
                d[n] = t4[n] - t2[n];
            }
            chain_free(&small);
            chain_free(&large);
        }
        reach_4k[i] = stats_of(t4, n, g);
        reach_2m[i] = stats_of(t2, n, g);
        reach_d[i] = stats_of(d, n, g);
    }
    progress("done");
    printf("{\n");
    print_stats("clock_ghz", ghz, ",");
    print_stats("fault_4k_cycles", f4k, ",");
    print_stats("fault_2m_cycles", f2m, ",");
    printf("  \"fault_2m_huge_share\": %.3f,\n", share_2m);
    print_stats("zero_4k_cycles", zero, ",");
    print_stats("copy_4k_cycles", copy, ",");
    printf("  \"loads\": [\n");
    for (int i = 0; i < nf; i++) {
        printf("    {\"footprint_bytes\": %zu, \"huge_share\": %.3f,\n", footprints[i], share[i]);
        printf("     \"cycles_4k\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"runs\": %d},\n",
               lat[0][i].median, lat[0][i].min, lat[0][i].max, runs);
        printf("     \"cycles_2m\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"runs\": %d}}%s\n",
               lat[1][i].median, lat[1][i].min, lat[1][i].max, runs, i + 1 < nf ? "," : "");
    }
    printf("  ],\n  \"lines\": [\n");
    for (int i = 0; i <= ncache && ncache > 0; i++) {
        printf("    {\"cache_bytes\": %zu, \"footprint_bytes\": %zu, \"huge_share\": %.3f,\n",
               i < ncache ? cache[i] : 0, level_bytes[i], level_share[i]);
        printf("     \"cycles\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"runs\": %d}}%s\n",
               level[i].median, level[i].min, level[i].max, runs, i < ncache ? "," : "");
    }
    printf("  ],\n  \"reach\": [\n");
    for (int i = 0; i < NREACH; i++) {
        printf("    {\"pages\": %zu, \"huge_share\": %.3f,\n", reach[i], reach_share[i]);
        printf("     \"cycles_4k\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"runs\": %d},\n",
               reach_4k[i].median, reach_4k[i].min, reach_4k[i].max, ALLOCATIONS * runs);
        printf("     \"cycles_2m\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"runs\": %d},\n",
               reach_2m[i].median, reach_2m[i].min, reach_2m[i].max, ALLOCATIONS * runs);
        printf("     \"difference\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"runs\": %d}}%s\n",
               reach_d[i].median, reach_d[i].min, reach_d[i].max, ALLOCATIONS * runs, i + 1 < NREACH ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}
