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
   says so, and the rest goes on without it. static is as with glibc's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <malloc.h>
#include <sched.h>
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
#define BOOT_BYTES    ((size_t)64 << 10)    /* the arena for dlsym's requests */

/* Categories, then OWN: large blocks are mapped by own_block (the heap is padded);
   SHARED: the allocator is not glibc's, its large blocks share pages with others. */
enum { STATIC, SMALL, LARGE, NCATS, OWN = NCATS, SHARED };
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

/* The allocator, as looked up (resolve): the state, then its functions. */
enum { UNRESOLVED, RESOLVING, GLIBC, FOREIGN };
static int state;
static long resolver;                     /* the thread looking it up (RESOLVING) */
static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void (*free)(void *);
} next;                                   /* FOREIGN: null where it has none */
static uintptr_t alloc_lo, alloc_hi;      /* FOREIGN: its object's segments (start) */

/* The categories PAGELAB_HUGE names; then the bits of those done, OWN and SHARED, 0
   until the constructor has run. */
static unsigned asked, enabled;
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

/* madvise(MADV_HUGEPAGE) [lo, hi) rounded out to pages, for category cat. */
static void advise(int cat, uintptr_t lo, uintptr_t hi)
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

/* [lo, hi) rounded in to pages: a block sharing its first and last pages. */
static void advise_inside(int cat, uintptr_t lo, uintptr_t hi)
{
    lo = (lo + PAGE - 1) & ~(PAGE - 1);
    hi &= ~(PAGE - 1);
    if (hi > lo)
        advise(cat, lo, hi);
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
            if ((cats & 1u << LARGE) && (cats & 1u << SHARED))
                advise_inside(LARGE, (uintptr_t)p, (uintptr_t)p + n);
            else if (cats & 1u << LARGE)
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

/* Whether f is defined in the object where g is. */
static int same_object(const void *f, const void *g)
{
    Dl_info a, b;
    return f && dladdr(f, &a) && dladdr(g, &b) && a.dli_fbase == b.dli_fbase;
}

static int in_libc(const void *f)
{
    return same_object(f, (const void *)gnu_get_libc_version);
}

static int resolve(void);

/* The allocator's function called name, from handle (RTLD_NEXT, or RTLD_DEFAULT when
   the program's malloc comes before ours), or after us if handle gives ours. */
static void *lookup(void *handle, const char *name)
{
    void *f = dlsym(handle, name);
    return same_object(f, (const void *)resolve) ? dlsym(RTLD_NEXT, name) : f;
}

/* Look the allocator up, once (a thread finding another at it waits); returns the
   state, RESOLVING to the thread looking up when dlsym calls the allocator. It is the
   next definition of malloc, unless the program's (the first) is neither ours nor
   glibc's: preloaded before us, or the executable's. */
static __attribute__((noinline)) int resolve(void)
{
    long self = syscall(SYS_gettid);
    int s = UNRESOLVED;
    if (!__atomic_compare_exchange_n(&state, &s, RESOLVING, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_ACQUIRE)) {
        while (s == RESOLVING) {
            if (__atomic_load_n(&resolver, __ATOMIC_RELAXED) == self)
                return RESOLVING;
            sched_yield();
            s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
        }
        return s;
    }
    __atomic_store_n(&resolver, self, __ATOMIC_RELAXED);
    int saved = errno;
    next_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    void *first = dlsym(RTLD_DEFAULT, "malloc");
    void *handle = first && !same_object(first, (const void *)resolve) && !in_libc(first)
                   ? RTLD_DEFAULT : RTLD_NEXT;
#define NEXT(f) (next.f = (__typeof__(next.f))lookup(handle, #f))
    NEXT(malloc), NEXT(calloc), NEXT(realloc), NEXT(memalign), NEXT(aligned_alloc);
    NEXT(posix_memalign), NEXT(valloc), NEXT(pvalloc), NEXT(free);
#undef NEXT
    s = GLIBC;
    if (next.malloc && !in_libc((const void *)next.malloc)) {
        s = FOREIGN;
        /* What it lacks is made of what it has (foreign_aligned, calloc). */
#define LACKS(f) (in_libc((const void *)next.f) ? (void)(next.f = NULL) : (void)0)
        LACKS(calloc), LACKS(memalign), LACKS(aligned_alloc), LACKS(posix_memalign);
        LACKS(valloc), LACKS(pvalloc);
#undef LACKS
    }
    errno = saved;
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    return s;
}

/* The allocator's state, looked up at the first call. */
static inline int ready(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    return __builtin_expect(s >= GLIBC, 1) ? s : resolve();
}

/* The arena for what dlsym asks while resolve looks up (the resolving thread only):
   each block after a word holding its size (for realloc), never reused, so zeros. */
static char boot[BOOT_BYTES] __attribute__((aligned(HDR)));
static size_t boot_used;

static int in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot < BOOT_BYTES;
}

static void *boot_alloc(size_t align, size_t n)
{
    uintptr_t a = HDR, base = (uintptr_t)boot;
    while (a < align && a < BOOT_BYTES)
        a <<= 1;
    uintptr_t mem = (base + boot_used + sizeof(size_t) + a - 1) & ~(a - 1);
    if (align > BOOT_BYTES || n > BOOT_BYTES || mem + n > base + BOOT_BYTES) {
        errno = ENOMEM;
        return NULL;
    }
    ((size_t *)mem)[-1] = n;
    boot_used = mem + n - base;
    return (void *)mem;
}

