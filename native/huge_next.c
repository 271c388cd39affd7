/* huge_next.c -- libpagelab_huge.so's next allocator: looked up at the first call
   (dlsym(RTLD_NEXT), or the program's own malloc if that comes before ours), glibc's
   or a foreign one (see huge_main.c); the static arena serving dlsym's requests
   meanwhile; a foreign allocator's aligned blocks where it lacks the function asked;
   the address range of its object, whose own mmaps are not advised. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "huge.h"

int huge_state;
struct next_allocator huge_next;
void *(*huge_next_mmap)(void *, size_t, int, int, int, off_t);
static long resolver;                     /* the thread looking it up (RESOLVING) */
static uintptr_t alloc_lo, alloc_hi;      /* FOREIGN: its object's segments (start) */

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

/* What the main program's dynamic symbol table says of `name` and of an address. */
struct program_symbol {
    const char *name;
    const void *addr;
    int defined;   /* `name` is defined there (not an undefined import) */
    int holds;     /* `addr` lies in one of its loaded segments */
};

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0, g;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        g = h & 0xf0000000;
        h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* The object's entry for the symbol in its DT_GNU_HASH or DT_HASH table, and whether
   the address is in it. */
static void symbol_in(struct dl_phdr_info *info, struct program_symbol *q)
{
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)q->addr >= lo && (uintptr_t)q->addr < lo + ph->p_memsz)
            q->holds = 1;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    /* The loader has made these addresses absolute (x86-64's dynamic section is
       writable); one below the load bias is not yet. */
#define PTR(t, v) ((t)((v) < info->dlpi_addr ? (v) + info->dlpi_addr : (v)))
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            symtab = PTR(const ElfW(Sym) *, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            strtab = PTR(const char *, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu = PTR(const uint32_t *, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_HASH)
            sysv = PTR(const uint32_t *, dyn->d_un.d_ptr);
    }
#undef PTR
    if (!symtab || !strtab)
        return;
    const ElfW(Sym) *sym = NULL;
    if (gnu && gnu[0]) {
        uint32_t nbuckets = gnu[0], offset = gnu[1], bloom = gnu[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = gnu_hash(q->name);
        for (uint32_t i = buckets[h % nbuckets]; i >= offset && i; i++) {
            uint32_t c = chain[i - offset];
            if ((c | 1) == (h | 1) && strcmp(strtab + symtab[i].st_name, q->name) == 0) {
                sym = &symtab[i];
                break;
            }
            if (c & 1)
                break;
        }
    } else if (sysv && sysv[0]) {
        const uint32_t *bucket = sysv + 2, *chain = bucket + sysv[0];
        for (uint32_t i = bucket[sysv_hash(q->name) % sysv[0]]; i; i = chain[i])
            if (strcmp(strtab + symtab[i].st_name, q->name) == 0) {
                sym = &symtab[i];
                break;
            }
    }
    q->defined = sym && sym->st_shndx != SHN_UNDEF;
}

/* dl_iterate_phdr's callback for its first object, the main program. */
static int program_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    symbol_in(info, data);
    return 1;   /* the main program only */
}

/* The first object after the main program that defines a symbol, in load order (the
   order a lookup in the global scope takes, preloaded objects first). */
struct definer {
    const char *name;
    int index;
    uintptr_t base;   /* its load address, 0 for none */
    const char *path;
};

static int definer_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct definer *d = data;
    if (d->index++ == 0)
        return 0;   /* the main program */
    struct program_symbol q = {d->name, NULL, 0, 0};
    symbol_in(info, &q);
    if (!q.defined)
        return 0;
    d->base = info->dlpi_addr;
    d->path = info->dlpi_name;
    return 1;
}

static uintptr_t base_of(const void *f)
{
    Dl_info i;
    return dladdr(f, &i) ? (uintptr_t)i.dli_fbase : 0;
}

/* Whether f is the main program's stub for an allocator function it only imports: a
   program built without -fPIE that takes malloc's address gets a "canonical" PLT entry,
   which dlsym(RTLD_DEFAULT) returns and which jumps to the first definition: ours. */
static int program_stub(const void *f, const char *name)
{
    struct program_symbol q = {name, f, 0, 0};
    dl_iterate_phdr(program_cb, &q);
    return q.holds && !q.defined;
}

/* The allocator's function called name, from handle (RTLD_NEXT, or RTLD_DEFAULT when
   the program's malloc comes before ours), or after us if handle gives ours. */
static void *lookup(void *handle, const char *name)
{
    void *f = dlsym(handle, name);
    return same_object(f, (const void *)huge_resolve) ? dlsym(RTLD_NEXT, name) : f;
}

