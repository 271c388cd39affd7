/* huge.h -- what the files of libpagelab_huge.so share (what the library does, and
   its environment variables: huge_main.c's header comment). All of it is hidden: the
   library exports only the functions it interposes.

   - huge_main.c: the environment, the advice and its tally, the interposed madvise and
     mmap, /proc/self/maps at start (static), the constructor, the summary at exit.
   - huge_alloc.c: the interposed allocator (malloc, calloc, free, realloc,
     reallocarray, memalign, aligned_alloc, posix_memalign, valloc, pvalloc): blocks
     advised once placed, glibc's padded brk heap and the blocks mapped for it
     (own_block), glibc's mmap threshold followed.
   - huge_next.c: the next allocator (glibc's or a foreign one), looked up at the
     first call; the arena serving dlsym meanwhile; aligned blocks from a foreign
     allocator lacking the function asked; the address range of its object. */
#ifndef PAGELAB_HUGE_H
#define PAGELAB_HUGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HIDDEN __attribute__((visibility("hidden")))

#define LARGE_BYTES ((size_t)128 << 10)   /* glibc's default mmap threshold */
#define PAGE        ((uintptr_t)4096)
#define HDR         ((size_t)16)          /* glibc's chunk header: prev_size, size */
#define BOOT_BYTES  ((size_t)64 << 10)    /* the arena for dlsym's requests */

/* Categories, then OWN: large blocks are mapped by own_block (the heap is padded);
   SHARED: the allocator is not glibc's, its large blocks share pages with others. */
enum { STATIC, SMALL, LARGE, NCATS, OWN = NCATS, SHARED };

/* huge_main.c */

/* The bits of the categories done, OWN and SHARED; 0 until the constructor has run. */
extern unsigned huge_enabled HIDDEN;

static inline unsigned on(void)
{
    return __atomic_load_n(&huge_enabled, __ATOMIC_ACQUIRE);
}

/* madvise(MADV_HUGEPAGE) [lo, hi) rounded out to pages, for category cat. */
HIDDEN void huge_advise(int cat, uintptr_t lo, uintptr_t hi);
/* [lo, hi) rounded in to pages: a block sharing its first and last pages. */
HIDDEN void huge_advise_inside(int cat, uintptr_t lo, uintptr_t hi);

/* huge_alloc.c */

/* For small-dynamic at start: pads glibc's heap (M_TOP_PAD) if glibc maps its blocks
   as own_block does; returns whether it did (OWN). */
HIDDEN int huge_pad_heap(void);
/* For small-dynamic at start: advises the heap from heap (its start, 0: none yet) to
   the break, and follows it from there. */
HIDDEN void huge_heap_advise(uintptr_t heap);

/* huge_next.c */

/* The allocator, as looked up (huge_resolve): the state, then its functions. */
enum { UNRESOLVED, RESOLVING, GLIBC, FOREIGN };
extern int huge_state HIDDEN;
struct next_allocator {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void (*free)(void *);
};
extern struct next_allocator huge_next HIDDEN;   /* FOREIGN: null where it has none */
extern void *(*huge_next_mmap)(void *, size_t, int, int, int, off_t) HIDDEN;

/* Looks the allocator up, once; returns the state (RESOLVING to the thread looking
   up, when dlsym calls the allocator). */
HIDDEN int huge_resolve(void);

/* The allocator's state, looked up at the first call. */
static inline int ready(void)
{
    int s = __atomic_load_n(&huge_state, __ATOMIC_ACQUIRE);
    return __builtin_expect(s >= GLIBC, 1) ? s : huge_resolve();
}

/* The arena for what dlsym asks while the allocator is looked up. */
extern char huge_boot[BOOT_BYTES] HIDDEN;

static inline int in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)huge_boot < BOOT_BYTES;
}

/* A block of the arena (align: a power of two), or null (ENOMEM). */
HIDDEN void *huge_boot_alloc(size_t align, size_t n);
/* realloc of an arena block: it moves out (free ignores it). */
HIDDEN void *huge_boot_move(void *p, size_t n);
/* An aligned block (align: a power of two) from a foreign allocator lacking the
   function asked, by the aligned allocation it has. */
HIDDEN void *huge_foreign_aligned(size_t align, size_t n);
/* The foreign allocator's object: its address range recorded (huge_allocators), its
   name returned ("" for the executable; null: not found). */
HIDDEN const char *huge_foreign_object(void);
/* Whether code at pc is the foreign allocator's (after huge_foreign_object). */
HIDDEN int huge_allocators(const void *pc);

#endif
