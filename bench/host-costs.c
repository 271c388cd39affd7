/* The costs pagelab's presets take from this machine, measured: the core clock, an
 * anonymous zero-fill page fault (4 KiB, and 2 MiB with transparent huge pages), a
 * 4 KiB page cleared and copied (in the caches and from memory), an L1 data TLB miss
 * that hits the second-level TLB, and a load served by the L2 cache.
 * Each figure is the median of seven runs (latencies and the clock: the fastest, what
 * the machine reaches undisturbed); the output is one JSON object (ns and core
 * cycles), the command and the machine go with it into the presets' comments.
 *
 *   bench/host-costs.sh            (builds this with gcc -O2 and runs it)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define KB 1024UL
#define MB (1024UL * KB)
#define RUNS 7

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

/* The least of the runs: a latency is what the machine reaches undisturbed. */
static double least(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[0];
}

static char *map(size_t bytes, int advice) {
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (advice && madvise(p, bytes, advice) != 0) {
        perror("madvise");
        exit(1);
    }
    return p;
}

/* A 2 MiB-aligned region of `bytes` (mapped larger and trimmed). */
static char *map_aligned(size_t bytes, int advice) {
    char *raw = map(bytes + 2 * MB, 0);
    char *p = (char *)(((uintptr_t)raw + 2 * MB - 1) & ~(2 * MB - 1));
    if (advice && madvise(p, bytes, advice) != 0) {
        perror("madvise");
        exit(1);
    }
    return p;
}

/* Core cycles per ns: a chain of dependent additions retires one a cycle. */
static double clock_ghz(void) {
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) {
        uint64_t x = r, n = 50000000;
        double t = now_ns();
        for (uint64_t i = 0; i < n; i++)
            __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                             "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                             : "+r"(x));
        v[r] = 8 * n / (now_ns() - t);
    }
    /* The fastest run: the clock undisturbed. */
    return -least((double[]){-v[0], -v[1], -v[2], -v[3], -v[4], -v[5], -v[6]}, RUNS);
}

/* ns per fault touching each `step` of a fresh region of `bytes`. */
static double fault_ns(size_t bytes, size_t step, int advice, double *huge_share) {
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) {
        char *p = map_aligned(bytes, advice);
        double t = now_ns();
        for (size_t i = 0; i < bytes; i += step)
            p[i] = 1;
        v[r] = (now_ns() - t) / (bytes / step);
        if (huge_share) {
            /* AnonHugePages of this process, against the region. */
            FILE *f = fopen("/proc/self/smaps_rollup", "r");
            char line[256];
            unsigned long kb = 0;
            while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
                    break;
            if (f)
                fclose(f);
            *huge_share = kb * KB / (double)bytes;
        }
        munmap(p, bytes);
    }
    return median(v, RUNS);
}

/* ns per 4 KiB page cleared (dst only) or copied, in the caches (`bytes` small) or
 * from memory (`bytes` far beyond the last-level cache). */
static double page_op_ns(size_t bytes, int copy) {
    char *dst = map(bytes, MADV_NOHUGEPAGE), *src = map(bytes, MADV_NOHUGEPAGE);
    memset(dst, 1, bytes);
    memset(src, 2, bytes);
    size_t pages = bytes / (4 * KB), n = pages < 4096 ? 4096 * 64 / pages * pages : pages;
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t = now_ns();
        for (size_t i = 0; i < n; i++) {
            size_t at = (i % pages) * 4 * KB;
            if (copy)
                memcpy(dst + at, src + at, 4 * KB);
            else
                memset(dst + at, r, 4 * KB);
            __asm__ volatile("" ::"r"(dst) : "memory");
        }
        v[r] = (now_ns() - t) / n;
    }
    munmap(dst, bytes);
    munmap(src, bytes);
    return median(v, RUNS);
}

/* ns per load of a pointer chase over `lines` cache lines, `per_page` of them in each
 * page of a region mapped with `advice`: a random cycle, so nothing is prefetched. */
