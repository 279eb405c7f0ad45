/*
 * nmethods.c - where each compiled Java method keeps its debug records
 * (mode=cpu): the code range and the sorted offsets of its PcDescs, from
 * CompiledMethodLoad, so that a recovered frame is decoded at the record
 * of the call it is in, not at the one after it (callsite.h, DESIGN.md
 * section 11.1).
 *
 * Events arrive on the compiler threads and go to a pending list under a
 * mutex; the agent thread publishes them every drain (50 ms) as a new
 * sorted table (rcu.c), which the signal handler searches without a lock.
 * Until then the compiler thread publishes, at each load, a small table of
 * the methods loaded since the last drain (jl_nrecent), searched first: a
 * method's return addresses are known from the moment its code can run
 * (without it, the samples in a stub called by code compiled less than a
 * drain ago were lost, its return address unknown: 1-3 % of async-
 * profiler's StringBuilderTest on JDK 17, whose main loop is compiled once
 * more a few times in its first seconds).  A method's offsets are one
 * allocation, shared by every table that lists the method, and freed with
 * the table that drops it.
 */
#include "callsite.h"
#include "jalen.h"
#include "util.h"

#include <jvmticmlr.h>
#include <stdlib.h>
#include <string.h>

typedef struct jl_nm {
    uintptr_t lo, hi; /* the code */
    jmethodID method; /* the method compiled (the root of its inlined ones) */
    uint32_t seq;     /* order of the events: a later one wins a range */
    uint32_t npcs;
    uint32_t *pcs; /* offsets from lo, sorted, distinct; NULL: an unload;
                    * followed in the same allocation by npcs hashes of
                    * the records' scope chains, npcs of their parents'
                    * (callsite.h), npcs flags: the record's innermost
                    * bytecode is an invoke, then (8-aligned, jl_inner)
                    * npcs innermost methods and npcs of their BCIs */
} jl_nm;

/* Bytes a record takes: its offset, two hashes, a flag, a method, a BCI. */
#define JL_NM_REC (3 * sizeof(uint32_t) + 1 + sizeof(jmethodID) + sizeof(jint))

/* Where the innermost methods of n records start, from their offsets. */
static size_t jl_inner_at(size_t n)
{
    return (3 * sizeof(uint32_t) * n + n + 7) & ~(size_t)7;
}

typedef struct jl_nms {
    size_t n;
    jl_nm m[]; /* sorted by lo, no two overlapping */
} jl_nms;

static int jl_nm_on;
static jl_nms *_Atomic jl_ntab;
static jl_nms *_Atomic jl_nrecent; /* loads since the last drain, or NULL */
static jl_rcu jl_nrcu;
static pthread_mutex_t jl_nlock = PTHREAD_MUTEX_INITIALIZER;
static jl_nm *jl_npend; /* loads and unloads not yet published (jl_nlock) */
static size_t jl_nnpend, jl_cnpend;
static uint32_t jl_nseq;
static jvmtiEnv *jl_njvmti; /* for GetBytecodes, when the JVM granted it */

/* Bytecodes of the methods named by records, by jmethodID (sorted), read
 * once each on the compiler threads (jl_bclock). */
typedef struct jl_bc {
    jmethodID m;
    jint len; /* -1: unreadable */
    unsigned char *code;
} jl_bc;
static jl_bc *jl_bcs;
static size_t jl_nbcs, jl_cbcs;
static pthread_mutex_t jl_bclock = PTHREAD_MUTEX_INITIALIZER;
static size_t jl_npcs_bytes; /* offsets held by the published table */

void jl_nmethods_enable(jvmtiEnv *jvmti)
{
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof(caps));
    caps.can_get_bytecodes = 1;
    if (jvmti && (*jvmti)->AddCapabilities(jvmti, &caps) == JVMTI_ERROR_NONE)
        jl_njvmti = jvmti;
    jl_nm_on = 1;
}

