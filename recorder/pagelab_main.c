/*--------------------------------------------------------------------*/
/*--- pagelab: records a client's memory references and address-   ---*/
/*--- space events for the pagelab simulator.       pagelab_main.c ---*/
/*--------------------------------------------------------------------*/

/* Output: the .pgrec stream of recorder/FORMAT.md (two header words, one
   little-endian u64 per reference, tagged event records).

   The reference stream replicates Lackey's --trace-mem=yes exactly: the same
   per-superblock buffer of 4 pending events, flushed when full, before each
   side exit, after a load-linked and at the end of the superblock, and the
   same rule turning a store that immediately follows (in that buffer) an
   unguarded load of the same address expression and size into one "modify".
   Guarded loads/stores (LoadG/StoreG) are recorded only when their guard
   holds, as Lackey's guarded helper calls are.

   Speed: a flush group (at most 4 references) becomes one call to a tiny
   helper that receives the addresses and one constant word packing the
   sizes and kinds, and appends the words to a 4 MiB buffer written out
   with VG_(write).  The helper has one test: buffer room (which also
   covers "tracing off" and "output dead") or an address above 48 bits.

   This file is our own code; it follows Valgrind's documented tool
   interface (pub_tool_*.h, libvex_ir.h). */

#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_libcsignal.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_transtab.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_clreq.h"

#include "pagelab.h"

/* Core functions and variables that are not in the pub_tool_ headers but
   are exported by libcoregrind (stable since Valgrind 3.x). */
extern Int  VG_(safe_fd)( Int oldfd );
extern Int  VG_(sigtimedwait_zero)( const vki_sigset_t*, vki_siginfo_t* );
extern Int  VG_(sigemptyset)( vki_sigset_t* set );
extern Int  VG_(sigaddset)( vki_sigset_t* set, Int signum );
extern Addr VG_(brk_base);

#define PRELOAD_NAME "vgpreload_pagelab-amd64-linux.so"

/*------------------------------------------------------------*/
/*--- Stream format constants (FORMAT.md)                  ---*/
/*------------------------------------------------------------*/

#define PGREC_MAGIC   0x31304345524C4750ULL   /* "PGLREC01" */
#define PGREC_VERSION 1ULL

#define K_LOAD   0
#define K_STORE  1
#define K_FETCH  2
#define K_MODIFY 3

#define TAG_LONGREF 0ULL
#define TAG_ALLOC   1ULL
#define TAG_SEGMENT 2ULL
#define TAG_MARKER  3ULL
#define TAG_THREAD  4ULL
#define TAG_END     5ULL
#define TAG_EXEC    6ULL

#define EV(tag)   ((1ULL << 63) | ((tag) << 56))

#define OP_MALLOC   0
#define OP_FREE     3
#define OP_MMAP     4
#define OP_MUNMAP   5
#define OP_BRK      6
#define OP_MEMALIGN 7
#define OP_MPROTECT 8
#define OP_MREMAP   9

#define SEG_TEXT  0
#define SEG_DATA  1
#define SEG_BSS   2
#define SEG_HEAP  3
#define SEG_STACK 4
#define SEG_MMAP  5
#define SEG_OTHER 6

#define MAX_NAME  4096          /* longest marker / segment name written */
#define MARKER_CALLSITE 4       /* a call site's name, on its first allocation */

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

static const HChar* clo_out     = NULL;
static Int          clo_fetches = 1;     /* 0 none, 1 page, 2 all */
static Long         clo_sample  = 1;
static Bool         clo_start   = True;
static Long         clo_parent  = 0;     /* 0: record whatever process this is */

static Bool pl_process_cmd_line_option(const HChar* arg)
{
   const HChar* tmp;
   if VG_STR_CLO(arg, "--out", clo_out) {}
   else if VG_STR_CLO(arg, "--fetches", tmp) {
      if      (VG_(strcmp)(tmp, "none") == 0) clo_fetches = 0;
      else if (VG_(strcmp)(tmp, "page") == 0) clo_fetches = 1;
      else if (VG_(strcmp)(tmp, "all")  == 0) clo_fetches = 2;
      else VG_(fmsg_bad_option)(arg, "--fetches must be none, page or all\n");
   }
   else if VG_BINT_CLO(arg, "--sample", clo_sample, 1, 0xFFFFFFFFLL) {}
   else if VG_BOOL_CLO(arg, "--start", clo_start) {}
   else if VG_BINT_CLO(arg, "--parent", clo_parent, 0, 0x7FFFFFFFLL) {}
   else
      return False;
   return True;
}

static void pl_print_usage(void)
{
   VG_(printf)(
"    --out=PATH                file or FIFO receiving the .pgrec stream [required]\n"
"                              (%%p is replaced by the pid, as in --log-file)\n"
"    --fetches=none|page|all   instruction fetches recorded: none, one per change\n"
"                              of 4 KiB code page, or every instruction [page]\n"
"    --sample=N                record every Nth reference, all kinds counted [1]\n"
"    --start=yes|no            trace references from the start, or only after\n"
"                              PAGELAB_START() (pagelab.h) [yes]\n"
"    --parent=PID              record only a process whose parent is PID: with\n"
"                              --trace-children=yes, the program and what it\n"
"                              execs, not the processes it starts [0: any]\n"
   );
}

