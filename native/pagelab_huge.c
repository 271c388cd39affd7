/* pagelab_huge.c -- libpagelab_huge.so: transparent huge pages for chosen data
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
     mapped them. That threshold rises as glibc's does (free, below); M_TOP_PAD fixes
     glibc's own, so it is set to follow.
   - static: at start, the executable's writable mappings (data) and the anonymous
     mapping right after them (BSS); not the shared libraries'. Only the BSS can get
     huge pages: Linux gives none to the private pages of a file mapping.

   Ranges are rounded out to 4 KiB pages; errors of madvise are counted, never fatal.
   PAGELAB_HUGE unset or empty: nothing is done (every call goes straight to glibc).
   An unknown name: one line on stderr, exit status 2. PAGELAB_HUGE_VERBOSE=1 prints
   one line on stderr at exit (to a copy of it made at start, fd 100 or above):
   ranges advised, bytes and errors by category.
   Calls made before the constructor has run pass through unadvised. glibc only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LARGE_BYTES   ((size_t)128 << 10)   /* glibc's default mmap threshold */
#define THRESHOLD_MAX ((size_t)32 << 20)    /* the most glibc raises it to (64-bit) */
#define TOP_PAD       ((size_t)64 << 20)    /* the brk heap's growth step */
#define PAGE          ((uintptr_t)4096)
#define HDR           ((size_t)16)          /* glibc's chunk header: prev_size, size */
#define IS_MMAPPED    ((size_t)2)           /* a flag of the size word */

/* Categories, then OWN: large blocks are mapped by own_block (the heap is padded). */
enum { STATIC, SMALL, LARGE, NCATS, OWN = NCATS };
static const char *const NAMES[NCATS] = { "static", "small-dynamic", "large-dynamic" };

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t m, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);
extern void __libc_free(void *p);
/* glibc's cached program break (what sbrk(0) returns); weak: sbrk(0) without it. */
extern void *__curbrk __attribute__((weak));

/* A bit per category, and OWN; 0 until the constructor has run. */
static unsigned enabled;
static int summary_fd = -1;               /* the summary's fd (stderr's copy), or -1 */
static uintptr_t heap_end;                /* the brk heap's end as last advised */
static size_t threshold = LARGE_BYTES;    /* glibc's mmap threshold, as followed (OWN) */
static void *(*next_mmap)(void *, size_t, int, int, int, off_t);
static struct { uint64_t ranges, bytes, errors; } tally[NCATS];

static unsigned on(void)
{
    return __atomic_load_n(&enabled, __ATOMIC_ACQUIRE);
}

static void count(uint64_t *n, uint64_t by)
{
    __atomic_fetch_add(n, by, __ATOMIC_RELAXED);
}

/* madvise(MADV_HUGEPAGE) [lo, hi) rounded out to pages, for category cat. */
static void advise(int cat, uintptr_t lo, uintptr_t hi)
{
    lo &= ~(PAGE - 1);
    hi = (hi + PAGE - 1) & ~(PAGE - 1);
    if (hi <= lo)
        return;
    int saved = errno;
    if (madvise((void *)lo, hi - lo, MADV_HUGEPAGE) == 0) {
        count(&tally[cat].ranges, 1);
        count(&tally[cat].bytes, hi - lo);
    } else {
        count(&tally[cat].errors, 1);
    }
    errno = saved;
}

/* The program break; __curbrk is null until glibc's first sbrk. */
static uintptr_t brk_now(void)
{
    void *b = &__curbrk ? __atomic_load_n(&__curbrk, __ATOMIC_RELAXED) : NULL;
    return (uintptr_t)(b ? b : sbrk(0));
}