/* The bytecodes of m (jl_bclock held), NULL when they cannot be read. */
static const jl_bc *jl_bytecodes(jmethodID m)
{
    size_t lo = 0, hi = jl_nbcs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)jl_bcs[mid].m < (uintptr_t)m)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < jl_nbcs && jl_bcs[lo].m == m)
        return jl_bcs[lo].len >= 0 ? &jl_bcs[lo] : NULL;
    if (PA__GROW(jl_bcs, jl_cbcs, jl_nbcs + 1, 1024) < 0)
        return NULL;
    jl_bc e = {.m = m, .len = -1};
    unsigned char *code = NULL;
    jint len = 0;
    if ((*jl_njvmti)->GetBytecodes(jl_njvmti, m, &len, &code) == JVMTI_ERROR_NONE && len > 0) {
        e.code = malloc((size_t)len);
        if (e.code) {
            memcpy(e.code, code, (size_t)len);
            e.len = len;
        }
    }
    if (code)
        (*jl_njvmti)->Deallocate(jl_njvmti, code);
    memmove(&jl_bcs[lo + 1], &jl_bcs[lo], (jl_nbcs - lo) * sizeof(*jl_bcs));
    jl_bcs[lo] = e;
    jl_nbcs++;
    return e.len >= 0 ? &jl_bcs[lo] : NULL;
}

/* Whether bytecode bci of m is an invoke (invokevirtual to
 * invokedynamic): the scope of a call. */
static int jl_is_invoke(jmethodID m, jint bci)
{
    if (!jl_njvmti || !m || bci < 0)
        return 0;
    pthread_mutex_lock(&jl_bclock);
    const jl_bc *b = jl_bytecodes(m);
    int inv = b && bci < b->len && b->code[bci] >= 0xb6 && b->code[bci] <= 0xba;
    pthread_mutex_unlock(&jl_bclock);
    return inv;
}

/* Appends e to the pending list (jl_nlock held); frees e's offsets when
 * there is no room. */
static void jl_npend_push(jl_nm e)
{
    if (PA__GROW(jl_npend, jl_cnpend, jl_nnpend + 1, 256) < 0) {
        free(e.pcs);
        return;
    }
    e.seq = jl_nseq++;
    jl_npend[jl_nnpend++] = e;
}

typedef struct jl_rec {
    uint32_t off;
    uint32_t chain, parent; /* callsite.h's jl_code */
    uint8_t inv;
    jmethodID inner; /* the innermost scope's method and bytecode index */
    jint bci;
} jl_rec;

/* The scope chain of a record, its methods from the outermost in (bytecode
 * indexes left out), as a hash; *parent: the same without the innermost.
 * Never 0 (0: not known). */
static uint32_t jl_chain_hash(const PCStackInfo *ps, uint32_t *parent)
{
    uint64_t h = 0, up = 0;
    for (jint d = ps->numstackframes - 1; d >= 0; d--) {
        up = h;
        h = pa__hash_pair(h, (uint64_t)(uintptr_t)ps->methods[d]);
    }
    *parent = (uint32_t)up ? (uint32_t)up : 1;
    return (uint32_t)h ? (uint32_t)h : 1;
}