static void pl_print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/*------------------------------------------------------------*/
/*--- Output buffer                                        ---*/
/*------------------------------------------------------------*/

#define BUF_WORDS (1u << 19)   /* 4 MiB */
#define SLACK     8            /* fast path needs <= 4 free words */

static Int    out_fd = -1;
static ULong* buf;
static ULong* buf_end;
/* Reference helpers write at pl_cur while pl_cur <= pl_lim.  pl_lim is 0
   when references must not be written (tracing off, output dead), which
   sends every helper to the slow path. */
static ULong* pl_cur;
static ULong* pl_lim;

static Bool  tracing  = True;
static Bool  dead     = False;   /* output failed or forked child */
static Bool  bystander = False;  /* not the recorded process (--parent) */
static ULong words_out   = 0;    /* words handed to write() */
static ULong extra_words = 0;    /* words written that are not references */
static ULong refs_seen   = 0;    /* sampled mode only: refs before sampling */
static ULong sample_left = 1;
static ULong pl_last_fetch_page = ~0ULL;

static void update_lim(void)
{
   pl_lim = (tracing && !dead) ? buf_end - SLACK : (ULong*)0;
}

static void go_dead(const HChar* why, Int err)
{
   if (dead) return;
   dead = True;
   update_lim();
   if (err)
      VG_(umsg)("pagelab: %s (%s, errno %d): recording stops, "
                "the program runs on\n", why, clo_out, err);
   else
      VG_(umsg)("pagelab: %s: recording stops, the program runs on\n", why);
}

static void flush_buf(void)
{
   UWord nw = pl_cur - buf;
   if (!dead && nw > 0) {
      const UChar* p = (const UChar*)buf;
      Long left = (Long)nw * 8;
      Int retries = 0;
      while (left > 0) {
         Int r = VG_(write)(out_fd, p, left > (1 << 30) ? (1 << 30) : (Int)left);
         if (r > 0) { p += r; left -= r; retries = 0; continue; }
         if ((r == -VKI_EINTR || r == -VKI_EAGAIN || r == 0) && ++retries < 1000)
            continue;
         if (r == -VKI_EPIPE) {
            /* The write raised SIGPIPE, pending while Valgrind runs with
               signals blocked: take it, so the client is not killed. */
            vki_sigset_t set;
            vki_siginfo_t info;
            VG_(sigemptyset)(&set);
            VG_(sigaddset)(&set, VKI_SIGPIPE);
            VG_(sigtimedwait_zero)(&set, &info);
         }
         go_dead("cannot write the trace", r < 0 ? -r : 0);
         break;
      }
   }
   words_out += nw;
   pl_cur = buf;
}

/* Append n words of an event record; 'extra' of them are not references. */
static void out_words(const ULong* w, UInt n, UInt extra)
{
   UInt i;
   if (dead) return;
   if (pl_cur + n > buf_end) flush_buf();
   if (dead) return;
   for (i = 0; i < n; i++) pl_cur[i] = w[i];
   pl_cur += n;
   extra_words += extra;
}

/* One reference, any address and size (slow path). */
static void put_ref(Addr a, ULong size, ULong kind)
{
   if (a >> 48 || size == 0 || size >= 4096) {
      ULong w[3];
      w[0] = EV(TAG_LONGREF) | kind;
      w[1] = a;
      w[2] = size;
      out_words(w, 3, 2);
   } else {
      ULong w = a | (size << 48) | (kind << 60);
      out_words(&w, 1, 0);
   }
}

/*------------------------------------------------------------*/
/*--- Event records                                        ---*/
/*------------------------------------------------------------*/

static void out_name_words(const HChar* name, UInt len)
{
   ULong w[(MAX_NAME + 7) / 8];
   UInt n = (len + 7) / 8, i;
   for (i = 0; i < n; i++) w[i] = 0;
   for (i = 0; i < len; i++) w[i / 8] |= (ULong)(UChar)name[i] << (8 * (i % 8));
   out_words(w, n, n);
}

static void emit_marker(UInt id, const HChar* name, UInt len)
{
   ULong w = EV(TAG_MARKER) | ((ULong)len << 32) | id;
   out_words(&w, 1, 1);
   out_name_words(name, len);
}

static void emit_alloc(UInt op, ULong addr, ULong size, ULong old,
                       ULong flags, ULong callsite)
{
   ULong w[6];
   w[0] = EV(TAG_ALLOC) | op;
   w[1] = addr; w[2] = size; w[3] = old; w[4] = flags; w[5] = callsite;
   out_words(w, 6, 6);
}

static void emit_segment(UInt perms, UInt kind, Addr start, Addr end,
                         const HChar* name)
{
   ULong w[3];
   UInt len = VG_(strlen)(name);
   if (len > MAX_NAME) len = MAX_NAME;
   w[0] = EV(TAG_SEGMENT) | perms | (kind << 8) | ((ULong)len << 16);
   w[1] = start; w[2] = end;
   out_words(w, 3, 3);
   out_name_words(name, len);
}

static void emit_thread(ThreadId tid)
{
   ULong w = EV(TAG_THREAD) | (ULong)tid;
   out_words(&w, 1, 1);
}

/*------------------------------------------------------------*/
/*--- Run-time helpers called from instrumented code       ---*/
/*------------------------------------------------------------*/

