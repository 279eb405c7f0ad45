/*
 * unwind.c - recovery of the stack walks AsyncGetCallTrace gives up on
 * (mode=cpu, x86-64).
 *
 * ASGCT fails when the interrupted PC is where HotSpot cannot make a frame
 * of it: a stub of the code cache (arraycopy, the intrinsics' stubs, vtable
 * and itable stubs), or native code called straight from compiled Java
 * without a state change (os::javaTimeMillis and the vDSO under
 * System.currentTimeMillis).  The method that called the stub, and every
 * method above it, then lost the sample.  Recovery finds the caller's
 * state (PC, SP, FP) and asks ASGCT again from there:
 *
 *   - where the PC is: the code cache's bounds come from the JVM's own
 *     exported tables (gHotSpotVMStructs: CodeCache::_low_bound and
 *     _high_bound, read by name, no offset of one JDK build), the stubs and
 *     other blobs with their names and ranges from JVMTI's
 *     DynamicCodeGenerated events (replayed with GenerateEvents at VMInit);
 *   - a stub: its return address is at [SP] when the stub has no frame
 *     (vtable/itable stubs), the PC is its first instruction or a `ret`;
 *     a stub that starts with `push rbp; mov rbp, rsp` has it at [SP+8]
 *     one instruction in, and at [FP+8] (caller's SP = FP+16) once the
 *     frame is made;
 *   - a compiled method whose frame is not complete (ASGCT's "unknown
 *     Java"): its entry or exit instruction at the PC says whether nothing,
 *     rbp or the whole frame (size read from its `sub`/`add rsp, N`) lies
 *     above the return address;
 *   - native code outside the code cache: the chain of frame pointers
 *     (libjvm and the vDSO keep them; a routine that does not still keeps
 *     RBP for its caller) up to the first return address into Java code,
 *     else the first such address among the few words above SP.
 *
 * A candidate caller is taken only when its PC is in the code cache, not
 * in a stub (or in the interpreter), follows a call instruction, and its
 * SP lies above the interrupted SP within the thread's stack; memory is
 * read only inside the thread's stack (bounds recorded at ThreadStart)
 * and the code cache.  At most JL_UNWIND_STEPS pops.  ASGCT then checks
 * the frame again as it does any: a walk that still fails keeps the
 * sample's pseudo-frame, never a guessed Java frame.  Everything here that
 * the signal handler calls is lock-free and allocates nothing.
 */
#include "callsite.h"
#include "jalen.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define JL_UNWIND_STEPS 4
#define JL_FP_CHAIN 16   /* frame pointers followed through native code */
#define JL_LEAF_WORDS 16 /* words above SP searched in a frameless leaf */
#define JL_STUB_WORDS 6  /* the same, in a stub of no layout known */

/* ------------------------------------------------------------------ */
/* The code cache's bounds, from gHotSpotVMStructs                     */
/* ------------------------------------------------------------------ */

static uintptr_t *jl_cc_low_p, *jl_cc_high_p; /* CodeCache::_low_bound, _high_bound */
/* AsyncGetCallTrace, handed down by jl_unwind_init (sampler.c found it) */
static jl_asgct_fn jl_uw_asgct;
static uintptr_t jl_cc_low, jl_cc_high;
/* The code heaps (CodeCache::_heaps, a GrowableArray<CodeHeap*>) and the
 * offsets that lead to the part of each that is committed (CodeHeap::
 * _memory, a VirtualSpace: [_low, _high)); -1 where this JVM does not
 * export them */
static char **jl_cc_heaps_p;
static long jl_off_ga_len = -1, jl_off_ga_data = -1, jl_off_ch_memory = -1, jl_off_vs_low = -1,
            jl_off_vs_high = -1;

static long jl_vms_long(const char *sym)
{
    long *p = dlsym(RTLD_DEFAULT, sym);
    return p ? *p : -1;
}

/* The entry of gHotSpotVMStructs for type.field (static or not), or NULL;
 * *is_static set. */
static char *jl_vms_entry(const char *type, const char *field, int *is_static)
{
    char **base = dlsym(RTLD_DEFAULT, "gHotSpotVMStructs");
    long tn = jl_vms_long("gHotSpotVMStructEntryTypeNameOffset");
    long fn = jl_vms_long("gHotSpotVMStructEntryFieldNameOffset");
    long st = jl_vms_long("gHotSpotVMStructEntryIsStaticOffset");
    long stride = jl_vms_long("gHotSpotVMStructEntryArrayStride");
    if (!base || !*base || tn < 0 || fn < 0 || st < 0 || stride <= 0)
        return NULL;
    for (char *e = *base;; e += stride) {
        const char *t = *(const char **)(e + tn);
        if (!t)
            return NULL;
        const char *f = *(const char **)(e + fn);
        if (f && !strcmp(t, type) && !strcmp(f, field)) {
            *is_static = *(int32_t *)(e + st) != 0;
            return e;
        }
    }
}

/* The offset of a non-static field in its type, or -1. */
static long jl_vms_offset(const char *type, const char *field)
{
    int is_static = 0;
    char *e = jl_vms_entry(type, field, &is_static);
    long off = jl_vms_long("gHotSpotVMStructEntryOffsetOffset");
    if (!e || is_static || off < 0)
        return -1;
    return (long)*(uint64_t *)(e + off);
}

/* The address of a static field of the VM's exported structure table. */
static void *jl_vms_static(const char *type, const char *field)
{
    int is_static = 0;
    char *e = jl_vms_entry(type, field, &is_static);
    long ad = jl_vms_long("gHotSpotVMStructEntryAddressOffset");
    return e && is_static && ad >= 0 ? *(void **)(e + ad) : NULL;
}

/* ------------------------------------------------------------------ */
/* Stubs and blobs: DynamicCodeGenerated                                */
/* ------------------------------------------------------------------ */

enum { JL_BLOB_STUB = 0, JL_BLOB_FRAMELESS = 1, JL_BLOB_INTERP = 2 };

typedef struct jl_blob {
    uintptr_t lo, hi;
    uint32_t seq; /* order of the events */
    int kind;
    char name[40];
} jl_blob;

typedef struct jl_blobs {
    size_t n;
    jl_blob b[]; /* sorted by lo */
} jl_blobs;

static jl_blobs *_Atomic jl_btab; /* read by the signal handler */
static jl_rcu jl_brcu;            /* its readers and old tables (rcu.c) */
static pthread_mutex_t jl_block = PTHREAD_MUTEX_INITIALIZER;
static jl_blob *jl_pending; /* events not yet in jl_btab (jl_block) */
static size_t jl_npending, jl_cpending;

static int jl_blob_kind(const char *name)
{
    if (!strncmp(name, "vtable", 6) || !strncmp(name, "itable", 6) ||
        !strcmp(name, "InlineCacheBuffer"))
        return JL_BLOB_FRAMELESS;
    if (!strcmp(name, "Interpreter"))
        return JL_BLOB_INTERP;
    return JL_BLOB_STUB;
}

static void JNICALL jl_on_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *addr,
                                       jint length)
{
    (void)jvmti;
    if (!addr || length <= 0)
        return;
    pthread_mutex_lock(&jl_block);
    if (jl_npending == jl_cpending) {
        size_t ncap = jl_cpending ? jl_cpending * 2 : 1024;
        jl_blob *nv = realloc(jl_pending, ncap * sizeof(*nv));
        if (!nv) {
            pthread_mutex_unlock(&jl_block);
            return;
        }
        jl_pending = nv;
        jl_cpending = ncap;
    }
    static uint32_t seq;
    jl_blob *b = &jl_pending[jl_npending++];
    b->seq = seq++;
    b->lo = (uintptr_t)addr;
    b->hi = (uintptr_t)addr + (uintptr_t)length;
    snprintf(b->name, sizeof(b->name), "%s", name ? name : "?");
    b->kind = jl_blob_kind(b->name);
    pthread_mutex_unlock(&jl_block);
}

