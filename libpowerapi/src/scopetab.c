/*
 * scopetab.c - per-name aggregates of scope calls (see scopetab.h,
 * DESIGN.md section 15).
 */
#include "scopetab.h"

#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static const char other_note[] = "more distinct scope names than max_names: the calls of the names "
                                 "beyond it are counted here (raise max_names)";

static void add_double(_Atomic uint64_t *a, double v)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, pa__d2u(pa__u2d(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static double load_double(_Atomic uint64_t *a)
{
    return pa__u2d(atomic_load_explicit(a, memory_order_relaxed));
}

static uint64_t load(_Atomic uint64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Histogram                                                           */
/* ------------------------------------------------------------------ */

static unsigned hist_bucket(double j)
{
    if (!(j > 0))
        return 0;
    uint64_t b = pa__d2u(j);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    if (e < PA__HIST_EMIN)
        return 0;
    if (e >= PA__HIST_EMAX)
        return PA__HIST_N - 1;
    return 1 + (unsigned)(e - PA__HIST_EMIN) * PA__HIST_SUB +
           (unsigned)((b >> 49) & (PA__HIST_SUB - 1));
}

/* The middle of bucket i: within 1 / (2 PA__HIST_SUB) of any value in it. */
static double hist_value(unsigned i)
{
    if (i == 0)
        return 0;
    if (i >= PA__HIST_N - 1)
        return ldexp(1, PA__HIST_EMAX);
    int e = PA__HIST_EMIN + (int)((i - 1) / PA__HIST_SUB);
    double sub = (double)((i - 1) % PA__HIST_SUB);
    return ldexp(1 + (sub + 0.5) / PA__HIST_SUB, e);
}

/* Quantiles q[0..n-1] (ascending) of a histogram: the value of the bucket
 * holding the call of rank ceil(q x total). */
static void hist_quantiles(_Atomic uint64_t *h, const double *q, double *out, size_t n)
{
    uint64_t c[PA__HIST_N], total = 0;
    for (unsigned i = 0; i < PA__HIST_N; i++)
        total += c[i] = load(&h[i]);
    uint64_t run = 0;
    unsigned i = 0;
    for (size_t k = 0; k < n; k++) {
        if (!total) {
            out[k] = 0;
            continue;
        }
        uint64_t rank = (uint64_t)ceil(q[k] * (double)total);
        if (rank < 1)
            rank = 1;
        while (i < PA__HIST_N - 1 && run + c[i] < rank)
            run += c[i++];
        out[k] = hist_value(i);
    }
}

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

void pa__scope_table_init(pa__scope_table *t, size_t max_names)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    t->max_names = max_names;
}

void pa__scope_table_destroy(pa__scope_table *t)
{
    size_t n = atomic_load(&t->nnames);
    for (size_t i = 0; i < n; i++)
        free(t->order[i]);
    free(t->order);
    free(t->other);
    free((void *)atomic_load(&t->slots));
    pthread_mutex_destroy(&t->lock);
}

static pa__scope_name *name_new(const char *name, size_t len, uint64_t hash)
{
    pa__scope_name *e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->hash = hash;
    return e;
}

/* Allocates the table at the first insert (under t->lock). */
static int table_alloc(pa__scope_table *t)
{
    size_t cap = 16;
    while (cap < 2 * t->max_names)
        cap *= 2;
    _Atomic(pa__scope_name *) *slots = calloc(cap, sizeof(*slots));
    pa__scope_name **order = calloc(t->max_names ? t->max_names : 1, sizeof(*order));
    pa__scope_name *other = name_new(PA_SCOPE_OTHER, strlen(PA_SCOPE_OTHER), 0);
    if (!slots || !order || !other) {
        free((void *)slots);
        free(order);
        free(other);
        return pa__err(-ENOMEM, "scope: out of memory for the name table");
    }
    t->cap = cap;
    t->order = order;
    t->other = other;
    atomic_store_explicit(&t->slots, slots, memory_order_release);
    return 0;
}

pa__scope_name *pa__scope_table_find(pa__scope_table *t, uint64_t hash, const char *name)
{
    _Atomic(pa__scope_name *) *slots = atomic_load_explicit(&t->slots, memory_order_acquire);
    if (!slots)
        return NULL;
    size_t mask = t->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        pa__scope_name *e = atomic_load_explicit(&slots[i], memory_order_acquire);
        if (!e)
            return NULL;
        if (e->hash == hash && !strcmp(e->name, name))
            return e;
    }
}

/* A name's first use (under t->lock): adds it, or folds it. */
static int insert(pa__scope_table *t, uint64_t hash, const char *name, size_t len,
                  pa__scope_name **out, bool *folded)
{
    int rc = 0;
    if (!atomic_load_explicit(&t->slots, memory_order_relaxed) && (rc = table_alloc(t)) < 0)
        return rc;
    pa__scope_name *e = pa__scope_table_find(t, hash, name); /* another thread's insert */
    *folded = false;
    size_t n = atomic_load_explicit(&t->nnames, memory_order_relaxed);
    if (!e && n >= t->max_names) {
        atomic_store_explicit(&t->full, true, memory_order_relaxed);
        e = t->other;
        *folded = true;
    } else if (!e) {
        e = name_new(name, len, hash);
        if (!e)
            return pa__err(-ENOMEM, "scope '%s': out of memory", name);
        t->order[n] = e;
        atomic_store_explicit(&t->nnames, n + 1, memory_order_release);
        size_t mask = t->cap - 1, i = hash & mask;
        while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
            i = (i + 1) & mask;
        atomic_store_explicit(&t->slots[i], e, memory_order_release);
    }
    *out = e;
    return 0;
}

int pa__scope_table_get(pa__scope_table *t, const char *name, size_t len, uint64_t hash,
                        pa__scope_name **out, bool *folded)
{
    pa__scope_name *e = pa__scope_table_find(t, hash, name);
    *folded = false;
    if (e) {
        *out = e;
        return 0;
    }
    if (atomic_load_explicit(&t->full, memory_order_relaxed)) {
        *out = t->other;
        *folded = true;
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    int rc = insert(t, hash, name, len, out, folded);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

pa__scope_name **pa__scope_table_names(pa__scope_table *t, size_t *n, bool *other)
{
    *n = 0;
    *other = false;
    if (!atomic_load_explicit(&t->slots, memory_order_acquire))
        return NULL;
    *n = atomic_load_explicit(&t->nnames, memory_order_acquire);
    *other = load(&t->other->calls) || atomic_load_explicit(&t->full, memory_order_relaxed);
    return t->order;
}

/* ------------------------------------------------------------------ */
/* Records and aggregates                                              */
/* ------------------------------------------------------------------ */

void pa__scope_record(pa__scope_name *e, const pa__scope_call *c)
{
    bool part = c->flags & PA__SCOPE_PART, recursive = c->flags & PA_SCOPE_RECURSIVE;
    if (!part)
        atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->self_ns, c->self_ns, memory_order_relaxed);
    if (c->self_net_bytes)
        atomic_fetch_add_explicit(&e->self_net_bytes, c->self_net_bytes, memory_order_relaxed);
    if (!recursive) {
        atomic_fetch_add_explicit(&e->cpu_ns, c->cpu_ns, memory_order_relaxed);
        if (c->net_bytes)
            atomic_fetch_add_explicit(&e->net_bytes, c->net_bytes, memory_order_relaxed);
    }
    if (c->flags & PA_SCOPE_NO_WINDOW)
        return;
    if (!part)
        atomic_fetch_add_explicit(&e->rated, 1, memory_order_relaxed);
    if ((c->flags & PA_POWER_MEASURED) && !part)
        atomic_fetch_add_explicit(&e->measured, 1, memory_order_relaxed);
    add_double(recursive ? &e->nested_bits : &e->energy_bits, c->energy_j);
    add_double(&e->self_bits, c->self_energy_j);
    if (c->net_j > 0 && !recursive)
        add_double(&e->net_bits, c->net_j);
    if (c->self_net_j > 0)
        add_double(&e->self_net_bits, c->self_net_j);
    if (part)
        return;
    atomic_fetch_add_explicit(&e->hist[hist_bucket(c->energy_j)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->self_hist[hist_bucket(c->self_energy_j)], 1,
                              memory_order_relaxed);
}

void pa__scope_fill(pa__scope_name *e, bool other, pa_scope_stats *out, pa__scope_net *net)
{
    static const double q[3] = {0.50, 0.95, 0.99};
    double v[3];
    pa_scope_stats s = {0};
    s.name = e->name;
    s.calls = load(&e->calls);
    s.rated_calls = load(&e->rated);
    s.measured_calls = load(&e->measured);
    s.cpu_time_s = (double)load(&e->cpu_ns) * 1e-9;
    s.self_cpu_time_s = (double)load(&e->self_ns) * 1e-9;
    s.energy_j = load_double(&e->energy_bits);
    s.self_energy_j = load_double(&e->self_bits);
    if (s.rated_calls) {
        s.mean_j = (s.energy_j + load_double(&e->nested_bits)) / (double)s.rated_calls;
        s.self_mean_j = s.self_energy_j / (double)s.rated_calls;
    }
    hist_quantiles(e->hist, q, v, 3);
    s.p50_j = v[0], s.p95_j = v[1], s.p99_j = v[2];
    hist_quantiles(e->self_hist, q, v, 3);
    s.self_p50_j = v[0], s.self_p95_j = v[1], s.self_p99_j = v[2];
    if (s.rated_calls && s.measured_calls == s.rated_calls)
        s.flags |= PA_POWER_MEASURED;
    if (other) {
        s.flags |= PA_SCOPE_FOLDED;
        s.note = other_note;
    }
    *out = s;
    if (net)
        *net = (pa__scope_net){.net_j = load_double(&e->net_bits),
                               .self_net_j = load_double(&e->self_net_bits),
                               .net_bytes = load(&e->net_bytes),
                               .self_net_bytes = load(&e->self_net_bytes)};
}