/* 'sk' packs, for reference i of the group, (kind << 12 | size) in bits
   16i..16i+13, so that word i = addr_i | (sk >> 16i) << 48. */

static void ref_slow(ULong sk, UWord n, Addr a0, Addr a1, Addr a2, Addr a3)
{
   Addr a[4];
   UWord i;
   if (!tracing || dead) return;
   a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
   for (i = 0; i < n; i++) {
      ULong f = (sk >> (16 * i)) & 0xFFFF;
      put_ref(a[i], f & 0xFFF, f >> 12);
   }
}

#define LIKELY_FAST(p, n, hi) \
   LIKELY((UWord)(p) <= (UWord)pl_lim && ((hi) >> 48) == 0)

static void pl_ref1(ULong sk, Addr a0)
{
   ULong* p = pl_cur;
   if (LIKELY_FAST(p, 1, a0)) {
      p[0] = a0 | (sk << 48);
      pl_cur = p + 1;
   } else ref_slow(sk, 1, a0, 0, 0, 0);
}

static void pl_ref2(ULong sk, Addr a0, Addr a1)
{
   ULong* p = pl_cur;
   if (LIKELY_FAST(p, 2, a0 | a1)) {
      p[0] = a0 | (sk << 48);
      p[1] = a1 | ((sk >> 16) << 48);
      pl_cur = p + 2;
   } else ref_slow(sk, 2, a0, a1, 0, 0);
}

static void pl_ref3(ULong sk, Addr a0, Addr a1, Addr a2)
{
   ULong* p = pl_cur;
   if (LIKELY_FAST(p, 3, a0 | a1 | a2)) {
      p[0] = a0 | (sk << 48);
      p[1] = a1 | ((sk >> 16) << 48);
      p[2] = a2 | ((sk >> 32) << 48);
      pl_cur = p + 3;
   } else ref_slow(sk, 3, a0, a1, a2, 0);
}

static void pl_ref4(ULong sk, Addr a0, Addr a1, Addr a2, Addr a3)
{
   ULong* p = pl_cur;
   if (LIKELY_FAST(p, 4, a0 | a1 | a2 | a3)) {
      p[0] = a0 | (sk << 48);
      p[1] = a1 | ((sk >> 16) << 48);
      p[2] = a2 | ((sk >> 32) << 48);
      p[3] = a3 | ((sk >> 48) << 48);
      pl_cur = p + 4;
   } else ref_slow(sk, 4, a0, a1, a2, a3);
}

/* --fetches=page: called (guarded by an inline page compare) for the first
   instruction of each run of instructions on one page in a superblock. */
static void pl_fetch_page(ULong word)
{
   ULong* p = pl_cur;
   pl_last_fetch_page = (word & 0xFFFFFFFFFFFFULL) >> 12;
   if (LIKELY((UWord)p <= (UWord)pl_lim)) {
      p[0] = word;
      pl_cur = p + 1;
   } else if (tracing && !dead) {
      out_words(&word, 1, 0);
   }
}

/* References of any size or address (sizes >= 4096 are known at
   instrumentation time, so they come here). */
static void pl_ref_long(Addr a, ULong size, ULong kind)
{
   if (!tracing || dead) return;
   if (clo_sample > 1) {
      refs_seen++;
      if (--sample_left != 0) return;
      sample_left = clo_sample;
   }
   put_ref(a, size, kind);
}

/* Sampled variants (--sample=N > 1): same arguments, one counter. */
static void sampled(ULong sk, UWord n, Addr a0, Addr a1, Addr a2, Addr a3)
{
   Addr a[4];
   UWord i;
   if (!tracing || dead) return;
   a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
   for (i = 0; i < n; i++) {
      refs_seen++;
      if (--sample_left == 0) {
         ULong f = (sk >> (16 * i)) & 0xFFFF;
         sample_left = clo_sample;
         put_ref(a[i], f & 0xFFF, f >> 12);
      }
   }
}
static void pl_sref1(ULong sk, Addr a0)
{ sampled(sk, 1, a0, 0, 0, 0); }
static void pl_sref2(ULong sk, Addr a0, Addr a1)
{ sampled(sk, 2, a0, a1, 0, 0); }
static void pl_sref3(ULong sk, Addr a0, Addr a1, Addr a2)
{ sampled(sk, 3, a0, a1, a2, 0); }
static void pl_sref4(ULong sk, Addr a0, Addr a1, Addr a2, Addr a3)
{ sampled(sk, 4, a0, a1, a2, a3); }

static void pl_sfetch_page(ULong word)
{
   pl_last_fetch_page = (word & 0xFFFFFFFFFFFFULL) >> 12;
   sampled(word >> 48, 1, word & 0xFFFFFFFFFFFFULL, 0, 0, 0);
}

/*------------------------------------------------------------*/
/*--- The preload library's code range                     ---*/
/*------------------------------------------------------------*/

/* Instructions of vgpreload_pagelab (the allocation wrappers) are not
   recorded: neither their fetches nor their data references. */
static Addr preload_lo = 0, preload_hi = 0;

static Bool ends_with(const HChar* s, const HChar* suffix)
{
   SizeT ls = VG_(strlen)(s), lx = VG_(strlen)(suffix);
   return ls >= lx && VG_(strcmp)(s + ls - lx, suffix) == 0;
}