static int jl_blob_cmp(const void *a, const void *b)
{
    const jl_blob *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void jl_unwind_refresh(void)
{
    jl_nmethods_refresh();
    pthread_mutex_lock(&jl_block);
    jl_blobs *old = atomic_load(&jl_btab);
    jl_blobs *t = NULL;
    size_t n0 = old ? old->n : 0, n = n0 + jl_npending;
    if (jl_npending && jl_rcu_reserve(&jl_brcu, 1) == 0)
        t = malloc(sizeof(*t) + n * sizeof(jl_blob));
    if (t) {
        if (n0)
            memcpy(t->b, old->b, n0 * sizeof(jl_blob));
        memcpy(t->b + n0, jl_pending, jl_npending * sizeof(jl_blob));
        qsort(t->b, n, sizeof(jl_blob), jl_blob_cmp);
        /* a range reported again (a blob freed and its place reused):
         * the later event wins */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (k && t->b[i].lo == t->b[k - 1].lo)
                k--;
            t->b[k++] = t->b[i];
        }
        t->n = k;
        jl_npending = 0;
        atomic_store(&jl_btab, t);
        jl_rcu_retire(&jl_brcu, old);
    }
    jl_rcu_reclaim(&jl_brcu);
    pthread_mutex_unlock(&jl_block);
}

/* Signal handler: the blob holding pc, copied into *out; 0 when none. */
static int jl_blob_find(uintptr_t pc, jl_blob *out)
{
    int found = 0;
    jl_rcu_enter(&jl_brcu);
    const jl_blobs *t = atomic_load(&jl_btab);
    if (t && t->n) {
        size_t lo = 0, hi = t->n;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (t->b[mid].lo <= pc)
                lo = mid;
            else
                hi = mid;
        }
        if (t->b[lo].lo <= pc && pc < t->b[lo].hi) {
            *out = t->b[lo];
            found = 1;
        }
    }
    jl_rcu_exit(&jl_brcu);
    return found;
}

/* ------------------------------------------------------------------ */
/* Thread stacks: recorded at ThreadStart, read by the handler          */
/* ------------------------------------------------------------------ */

#define JL_STK_SLOTS 8192 /* power of two */
typedef struct jl_stk {
    atomic_int tid; /* 0 free, -1 being written */
    int key;
    _Atomic uintptr_t lo, hi;
} jl_stk;
static jl_stk *jl_stks; /* mmap: zeroed */

static void jl_stack_set(pid_t tid, uintptr_t lo, uintptr_t hi);

void jl_unwind_thread_start(pid_t tid)
{
    if (!jl_stks)
        return;
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    int rc = pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_destroy(&a);
    if (rc != 0 || !addr || !size)
        return;
    jl_stack_set(tid, (uintptr_t)addr, (uintptr_t)addr + size);
}

/* Records thread tid's stack [lo, hi) for the handler. */
static void jl_stack_set(pid_t tid, uintptr_t lo, uintptr_t hi)
{
    /* a slot of this tid (a thread reusing a dead one's number), else a
     * free one; 16 probes */
    pthread_mutex_lock(&jl_block);
    jl_stk *use = NULL;
    for (int k = 0; k < 16 && !use; k++) {
        jl_stk *s = &jl_stks[((unsigned)tid + (unsigned)k) & (JL_STK_SLOTS - 1)];
        if (s->key == tid)
            use = s;
    }
    for (int k = 0; k < 16 && !use; k++) {
        jl_stk *s = &jl_stks[((unsigned)tid + (unsigned)k) & (JL_STK_SLOTS - 1)];
        if (s->key == 0)
            use = s;
    }
    if (!use) /* a crowded neighbourhood: take the home slot */
        use = &jl_stks[(unsigned)tid & (JL_STK_SLOTS - 1)];
    atomic_store(&use->tid, -1);
    use->key = tid;
    atomic_store(&use->lo, lo);
    atomic_store(&use->hi, hi);
    atomic_store(&use->tid, tid);
    pthread_mutex_unlock(&jl_block);
}