/* The break moved: advise what the heap gained (once, whichever thread sees it). */
static __attribute__((noinline)) void heap_moved(void)
{
    uintptr_t now = brk_now();
    uintptr_t end = __atomic_load_n(&heap_end, __ATOMIC_RELAXED);
    while (now != end) {
        if (__atomic_compare_exchange_n(&heap_end, &end, now, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            if (now > end)   /* grown; when trimmed, what is left keeps its advice */
                advise(SMALL, end, now);
            return;
        }
    }
}

/* Block p, of a request of n bytes, was placed. */
static inline void *placed(void *p, size_t n)
{
    unsigned cats = on();
    if (cats && p) {
        if (n >= LARGE_BYTES) {
            if (cats & 1u << LARGE)
                advise(LARGE, (uintptr_t)p, (uintptr_t)p + n);
        } else if ((cats & 1u << SMALL)
                   && brk_now() != __atomic_load_n(&heap_end, __ATOMIC_RELAXED)) {
            heap_moved();
        }
    }
    return p;
}

/* glibc's chunk size for a request (request2size), saturating. */
static size_t chunk_bytes(size_t n)
{
    return n > SIZE_MAX - 2 * HDR ? SIZE_MAX : (n + HDR / 2 + HDR - 1) & ~(HDR - 1);
}

/* A request glibc would map, which is ours to map since its heap is padded. */
static inline int own(size_t n)
{
    return n >= LARGE_BYTES && (on() & 1u << OWN)
           && chunk_bytes(n) >= __atomic_load_n(&threshold, __ATOMIC_RELAXED);
}

static void *map_anon(size_t len)
{
    int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
    return next_mmap ? next_mmap(NULL, len, prot, flags, -1, 0)
                     : (void *)syscall(SYS_mmap, NULL, len, prot, flags, -1, 0);
}

/* A block of n bytes aligned to align (a power of two) in a mapping of its own, laid
   out as glibc lays out the blocks it maps (sysmalloc_mmap, _int_memalign), so that
   glibc's free, realloc and malloc_usable_size take it: the chunk header before the
   block holds prev_size = the chunk's offset in the mapping and size = the rest of
   the mapping | IS_MMAPPED. The constructor checks that glibc's blocks look so. */
static void *own_block(size_t align, size_t n)
{
    size_t slack = align > HDR ? align : 0;
    if (n > SIZE_MAX - HDR - slack - PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    size_t total = (n + HDR + slack + PAGE - 1) & ~(PAGE - 1);
    char *map = map_anon(total);
    if (map == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t a = align > HDR ? align : HDR;
    uintptr_t mem = ((uintptr_t)map + HDR + a - 1) & ~(a - 1);
    size_t *chunk = (size_t *)(mem - HDR), offset = (uintptr_t)chunk - (uintptr_t)map;
    chunk[0] = offset;
    chunk[1] = (total - offset) | IS_MMAPPED;
    return (void *)mem;
}

/* Whether glibc maps a block of 256 KiB as own_block would (asked before the heap is
   padded). The probe is unmapped here, not freed: glibc's free would raise its mmap
   threshold (glibc's statistics keep counting it as mapped). */
static int glibc_maps_like_us(void)
{
    size_t n = 256 << 10;
    size_t *p = __libc_malloc(n);
    if (!p)
        return 0;
    size_t *chunk = p - 2, want = (chunk_bytes(n) + HDR / 2 + PAGE - 1) & ~(PAGE - 1);
    int same = ((uintptr_t)chunk & (PAGE - 1)) == 0 && chunk[0] == 0
               && (chunk[1] & IS_MMAPPED) && (chunk[1] & ~(size_t)7) == want;
    if (same)
        munmap(chunk, want);
    else
        __libc_free(p);
    return same;
}

void *malloc(size_t n)
{
    return placed(own(n) ? own_block(HDR, n) : __libc_malloc(n), n);
}

void *calloc(size_t m, size_t n)
{
    size_t bytes;
    if (__builtin_mul_overflow(m, n, &bytes))
        return __libc_calloc(m, n);   /* fails, as glibc's does */
    /* A fresh mapping reads as zeros. */
    return placed(own(bytes) ? own_block(HDR, bytes) : __libc_calloc(m, n), bytes);
}

/* As glibc's free, which raises its mmap threshold to the size of a mapped block it
   frees (up to 32 MiB): later requests below it are carved from the heap. */
void free(void *p)
{
    if (p && (on() & 1u << OWN)) {
        size_t size = ((size_t *)p)[-1];
        size_t bytes = size & ~(size_t)7;
        if ((size & IS_MMAPPED) && bytes > __atomic_load_n(&threshold, __ATOMIC_RELAXED)
            && bytes <= THRESHOLD_MAX) {
            __atomic_store_n(&threshold, bytes, __ATOMIC_RELAXED);
            mallopt(M_MMAP_THRESHOLD, (int)bytes);   /* for when the top runs short */
        }
    }
    __libc_free(p);
}

static void *reallocate(void *p, size_t n)
{
    /* A block in the heap that grows large moves to a mapping, as in glibc when the
       heap's top is small; a mapped block stays mapped (mremap). */
    if (p && own(n) && !(((size_t *)p)[-1] & IS_MMAPPED)) {
        void *q = own_block(HDR, n);
        if (!q)
            return NULL;
        size_t old = malloc_usable_size(p);
        memcpy(q, p, old < n ? old : n);
        __libc_free(p);
        return placed(q, n);
    }
    return placed(p || !own(n) ? __libc_realloc(p, n) : own_block(HDR, n), n);
}

void *realloc(void *p, size_t n)
{
    return reallocate(p, n);
}

void *reallocarray(void *p, size_t m, size_t n)
{
    size_t bytes;
    if (__builtin_mul_overflow(m, n, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return reallocate(p, bytes);
}

/* memalign, with glibc's rounding of the alignment up to a power of two. */
static void *aligned(size_t align, size_t n)
{
    if (!own(n))
        return placed(__libc_memalign(align, n), n);
    if (align > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = HDR;
    while (a < align)
        a <<= 1;
    return placed(own_block(a, n), n);
}

void *memalign(size_t align, size_t n)
{
    return aligned(align, n);
}

/* glibc 2.36's aligned_alloc is memalign (later ones reject alignments that are not
   powers of two). */
void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align == 0 || align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
        return EINVAL;
    int saved = errno;
    void *p = aligned(align, n);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    return placed(own(n) ? own_block(PAGE, n) : __libc_valloc(n), n);
}

void *pvalloc(size_t n)
{
    size_t up = (n + PAGE - 1) & ~(PAGE - 1);
    return placed(own(n) && up >= n ? own_block(PAGE, up) : __libc_pvalloc(n), n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = next_mmap ? next_mmap(addr, len, prot, flags, fd, off)
                        : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_STACK)
        && len >= LARGE_BYTES && (on() & 1u << LARGE))
        advise(LARGE, (uintptr_t)p, (uintptr_t)p + len);
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
            advise(STATIC, lo, hi);
            *after = hi;
        } else if (prev == lo && inode == 0 && name[0] == '\0') {
            advise(STATIC, lo, hi);   /* the BSS beyond the data's last page */
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
    next_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    const char *spec = getenv("PAGELAB_HUGE");
    if (!spec || !*spec)
        return;
    unsigned cats = parse(spec);
    /* The summary goes to a copy of stderr: some programs (coreutils) close theirs
       at exit, before the destructor runs. */
    const char *v = getenv("PAGELAB_HUGE_VERBOSE");
    if (v && strcmp(v, "1") == 0)
        summary_fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
    /* Without a padded heap, small-dynamic still advises the heap as it grows by
       glibc's small steps: few of its regions are then whole when first touched. */
    if ((cats & 1u << SMALL) && glibc_maps_like_us()) {
        mallopt(M_TOP_PAD, TOP_PAD);
        cats |= 1u << OWN;
    }
    uintptr_t heap = cats & (1u << STATIC | 1u << SMALL) ? scan_maps(cats) : 0;
    if (cats & 1u << SMALL) {
        uintptr_t now = brk_now();
        if (heap && heap < now)
            advise(SMALL, heap, now);
        heap_end = now;
    }
    __atomic_store_n(&enabled, cats, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void finish(void)
{
    unsigned cats = on();
    if (summary_fd < 0 || !cats)
        return;
    char line[512];
    size_t len = 0;
    len += (size_t)snprintf(line, sizeof line, "pagelab_huge[%d]: advised", (int)getpid());
    const char *sep = "";
    for (int c = 0; c < NCATS && len < sizeof line; c++) {
        if (!(cats & 1u << c))
            continue;
        len += (size_t)snprintf(line + len, sizeof line - len,
                                "%s %s %llu ranges %llu bytes %llu errors%s", sep, NAMES[c],
                                (unsigned long long)__atomic_load_n(&tally[c].ranges, __ATOMIC_RELAXED),
                                (unsigned long long)__atomic_load_n(&tally[c].bytes, __ATOMIC_RELAXED),
                                (unsigned long long)__atomic_load_n(&tally[c].errors, __ATOMIC_RELAXED),
                                c == SMALL && !(cats & 1u << OWN) ? " (heap not padded)" : "");
        sep = ";";
    }
    if (len < sizeof line - 1) {
        line[len] = '\n';
        line[len + 1] = '\0';
        say(summary_fd, line);
    }
}