static void note_exec_mapping(Addr a)
{
   NSegment const* seg = VG_(am_find_nsegment)(a);
   const HChar* name;
   if (!seg || seg->kind != SkFileC || !seg->hasX) return;
   name = VG_(am_get_filename)(seg);
   if (!name || !ends_with(name, "/" PRELOAD_NAME)) return;
   if (preload_hi == 0 || seg->start < preload_lo) preload_lo = seg->start;
   if (seg->end + 1 > preload_hi) preload_hi = seg->end + 1;
}

static inline Bool in_preload(Addr a)
{
   return a - preload_lo < preload_hi - preload_lo;
}

/*------------------------------------------------------------*/
/*--- Instrumentation: Lackey's event buffer               ---*/
/*------------------------------------------------------------*/

#define N_EVENTS 4      /* as Lackey: merging needs >= 2; 4 is Lackey's */

/* What to do with a fetch event at flush time. */
#define F_DROP  0
#define F_ALL   1
#define F_PAGE  2

typedef struct {
   IRExpr* addr;
   Int     kind;     /* K_* */
   Int     size;
   IRExpr* guard;    /* Ity_I1 atom or NULL (always) */
   Int     fetch;    /* F_* for K_FETCH */
} Event;

static Event events[N_EVENTS];
static Int   events_used = 0;

