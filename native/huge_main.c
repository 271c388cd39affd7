/* huge_main.c -- libpagelab_huge.so: transparent huge pages for chosen data
   categories of an unmodified program (`pagelab advise` runs it once per mapping).

     LD_PRELOAD=libpagelab_huge.so PAGELAB_HUGE=static,large-dynamic PROGRAM ARGS

   Linux in THP `madvise` mode (/sys/kernel/mm/transparent_hugepage/enabled) backs
   with 2 MiB pages only the regions madvise(MADV_HUGEPAGE) asked for, and of those
   only the 2 MiB-aligned parts lying inside the region when first touched. This
   library asks by category, as pagelab attributes references
   (crates/pagelab-core/src/categories/mod.rs):

   - large-dynamic: blocks of 128 KiB and more (glibc's mmap threshold) from malloc,
     calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc
     and pvalloc, advised once placed, and the program's own anonymous mmaps of that
     size (not MAP_STACK ones). glibc maps its blocks by internal calls that no
     interposed mmap sees: that is why the allocator is interposed (its functions call
     glibc's under their own names, __libc_malloc...). mremap keeps the advice.
   - small-dynamic: glibc's brk heap (the main arena; threads' arenas are not
     advised). mallopt(M_TOP_PAD, 64 MiB) makes it grow in 64 MiB steps, so that its
     2 MiB regions lie inside it before they are touched; after each request under
     128 KiB, if the break moved (one comparison in the common case), the heap's new
     part is advised. glibc consults its mmap threshold only when the heap's top is
     too small, so it would carve large blocks from a padded top: here they get a
     mapping of their own instead (own_block), wherever glibc's threshold would have
     mapped them. That threshold rises as glibc's does (free, in huge_alloc.c);
     M_TOP_PAD fixes glibc's own, so it is set to follow.
   - static: at start, the executable's writable mappings (data) and the anonymous
     mapping right after them (BSS); not the shared libraries'. Only the BSS can get
     huge pages: Linux gives none to the private pages of a file mapping.

   Ranges are rounded out to 4 KiB pages; errors of madvise are counted, never fatal.
   PAGELAB_HUGE unset or empty: nothing is done (every call goes straight to the
   allocator). An unknown name: one line on stderr, exit status 2.
   PAGELAB_HUGE_VERBOSE=1 prints one line on stderr at exit (to a copy of it made at
   start, fd 100 or above): ranges advised, bytes and errors by category.
   PAGELAB_HUGE_ONLY=1 makes the categories named the only memory with huge pages: the
   program's own madvise(MADV_HUGEPAGE) calls succeed and do nothing (stockfish asks
   for huge pages for its hash table itself, which would give "all small" huge pages).
   The library's own advice goes to the system call directly.

   The allocator is the next definition of malloc (dlsym(RTLD_NEXT); the program's own
   if that comes before ours: preloaded before us, or the executable's), looked up at
   the first call, before the constructor if need be; dlsym's own requests meanwhile
   come from a small static arena, whose blocks free ignores and realloc moves out.
   Calls made before the constructor has run pass through unadvised. The allocator is
   glibc's unless the program links or preloads another that defines malloc (Debian's
   redis-server links libjemalloc.so.2): all the above is for glibc's. Another's gets
   every call (a function it lacks, as jemalloc lacks pvalloc, is made of its malloc
   or aligned allocation: glibc's would take the block from glibc's heap).
   large-dynamic then advises the blocks of 128 KiB and more it returns, rounded in to
   pages (they share pages with other blocks), and the program's anonymous mmaps of
   that size but not the allocator's own (they hold its small blocks too).
   small-dynamic is glibc's heap, so it is not honoured: one line on stderr at start
   says so, and the rest goes on without it. static is as with glibc's.

   This file: the environment, the advice and its tally, the interposed madvise and
   mmap, the constructor (static, from /proc/self/maps) and the summary at exit. The
   allocator is interposed in huge_alloc.c, looked up in huge_next.c; huge.h has
   what they share. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "huge.h"

static const char *const NAMES[NCATS] = { "static", "small-dynamic", "large-dynamic" };

/* The categories PAGELAB_HUGE names; huge_enabled: the bits of those done, OWN and
   SHARED, 0 until the constructor has run. */