/* Signal handler: the stack of thread tid, 0 when unknown. */
static int jl_stack_of(pid_t tid, uintptr_t *lo, uintptr_t *hi)
{
    for (int k = 0; k < 16; k++) {
        jl_stk *s = &jl_stks[((unsigned)tid + (unsigned)k) & (JL_STK_SLOTS - 1)];
        if (atomic_load(&s->tid) != tid)
            continue;
        *lo = atomic_load(&s->lo);
        *hi = atomic_load(&s->hi);
        if (atomic_load(&s->tid) == tid)
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* A running Java thread's kernel tid and stack (attach)                */
/* ------------------------------------------------------------------ */

/* Offsets in the VM's thread structures, from gHotSpotVMStructs: the
 * JavaThread of a java.lang.Thread is its field eetop; its OSThread holds
 * the kernel's tid; Thread::_stack_base is the top of its stack. */
static long jl_off_osthread = -1, jl_off_tid = -1, jl_off_sbase = -1, jl_off_ssize = -1;
static jfieldID jl_eetop;
static int jl_tid_ready; /* 1 found, -1 not in this JVM */

static long jl_vms_offset_any(const char *const types[2], const char *field)
{
    long o = jl_vms_offset(types[0], field);
    return o >= 0 ? o : jl_vms_offset(types[1], field);
}

int jl_java_thread_tid(JNIEnv *jni, jthread thr, pid_t *tid)
{
    if (!jl_tid_ready) {
        static const char *const jt[2] = {"JavaThread", "Thread"};
        static const char *const th[2] = {"Thread", "JavaThread"};
        jl_off_osthread = jl_vms_offset_any(jt, "_osthread");
        jl_off_tid = jl_vms_offset("OSThread", "_thread_id");
        jl_off_sbase = jl_vms_offset_any(th, "_stack_base");
        jl_off_ssize = jl_vms_offset_any(th, "_stack_size");
        jclass tc = (*jni)->FindClass(jni, "java/lang/Thread");
        jl_eetop = tc ? (*jni)->GetFieldID(jni, tc, "eetop", "J") : NULL;
        if (!jl_eetop)
            (*jni)->ExceptionClear(jni);
        jl_tid_ready = jl_off_osthread >= 0 && jl_off_tid >= 0 && jl_eetop ? 1 : -1;
    }
    if (jl_tid_ready < 0)
        return -ENOSYS;
    /* The thread may end meanwhile: its eetop is 0 once it has, and the
     * caller holds a reference to its Thread object; a thread ending
     * between this read and the next is the one race left (as in every
     * profiler that attaches). */
    jlong jt = (*jni)->GetLongField(jni, thr, jl_eetop);
    if (!jt)
        return -ESRCH;
    char *osthread = *(char **)((char *)(intptr_t)jt + jl_off_osthread);
    if (!osthread)
        return -ESRCH;
    *tid = *(pid_t *)(osthread + jl_off_tid);
    if (*tid <= 0)
        return -ESRCH;
    if (jl_stks && jl_off_sbase >= 0 && jl_off_ssize >= 0) {
        uintptr_t base = *(uintptr_t *)((char *)(intptr_t)jt + jl_off_sbase);
        size_t size = *(size_t *)((char *)(intptr_t)jt + jl_off_ssize);
        if (base && size && size < base)
            jl_stack_set(*tid, base - size, base);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The frame anchor of a thread inside the VM                           */
/* ------------------------------------------------------------------ */

/* A thread that entered the VM from compiled code (a runtime stub: the
 * slow paths of monitors and allocation) records its last Java frame's SP
 * in its frame anchor, and its PC only once the VM makes the frame
 * walkable; ASGCT walks from the anchor and gives up while the PC is not
 * there ([not walkable, not Java], [not Java]).  The PC is the return
 * address right below that SP (what JavaFrameAnchor::make_walkable stores
 * on x86).  Offsets from gHotSpotVMStructs; the JavaThread of a JNIEnv is
 * the env less jl_env_off (measured at VM start on the current thread,
 * whose JavaThread its java.lang.Thread's eetop holds). */
static long jl_env_off, jl_off_anchor = -1, jl_off_ljsp = -1, jl_off_ljpc = -1, jl_off_ljfp = -1;
static long jl_off_state = -1;  /* JavaThread::_thread_state, -1 unknown */
static int jl_state_in_vm = -1; /* the value of _thread_in_vm */
static int jl_anchor_ready;

/* The value of an integer constant of gHotSpotVMIntConstants, def when
 * the table or the name is not there. */
static int jl_vms_int(const char *name, int def)
{
    char **base = dlsym(RTLD_DEFAULT, "gHotSpotVMIntConstants");
    long nm = jl_vms_long("gHotSpotVMIntConstantEntryNameOffset");
    long vo = jl_vms_long("gHotSpotVMIntConstantEntryValueOffset");
    long stride = jl_vms_long("gHotSpotVMIntConstantEntryArrayStride");
    if (!base || !*base || nm < 0 || vo < 0 || stride <= 0)
        return def;
    for (char *e = *base;; e += stride) {
        const char *n = *(const char **)(e + nm);
        if (!n)
            return def;
        if (!strcmp(n, name))
            return *(int32_t *)(e + vo);
    }
}

static void jl_anchor_init(JNIEnv *jni, jthread thr)
{
    if (jl_anchor_ready || !jni || !thr)
        return;
    long a = jl_vms_offset("JavaThread", "_anchor");
    long sp = jl_vms_offset("JavaFrameAnchor", "_last_Java_sp");
    long pc = jl_vms_offset("JavaFrameAnchor", "_last_Java_pc");
    jclass tc = (*jni)->FindClass(jni, "java/lang/Thread");
    jfieldID eetop = tc ? (*jni)->GetFieldID(jni, tc, "eetop", "J") : NULL;
    if (!eetop) {
        (*jni)->ExceptionClear(jni);
        return;
    }
    jlong jt = (*jni)->GetLongField(jni, thr, eetop);
    long off = jt ? (long)((intptr_t)jni - (intptr_t)jt) : 0;
    /* the JNIEnv is a field of the JavaThread */
    if (a < 0 || sp < 0 || pc < 0 || off <= 0 || off > (1L << 16))
        return;
    jl_off_anchor = a, jl_off_ljsp = sp, jl_off_ljpc = pc, jl_env_off = off;
    jl_off_ljfp = jl_vms_offset("JavaFrameAnchor", "_last_Java_fp");
    jl_off_state = jl_vms_offset("JavaThread", "_thread_state");
    jl_state_in_vm = jl_vms_int("_thread_in_vm", -1);
    jl_anchor_ready = 1;
}

size_t jl_unwind_memory(void)
{
    pthread_mutex_lock(&jl_block);
    const jl_blobs *t = atomic_load(&jl_btab);
    size_t b = (t ? sizeof(*t) + t->n * sizeof(jl_blob) : 0) + jl_cpending * sizeof(jl_blob) +
               jl_brcu.cap * sizeof(void *) + (jl_stks ? sizeof(jl_stk) * JL_STK_SLOTS : 0);
    pthread_mutex_unlock(&jl_block);
    return b + jl_nmethods_memory();
}

/* ------------------------------------------------------------------ */
/* Why walks stayed failed: counts by cause and detail                  */
/* ------------------------------------------------------------------ */

#define JL_WHY_SLOTS 256 /* power of two */
/* key: cause << 56 | detail (an address, 4 code bytes or a code: below
 * 2^56), 0 free; claimed by a compare-and-swap in the handler */
static _Atomic uint64_t jl_why_key[JL_WHY_SLOTS];
static atomic_ulong jl_why_n[JL_WHY_SLOTS];
static atomic_ulong jl_why_by_cause[JL_WHY_N]; /* the table full */

void jl_why_count(const jl_why *w)
{
    if (w->cause <= JL_WHY_NONE || w->cause >= JL_WHY_N)
        return;
    uint64_t key = (uint64_t)w->cause << 56 | (w->detail & ((1ull << 56) - 1));
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 56) & (JL_WHY_SLOTS - 1);
    for (int k = 0; k < 16; k++) {
        size_t i = (h + (size_t)k) & (JL_WHY_SLOTS - 1);
        uint64_t cur = atomic_load_explicit(&jl_why_key[i], memory_order_acquire);
        if (!cur && atomic_compare_exchange_strong(&jl_why_key[i], &cur, key))
            cur = key;
        if (cur == key) {
            atomic_fetch_add_explicit(&jl_why_n[i], 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&jl_why_by_cause[w->cause], 1, memory_order_relaxed);
}

int jl_unwind_in_interpreter(void *ucv)
{
    jl_blob b;
    uint64_t pc = jl_unwind_where(ucv);
    return pc && jl_blob_find((uintptr_t)pc, &b) && b.kind == JL_BLOB_INTERP;
}

/* The cause of a failure, the frame found so far kept. */
static void jl_why_set(jl_why *w, int cause, uint64_t detail)
{
    w->cause = cause;
    w->detail = detail;
}

/* The deepest Java frame known, where why holds none yet: the scope that
 * ASGCT decodes at pc (the first debug record after it) in a compiled
 * method. */
static void jl_why_frame(jl_why *w, int part, uintptr_t pc)
{
    jint bci = -1;
    jmethodID m = w->part ? NULL : jl_nmethods_scope_after(pc, &bci);
    if (m) {
        w->part = part;
        w->method = m;
        w->bci = bci;
    }
}

uint64_t jl_unwind_where(void *ucv)
{
#if defined(__x86_64__)
    const ucontext_t *uc = ucv;
    uintptr_t pc = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] : 0;
    return pc >= jl_cc_low && pc < jl_cc_high ? pc : 0;
#else
    (void)ucv;
    return 0;
#endif
}

void jl_unwind_pc_frame(void *ucv, jl_why *why)
{
    jl_blob b;
    uint64_t pc = jl_unwind_where(ucv);
    if (pc && !jl_blob_find((uintptr_t)pc, &b))
        jl_why_frame(why, 3, (uintptr_t)pc);
}

void jl_why_reset(void)
{
    for (size_t i = 0; i < JL_WHY_SLOTS; i++) {
        atomic_store(&jl_why_key[i], 0);
        atomic_store(&jl_why_n[i], 0);
    }
    for (size_t i = 0; i < JL_WHY_N; i++)
        atomic_store(&jl_why_by_cause[i], 0);
}

static const char *const jl_why_names[JL_WHY_N] = {
    [JL_WHY_NOT_WALKABLE_JAVA] = "not walkable Java",
    [JL_WHY_NOT_READY] = "recovery not ready",
    [JL_WHY_NO_STACK] = "thread stack unknown",
    [JL_WHY_INTERPRETER] = "in the interpreter",
    [JL_WHY_FRAME_STATE] = "compiled frame state",
    [JL_WHY_CODE_UNKNOWN] = "code not known yet",
    [JL_WHY_STUB_LAYOUT] = "stub frame unknown",
    [JL_WHY_STUB_RETURN] = "stub return not after a call",
    [JL_WHY_NATIVE] = "native code, no return into Java",
    [JL_WHY_STEPS] = "too many stubs",
    [JL_WHY_REWALK] = "ASGCT failed from the caller",
    [JL_WHY_ANCHOR_EMPTY] = "in the VM, no last Java frame",
    [JL_WHY_ANCHOR_WALKABLE] = "in the VM, anchor walkable",
    [JL_WHY_ANCHOR_RETURN] = "in the VM, no return address below the anchor",
    [JL_WHY_ANCHOR_BLOCKED] = "blocked in a runtime stub, scope unknown",
};

typedef struct jl_why_row {
    uint64_t key;
    unsigned long n;
} jl_why_row;

static int jl_why_row_cmp(const void *a, const void *b)
{
    const jl_why_row *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* "cause" or "cause: detail" of key, in buf. */
static void jl_why_name(uint64_t key, char *buf, size_t len)
{
    int cause = (int)(key >> 56);
    uint64_t d = key & ((1ull << 56) - 1);
    const char *name = cause < JL_WHY_N && jl_why_names[cause] ? jl_why_names[cause] : "?";
    jl_blob b;
    if (!d)
        snprintf(buf, len, "%s", name);
    else if (cause == JL_WHY_FRAME_STATE || cause == JL_WHY_CODE_UNKNOWN)
        snprintf(buf, len, "%s: %02x %02x %02x %02x", name, (unsigned)(d >> 24) & 0xff,
                 (unsigned)(d >> 16) & 0xff, (unsigned)(d >> 8) & 0xff, (unsigned)d & 0xff);
    else if (cause == JL_WHY_REWALK)
        snprintf(buf, len, "%s: %d", name, -(int)d);
    else if (jl_blob_find((uintptr_t)d, &b))
        snprintf(buf, len, "%s: %s+0x%llx", name, b.name, (unsigned long long)(d - b.lo));
    else if (jl_nmethods_method_at((uintptr_t)d))
        snprintf(buf, len, "%s: in a compiled method", name);
    else if (d >= jl_cc_low && d < jl_cc_high)
        snprintf(buf, len, "%s: in code not known", name);
    else
        snprintf(buf, len, "%s: stub at 0x%llx", name, (unsigned long long)d);
}

void jl_why_write(FILE *f, int json)
{
    jl_why_row rows[JL_WHY_SLOTS + JL_WHY_N];
    size_t n = 0;
    unsigned long total = 0;
    for (size_t i = 0; i < JL_WHY_SLOTS; i++) {
        uint64_t k = atomic_load(&jl_why_key[i]);
        unsigned long c = atomic_load(&jl_why_n[i]);
        if (k && c)
            rows[n++] = (jl_why_row){k, c};
    }
    for (int c = 1; c < JL_WHY_N; c++) {
        unsigned long v = atomic_load(&jl_why_by_cause[c]);
        if (v)
            rows[n++] = (jl_why_row){(uint64_t)c << 56, v};
    }
    qsort(rows, n, sizeof(rows[0]), jl_why_row_cmp);
    char name[160];
    if (json) {
        fputs("{", f);
        for (size_t i = 0; i < n; i++) {
            jl_why_name(rows[i].key, name, sizeof(name));
            fputs(i ? ", " : "", f);
            pa__json_write(f, name);
            fprintf(f, ": %lu", rows[i].n);
        }
        fputs("}", f);
        return;
    }
    for (size_t i = 0; i < n; i++)
        total += rows[i].n;
    if (!total)
        return;
    fprintf(f, "jalen: %lu failed walk%s not recovered, by cause:", total, total > 1 ? "s" : "");
    for (size_t i = 0; i < n && i < 5; i++) {
        jl_why_name(rows[i].key, name, sizeof(name));
        fprintf(f, "%s %s (%lu)", i ? ";" : "", name, rows[i].n);
    }
    fprintf(f, "%s (summary.json: walks_unrecovered)\n", n > 5 ? "; ..." : "");
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */
/* ------------------------------------------------------------------ */

static int jl_unwind_ready;

int jl_unwind_init(jvmtiEnv *jvmti, jvmtiEventCallbacks *cb, jl_asgct_fn asgct)
{
    jl_uw_asgct = asgct;
#if defined(__x86_64__)
    /* a new run in the same JVM: the tables of the last one stand */
    if (!jl_stks)
        jl_stks = mmap(NULL, sizeof(jl_stk) * JL_STK_SLOTS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (jl_stks == MAP_FAILED) {
        jl_stks = NULL;
        return -1;
    }
    jl_cc_low_p = jl_vms_static("CodeCache", "_low_bound");
    jl_cc_high_p = jl_vms_static("CodeCache", "_high_bound");
    if (!jl_cc_low_p || !jl_cc_high_p)
        return -1;
    cb->DynamicCodeGenerated = jl_on_dynamic_code;
    jl_nmethods_enable(jvmti);
    return 0;
#else
    (void)jvmti;
    (void)cb;
    return -1;
#endif
}

void jl_unwind_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!jl_cc_low_p || !jl_stks)
        return;
    jl_anchor_init(jni, thr);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_DYNAMIC_CODE_GENERATED,
                                       NULL);
    /* the stubs generated before now */
    (*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
    jl_unwind_refresh();
    jl_cc_heaps_p = jl_vms_static("CodeCache", "_heaps");
    jl_off_ga_len = jl_vms_offset("GrowableArrayBase", "_len");
    jl_off_ga_data = jl_vms_offset("GrowableArray<int>", "_data");
    jl_off_ch_memory = jl_vms_offset("CodeHeap", "_memory");
    jl_off_vs_low = jl_vms_offset("VirtualSpace", "_low");
    jl_off_vs_high = jl_vms_offset("VirtualSpace", "_high");
    /* set once the code cache exists (CodeCache::initialize) */
    jl_cc_low = *jl_cc_low_p;
    jl_cc_high = *jl_cc_high_p;
    if (jl_cc_low && jl_cc_high > jl_cc_low)
        atomic_store(&jl_unwind_ready, 1);
}

/* ------------------------------------------------------------------ */
/* The signal handler's part                                            */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__)
static int jl_in_code(uintptr_t pc)
{
    return pc >= jl_cc_low && pc < jl_cc_high;
}

/* Whether [a, b) lies in the committed part of a code heap: memory that
 * can be read.  The heaps are made at VM start and their committed parts
 * only grow. */
static int jl_code_committed(uintptr_t a, uintptr_t b)
{
    if (!jl_cc_heaps_p || jl_off_ga_len < 0 || jl_off_ga_data < 0 || jl_off_ch_memory < 0 ||
        jl_off_vs_low < 0 || jl_off_vs_high < 0)
        return 0;
    const char *ga = *(char *const volatile *)jl_cc_heaps_p;
    if (!ga)
        return 0;
    int n = *(const int *)(ga + jl_off_ga_len);
    char *const *heaps = *(char *const *const *)(ga + jl_off_ga_data);
    for (int i = 0; heaps && i < n && i < 8; i++) {
        const char *vs = heaps[i] ? heaps[i] + jl_off_ch_memory : NULL;
        if (vs && *(const uintptr_t *)(vs + jl_off_vs_low) <= a &&
            b <= *(const volatile uintptr_t *)(vs + jl_off_vs_high))
            return 1;
    }
    return 0;
}

/* Whether ra follows a call instruction in the code cache: the length of
 * that call (5 for call rel32, 2 to 8 for call r/m64), 0 when none.  The
 * bytes before ra are read only inside code the agent knows (a stub, the
 * interpreter, a compiled method of the table) or in the committed part of
 * a code heap (a method compiled a moment ago, whose CompiledMethodLoad
 * event has not come: JDK 17 and later post it from the service thread):
 * the code cache's bounds are what it reserved, and a word of the stack
 * that only looks like a return address may point at a part of it that is
 * not mapped. */
static int jl_after_call(uintptr_t ra)
{
    jl_blob b;
    if (!jl_in_code(ra) || ra - 8 < jl_cc_low ||
        (!jl_blob_find(ra, &b) && !jl_nmethods_method_at(ra) && !jl_code_committed(ra - 8, ra + 8)))
        return 0;
    return jl_call_len((const unsigned char *)ra);
}

/* A return address into compiled Java code (or the interpreter): in the
 * code cache, outside every stub, right after a call instruction. */
static int jl_java_return(uintptr_t ra)
{
    if (!jl_after_call(ra))
        return 0;
    jl_blob b;
    return !jl_blob_find(ra, &b) || b.kind == JL_BLOB_INTERP;
}

/* Takes ra (return address at stack address at) and the caller's SP and
 * FP when ra is a return into Java code. */
static int jl_take(uintptr_t at, uintptr_t nfp, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp,
                   uintptr_t lo, uintptr_t hi)
{
    if (!jl_stack_ok(at, lo, hi) || at < *sp)
        return 0;
    uintptr_t ra = *(const uintptr_t *)at;
    if (!jl_java_return(ra))
        return 0;
    *pc = ra;
    *sp = at + 8;
    *fp = nfp;
    return 1;
}

/* A return address read where a method's entry or exit code keeps it: a
 * return into Java code, or anywhere in the interpreter, whose calls push
 * a return entry of their own (an address after no call instruction),
 * which ASGCT checks as any interpreted frame. */
static int jl_entry_return(uintptr_t ra)
{
    jl_blob b;
    return jl_java_return(ra) ||
           (jl_in_code(ra) && jl_blob_find(ra, &b) && b.kind == JL_BLOB_INTERP);
}

/* jl_take for a return address at a place that an entry or exit code
 * keeps it (jl_entry_return). */
static int jl_take_entry(uintptr_t at, uintptr_t nfp, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp,
                         uintptr_t lo, uintptr_t hi)
{
    if (!jl_stack_ok(at, lo, hi) || at < *sp || !jl_entry_return(*(const uintptr_t *)at))
        return 0;
    *pc = *(const uintptr_t *)at;
    *sp = at + 8;
    *fp = nfp;
    return 1;
}

static int32_t jl_i32(const unsigned char *q)
{
    return (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                     (uint32_t)q[3] << 24);
}

/* The size a `sub rsp, imm` (add=0) or `add rsp, imm` (add=1) at q
 * allocates or frees, -1 when q holds no such instruction. */
static long jl_rsp_imm(const unsigned char *q, int add)
{
    unsigned char modrm = add ? 0xc4 : 0xec;
    long n = -1;
    if (q[0] == 0x48 && q[1] == 0x81 && q[2] == modrm)
        n = jl_i32(q + 3);
    else if (q[0] == 0x48 && q[1] == 0x83 && q[2] == modrm)
        n = (int8_t)q[3];
    return n >= 0 && n <= 65536 && !(n & 7) ? n : -1;
}

/* cmp dword [r15+d], imm32: the nmethod entry barrier (JDK 21+) */
static int jl_entry_barrier(const unsigned char *q)
{
    return q[0] == 0x41 && q[1] == 0x81 && (q[2] == 0x7f || q[2] == 0xbf);
}

/* Whether stub b starts `push rbp; mov rbp, rsp` (either encoding of the
 * mov). */
static int jl_stub_framed(const jl_blob *b)
{
    const unsigned char *e = (const unsigned char *)b->lo;
    return b->hi - b->lo >= 4 && e[0] == 0x55 && e[1] == 0x48 &&
           ((e[2] == 0x89 && e[3] == 0xe5) || (e[2] == 0x8b && e[3] == 0xec));
}

/* A C2 runtime stub (the slow paths of monitors and allocation:
 * _complete_monitor_locking_Java, _new_instance_Java) holding ra: its code
 * starts `sub rsp, N; mov [rsp+N-8], rbp`, it stores that SP as the last
 * Java SP and calls into the VM.  HotSpot installs these stubs as never
 * safe to walk out of (their frame is never "complete"), so ASGCT gives
 * up in one (not_walkable_not_Java) even once the anchor has a PC.  *n:
 * N, so that the caller's return address lies at the stub's SP + N once
 * its frame is made; *len: the bytes of that prologue. */
static int jl_c2_stub(const jl_blob *b, long *n, long *len)
{
    if (b->kind != JL_BLOB_STUB || b->hi - b->lo < 16)
        return 0;
    const unsigned char *e = (const unsigned char *)b->lo;
    *len = (e[1] == 0x81 ? 7 : 4) + 4; /* sub rsp, imm32 or imm8; the mov */
    if ((*n = jl_rsp_imm(e, 0)) < 8)
        return 0;
    const unsigned char *m = e + *len - 4; /* mov [rsp+N-8], rbp */
    if (m[0] != 0x48 || m[1] != 0x89)
        return 0;
    long d = m[2] == 0x2c && m[3] == 0x24   ? 0
             : m[2] == 0x6c && m[3] == 0x24 ? (int8_t)m[4]
             : m[2] == 0xac && m[3] == 0x24 ? jl_i32(m + 4)
                                            : -1;
    return d == *n - 8;
}

/* A compiled method whose frame is not complete (ASGCT will not walk it),
 * C2's and C1's x86-64 entry and exit code:
 *   [inline-cache check: mov/cmp/jne] [stack bang: mov [rsp-N], eax]
 *   push rbp; sub rsp, N            (or: sub rsp, N; mov [rsp+N-8], rbp)
 *   [entry barrier: cmp dword [r15+d], imm; jne]
 *   ...
 *   add rsp, N; pop rbp; [poll: cmp rsp, [r15+d]; ja]; ret
 * The instruction at the PC says where the return address is: nothing
 * pushed, rbp pushed, or the whole frame (its size read from the `sub` or
 * `add` instruction).  Anything else: no recovery. */
static int jl_pop_prologue(uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo, uintptr_t hi)
{
    const unsigned char *p = (const unsigned char *)*pc;
    uintptr_t s0 = *sp;
    long n;
    /* the blob's header lies before its code: 16 bytes back stay inside */
    if (*pc - 16 < jl_cc_low)
        return 0;
    if (p[0] == 0xc3) /* ret */
        return jl_take_entry(s0, *fp, pc, sp, fp, lo, hi);
    if (p[0] == 0x5d) /* pop rbp */
        return jl_stack_ok(s0, lo, hi) &&
               jl_take_entry(s0 + 8, *(const uintptr_t *)s0, pc, sp, fp, lo, hi);
    if ((n = jl_rsp_imm(p, 1)) >= 0) /* add rsp, N; pop rbp */
        return jl_stack_ok(s0 + (uintptr_t)n, lo, hi) &&
                       jl_take_entry(s0 + (uintptr_t)n + 8, *(const uintptr_t *)(s0 + (uintptr_t)n),
                                     pc, sp, fp, lo, hi)
                   ? 1
                   : 0;
    /* mov [rsp+d], rbp: the frame is allocated, rbp not saved yet */
    if (p[0] == 0x48 && p[1] == 0x89 && p[2] == 0x6c && p[3] == 0x24)
        return (int8_t)p[4] >= 0 &&
               jl_take_entry(s0 + (uintptr_t)(int8_t)p[4] + 8, *fp, pc, sp, fp, lo, hi);
    if (p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xac && p[3] == 0x24) {
        int32_t d = jl_i32(p + 4);
        return d >= 0 && d <= 65536 && jl_take_entry(s0 + (uintptr_t)d + 8, *fp, pc, sp, fp, lo, hi)
                   ? 1
                   : 0;
    }
    /* sub rsp, N at the PC: after a `push rbp`, or before anything */
    if (jl_rsp_imm(p, 0) >= 0) {
        if (p[-1] == 0x55 && jl_stack_ok(s0, lo, hi) &&
            jl_take_entry(s0 + 8, *(const uintptr_t *)s0, pc, sp, fp, lo, hi))
            return 1;
        return jl_take_entry(s0, *fp, pc, sp, fp, lo, hi);
    }
    /* the entry barrier, or the jne after it: the frame is made; its size
     * is in the `sub rsp, N` just before (after a `push rbp`: N + 8) */
    const unsigned char *bar = jl_entry_barrier(p)                                         ? p
                               : (p[0] == 0x0f && p[1] == 0x85 && jl_entry_barrier(p - 8)) ? p - 8
                                                                                           : NULL;
    if (bar) {
        long d = -1; /* where rbp is saved; the return address follows */
        if (bar[-5] == 0x48 && bar[-4] == 0x89 && bar[-3] == 0x6c && bar[-2] == 0x24)
            d = (int8_t)bar[-1]; /* a negative one is refused below */
        else if (bar[-8] == 0x48 && bar[-7] == 0x89 && bar[-6] == 0xac && bar[-5] == 0x24)
            d = jl_i32(bar - 4);
        else if ((n = jl_rsp_imm(bar - 7, 0)) >= 0 && bar[-8] == 0x55)
            d = n;
        else if ((n = jl_rsp_imm(bar - 4, 0)) >= 0 && bar[-5] == 0x55)
            d = n;
        if (d < 0 || d > 65536 || !jl_stack_ok(s0 + (uintptr_t)d, lo, hi))
            return 0;
        return jl_take_entry(s0 + (uintptr_t)d + 8, *(const uintptr_t *)(s0 + (uintptr_t)d), pc, sp,
                             fp, lo, hi)
                   ? 1
                   : 0;
    }
    /* nothing pushed: the inline-cache check (mov r10d, [rsi+8]; shl;
     * cmp; jne), the stack bang (mov [rsp+d], eax), `push rbp` itself,
     * padding, or the return poll (cmp rsp, [r15+d]; ja) after `pop rbp` */
    int none = (p[0] == 0x49 && p[1] == 0x3b) || (p[0] == 0x44 && p[1] == 0x3b) ||
               (p[0] == 0x44 && p[1] == 0x8b) || (p[0] == 0x49 && p[1] == 0xc1) ||
               (p[0] == 0x0f && (p[1] == 0x85 || p[1] == 0x87 || p[1] == 0x1f)) ||
               (p[0] == 0x89 && p[1] == 0x84 && p[2] == 0x24) || p[0] == 0x55 || p[0] == 0x90 ||
               (p[0] == 0x66 && (p[1] == 0x0f || p[1] == 0x90));
    if (!none)
        return 0;
    return jl_take_entry(s0, *fp, pc, sp, fp, lo, hi);
}

/* The chain of frame pointers from f up to the first return into Java code
 * or into a runtime stub: 1 and the caller's state taken, 0 when the
 * chain breaks first. */
static int jl_fp_chain(uintptr_t f, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo,
                       uintptr_t hi)
{
    for (int k = 0; k < JL_FP_CHAIN; k++) {
        if (!jl_stack_ok(f, lo, hi) || f < *sp)
            return 0;
        uintptr_t ra = *(const uintptr_t *)(f + 8);
        if (jl_in_code(ra)) {
            if (jl_take(f + 8, *(const uintptr_t *)f, pc, sp, fp, lo, hi))
                return 1;
            /* a return into the runtime stub that called the VM (a
             * monitor's slow path: popped next, jl_unwind_retry) */
            jl_blob b;
            if (jl_after_call(ra) && jl_blob_find(ra, &b) && b.kind == JL_BLOB_STUB) {
                *pc = ra;
                *sp = f + 16;
                *fp = *(const uintptr_t *)f;
                return 1;
            }
            return 0;
        }
        uintptr_t up = *(const uintptr_t *)f;
        if (up <= f)
            return 0;
        f = up;
    }
    return 0;
}

/* Native code called straight from compiled Java (os::javaTimeMillis,
 * libc, the vDSO) or from a runtime stub (the VM's slow paths): the chain
 * of frame pointers up to the first return into Java code or a stub;
 * where the routines keep no frame pointer, the first return into Java
 * code among the few words above SP (a leaf routine's pushes and locals
 * come before its return address), else the chain from a frame pointer
 * the leaf saved there. */
static int jl_pop_native(uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo, uintptr_t hi)
{
    if (jl_fp_chain(*fp, pc, sp, fp, lo, hi))
        return 1;
    for (int k = 0; k < JL_LEAF_WORDS; k++) {
        uintptr_t at = *sp + 8 * (uintptr_t)k;
        if (!jl_stack_ok(at, lo, hi))
            return 0;
        if (jl_java_return(*(const uintptr_t *)at))
            return jl_take(at, *fp, pc, sp, fp, lo, hi);
    }
    /* a leaf that used RBP for itself (glibc's futex_wake under a
     * monitor's exit) saved it among its first words: the chain from the
     * first word there that holds an address higher up the stack and
     * leads, link by link, to Java code or a stub */
    for (int k = 0; k < JL_LEAF_WORDS; k++) {
        uintptr_t at = *sp + 8 * (uintptr_t)k;
        if (!jl_stack_ok(at, lo, hi))
            return 0;
        uintptr_t f = *(const uintptr_t *)at;
        if (f > at && f - at < 4096 && jl_fp_chain(f, pc, sp, fp, lo, hi))
            return 1;
    }
    return 0;
}

/* The PC at which ASGCT decodes the frame that returns to ra (a return
 * into Java code): ASGCT takes the first debug record after the PC it is
 * given, and the record after a return address may describe code laid out
 * after the call that belongs to another bytecode or another (inlined)
 * method; the PC given is the one that selects the call's scope
 * (callsite.h, nmethods.c); in the interpreter, ra itself (ASGCT reads
 * the BCI from the frame there).  leaf: the callee was a stub or native
 * routine, not Java code. */
static uintptr_t jl_call_pc(uintptr_t ra, int leaf, int *drop)
{
    jl_blob b;
    *drop = 0;
    if (jl_blob_find(ra, &b) && b.kind == JL_BLOB_INTERP)
        return ra;
    return jl_nmethods_call_pc(ra, jl_after_call(ra), leaf, jl_cc_low, jl_cc_high, drop);
}

/* The first 4 bytes of code at pc, for a cause's detail. */
static uint64_t jl_code_bytes(uintptr_t pc)
{
    const unsigned char *p = (const unsigned char *)pc;
    return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
}

/* A method's entry in the interpreter, or an adapter, interrupted (uc):
 * where the return address is (DESIGN.md section 11), its caller's state
 * taken: [SP]; RAX, the caller's SP in R13; with_fp: [FP+8], the caller's
 * FP at [FP] and SP at [FP-8].  1 when one holds a return into Java code
 * or the interpreter. */
static int jl_pop_entry(uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo, uintptr_t hi,
                        const ucontext_t *uc, int with_fp)
{
    if (jl_take_entry(*sp, *fp, pc, sp, fp, lo, hi))
        return 1;
    uintptr_t rax = (uintptr_t)uc->uc_mcontext.gregs[REG_RAX];
    uintptr_t r13 = (uintptr_t)uc->uc_mcontext.gregs[REG_R13];
    if (r13 > *sp && jl_stack_ok(r13, lo, hi) && jl_entry_return(rax)) {
        *pc = rax;
        *sp = r13;
        return 1;
    }
    uintptr_t f = *fp;
    if (!with_fp || f < *sp || f - *sp > 4096 || !jl_stack_ok(f - 8, lo, hi) ||
        !jl_stack_ok(f + 8, lo, hi) || !jl_entry_return(*(const uintptr_t *)(f + 8)))
        return 0;
    uintptr_t ssp = *(const uintptr_t *)(f - 8);
    *pc = *(const uintptr_t *)(f + 8);
    *sp = ssp >= f + 16 && jl_stack_ok(ssp, lo, hi) ? ssp : f + 16;
    *fp = *(const uintptr_t *)f;
    return 1;
}

/* A pop out of a compiled method, the code at *pc not in a stub: through
 * its prologue, else (code the agent does not know yet) from [SP]. */
static int jl_pop_compiled(uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo, uintptr_t hi,
                           jl_why *why)
{
    if (jl_pop_prologue(pc, sp, fp, lo, hi))
        return 1;
    /* the PC runs (the interrupted one) or follows a call in a method
     * known: its bytes can be read */
    uint64_t bytes = jl_code_bytes(*pc);
    if (jl_nmethods_method_at(*pc)) {
        jl_why_set(why, JL_WHY_FRAME_STATE, bytes);
        return 0;
    }
    /* code the agent does not know yet, where ASGCT found no complete
     * frame either: a stub whose DynamicCodeGenerated event has not come
     * yet (Temurin 25 posts a new itable or vtable stub's later, from its
     * service thread), which sits frameless in a call into Java code: its
     * return address at [SP] when that is a return into Java code */
    jl_why_set(why, JL_WHY_CODE_UNKNOWN, bytes);
    return jl_take_entry(*sp, *fp, pc, sp, fp, lo, hi);
}

/* Where the stub b interrupted at *pc keeps its return address, the
 * caller's SP and FP (*ra, *nsp, *nfp, which holds the FP as it is on
 * entry).  1 found; 2 the pop is done already (a frameless stub's return
 * address taken among the words above SP); 0 none. */
static int jl_stub_return(const jl_blob *b, const uintptr_t *pc, uintptr_t *sp, uintptr_t *fp,
                          uintptr_t lo, uintptr_t hi, const ucontext_t *uc, uintptr_t *ra,
                          uintptr_t *nsp, uintptr_t *nfp, uintptr_t *npc)
{
    long n, len;
    int framed = jl_stub_framed(b);
    if (*pc == b->lo || *(const unsigned char *)*pc == 0xc3 /* ret */ ||
        b->kind == JL_BLOB_FRAMELESS) {
        if (!jl_stack_ok(*sp, lo, hi))
            return 0;
        *ra = *(const uintptr_t *)*sp;
        *nsp = *sp + 8;
    } else if (framed && *pc == b->lo + 1) {
        if (!jl_stack_ok(*sp, lo, hi))
            return 0;
        *nfp = *(const uintptr_t *)*sp;
        *ra = *(const uintptr_t *)(*sp + 8);
        *nsp = *sp + 16;
    } else if (framed) {
        if (!jl_stack_ok(*fp, lo, hi) || *fp < *sp)
            return 0;
        *nfp = *(const uintptr_t *)*fp;
        *ra = *(const uintptr_t *)(*fp + 8);
        *nsp = *fp + 16;
    } else if (jl_c2_stub(b, &n, &len)) {
        /* sub rsp, N; mov [rsp+N-8], rbp ... [add rsp, N-8]; pop rbp; then
         * ret, or jmp to the exception handler */
        const unsigned char *p = (const unsigned char *)*pc;
        long ra_at = n, fp_at = n - 8; /* from SP; fp_at -1: rbp as it is */
        if (p[0] == 0x5d)
            ra_at = 8, fp_at = 0;
        else if (p[-1] == 0x5d && (p[0] == 0xe9 || (p[0] == 0x41 && p[1] == 0xff)))
            ra_at = 0, fp_at = -1;
        else if (*pc - b->lo < (uintptr_t)len)
            fp_at = -1; /* the frame is made, rbp not saved yet */
        if (!jl_stack_ok(*sp + (uintptr_t)ra_at, lo, hi))
            return 0;
        if (fp_at >= 0)
            *nfp = *(const uintptr_t *)(*sp + (uintptr_t)fp_at);
        *ra = *(const uintptr_t *)(*sp + (uintptr_t)ra_at);
        *nsp = *sp + (uintptr_t)ra_at + 8;
    } else {
        /* a frameless stub that pushes a few registers first (C1's
         * slow_subtype_check: four): its return address among the first
         * words above SP, the first that is a return into Java code right
         * after a call */
        for (int k = 0; uc && k < JL_STUB_WORDS; k++)
            if (jl_take(*sp + 8 * (uintptr_t)k, *fp, npc, sp, fp, lo, hi))
                return 2;
        return 0;
    }
    return 1;
}

/* A pop out of the stub b at *pc (the interpreter's entries, adapters,
 * runtime and arraycopy stubs).  1 on success; 0 and *why says why not. */
static int jl_pop_stub(const jl_blob *b, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo,
                       uintptr_t hi, const ucontext_t *uc, int *leaf, jl_why *why)
{
    jl_why_set(why, JL_WHY_STUB_LAYOUT, *pc);
    if (b->kind == JL_BLOB_INTERP) {
        /* the interrupted PC in the interpreter, where ASGCT finds no
         * frame: a method's entry before its frame is complete.  The
         * return address is at [SP]; or, once the entry has popped it to
         * zero the locals it pushes (`pop rax`, a loop of `push 0`; it
         * goes back with the frame), in RAX, the caller's SP in R13 (the
         * sender's SP, which the calling interpreter or the c2i adapter
         * sets); or, once `push rbp; mov rbp, rsp` has begun the frame
         * while its fixed part is pushed, at [FP+8], the caller's FP at
         * [FP] and its SP at [FP-8] (the sender's SP, pushed first).  Each
         * taken when it is a return into Java code.  A return into the
         * interpreter further up is ASGCT's business */
        why->cause = JL_WHY_INTERPRETER;
        *leaf = JL_CALL_JAVA;
        return uc && jl_pop_entry(pc, sp, fp, lo, hi, uc, 1);
    }
    /* an adapter between the interpreter and compiled code (i2c, c2i),
     * interrupted: it sits in a call into Java code, the return address at
     * [SP], or in RAX with the caller's SP in R13 (the sender's SP) while
     * it moves the arguments */
    if (uc && !strncmp(b->name, "I2C/C2I adapters", 16)) {
        *leaf = JL_CALL_JAVA;
        if (jl_pop_entry(pc, sp, fp, lo, hi, uc, 0))
            return 1;
    }
    /* vtable and itable stubs sit in a call into Java code */
    *leaf = b->kind == JL_BLOB_FRAMELESS   ? JL_CALL_JAVA
            : strstr(b->name, "arraycopy") ? JL_CALL_ARRAYCOPY
                                           : JL_CALL_LEAF;
    uintptr_t ra, nsp, nfp = *fp;
    int got = jl_stub_return(b, pc, sp, fp, lo, hi, uc, &ra, &nsp, &nfp, pc);
    if (got != 1)
        return got == 2;
    /* into Java code, or into a stub that called this one (popped next) */
    why->cause = JL_WHY_STUB_RETURN;
    if (!jl_after_call(ra) || nsp <= *sp || nsp >= hi)
        return 0;
    *pc = ra;
    *sp = nsp;
    *fp = nfp;
    return 1;
}

/* One pop: the state of the caller of the code at *pc (the interrupted PC
 * when uc, its context, is given).  1 on success; 0 and *why says why
 * not. */
static int jl_pop(uintptr_t *pc, uintptr_t *sp, uintptr_t *fp, uintptr_t lo, uintptr_t hi,
                  const ucontext_t *uc, int *leaf, jl_why *why)
{
    if (!jl_in_code(*pc)) {
        *leaf = JL_CALL_NATIVE;
        jl_why_set(why, JL_WHY_NATIVE, 0);
        return jl_pop_native(pc, sp, fp, lo, hi);
    }
    jl_blob b;
    if (!jl_blob_find(*pc, &b)) {
        *leaf = JL_CALL_JAVA; /* a compiled method, called from Java code */
        return jl_pop_compiled(pc, sp, fp, lo, hi, why);
    }
    return jl_pop_stub(&b, pc, sp, fp, lo, hi, uc, leaf, why);
}
#endif

int jl_unwind_walk_interrupted(jl_asgct_trace *tr, int depth, void *ucv)
{
#if defined(__x86_64__)
    if (!atomic_load_explicit(&jl_unwind_ready, memory_order_relaxed) || !ucv)
        return 0;
    const ucontext_t *uc = ucv;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (!jl_in_code(pc))
        return 0;
    uintptr_t at = jl_nmethods_interrupted_pc(pc);
    if (at == pc)
        return 0;
    ucontext_t c = *uc; /* ASGCT reads RIP, RSP and RBP of it */
    c.uc_mcontext.gregs[REG_RIP] = (greg_t)at;
    tr->num_frames = 0;
    jl_uw_asgct(tr, depth, &c);
    return tr->num_frames > 0;
#else
    (void)tr;
    (void)depth;
    (void)ucv;
    return 0;
#endif
}

#if defined(__x86_64__)
/* Whether the thread of env is inside the VM (_thread_in_vm), where no
 * other thread walks its stack (a safepoint waits for it to leave). */
static int jl_in_vm(void *env)
{
    if (jl_off_state < 0 || jl_state_in_vm < 0)
        return 0;
    const char *jt = (const char *)env - jl_env_off;
    return *(const volatile int32_t *)(jt + jl_off_state) == jl_state_in_vm;
}
#endif

#if defined(__x86_64__)
/* A thread's frame anchor: where its last Java SP, PC and FP are, and
 * what they held when the signal came. */
typedef struct jl_anchor_at {
    volatile uintptr_t *spp, *pcp, *fpp; /* fpp NULL: no FP slot known */
    uintptr_t sp, pc, afp;
} jl_anchor_at;

/* A runtime stub at ra, which ASGCT will not walk out of: its caller's
 * return address, SP and FP (*cfp 0: as it is).  1 found, else 0. */
static int jl_stub_caller(uintptr_t ra, const jl_anchor_at *a, uintptr_t lo, uintptr_t hi,
                          uintptr_t *cra, uintptr_t *csp, uintptr_t *cfp)
{
    long n, len;
    jl_blob b;
    *cfp = 0;
    if (jl_blob_find(ra, &b) && jl_c2_stub(&b, &n, &len) &&
        jl_stack_ok(a->sp + (uintptr_t)n, lo, hi)) {
        /* a C2 runtime stub: its caller's return address at SP + N, the
         * caller's SP above that */
        *cra = *(const uintptr_t *)(a->sp + (uintptr_t)n);
        *csp = a->sp + (uintptr_t)n + 8;
        return 1;
    }
    if (jl_blob_find(ra, &b) && b.kind == JL_BLOB_STUB && jl_stub_framed(&b) && a->afp >= a->sp &&
        a->afp - a->sp < 65536 && jl_stack_ok(a->afp + 8, lo, hi)) {
        /* a C1 runtime stub (counter_overflow, new_type_array: `push rbp;
         * mov rbp, rsp`, and the anchor holds that RBP as the last Java
         * FP): the caller's return address at FP + 8 */
        *cra = *(const uintptr_t *)(a->afp + 8);
        *csp = a->afp + 16;
        *cfp = *(const uintptr_t *)a->afp;
        return 1;
    }
    return 0;
}

/* The walk from the caller (return address cra, SP csp, FP cfp) of the
 * runtime stub at ra.  1 walked, 2 the caller's frame alone, 0 none. */
static int jl_walk_stub_caller(jl_asgct_trace *tr, int depth, void *ucv, void *env, jl_why *why,
                               const jl_anchor_at *a, uintptr_t ra, uintptr_t cra, uintptr_t csp,
                               uintptr_t cfp)
{
    jl_blob b;
    int drop;
    jl_why_set(why, JL_WHY_STUB_RETURN, ra);
    if (!jl_java_return(cra))
        return 0;
    if (!jl_blob_find(cra, &b))
        jl_why_frame(why, 2, jl_call_pc(cra, JL_CALL_JAVA, &drop));
    if (!jl_in_vm(env)) {
        /* blocked (on the monitor): other threads may walk this one's
         * stack meanwhile, so the anchor stays as it is; the caller's
         * innermost scope at the call, alone */
        jint bci = -1;
        jmethodID m = depth > 0 ? jl_nmethods_scope_at(cra, &bci) : NULL;
        jl_why_set(why, JL_WHY_ANCHOR_BLOCKED, ra);
        if (!m)
            return 0;
        tr->frames[0].lineno = bci;
        tr->frames[0].method_id = m;
        tr->num_frames = 1;
        return 2;
    }
    /* inside the VM: the anchor is moved to the caller for the walk; the
     * VM reads the anchor only when it walks this thread's stack, which no
     * other thread does while this one is inside the VM */
    *a->pcp = 0; /* never a PC of one frame with the SP of another */
    atomic_signal_fence(memory_order_seq_cst);
    *a->spp = csp;
    if (cfp)
        *a->fpp = cfp;
    atomic_signal_fence(memory_order_seq_cst);
    *a->pcp = cra;
    atomic_signal_fence(memory_order_seq_cst);
    tr->num_frames = 0;
    jl_uw_asgct(tr, depth, ucv);
    atomic_signal_fence(memory_order_seq_cst);
    *a->pcp = 0;
    atomic_signal_fence(memory_order_seq_cst);
    *a->spp = a->sp;
    if (cfp)
        *a->fpp = a->afp;
    atomic_signal_fence(memory_order_seq_cst);
    *a->pcp = a->pc;
    jl_why_set(why, JL_WHY_REWALK, (uint64_t)-tr->num_frames);
    return tr->num_frames > 0;
}
#endif

int jl_unwind_walk_anchor(jl_asgct_trace *tr, int depth, void *ucv, void *env, pid_t tid,
                          jl_why *why)
{
    jl_why_set(why, JL_WHY_NOT_READY, 0);
#if defined(__x86_64__)
    if (!atomic_load_explicit(&jl_unwind_ready, memory_order_relaxed) || !jl_anchor_ready || !env ||
        !ucv)
        return 0;
    char *anchor = (char *)env - jl_env_off + jl_off_anchor;
    jl_anchor_at a = {
        .spp = (volatile uintptr_t *)(anchor + jl_off_ljsp),
        .pcp = (volatile uintptr_t *)(anchor + jl_off_ljpc),
        .fpp = jl_off_ljfp >= 0 ? (volatile uintptr_t *)(anchor + jl_off_ljfp) : NULL,
    };
    a.sp = *a.spp;
    a.pc = *a.pcp;
    a.afp = a.fpp ? *a.fpp : 0;
    uintptr_t lo, hi;
    why->cause = JL_WHY_ANCHOR_EMPTY;
    if (!a.sp)
        return 0;
    why->cause = JL_WHY_NO_STACK;
    if (!jl_stack_of(tid, &lo, &hi) || !jl_stack_ok(a.sp - 8, lo, hi))
        return 0;
    uintptr_t ra = a.pc ? a.pc : *(const uintptr_t *)(a.sp - 8);
    why->cause = JL_WHY_ANCHOR_RETURN;
    if (!jl_after_call(ra)) /* into Java code or a runtime stub */
        return 0;
    /* the thread is this one, stopped in the handler: what goes into its
     * anchor for the walk comes out again, and the VM finds it as it was */
    jl_blob b;
    int drop;
    /* the last Java frame, compiled: the deepest frame known, its call's
     * scope */
    if (jl_java_return(ra) && !jl_blob_find(ra, &b))
        jl_why_frame(why, 2, jl_call_pc(ra, JL_CALL_JAVA, &drop));
    /* in a runtime stub, which ASGCT will not walk out of: its caller */
    uintptr_t cra = 0, csp = 0, cfp = 0;
    if (jl_stub_caller(ra, &a, lo, hi, &cra, &csp, &cfp) && cra)
        return jl_walk_stub_caller(tr, depth, ucv, env, why, &a, ra, cra, csp, cfp);
    jl_why_set(why, JL_WHY_ANCHOR_WALKABLE, ra);
    if (a.pc)
        return 0; /* walkable already: ASGCT's answer stands */
    /* the PC goes in for the walk and out again, as the VM itself would
     * put it there */
    *a.pcp = ra;
    atomic_signal_fence(memory_order_seq_cst);
    tr->num_frames = 0;
    jl_uw_asgct(tr, depth, ucv);
    atomic_signal_fence(memory_order_seq_cst);
    *a.pcp = 0;
    jl_why_set(why, JL_WHY_REWALK, (uint64_t)-tr->num_frames);
    return tr->num_frames > 0;
#else
    (void)tr;
    (void)depth;
    (void)ucv;
    (void)env;
    (void)tid;
    return 0;
#endif
}

int jl_unwind_walk_native(jl_asgct_trace *tr, int depth, void *ucv, void *env, pid_t tid)
{
#if defined(__x86_64__)
    if (!atomic_load_explicit(&jl_unwind_ready, memory_order_relaxed) || !ucv)
        return 0;
    const ucontext_t *uc = ucv;
    if (jl_in_code((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]))
        return 0;
    /* a thread whose frame anchor is walkable (in a JNI method, blocked,
     * in the VM with its PC recorded) is walked by ASGCT from there,
     * whatever the context says: no walk of ours would change it */
    if (jl_anchor_ready && env) {
        const char *anchor = (const char *)env - jl_env_off + jl_off_anchor;
        if (*(const volatile uintptr_t *)(anchor + jl_off_ljsp) &&
            *(const volatile uintptr_t *)(anchor + jl_off_ljpc))
            return 0;
    }
    jl_why why; /* a walk that fails here is made by ASGCT, and counted there */
    return jl_unwind_retry(tr, depth, ucv, tid, 0, &why);
#else
    (void)tr;
    (void)depth;
    (void)ucv;
    (void)env;
    (void)tid;
    return 0;
#endif
}

int jl_unwind_retry(jl_asgct_trace *tr, int depth, void *ucv, pid_t tid, int stubs_only,
                    jl_why *why)
{
    jl_why_set(why, JL_WHY_NOT_READY, 0);
#if defined(__x86_64__)
    if (!atomic_load_explicit(&jl_unwind_ready, memory_order_relaxed) || !ucv)
        return 0;
    const ucontext_t *uc = ucv;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (stubs_only) {
        jl_blob b;
        if (!jl_in_code(pc) || !jl_blob_find(pc, &b) || b.kind == JL_BLOB_INTERP)
            return 0;
    }
    uintptr_t lo, hi;
    why->cause = JL_WHY_NO_STACK;
    if (!jl_stack_of(tid, &lo, &hi))
        return 0;
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    if (sp < lo || sp >= hi)
        return 0; /* on another stack (an alternate signal stack) */
    /* the PC in a compiled method whose frame is unfinished: that method
     * is the one running, so it is the top frame of the walk made from
     * its caller (DESIGN.md section 11.1) */
    jl_blob b;
    jmethodID running = jl_in_code(pc) && !jl_blob_find(pc, &b) ? jl_nmethods_method_at(pc) : NULL;
    if (running && !why->part) /* the deepest frame known for sure */
        *why = (jl_why){why->cause, why->detail, 3, 0, running};
    jl_asgct_frame *top = tr->frames;
    int leaf = 0, rewalk = 0; /* ASGCT's code from the last caller found */
    for (int step = 0; step < JL_UNWIND_STEPS; step++) {
        if (!jl_pop(&pc, &sp, &fp, lo, hi, step ? NULL : uc, &leaf, why)) {
            /* a caller found, ASGCT failed from it, and no frame above it
             * could be read either: that failure is the cause */
            if (rewalk)
                jl_why_set(why, JL_WHY_REWALK, (uint64_t)-rewalk);
            return 0;
        }
        if (!jl_entry_return(pc))
            continue;       /* into another stub: pop that one too */
        ucontext_t c = *uc; /* ASGCT reads RIP, RSP and RBP of it */
        int drop;
        uintptr_t at = jl_call_pc(pc, leaf, &drop);
        c.uc_mcontext.gregs[REG_RIP] = (greg_t)at;
        /* the first compiled caller found: the deepest frame known when
         * ASGCT fails from it (the code that called the stub) */
        if (!jl_blob_find(pc, &b))
            jl_why_frame(why, 3, at);
        c.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
        c.uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
        tr->num_frames = 0;
        if (running && depth > 1) {
            tr->frames = top + 1;
            jl_uw_asgct(tr, depth - 1, &c);
            tr->frames = top;
            if (tr->num_frames > 0) {
                top[0].lineno = 0; /* its entry or exit: no bytecode index */
                top[0].method_id = running;
                tr->num_frames++;
            }
        } else {
            jl_uw_asgct(tr, depth, &c);
            /* the consumer the JIT laid out after a native call, left out
             * (callsite.h) */
            if (drop && tr->num_frames > 1) {
                for (int k = 0; k + 1 < tr->num_frames; k++)
                    tr->frames[k] = tr->frames[k + 1];
                tr->num_frames--;
            }
        }
        if (tr->num_frames > 0)
            return 1;
        rewalk = tr->num_frames;
    }
    if (rewalk)
        jl_why_set(why, JL_WHY_REWALK, (uint64_t)-rewalk);
    else
        jl_why_set(why, JL_WHY_STEPS, 0);
    return 0;
#else
    (void)tr;
    (void)depth;
    (void)ucv;
    (void)tid;
    (void)stubs_only;
    return 0;
#endif
}