static void add_call(IRSB* sb, const HChar* name, void* fn, IRExpr** args,
                     IRExpr* guard)
{
   IRDirty* di = unsafeIRDirty_0_N(0, name, VG_(fnptr_to_fnentry)(fn), args);
   if (guard) di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static void emit_group(IRSB* sb, Int n, IRExpr** a, ULong sk)
{
   IRExpr* k = mkIRExpr_HWord((HWord)sk);
   Bool s = clo_sample > 1;
   switch (n) {
   case 0: return;
   case 1:
      add_call(sb, s ? "pl_sref1" : "pl_ref1", s ? (void*)pl_sref1 : (void*)pl_ref1,
               mkIRExprVec_2(k, a[0]), NULL);
      break;
   case 2:
      add_call(sb, s ? "pl_sref2" : "pl_ref2", s ? (void*)pl_sref2 : (void*)pl_ref2,
               mkIRExprVec_3(k, a[0], a[1]), NULL);
      break;
   case 3:
      add_call(sb, s ? "pl_sref3" : "pl_ref3", s ? (void*)pl_sref3 : (void*)pl_ref3,
               mkIRExprVec_4(k, a[0], a[1], a[2]), NULL);
      break;
   case 4:
      add_call(sb, s ? "pl_sref4" : "pl_ref4", s ? (void*)pl_sref4 : (void*)pl_ref4,
               mkIRExprVec_5(k, a[0], a[1], a[2], a[3]), NULL);
      break;
   default:
      tl_assert(0);
   }
}

static Bool const_addr(IRExpr* e, ULong* out)
{
   if (e->tag != Iex_Const) return False;
   switch (e->Iex.Const.con->tag) {
   case Ico_U64: *out = e->Iex.Const.con->Ico.U64; return True;
   case Ico_U32: *out = e->Iex.Const.con->Ico.U32; return True;
   default: return False;
   }
}

/* Emit the calls for the pending events, in order: runs of plain events
   share one helper call; guarded, long and page-checked events get their
   own. */
static void flush_events(IRSB* sb)
{
   IRExpr* run[N_EVENTS];
   ULong   sk = 0;
   Int     rn = 0, i;

   for (i = 0; i < events_used; i++) {
      Event*  ev = &events[i];
      ULong   ca = 0;
      Bool    is_const = const_addr(ev->addr, &ca);
      Bool    is_long  = ev->size <= 0 || ev->size >= 4096
                         || (is_const && (ca >> 48) != 0);

      if (ev->kind == K_FETCH && ev->fetch == F_DROP)
         continue;

      if (ev->kind == K_FETCH && ev->fetch == F_PAGE && !is_long) {
         /* Inline: if (last_fetch_page != page) pl_fetch_page(word) */
         IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
         IRTemp g = newIRTemp(sb->tyenv, Ity_I1);
         ULong word = ca | ((ULong)ev->size << 48) | ((ULong)K_FETCH << 60);
         emit_group(sb, rn, run, sk);
         rn = 0; sk = 0;
         addStmtToIRSB(sb, IRStmt_WrTmp(t,
            IRExpr_Load(Iend_LE, Ity_I64,
                        mkIRExpr_HWord((HWord)&pl_last_fetch_page))));
         addStmtToIRSB(sb, IRStmt_WrTmp(g,
            IRExpr_Binop(Iop_CmpNE64, IRExpr_RdTmp(t),
                         IRExpr_Const(IRConst_U64(ca >> 12)))));
         if (clo_sample > 1)
            add_call(sb, "pl_sfetch_page", (void*)pl_sfetch_page,
                     mkIRExprVec_1(mkIRExpr_HWord((HWord)word)), IRExpr_RdTmp(g));
         else
            add_call(sb, "pl_fetch_page", (void*)pl_fetch_page,
                     mkIRExprVec_1(mkIRExpr_HWord((HWord)word)), IRExpr_RdTmp(g));
         continue;
      }

      if (is_long) {
         emit_group(sb, rn, run, sk);
         rn = 0; sk = 0;
         add_call(sb, "pl_ref_long", (void*)pl_ref_long,
                  mkIRExprVec_3(ev->addr, mkIRExpr_HWord((HWord)ev->size),
                                mkIRExpr_HWord((HWord)ev->kind)),
                  ev->guard);
         continue;
      }

      if (ev->guard) {
         IRExpr* one[1];
         emit_group(sb, rn, run, sk);
         rn = 0; sk = 0;
         one[0] = ev->addr;
         if (clo_sample > 1)
            add_call(sb, "pl_sref1", (void*)pl_sref1,
                     mkIRExprVec_2(mkIRExpr_HWord(((ULong)ev->kind << 12) | ev->size),
                                   one[0]), ev->guard);
         else
            add_call(sb, "pl_ref1", (void*)pl_ref1,
                     mkIRExprVec_2(mkIRExpr_HWord(((ULong)ev->kind << 12) | ev->size),
                                   one[0]), ev->guard);
         continue;
      }

      sk |= (((ULong)ev->kind << 12) | (ULong)ev->size) << (16 * rn);
      run[rn++] = ev->addr;
   }
   emit_group(sb, rn, run, sk);
   events_used = 0;
}

static void add_event(IRSB* sb, Int kind, IRExpr* addr, Int size,
                      IRExpr* guard, Int fetch)
{
   Event* ev;
   if (events_used == N_EVENTS)
      flush_events(sb);
   ev = &events[events_used++];
   ev->kind  = kind;
   ev->addr  = addr;
   ev->size  = size;
   ev->guard = guard;
   ev->fetch = fetch;
}

/* A store: merged into the immediately preceding pending event when that
   is an unguarded load of the same size and address expression. */
static void add_store(IRSB* sb, IRExpr* addr, Int size)
{
   if (events_used > 0) {
      Event* last = &events[events_used - 1];
      if (last->kind == K_LOAD && last->size == size && last->guard == NULL
          && eqIRAtom(last->addr, addr)) {
         last->kind = K_MODIFY;
         return;
      }
   }
   add_event(sb, K_STORE, addr, size, NULL, 0);
}

static Bool made_uninstrumented = False;

static IRSB* pl_instrument(VgCallbackClosure* closure,
                           IRSB* sbIn,
                           const VexGuestLayout* layout,
                           const VexGuestExtents* vge,
                           const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   IRSB*      sbOut;
   IRTypeEnv* tyenv = sbIn->tyenv;
   Int        i;
   Bool       skip = False;       /* current instruction is the preload's */
   Addr       prev_page = ~(Addr)0;

   if (gWordTy != hWordTy)
      VG_(tool_panic)("pagelab: host/guest word size mismatch");

   if (bystander) return sbIn;

   if (!tracing) {
      /* Nothing to record: run at full speed.  Such translations are
         discarded when tracing is switched on. */
      made_uninstrumented = True;
      return sbIn;
   }

   sbOut = deepCopyIRSBExceptStmts(sbIn);

   i = 0;
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sbOut, sbIn->stmts[i]);
      i++;
   }

   events_used = 0;

   for (; i < sbIn->stmts_used; i++) {
      IRStmt* st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;

      switch (st->tag) {
      case Ist_IMark: {
         Addr a   = st->Ist.IMark.addr;
         Int  len = st->Ist.IMark.len;
         skip = in_preload(a);
         if (!skip) {
            Int f = F_DROP;
            if (clo_fetches == 2) {
               f = F_ALL;
            } else if (clo_fetches == 1 && (a >> 12) != prev_page) {
               f = F_PAGE;
               prev_page = a >> 12;
            }
            add_event(sbOut, K_FETCH, mkIRExpr_HWord((HWord)a), len, NULL, f);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (!skip && data->tag == Iex_Load)
            add_event(sbOut, K_LOAD, data->Iex.Load.addr,
                      sizeofIRType(data->Iex.Load.ty), NULL, 0);
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_Store: {
         if (!skip)
            add_store(sbOut, st->Ist.Store.addr,
                      sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)));
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         if (!skip)
            add_event(sbOut, K_STORE, sg->addr,
                      sizeofIRType(typeOfIRExpr(tyenv, sg->data)),
                      sg->guard, 0);
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType   ty = Ity_INVALID, tyWide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &tyWide, &ty);
         if (!skip && ty != Ity_INVALID)
            add_event(sbOut, K_LOAD, lg->addr, sizeofIRType(ty), lg->guard, 0);
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (!skip && d->mFx != Ifx_None && d->mAddr != NULL && d->mSize > 0) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(sbOut, K_LOAD, d->mAddr, d->mSize, NULL, 0);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_store(sbOut, d->mAddr, d->mSize);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL) size *= 2;      /* double CAS */
         if (!skip) {
            add_event(sbOut, K_LOAD, cas->addr, size, NULL, 0);
            add_store(sbOut, cas->addr, size);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL) {          /* load-linked */
            if (!skip) {
               IRType ty = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
               add_event(sbOut, K_LOAD, st->Ist.LLSC.addr, sizeofIRType(ty),
                         NULL, 0);
               flush_events(sbOut);     /* as Lackey: helps the SC succeed */
            }
         } else if (!skip) {                            /* store-conditional */
            IRType ty = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
            add_store(sbOut, st->Ist.LLSC.addr, sizeofIRType(ty));
         }
         addStmtToIRSB(sbOut, st);
         break;
      }

      case Ist_Exit:
         flush_events(sbOut);
         addStmtToIRSB(sbOut, st);
         break;

      default:   /* AbiHint, Put, PutI, MBE */
         addStmtToIRSB(sbOut, st);
         break;
      }
   }

   flush_events(sbOut);
   return sbOut;
}