static unsigned asked;
unsigned huge_enabled;
static int summary_fd = -1;               /* the summary's fd (stderr's copy), or -1 */
static struct { uint64_t ranges, bytes, errors; } tally[NCATS];

static void count(uint64_t *n, uint64_t by)
{
    __atomic_fetch_add(n, by, __ATOMIC_RELAXED);
}

/* PAGELAB_HUGE_ONLY=1: the program's own MADV_HUGEPAGE requests are dropped (and
   counted); set by the constructor. */
static int only_ours;
static uint64_t dropped;

static int sys_madvise(void *addr, size_t len, int advice)
{
    return (int)syscall(SYS_madvise, addr, len, advice);
}

int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_HUGEPAGE && __atomic_load_n(&only_ours, __ATOMIC_ACQUIRE)) {
        count(&dropped, 1);
        return 0;
    }
    return sys_madvise(addr, len, advice);
}

void huge_advise(int cat, uintptr_t lo, uintptr_t hi)
{
    lo &= ~(PAGE - 1);
    hi = (hi + PAGE - 1) & ~(PAGE - 1);
    if (hi <= lo)
        return;
    int saved = errno;
    if (sys_madvise((void *)lo, hi - lo, MADV_HUGEPAGE) == 0) {
        count(&tally[cat].ranges, 1);
        count(&tally[cat].bytes, hi - lo);
    } else {
        count(&tally[cat].errors, 1);
    }
    errno = saved;
}

void huge_advise_inside(int cat, uintptr_t lo, uintptr_t hi)
{
    lo = (lo + PAGE - 1) & ~(PAGE - 1);
    hi &= ~(PAGE - 1);
    if (hi > lo)
        huge_advise(cat, lo, hi);
}

/* The program's anonymous mmaps of 128 KiB and more, not a foreign allocator's. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = huge_next_mmap ? huge_next_mmap(addr, len, prot, flags, fd, off)
                             : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_STACK)
        && len >= LARGE_BYTES && (on() & 1u << LARGE)
        && !huge_allocators(__builtin_return_address(0)))
        huge_advise(LARGE, (uintptr_t)p, (uintptr_t)p + len);
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

/* Write a line to fd without stdio (nothing of ours is buffered at exit). */
static void say(int fd, const char *line)
{
    size_t len = strlen(line);
    while (len > 0) {
        ssize_t w = write(fd, line, len);
        if (w <= 0)
            return;
        line += w;
        len -= (size_t)w;
    }
}

/* PAGELAB_HUGE's names as a bit set; exits on an unknown one. */
static unsigned parse(const char *spec)
{
    unsigned cats = 0;
    while (*spec) {
        size_t len = strcspn(spec, ",");
        int cat = -1;
        for (int c = 0; c < NCATS; c++)
            if (strlen(NAMES[c]) == len && strncmp(spec, NAMES[c], len) == 0)
                cat = c;
        if (cat < 0 && len > 0) {
            char line[320];
            snprintf(line, sizeof line,
                     "pagelab_huge: PAGELAB_HUGE: unknown category \"%.*s\" "
                     "(known: static, small-dynamic, large-dynamic)\n",
                     len > 200 ? 200 : (int)len, spec);
            say(2, line);
            exit(2);
        }
        if (cat >= 0)
            cats |= 1u << cat;
        spec += len;
        if (*spec == ',')
            spec++;
    }
    return cats;
}

/* One line of /proc/self/maps: the executable's data and BSS (static), the start of
   the heap (*heap). *after: the end of the executable's last writable mapping when it
   was the previous line, else 0. */
static void map_line(char *line, unsigned cats, const char *exe, uintptr_t *after,
                     uintptr_t *heap)
{
    unsigned long lo, hi, inode;
    char perms[5];
    int path = 0;
    if (sscanf(line, "%lx-%lx %4s %*s %*s %lu %n", &lo, &hi, perms, &inode, &path) < 4
        || path == 0)
        return;
    const char *name = line + path;
    uintptr_t prev = *after;
    *after = 0;
    if ((cats & 1u << STATIC) && perms[1] == 'w') {
        if (exe[0] && strcmp(name, exe) == 0) {
            huge_advise(STATIC, lo, hi);
            *after = hi;
        } else if (prev == lo && inode == 0 && name[0] == '\0') {
            huge_advise(STATIC, lo, hi);   /* the BSS beyond the data's last page */
        }
    }
    if (strcmp(name, "[heap]") == 0)
        *heap = lo;
}