/* realloc of an arena block: it moves out (free ignores it). */
static void *boot_move(void *p, size_t n)
{
    size_t old = ((size_t *)p)[-1];
    void *q = malloc(n);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

/* An aligned block (align: a power of two) from a foreign allocator lacking the
   function asked, by the aligned allocation it has. */
static void *foreign_aligned(size_t align, size_t n)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (next.posix_memalign) {
        void *p;
        int err = next.posix_memalign(&p, align, n);
        if (err == 0)
            return p;
        errno = err;
        return NULL;
    }
    if (next.memalign)
        return next.memalign(align, n);
    if (next.aligned_alloc && n <= SIZE_MAX - (align - 1))
        return next.aligned_alloc(align, (n + align - 1) & ~(align - 1));
    errno = ENOMEM;
    return NULL;
}

void *malloc(size_t n)
{
    switch (ready()) {
    case GLIBC:
        return placed(own(n) ? own_block(HDR, n) : __libc_malloc(n), n);
    case FOREIGN:
        return placed(next.malloc(n), n);
    default:
        return boot_alloc(HDR, n);
    }
}

void *calloc(size_t m, size_t n)
{
    size_t bytes;
    int over = __builtin_mul_overflow(m, n, &bytes);
    switch (ready()) {
    case GLIBC:
        if (over)
            return __libc_calloc(m, n);   /* fails, as glibc's does */
        /* A fresh mapping reads as zeros. */
        return placed(own(bytes) ? own_block(HDR, bytes) : __libc_calloc(m, n), bytes);
    case FOREIGN:
        if (next.calloc)
            return placed(next.calloc(m, n), bytes);
        if (!over) {
            void *p = next.malloc(bytes);
            if (p)
                memset(p, 0, bytes);
            return placed(p, bytes);
        }
        break;
    default:
        if (!over)
            return boot_alloc(HDR, bytes);
        break;
    }
    errno = ENOMEM;
    return NULL;
}

/* As glibc's free, which raises its mmap threshold to the size of a mapped block it
   frees (up to 32 MiB): later requests below it are carved from the heap. */
void free(void *p)
{
    if (in_boot(p))
        return;
    int s = ready();
    if (s == FOREIGN) {
        next.free(p);
        return;
    }
    if (s != GLIBC)
        return;   /* while dlsym looks up: not its, and nowhere to go yet */
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
    if (in_boot(p))
        return boot_move(p, n);
    switch (ready()) {
    case GLIBC:
        break;
    case FOREIGN:
        return placed(next.realloc(p, n), n);
    default:
        if (!p)
            return boot_alloc(HDR, n);
        errno = ENOMEM;   /* while dlsym looks up: not its */
        return NULL;
    }
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

/* memalign, with glibc's rounding of the alignment up to a power of two; *f: a
   foreign allocator's function for it (null: it has none). */
static void *aligned(size_t align, size_t n, void *(*const *f)(size_t, size_t))
{
    int s = ready();
    if (s == GLIBC && !own(n))
        return placed(__libc_memalign(align, n), n);
    if (s == FOREIGN && *f)
        return placed((*f)(align, n), n);
    if (align > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = HDR;
    while (a < align)
        a <<= 1;
    if (s == GLIBC)
        return placed(own_block(a, n), n);
    if (s == FOREIGN)
        return placed(foreign_aligned(a, n), n);
    return boot_alloc(a, n);
}

void *memalign(size_t align, size_t n)
{
    return aligned(align, n, &next.memalign);
}

/* glibc 2.36's aligned_alloc is memalign (later ones reject alignments that are not
   powers of two). */
void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n, &next.aligned_alloc);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align == 0 || align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
        return EINVAL;
    if (ready() == FOREIGN && next.posix_memalign) {
        int err = next.posix_memalign(out, align, n);
        if (err == 0)
            placed(*out, n);
        return err;
    }
    int saved = errno;
    void *p = aligned(align, n, &next.memalign);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    switch (ready()) {
    case GLIBC:
        return placed(own(n) ? own_block(PAGE, n) : __libc_valloc(n), n);
    case FOREIGN:
        return placed(next.valloc ? next.valloc(n) : foreign_aligned(PAGE, n), n);
    default:
        return boot_alloc(PAGE, n);
    }
}

void *pvalloc(size_t n)
{
    size_t up = (n + PAGE - 1) & ~(PAGE - 1);
    switch (ready()) {
    case GLIBC:
        return placed(own(n) && up >= n ? own_block(PAGE, up) : __libc_pvalloc(n), n);
    case FOREIGN:
        if (next.pvalloc)
            return placed(next.pvalloc(n), n);
        if (up >= n)
            return placed(foreign_aligned(PAGE, up ? up : PAGE), n);
        break;
    default:
        if (up >= n)
            return boot_alloc(PAGE, up ? up : PAGE);
        break;
    }
    errno = ENOMEM;
    return NULL;
}

/* Whether code at pc is the foreign allocator's: its mappings hold its small blocks
   too (its large ones are advised when placed). */
static int allocators(const void *pc)
{
    return (uintptr_t)pc - alloc_lo < alloc_hi - alloc_lo;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = next_mmap ? next_mmap(addr, len, prot, flags, fd, off)
                        : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_STACK)
        && len >= LARGE_BYTES && (on() & 1u << LARGE)
        && !allocators(__builtin_return_address(0)))
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

/* dl_iterate_phdr: the object whose segments hold the allocator's malloc, its name
   to *name ("" for the executable). */
static int allocator_object(struct dl_phdr_info *info, size_t size, void *name)
{
    (void)size;
    uintptr_t lo = UINTPTR_MAX, hi = 0, f = (uintptr_t)next.malloc;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
        holds |= f - a < b - a;
    }
    if (!holds)
        return 0;
    alloc_lo = lo;
    alloc_hi = hi;
    *(const char **)name = info->dlpi_name;
    return 1;
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
        const char *name = NULL;
        dl_iterate_phdr(allocator_object, &name);
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