/*------------------------------------------------------------*/
/*--- Tracing on/off                                       ---*/
/*------------------------------------------------------------*/

static void set_tracing(Bool on)
{
   if (on && !tracing) {
      tracing = True;
      pl_last_fetch_page = ~0ULL;
      if (made_uninstrumented) {
         VG_(discard_translations_safely)((Addr)0x1000, ~(SizeT)0xFFF,
                                          "pagelab");
         made_uninstrumented = False;
      }
   } else if (!on) {
      tracing = False;
   }
   update_lim();
}

/*------------------------------------------------------------*/
/*--- Address-space events                                 ---*/
/*------------------------------------------------------------*/

static UInt perms_of(NSegment const* s)
{
   return (s->hasR ? 1 : 0) | (s->hasW ? 2 : 0) | (s->hasX ? 4 : 0);
}

/* The client's memory map when it starts, as SEGMENT records. */
static void emit_startup_segments(ThreadId tid)
{
   Addr  starts_small[64];
   Addr* starts = starts_small;
   Int   n, i;
   Addr  sp = VG_(get_SP)(tid);
   NSegment const* prev = NULL;

   n = VG_(am_get_segment_starts)(SkFileC | SkAnonC | SkShmC, starts, 64);
   if (n < 0) {
      Int want = -n;
      starts = VG_(malloc)("pagelab.segs", want * sizeof(Addr));
      n = VG_(am_get_segment_starts)(SkFileC | SkAnonC | SkShmC, starts, want);
      if (n < 0) n = 0;
   }
   for (i = 0; i < n; i++) {
      NSegment const* s = VG_(am_find_nsegment)(starts[i]);
      const HChar* name = NULL;
      UInt kind;
      if (!s) continue;
      if (s->kind == SkFileC) {
         name = VG_(am_get_filename)(s);
         kind = s->hasX ? SEG_TEXT : SEG_DATA;
         if (!name) name = "[file]";
      } else if (s->kind == SkShmC) {
         kind = SEG_OTHER; name = "[shm]";
      } else if (sp >= s->start && sp <= s->end) {
         kind = SEG_STACK; name = "[stack]";
      } else if (s->start == VG_(brk_base)) {
         kind = SEG_HEAP; name = "[heap]";
      } else if (prev && prev->kind == SkFileC && prev->end + 1 == s->start) {
         kind = SEG_BSS; name = "[bss]";
      } else {
         kind = SEG_MMAP; name = "[anon]";
      }
      emit_segment(perms_of(s), kind, s->start, s->end + 1, name);
      prev = s;
   }
   if (starts != starts_small) VG_(free)(starts);
}

static Bool started = False;   /* the client has begun to run */

/* Before the client runs, Valgrind's own set-up moves the break; the
   SEGMENT records describe the result, so those moves are not written. */
static void pl_new_mem_brk(Addr a, SizeT len, ThreadId tid)
{
   if (!started) return;
   /* the break grew from a to a+len */
   emit_alloc(OP_BRK, a + len, len, a, 0, 0);
}

static void pl_die_mem_brk(Addr a, SizeT len)
{
   if (!started) return;
   /* the break shrank from a+len to a */
   emit_alloc(OP_BRK, a, len, a + len, 0, 0);
}

static UInt read_client_string(Addr a, HChar* out);

static void pl_pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nArgs)
{
   /* An exec that succeeds never returns: write what we have. */
   if (sysno == __NR_execve
#if defined(__NR_execveat)
       || sysno == __NR_execveat
#endif
      ) {
      /* The path it execs, so that a stream ending here is read as replaced by
         that program; an exec that fails returns, and the stream goes on. */
      const HChar* path = (const HChar*)(sysno == __NR_execve ? args[0] : args[1]);
      HChar name[MAX_NAME];
      UInt  len = read_client_string((Addr)path, name);
      ULong w = EV(TAG_EXEC) | len;
      out_words(&w, 1, 1);
      out_name_words(name, len);
      flush_buf();
   }
}

static void pl_post_syscall(ThreadId tid, UInt sysno, UWord* args,
                            UInt nArgs, SysRes res)
{
   if (sr_isError(res) || nArgs < 5) return;
   switch (sysno) {
   case __NR_mmap: {
      Addr r = sr_Res(res);
      emit_alloc(OP_MMAP, r, args[1], 0,
                 (args[2] & 0xFF) | ((ULong)(args[3] & 0xFFFFFFFFUL) << 8), 0);
      if (args[2] & VKI_PROT_EXEC) note_exec_mapping(r);
      break;
   }
   case __NR_munmap:
      emit_alloc(OP_MUNMAP, 0, args[1], args[0], 0, 0);
      break;
   case __NR_mprotect:
      emit_alloc(OP_MPROTECT, args[0], args[1], args[0], args[2] & 0xFF, 0);
      if (args[2] & VKI_PROT_EXEC) note_exec_mapping(args[0]);
      break;
   case __NR_mremap:
      /* flags carries the old size (FORMAT.md) */
      emit_alloc(OP_MREMAP, sr_Res(res), args[2], args[0], args[1], 0);
      break;
   default:
      break;
   }
}