static double chase_ns(size_t lines, size_t per_page, int advice) {
    size_t pages = lines / per_page, bytes = pages * 4 * KB;
    char *p = map_aligned(bytes < 2 * MB ? 2 * MB : bytes, advice);
    memset(p, 0, bytes);
    size_t *order = malloc(lines * sizeof *order);
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    uint64_t s = 88172645463325252ULL;
    for (size_t i = lines - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t j = s % (i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    /* Line k: page k / per_page; within it, at a line chosen so that the lines
     * spread evenly over the sets of a 64-set L1 and of an L2 of up to 2048 sets. */
    char **at = malloc(lines * sizeof *at);
    for (size_t k = 0; k < lines; k++) {
        size_t page = k / per_page, j = k % per_page;
        size_t slot = per_page == 1 ? (page + page / 32) % 64
                                    : j * (64 / per_page) + page % (64 / per_page);
        at[k] = p + page * 4 * KB + slot * 64;
    }
    for (size_t i = 0; i < lines; i++)
        *(char **)at[order[i]] = at[order[(i + 1) % lines]];
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) {
        char **q = (char **)at[order[0]];
        size_t n = 20000000;
        double t = now_ns();
        for (size_t i = 0; i < n; i++)
            q = (char **)*q;
        v[r] = (now_ns() - t) / n;
        __asm__ volatile("" ::"r"(q));
    }
    free(order);
    free(at);
    return least(v, RUNS);
}

int main(void) {
    double ghz = clock_ghz();
    double huge = 0;
    double f4k = fault_ns(256 * MB, 4 * KB, MADV_NOHUGEPAGE, NULL);
    double f2m = fault_ns(512 * MB, 2 * MB, MADV_HUGEPAGE, &huge);
    double zero_hot = page_op_ns(64 * KB, 0), zero_cold = page_op_ns(512 * MB, 0);
    double copy_hot = page_op_ns(64 * KB, 1), copy_cold = page_op_ns(512 * MB, 1);
    /* 256 lines (16 KiB, in the L1 data cache) over 32 pages (within any L1 data
     * TLB) and over 256 pages (beyond it, within any second-level TLB). */
    double l1tlb = chase_ns(256, 8, MADV_NOHUGEPAGE), stlb = chase_ns(256, 1, MADV_NOHUGEPAGE);
    /* 8192 lines (512 KiB: 16 times a 32 KiB L1 data cache, so about one load in
     * sixteen hits it; within a 1 MiB L2) on one 2 MiB page, whose addresses index
     * the caches as they are: the L2's load-to-use latency, no TLB miss (on a
     * machine whose L2 is smaller, an L3 figure). */
    double l2 = chase_ns(8192, 64, MADV_HUGEPAGE);
    printf("{\n  \"clock_ghz\": %.3f,\n", ghz);
    printf("  \"fault_4k_ns\": %.0f, \"fault_4k_cycles\": %.0f,\n", f4k, f4k * ghz);
    printf("  \"fault_2m_ns\": %.0f, \"fault_2m_cycles\": %.0f, \"fault_2m_huge_share\": %.2f,\n",
           f2m, f2m * ghz, huge);
    printf("  \"zero_4k_cached_ns\": %.0f, \"zero_4k_memory_ns\": %.0f,\n", zero_hot, zero_cold);
    printf("  \"copy_4k_cached_ns\": %.0f, \"copy_4k_memory_ns\": %.0f,\n", copy_hot, copy_cold);
    printf("  \"zero_4k_memory_cycles\": %.0f, \"copy_4k_memory_cycles\": %.0f,\n",
           zero_cold * ghz, copy_cold * ghz);
    printf("  \"load_l1_tlb_cycles\": %.1f, \"load_l2_tlb_cycles\": %.1f, \"l2_tlb_hit_cycles\": %.1f,\n",
           l1tlb * ghz, stlb * ghz, (stlb - l1tlb) * ghz);
    printf("  \"load_l2_cache_cycles\": %.1f\n}\n", l2 * ghz);
    return 0;
}