/* Go through /proc/self/maps (read by hand: no allocation); returns the heap's start
   (0: none yet). */
static uintptr_t scan_maps(unsigned cats)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char buf[8192];   /* the constructor runs once, before other threads */
    size_t len = 0;
    int skipping = 0;   /* inside a line longer than buf */
    uintptr_t after = 0, heap = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            if (!skipping)
                map_line(line, cats, exe, &after, &heap);
            skipping = 0;
            line = nl + 1;
        }
        len -= (size_t)(line - buf);
        memmove(buf, line, len);
        if (len == sizeof buf - 1) {
            len = 0;
            skipping = 1;
        }
    }
    close(fd);
    return heap;
}

__attribute__((constructor)) static void start(void)
{
    int foreign = ready() == FOREIGN;
    const char *only = getenv("PAGELAB_HUGE_ONLY");
    if (only && strcmp(only, "1") == 0)
        __atomic_store_n(&only_ours, 1, __ATOMIC_RELEASE);
    /* The summary goes to a copy of stderr: some programs (coreutils) close theirs
       at exit, before the destructor runs. */
    const char *v = getenv("PAGELAB_HUGE_VERBOSE");
    if (v && strcmp(v, "1") == 0)
        summary_fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
    const char *spec = getenv("PAGELAB_HUGE");
    if (!spec || !*spec)
        return;
    unsigned cats = parse(spec);
    asked = cats;
    if (foreign) {
        const char *name = huge_foreign_object();
        cats |= 1u << SHARED;
        if (cats & 1u << SMALL) {
            char line[640];
            snprintf(line, sizeof line,
                     "pagelab_huge: small-dynamic: the program's allocator (%.500s) is not "
                     "glibc's malloc; its small blocks are not advised\n",
                     name && *name ? name : "the executable's");
            say(2, line);
            cats &= ~(1u << SMALL);
        }
    }
    /* Without a padded heap, small-dynamic still advises the heap as it grows by
       glibc's small steps: few of its regions are then whole when first touched. */
    if ((cats & 1u << SMALL) && huge_pad_heap())
        cats |= 1u << OWN;
    uintptr_t heap = cats & (1u << STATIC | 1u << SMALL) ? scan_maps(cats) : 0;
    if (cats & 1u << SMALL)
        huge_heap_advise(heap);
    __atomic_store_n(&huge_enabled, cats, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void finish(void)
{
    unsigned cats = on();
    if (summary_fd < 0)
        return;
    char line[512];
    size_t len = 0;
    len += (size_t)snprintf(line, sizeof line, "pagelab_huge[%d]: advised", (int)getpid());
    const char *sep = "";
    for (int c = 0; c < NCATS && len < sizeof line; c++) {
        if (!(asked & 1u << c))
            continue;
        len += (size_t)snprintf(line + len, sizeof line - len,
                                "%s %s %llu ranges %llu bytes %llu errors%s", sep, NAMES[c],
                                (unsigned long long)__atomic_load_n(&tally[c].ranges, __ATOMIC_RELAXED),
                                (unsigned long long)__atomic_load_n(&tally[c].bytes, __ATOMIC_RELAXED),
                                (unsigned long long)__atomic_load_n(&tally[c].errors, __ATOMIC_RELAXED),
                                c != SMALL                 ? ""
                                : !(cats & 1u << SMALL)    ? " (not glibc's malloc)"
                                : !(cats & 1u << OWN)      ? " (heap not padded)"
                                                           : "");
        sep = ";";
    }
    if (only_ours && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s the program's own requests dropped: %llu",
                                sep, (unsigned long long)__atomic_load_n(&dropped, __ATOMIC_RELAXED));
    if (len < sizeof line - 1) {
        line[len] = '\n';
        line[len + 1] = '\0';
        say(summary_fd, line);
    }
}
