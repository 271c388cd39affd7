/* huge_alloc.c -- libpagelab_huge.so's allocator (see huge_main.c): malloc, calloc,
   free, realloc, reallocarray, memalign, aligned_alloc, posix_memalign, valloc and
   pvalloc, each calling glibc's under its own name (__libc_malloc...) or the foreign
   allocator's (huge_next.c), and advising the block once placed: large-dynamic, or
   small-dynamic when glibc's brk heap has grown. With glibc's heap padded, blocks
   glibc would map get a mapping of their own (own_block), and glibc's mmap threshold
   is followed as it rises. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "huge.h"

#define THRESHOLD_MAX ((size_t)32 << 20)    /* the most glibc raises it to (64-bit) */
#define TOP_PAD       ((size_t)64 << 20)    /* the brk heap's growth step */
#define IS_MMAPPED    ((size_t)2)           /* a flag of the size word */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t m, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);
extern void __libc_free(void *p);
/* glibc's cached program break (what sbrk(0) returns); weak: sbrk(0) without it. */
extern void *__curbrk __attribute__((weak));

static uintptr_t heap_end;                /* the brk heap's end as last advised */
static size_t threshold = LARGE_BYTES;    /* glibc's mmap threshold, as followed (OWN) */

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
                huge_advise(SMALL, end, now);
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
                huge_advise_inside(LARGE, (uintptr_t)p, (uintptr_t)p + n);
            else if (cats & 1u << LARGE)
                huge_advise(LARGE, (uintptr_t)p, (uintptr_t)p + n);
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
    return huge_next_mmap ? huge_next_mmap(NULL, len, prot, flags, -1, 0)
                          : (void *)syscall(SYS_mmap, NULL, len, prot, flags, -1, 0);
}

/* A block of n bytes aligned to align (a power of two) in a mapping of its own, laid
   out as glibc lays out the blocks it maps (sysmalloc_mmap, _int_memalign), so that
   glibc's free, realloc and malloc_usable_size take it: the chunk header before the
   block holds prev_size = the chunk's offset in the mapping and size = the rest of
   the mapping | IS_MMAPPED. The constructor checks that glibc's blocks look so
   (huge_pad_heap). */
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

/* Without a padded heap, small-dynamic still advises the heap as it grows by glibc's
   small steps: few of its regions are then whole when first touched. */
int huge_pad_heap(void)
{
    if (!glibc_maps_like_us())
        return 0;
    mallopt(M_TOP_PAD, TOP_PAD);
    return 1;
}

void huge_heap_advise(uintptr_t heap)
{
    uintptr_t now = brk_now();
    if (heap && heap < now)
        huge_advise(SMALL, heap, now);
    heap_end = now;
}

void *malloc(size_t n)
{
    switch (ready()) {
    case GLIBC:
        return placed(own(n) ? own_block(HDR, n) : __libc_malloc(n), n);
    case FOREIGN:
        return placed(huge_next.malloc(n), n);
    default:
        return huge_boot_alloc(HDR, n);
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
        if (huge_next.calloc)
            return placed(huge_next.calloc(m, n), bytes);
        if (!over) {
            void *p = huge_next.malloc(bytes);
            if (p)
                memset(p, 0, bytes);
            return placed(p, bytes);
        }
        break;
    default:
        if (!over)
            return huge_boot_alloc(HDR, bytes);
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
        huge_next.free(p);
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
        return huge_boot_move(p, n);
    switch (ready()) {
    case GLIBC:
        break;
    case FOREIGN:
        return placed(huge_next.realloc(p, n), n);
    default:
        if (!p)
            return huge_boot_alloc(HDR, n);
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
        return placed(huge_foreign_aligned(a, n), n);
    return huge_boot_alloc(a, n);
}

void *memalign(size_t align, size_t n)
{
    return aligned(align, n, &huge_next.memalign);
}

/* glibc 2.36's aligned_alloc is memalign (later ones reject alignments that are not
   powers of two). */
void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n, &huge_next.aligned_alloc);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align == 0 || align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
        return EINVAL;
    if (ready() == FOREIGN && huge_next.posix_memalign) {
        int err = huge_next.posix_memalign(out, align, n);
        if (err == 0)
            placed(*out, n);
        return err;
    }
    int saved = errno;
    void *p = aligned(align, n, &huge_next.memalign);
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
        if (huge_next.valloc)
            return placed(huge_next.valloc(n), n);
        return placed(huge_foreign_aligned(PAGE, n), n);
    default:
        return huge_boot_alloc(PAGE, n);
    }
}

void *pvalloc(size_t n)
{
    size_t up = (n + PAGE - 1) & ~(PAGE - 1);
    switch (ready()) {
    case GLIBC:
        return placed(own(n) && up >= n ? own_block(PAGE, up) : __libc_pvalloc(n), n);
    case FOREIGN:
        if (huge_next.pvalloc)
            return placed(huge_next.pvalloc(n), n);
        if (up >= n)
            return placed(huge_foreign_aligned(PAGE, up ? up : PAGE), n);
        break;
    default:
        if (up >= n)
            return huge_boot_alloc(PAGE, up ? up : PAGE);
        break;
    }
    errno = ENOMEM;
    return NULL;
}