/*------------------------------------------------------------*/
/*--- Threads, fork                                        ---*/
/*------------------------------------------------------------*/

static ThreadId cur_tid = VG_INVALID_THREADID;

static void pl_start_client_code(ThreadId tid, ULong blocks_dispatched)
{
   if (!started) {
      emit_startup_segments(tid);
      started = True;
   }
   if (tid != cur_tid) {
      cur_tid = tid;
      emit_thread(tid);
   }
}

static void pl_pre_fork(ThreadId tid)
{
   flush_buf();     /* so that the child does not inherit pending words */
}

static void pl_child_fork(ThreadId tid)
{
   /* Parent and child would write to one file: only the parent records. */
   dead = True;
   update_lim();
   pl_cur = buf;
}

/*------------------------------------------------------------*/
/*--- Client requests                                      ---*/
/*------------------------------------------------------------*/

/* Copy a NUL-terminated client string, at most MAX_NAME bytes, checking
   each page is readable. */
static UInt read_client_string(Addr a, HChar* out)
{
   UInt n = 0;
   Addr checked_to = a;      /* [a, checked_to) known readable */
   if (a == 0) return 0;
   while (n < MAX_NAME) {
      Addr p = a + n;
      if (p >= checked_to) {
         Addr page_end = (p | 0xFFF) + 1;
         if (!VG_(am_is_valid_for_client)(p, page_end - p, VKI_PROT_READ))
            break;
         checked_to = page_end;
      }
      if (*(const HChar*)p == 0) break;
      out[n] = *(const HChar*)p;
      n++;
   }
   return n;
}

static ULong mix64(ULong x)
{
   x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
   x ^= x >> 27; x *= 0x94d049bb133111ebULL;
   x ^= x >> 31;
   return x;
}

/* Call sites named so far: an open-addressed set of their hashes (0: empty), at
   most half full; past that, new call sites go unnamed. */
#define NAMED_SLOTS 65536
static ULong* named;
static UInt   named_count;

/* Whether the call site `h` is seen for the first time (and now noted). */
static Bool first_sight(ULong h)
{
   UInt i, mask = NAMED_SLOTS - 1;
   if (named == NULL)
      named = VG_(calloc)("pagelab.named", NAMED_SLOTS, sizeof(ULong));
   for (i = (UInt)(h >> 20) & mask; named[i] != 0; i = (i + 1) & mask)
      if (named[i] == h) return False;
   if (named_count >= NAMED_SLOTS / 2) return False;
   named[i] = h;
   named_count++;
   return True;
}

/* Append `text` to name[*len ..], within MAX_NAME. */
static void append(HChar* name, UInt* len, const HChar* text)
{
   while (*text && *len < MAX_NAME - 1) name[(*len)++] = *text++;
   name[*len] = 0;
}

/* Append one frame as Valgrind describes it, without its address:
   "fn (file.c:12)", "fn (in /lib/x.so)" made "fn (x.so)", or "??? (x.so)". */
static void append_description(HChar* name, UInt* len, const HChar* d)
{
   const HChar* colon = VG_(strstr)(d, ": ");
   const HChar* in;
   if (colon) d = colon + 2;
   in = VG_(strstr)(d, " (in ");
   if (in == NULL) {
      append(name, len, d);
      return;
   }
   {
      const HChar* obj = in + 5;
      const HChar* base = VG_(strrchr)(obj, '/');
      while (d < in && *len < MAX_NAME - 1) name[(*len)++] = *d++;
      name[*len] = 0;
      append(name, len, " (");
      append(name, len, base ? base + 1 : obj);   /* keeps the closing ")" */
   }
}

/* Append a code address's frames: the functions inlined at it, innermost first,
   then the one it is in, each "fn (file:line)" where the debug information has
   them. False once main has been appended (the frames below it are the C
   library's start-up, left out). */
static Bool append_frame(HChar* name, UInt* len, Addr ip, Bool first)
{
   DiEpoch      ep = VG_(current_DiEpoch)();
   Vg_FnNameKind kind = VG_(get_fnname_kind_from_IP)(ep, ip);
   InlIPCursor* iipc;
   if (kind == Vg_FnNameBelowMain) return False;
   iipc = VG_(new_IIPC)(ep, ip);
   do {
      append(name, len, first ? " " : " < ");
      first = False;
      append_description(name, len, VG_(describe_IP)(ep, ip, iipc));
   } while (VG_(next_IIPC)(iipc));
   VG_(delete_IIPC)(iipc);
   return kind != Vg_FnNameMain;
}

/* Name a call site once, by the frames its hash is made of, innermost first, to
   main: marker MARKER_CALLSITE "0xHASH fn (file:line) < caller (file:line)". */
static void name_callsite(ULong h, const Addr* frames, UInt n)
{
   HChar name[MAX_NAME];
   UInt  len = 0, i;
   VG_(snprintf)(name, sizeof name, "0x%016llx", h);
   len = VG_(strlen)(name);
   for (i = 0; i < n; i++)
      if (!append_frame(name, &len, frames[i], i == 0)) break;
   emit_marker(MARKER_CALLSITE, name, len);
}

/* Hash of the first 4 code addresses of the stack outside the wrappers; a call
   site that allocates (`name`), seen for the first time, is named first (see
   name_callsite). */
