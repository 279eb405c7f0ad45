/*
 * scopetab.h - per-name aggregates of scope calls (DESIGN.md section 15):
 * the bounded name table, the counters and the log-bucketed histograms of
 * the energy per call.  Shared by the library's scopes (scope.c) and the
 * jalen agent's (jalen-agent/src/scope.c), which price their calls
 * differently but aggregate them the same way.  Internal, not installed.
 *
 * Lookups read the table without a lock (slots are published with release
 * stores and never removed); a name's first use takes the table's mutex.
 * Recording a call touches only relaxed atomics of its name.
 */
#ifndef PA_SCOPETAB_H
#define PA_SCOPETAB_H

#include "powerapi.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Histogram of energy per call: bucket 0 holds 0 and everything below
 * 2^PA__HIST_EMIN J, then PA__HIST_SUB linear buckets per power of two up
 * to 2^PA__HIST_EMAX J, and one bucket above. */
#define PA__HIST_EMIN (-40) /* 9.1e-13 J */
#define PA__HIST_EMAX 24    /* 1.7e7 J */
#define PA__HIST_SUB 8
#define PA__HIST_N (2 + (PA__HIST_EMAX - PA__HIST_EMIN) * PA__HIST_SUB)
#define PA__SCOPE_NAMES_LIMIT 65536

/* pa__scope_call.flags beyond PA_POWER_MEASURED, PA_SCOPE_NO_WINDOW and
 * PA_SCOPE_RECURSIVE: a part of a call (work continued on another thread
 * after the call was counted), added to the sums but not to calls nor to
 * the per-call histograms */
#define PA__SCOPE_PART (1u << 20)

/* One call as recorded: inclusive and self figures (self: less the scopes
 * nested in it).  energy_j includes net_j. */
typedef struct pa__scope_call {
    uint64_t cpu_ns, self_ns;
    double energy_j, self_energy_j;
    double net_j, self_net_j;
    uint64_t net_bytes, self_net_bytes;
    unsigned flags;
} pa__scope_call;

typedef struct pa__scope_name {
    /* the counters every record touches, together */
    _Atomic uint64_t calls, rated, measured;
    _Atomic uint64_t cpu_ns, self_ns, net_bytes, self_net_bytes;
    _Atomic uint64_t energy_bits, self_bits, nested_bits; /* doubles */
    _Atomic uint64_t net_bits, self_net_bits;
    _Atomic uint64_t hist[PA__HIST_N], self_hist[PA__HIST_N];
    uint64_t hash;
    char name[]; /* NUL-terminated */
} pa__scope_name;

typedef struct pa__scope_table {
    pthread_mutex_t lock; /* inserts and max_names */
    size_t max_names;     /* set before the first insert */
    size_t cap;           /* slots, a power of two >= 2 max_names */
    _Atomic(pa__scope_name *) *_Atomic slots;
    pa__scope_name **order; /* first-use order, max_names entries */
    _Atomic size_t nnames;
    _Atomic bool full;
    pa__scope_name *other; /* PA_SCOPE_OTHER */
} pa__scope_table;

/* The net figures of a name, beside pa_scope_stats. */
typedef struct pa__scope_net {
    double net_j, self_net_j;
    uint64_t net_bytes, self_net_bytes;
} pa__scope_net;

/* Doubles kept as atomic bits. */
static inline uint64_t pa__d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static inline double pa__u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

void pa__scope_table_init(pa__scope_table *t, size_t max_names);
void pa__scope_table_destroy(pa__scope_table *t);
/* A name's entry, or NULL; lock-free. */
pa__scope_name *pa__scope_table_find(pa__scope_table *t, uint64_t hash, const char *name);
/* A name's entry, adding it at its first use, or the table's
 * PA_SCOPE_OTHER entry when max_names names are there (*folded then
 * says so).  0 or -ENOMEM (with pa_last_error set). */
int pa__scope_table_get(pa__scope_table *t, const char *name, size_t len, uint64_t hash,
                        pa__scope_name **out, bool *folded);
/* Names in first-use order (stable pointers), and whether the other entry
 * is in use; NULL when no name was added yet. */
pa__scope_name **pa__scope_table_names(pa__scope_table *t, size_t *n, bool *other);
/* Adds one call to a name's aggregates.  Thread-safe. */
void pa__scope_record(pa__scope_name *e, const pa__scope_call *c);
/* A name's aggregates (net may be NULL); other: it is PA_SCOPE_OTHER.
 * out->name points into e. */
void pa__scope_fill(pa__scope_name *e, bool other, pa_scope_stats *out, pa__scope_net *net);

#endif /* PA_SCOPETAB_H */