/* Look the allocator up, once (a thread finding another at it waits); returns the
   state, RESOLVING to the thread looking up when dlsym calls the allocator. It is the
   next definition of malloc, unless the program's (the first) is neither ours nor
   glibc's: preloaded before us, or the executable's. */
__attribute__((noinline)) int huge_resolve(void)
{
    long self = syscall(SYS_gettid);
    int s = UNRESOLVED;
    if (!__atomic_compare_exchange_n(&huge_state, &s, RESOLVING, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_ACQUIRE)) {
        while (s == RESOLVING) {
            if (__atomic_load_n(&resolver, __ATOMIC_RELAXED) == self)
                return RESOLVING;
            sched_yield();
            s = __atomic_load_n(&huge_state, __ATOMIC_ACQUIRE);
        }
        return s;
    }
    __atomic_store_n(&resolver, self, __ATOMIC_RELAXED);
    int saved = errno;
    huge_next_mmap =
        (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    void *first = dlsym(RTLD_DEFAULT, "malloc");
    void *handle = first && !same_object(first, (const void *)huge_resolve)
                   && !in_libc(first) ? RTLD_DEFAULT : RTLD_NEXT;
    if (handle == RTLD_DEFAULT && program_stub(first, "malloc")) {
        /* The stub leads to the first definition after the program: ours, glibc's,
           or an allocator preloaded before ours, whose own functions are then the
           next ones (its handle's lookups fall to glibc for what it lacks). */
        struct definer d = {"malloc", 0, 0, NULL};
        dl_iterate_phdr(definer_cb, &d);
        handle = RTLD_NEXT;
        if (d.base && d.base != base_of((const void *)huge_resolve)
            && d.base != base_of((const void *)gnu_get_libc_version) && d.path && *d.path) {
            void *h = dlopen(d.path, RTLD_NOLOAD | RTLD_LAZY);
            if (h)
                handle = h;
        }
    }
#define NEXT(f) (huge_next.f = (__typeof__(huge_next.f))lookup(handle, #f))
    NEXT(malloc), NEXT(calloc), NEXT(realloc), NEXT(memalign), NEXT(aligned_alloc);
    NEXT(posix_memalign), NEXT(valloc), NEXT(pvalloc), NEXT(free);
#undef NEXT
    s = GLIBC;
    if (huge_next.malloc && !in_libc((const void *)huge_next.malloc)) {
        s = FOREIGN;
        /* What it lacks is made of what it has (huge_foreign_aligned, calloc). */
#define LACKS(f) (in_libc((const void *)huge_next.f) ? (void)(huge_next.f = NULL) : (void)0)
        LACKS(calloc), LACKS(memalign), LACKS(aligned_alloc), LACKS(posix_memalign);
        LACKS(valloc), LACKS(pvalloc);
#undef LACKS
    }
    errno = saved;
    __atomic_store_n(&huge_state, s, __ATOMIC_RELEASE);
    return s;
}

/* The arena for what dlsym asks while huge_resolve looks up (the resolving thread
   only): each block after a word holding its size (for realloc), never reused, so
   zeros. */
char huge_boot[BOOT_BYTES] __attribute__((aligned(HDR)));
static size_t boot_used;

void *huge_boot_alloc(size_t align, size_t n)
{
    uintptr_t a = HDR, base = (uintptr_t)huge_boot;
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

void *huge_boot_move(void *p, size_t n)
{
    size_t old = ((size_t *)p)[-1];
    void *q = malloc(n);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

void *huge_foreign_aligned(size_t align, size_t n)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (huge_next.posix_memalign) {
        void *p;
        int err = huge_next.posix_memalign(&p, align, n);
        if (err == 0)
            return p;
        errno = err;
        return NULL;
    }
    if (huge_next.memalign)
        return huge_next.memalign(align, n);
    if (huge_next.aligned_alloc && n <= SIZE_MAX - (align - 1))
        return huge_next.aligned_alloc(align, (n + align - 1) & ~(align - 1));
    errno = ENOMEM;
    return NULL;
}

/* dl_iterate_phdr: the object whose segments hold the allocator's malloc, its name
   to *name ("" for the executable). */
static int allocator_object(struct dl_phdr_info *info, size_t size, void *name)
{
    (void)size;
    uintptr_t lo = UINTPTR_MAX, hi = 0, f = (uintptr_t)huge_next.malloc;
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

const char *huge_foreign_object(void)
{
    const char *name = NULL;
    dl_iterate_phdr(allocator_object, &name);
    return name;
}

/* Its mappings hold its small blocks too (its large ones are advised when placed). */
int huge_allocators(const void *pc)
{
    return (uintptr_t)pc - alloc_lo < alloc_hi - alloc_lo;
}