static ULong callsite(ThreadId tid, Bool name)
{
   Addr  ips[12], frames[4];
   UInt  n = VG_(get_StackTrace)(tid, ips, 12, NULL, NULL, 0);
   UInt  i, taken = 0;
   ULong h = 0x9E3779B97F4A7C15ULL;
   for (i = 0; i < n && taken < 4; i++) {
      if (in_preload(ips[i])) continue;
      h = mix64(h ^ ips[i]);
      frames[taken++] = ips[i];
   }
   if (taken == 0) return 0;
   if (h == 0) h = 1;
   if (name && first_sight(h)) name_callsite(h, frames, taken);
   return h;
}

static Bool pl_handle_client_request(ThreadId tid, UWord* arg, UWord* ret)
{
   if (!VG_IS_TOOL_USERREQ('P', 'L', arg[0]))
      return False;
   switch (arg[0]) {
   case PAGELAB_REQ_START:
      emit_marker(1, "start", 5);
      set_tracing(True);
      break;
   case PAGELAB_REQ_STOP:
      emit_marker(2, "stop", 4);
      set_tracing(False);
      break;
   case PAGELAB_REQ_MARKER: {
      HChar name[MAX_NAME];
      UInt  len = read_client_string(arg[2], name);
      emit_marker((UInt)arg[1], name, len);
      break;
   }
   case PAGELAB_REQ_ALLOC:
      if (arg[1] <= OP_MREMAP && !dead)
         emit_alloc((UInt)arg[1], arg[2], arg[3], arg[4], arg[5],
                    callsite(tid, arg[1] != OP_FREE && arg[1] != OP_MUNMAP
                                  && arg[1] != OP_MPROTECT && arg[1] != OP_BRK));
      break;
   default:
      return False;
   }
   *ret = 0;
   return True;
}

/*------------------------------------------------------------*/
/*--- Start and end                                        ---*/
/*------------------------------------------------------------*/

static void pl_post_clo_init(void)
{
   SysRes sres;
   HChar* path;

   if (clo_out == NULL || clo_out[0] == 0) {
      VG_(fmsg)("pagelab: --out=PATH is required (a file or FIFO for the "
                "trace)\n");
      VG_(exit)(1);
   }
   if (clo_parent != 0 && VG_(getppid)() != clo_parent) {
      /* A process the recorded program started (it is traced only because it
         may exec): record nothing, instrument nothing. */
      bystander = True;
      dead = True;
      return;
   }
   path = VG_(expand_file_name)("--out", clo_out);
   clo_out = path;
   sres = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0644);
   if (sr_isError(sres)) {
      VG_(fmsg)("pagelab: cannot open --out=%s (errno %lu)\n", path,
                sr_Err(sres));
      VG_(exit)(1);
   }
   out_fd = VG_(safe_fd)(sr_Res(sres));

   buf     = VG_(malloc)("pagelab.buf", BUF_WORDS * sizeof(ULong));
   buf_end = buf + BUF_WORDS;
   pl_cur  = buf;
   tracing = clo_start;
   sample_left = clo_sample;
   update_lim();

   {
      ULong hdr[2];
      hdr[0] = PGREC_MAGIC;
      hdr[1] = PGREC_VERSION | ((ULong)clo_fetches << 8)
               | (((ULong)clo_sample & 0xFFFFFFFFULL) << 16);
      out_words(hdr, 2, 2);
   }
}

static void pl_fini(Int exitcode)
{
   ULong written = words_out + (pl_cur - buf) - extra_words;
   ULong w[3];
   w[0] = EV(TAG_END);
   w[1] = clo_sample > 1 ? refs_seen : written;
   w[2] = written;
   out_words(w, 3, 3);
   flush_buf();
   if (out_fd >= 0) VG_(close)(out_fd);
   out_fd = -1;
   if (VG_(clo_verbosity) > 1)
      VG_(umsg)("pagelab: %llu references written to %s\n", written, clo_out);
}

static void pl_pre_clo_init(void)
{
   VG_(details_name)            ("pagelab");
   VG_(details_version)         ("1");
   VG_(details_description)     ("memory-reference recorder for pagelab");
   VG_(details_copyright_author)("Copyright (C) the pagelab authors; GNU GPL, as Valgrind");
   VG_(details_bug_reports_to)  ("the pagelab repository");
   VG_(details_avg_translation_sizeB)(300);

   VG_(basic_tool_funcs)(pl_post_clo_init, pl_instrument, pl_fini);
   VG_(needs_command_line_options)(pl_process_cmd_line_option,
                                   pl_print_usage, pl_print_debug_usage);
   VG_(needs_client_requests)(pl_handle_client_request);
   VG_(needs_syscall_wrapper)(pl_pre_syscall, pl_post_syscall);

   VG_(track_new_mem_brk)(pl_new_mem_brk);
   VG_(track_die_mem_brk)(pl_die_mem_brk);
   VG_(track_start_client_code)(pl_start_client_code);
   VG_(atfork)(pl_pre_fork, NULL, pl_child_fork);
}

VG_DETERMINE_INTERFACE_VERSION(pl_pre_clo_init)

/*--------------------------------------------------------------------*/
/*--- end                                             pagelab_main.c ---*/
/*--------------------------------------------------------------------*/