static int jl_rec_cmp(const void *a, const void *b)
{
    const jl_rec *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The records: compile_info's inline records list every PcDesc with debug
 * information (all of them with DebugNonSafepoints), with the methods and
 * bytecode indexes of its scopes, innermost first; map, the same records
 * by their outermost BCI, serves a JVM without them.  *out: npcs offsets,
 * npcs chain hashes, npcs parent chain hashes (0 from map), npcs flag
 * bytes (callsite.h: JL_REC_INVOKE, the depth above it), then, from
 * jl_inner_at, npcs innermost methods (root from map) and npcs of their
 * BCIs, one allocation (about JL_NM_REC bytes a record). */
static size_t jl_collect_pcs(jmethodID root, uintptr_t lo, uintptr_t hi, jint map_length,
                             const jvmtiAddrLocationMap *map, const void *compile_info,
                             uint32_t **out)
{
    size_t n = 0;
    const jvmtiCompiledMethodLoadRecordHeader *h;
    for (h = compile_info; h; h = h->next)
        if (h->kind == JVMTI_CMLR_INLINE_INFO)
            n += (size_t)((const jvmtiCompiledMethodLoadInlineRecord *)h)->numpcs;
    int from_map = n == 0;
    if (from_map)
        n = map && map_length > 0 ? (size_t)map_length : 0;
    if (!n)
        return 0;
    jl_rec *r = malloc(n * sizeof(*r));
    if (!r)
        return 0;
    size_t k = 0;
    if (from_map) {
        for (size_t i = 0; i < n; i++) {
            uintptr_t pc = (uintptr_t)map[i].start_address;
            if (pc >= lo && pc < hi)
                r[k++] = (jl_rec){(uint32_t)(pc - lo), 0, 0, 0, root, (jint)map[i].location};
        }
    } else {
        for (h = compile_info; h; h = h->next) {
            if (h->kind != JVMTI_CMLR_INLINE_INFO)
                continue;
            const jvmtiCompiledMethodLoadInlineRecord *ir = (const void *)h;
            for (jint i = 0; ir->pcinfo && i < ir->numpcs; i++) {
                const PCStackInfo *ps = &ir->pcinfo[i];
                uintptr_t pc = (uintptr_t)ps->pc;
                if (pc < lo || pc > hi) /* a record may end the code */
                    continue;
                int ok = ps->numstackframes > 0 && ps->methods && ps->bcis;
                int inv = ok && jl_is_invoke(ps->methods[0], ps->bcis[0]);
                int depth = ok ? (ps->numstackframes < 127 ? ps->numstackframes : 127) : 0;
                uint32_t parent = 0, chain = ok ? jl_chain_hash(ps, &parent) : 0;
                r[k++] = (jl_rec){(uint32_t)(pc - lo),
                                  chain,
                                  parent,
                                  (uint8_t)(inv | depth << 1),
                                  ok ? ps->methods[0] : NULL,
                                  ok ? ps->bcis[0] : -1};
            }
        }
    }
    qsort(r, k, sizeof(*r), jl_rec_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++) {
        if (u && r[i].off == r[u - 1].off)
            r[u - 1].inv = (uint8_t)(r[u - 1].inv | (r[i].inv & JL_REC_INVOKE));
        else
            r[u++] = r[i];
    }
    uint32_t *pcs = u ? malloc(jl_inner_at(u) + u * (sizeof(jmethodID) + sizeof(jint))) : NULL;
    if (pcs) {
        uint8_t *inv = (uint8_t *)(pcs + 3 * u);
        jmethodID *inner = (jmethodID *)((char *)pcs + jl_inner_at(u));
        jint *bci = (jint *)(inner + u);
        for (size_t i = 0; i < u; i++) {
            pcs[i] = r[i].off;
            pcs[u + i] = r[i].chain;
            pcs[2 * u + i] = r[i].parent;
            inv[i] = r[i].inv;
            inner[i] = r[i].inner;
            bci[i] = r[i].bci;
        }
        *out = pcs;
    }
    free(r);
    return pcs ? u : 0;
}

static int jl_nm_cmp(const void *a, const void *b);

/* The loads pending (jl_nlock held) as jl_nrecent, a table of their own:
 * of those that overlap, the later one; their offsets stay the pending
 * entries' (the drain moves them to the main table).  Not beyond
 * JL_RECENT_MAX pending events (GenerateEvents' replay of every compiled
 * method at attach): each load copies and sorts them all; those wait for
 * the drain, the table withdrawn. */
#define JL_RECENT_MAX 512
static void jl_publish_recent(void)
{
    if (jl_nnpend > JL_RECENT_MAX) {
        /* the last one published may hold ranges a later load took */
        if (atomic_load(&jl_nrecent) && jl_rcu_reserve(&jl_nrcu, 1) == 0)
            jl_rcu_retire(&jl_nrcu, atomic_exchange(&jl_nrecent, NULL));
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < jl_nnpend; i++)
        n += jl_npend[i].pcs != NULL;
    jl_nms *t = NULL;
    if (!n || jl_rcu_reserve(&jl_nrcu, 1) != 0 || !(t = malloc(sizeof(*t) + n * sizeof(jl_nm))))
        return;
    size_t k = 0;
    for (size_t i = 0; i < jl_nnpend; i++)
        if (jl_npend[i].pcs)
            t->m[k++] = jl_npend[i];
    qsort(t->m, k, sizeof(jl_nm), jl_nm_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++) {
        while (u && t->m[i].lo < t->m[u - 1].hi && t->m[u - 1].seq < t->m[i].seq)
            u--;
        if (!u || t->m[i].lo >= t->m[u - 1].hi)
            t->m[u++] = t->m[i];
    }
    t->n = u;
    jl_rcu_retire(&jl_nrcu, atomic_exchange(&jl_nrecent, t));
    jl_rcu_reclaim(&jl_nrcu);
}

void jl_nmethods_load(jmethodID method, const void *code, jint size, jint map_length,
                      const jvmtiAddrLocationMap *map, const void *compile_info)
{
    if (!jl_nm_on || !code || size <= 0)
        return;
    jl_nm e = {.lo = (uintptr_t)code, .hi = (uintptr_t)code + (uintptr_t)size, .method = method};
    size_t n = jl_collect_pcs(method, e.lo, e.hi, map_length, map, compile_info, &e.pcs);
    if (!n || n > UINT32_MAX)
        return;
    e.npcs = (uint32_t)n;
    pthread_mutex_lock(&jl_nlock);
    jl_npend_push(e);
    jl_publish_recent();
    pthread_mutex_unlock(&jl_nlock);
}

void jl_nmethods_unload(const void *code)
{
    if (!jl_nm_on || !code)
        return;
    jl_nm e = {.lo = (uintptr_t)code, .hi = (uintptr_t)code + 1};
    pthread_mutex_lock(&jl_nlock);
    jl_npend_push(e);
    pthread_mutex_unlock(&jl_nlock);
}

static int jl_nm_cmp(const void *a, const void *b)
{
    const jl_nm *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorted by lo then seq: keeps, of entries that overlap, the later one;
 * an unload removes the method at its address and is then dropped.  The
 * offsets of the entries dropped are retired (freed once no handler can
 * hold them). */
static size_t jl_nm_merge(jl_nm *m, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        while (k && m[i].lo < m[k - 1].hi) {
            /* overlap: the earlier event loses its range */
            if (m[k - 1].seq > m[i].seq)
                break;
            jl_rcu_retire(&jl_nrcu, m[k - 1].pcs);
            k--;
        }
        if (k && m[i].lo < m[k - 1].hi) { /* m[i] is the older one */
            jl_rcu_retire(&jl_nrcu, m[i].pcs);
            continue;
        }
        m[k++] = m[i];
    }
    /* the unloads have done their work */
    size_t j = 0;
    for (size_t i = 0; i < k; i++)
        if (m[i].pcs)
            m[j++] = m[i];
    return j;
}

void jl_nmethods_refresh(void)
{
    if (!jl_nm_on)
        return;
    pthread_mutex_lock(&jl_nlock);
    jl_nms *old = atomic_load(&jl_ntab);
    size_t n0 = old ? old->n : 0, n = n0 + jl_nnpend;
    jl_nms *t = NULL;
    /* every entry might be dropped: room to retire them all, and the old
     * table */
    if (jl_nnpend && jl_rcu_reserve(&jl_nrcu, n + 2) == 0)
        t = malloc(sizeof(*t) + n * sizeof(jl_nm));
    if (t) {
        if (n0)
            memcpy(t->m, old->m, n0 * sizeof(jl_nm));
        memcpy(t->m + n0, jl_npend, jl_nnpend * sizeof(jl_nm));
        qsort(t->m, n, sizeof(jl_nm), jl_nm_cmp);
        /* what the merge retires is freed only after the new table is
         * published and no handler is inside */
        t->n = jl_nm_merge(t->m, n);
        size_t bytes = 0;
        for (size_t i = 0; i < t->n; i++)
            bytes += t->m[i].npcs * JL_NM_REC;
        jl_npcs_bytes = bytes;
        jl_nnpend = 0;
        atomic_store(&jl_ntab, t);
        jl_rcu_retire(&jl_nrcu, old);
        jl_rcu_retire(&jl_nrcu, atomic_exchange(&jl_nrecent, NULL));
    }
    jl_rcu_reclaim(&jl_nrcu);
    pthread_mutex_unlock(&jl_nlock);
}

/* Signal handler, inside jl_rcu_enter: the method of table t whose code
 * holds pc. */
static const jl_nm *jl_nm_in(const jl_nms *t, uintptr_t pc)
{
    if (!t || !t->n)
        return NULL;
    size_t lo = 0, hi = t->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (t->m[mid].lo <= pc)
            lo = mid;
        else
            hi = mid;
    }
    const jl_nm *m = &t->m[lo];
    return m->lo <= pc && pc < m->hi ? m : NULL;
}

/* Signal handler, inside jl_rcu_enter: the method whose code holds pc, of
 * the loads since the last drain first (the later ones). */
static const jl_nm *jl_nm_find(uintptr_t pc)
{
    const jl_nm *m = jl_nm_in(atomic_load(&jl_nrecent), pc);
    return m ? m : jl_nm_in(atomic_load(&jl_ntab), pc);
}

uintptr_t jl_nmethods_call_pc(uintptr_t ra, int call_len, int leaf, uintptr_t cc_lo,
                              uintptr_t cc_hi, int *drop)
{
    jl_code c = {.lo = cc_lo, .hi = cc_hi};
    if (!jl_nm_on)
        return jl_callsite_pc(ra, call_len, leaf, &c, drop);
    jl_rcu_enter(&jl_nrcu);
    const jl_nm *m = jl_nm_find(ra - 1);
    if (!m) {
        /* not known yet (its load event to come): decoded at ra, no byte
         * after ra read */
        jl_rcu_exit(&jl_nrcu);
        return ra - 1;
    }
    if (m)
        c = (jl_code){.lo = m->lo,
                      .hi = m->hi,
                      .pcs = m->pcs,
                      .chain = m->pcs + m->npcs,
                      .parent = m->pcs + 2 * (size_t)m->npcs,
                      .invoke = (const uint8_t *)(m->pcs + 3 * (size_t)m->npcs),
                      .npcs = m->npcs};
    uintptr_t pc = jl_callsite_pc(ra, call_len, leaf, &c, drop);
    jl_rcu_exit(&jl_nrcu);
    return pc;
}

uintptr_t jl_nmethods_interrupted_pc(uintptr_t pc)
{
    if (!jl_nm_on)
        return pc;
    jl_rcu_enter(&jl_nrcu);
    const jl_nm *m = jl_nm_find(pc);
    if (m) {
        jl_code c = {.lo = m->lo, .hi = m->hi, .pcs = m->pcs, .npcs = m->npcs};
        pc = jl_interrupted_pc(pc, &c);
    }
    jl_rcu_exit(&jl_nrcu);
    return pc;
}

jmethodID jl_nmethods_method_at(uintptr_t pc)
{
    if (!jl_nm_on)
        return NULL;
    jl_rcu_enter(&jl_nrcu);
    const jl_nm *m = jl_nm_find(pc);
    jmethodID id = m ? m->method : NULL;
    jl_rcu_exit(&jl_nrcu);
    return id;
}

jmethodID jl_nmethods_scope_at(uintptr_t ra, jint *bci)
{
    if (!jl_nm_on)
        return NULL;
    jmethodID id = NULL;
    jl_rcu_enter(&jl_nrcu);
    const jl_nm *m = jl_nm_find(ra - 1);
    if (m && ra > m->lo) {
        jl_code c = {.lo = m->lo, .hi = m->hi, .pcs = m->pcs, .npcs = m->npcs};
        size_t i = jl_first_record(&c, ra - m->lo);
        if (i < m->npcs && m->pcs[i] == ra - m->lo) {
            const jmethodID *inner =
                (const jmethodID *)((const char *)m->pcs + jl_inner_at(m->npcs));
            id = inner[i];
            *bci = ((const jint *)(inner + m->npcs))[i];
        }
    }
    jl_rcu_exit(&jl_nrcu);
    return id;
}

jmethodID jl_nmethods_scope_after(uintptr_t pc, jint *bci)
{
    if (!jl_nm_on)
        return NULL;
    jmethodID id = NULL;
    jl_rcu_enter(&jl_nrcu);
    const jl_nm *m = jl_nm_find(pc);
    if (m) {
        jl_code c = {.lo = m->lo, .hi = m->hi, .pcs = m->pcs, .npcs = m->npcs};
        size_t i = jl_first_record(&c, pc - m->lo + 1);
        const jmethodID *inner = (const jmethodID *)((const char *)m->pcs + jl_inner_at(m->npcs));
        id = i < m->npcs && inner[i] ? inner[i] : m->method;
        *bci = i < m->npcs && inner[i] ? ((const jint *)(inner + m->npcs))[i] : -1;
    }
    jl_rcu_exit(&jl_nrcu);
    return id;
}

size_t jl_nmethods_memory(void)
{
    pthread_mutex_lock(&jl_nlock);
    const jl_nms *t = atomic_load(&jl_ntab), *r = atomic_load(&jl_nrecent);
    size_t b = (t ? sizeof(*t) + t->n * sizeof(jl_nm) : 0) +
               (r ? sizeof(*r) + r->n * sizeof(jl_nm) : 0) + jl_npcs_bytes +
               jl_cnpend * sizeof(jl_nm) + jl_nrcu.cap * sizeof(void *);
    pthread_mutex_unlock(&jl_nlock);
    pthread_mutex_lock(&jl_bclock); /* the bytecodes read for the flags */
    b += jl_cbcs * sizeof(jl_bc);
    for (size_t i = 0; i < jl_nbcs; i++)
        b += jl_bcs[i].len > 0 ? (size_t)jl_bcs[i].len : 0;
    pthread_mutex_unlock(&jl_bclock);
    return b;
}
