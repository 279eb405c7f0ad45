/*
 * rcu.c - tables that the signal handler reads while the agent thread
 * replaces them: a reader counts itself in before it loads the table's
 * pointer and out when done; the writer publishes a new table, retires the
 * old one (and whatever it alone referenced), and frees the retired
 * memory only at a moment when no reader is inside.  A reader that came in
 * after the publication sees the new table, so nothing it can hold is
 * freed.  The writer side runs under its table's own mutex.
 */
#include "jalen.h"

#include <stdlib.h>

int jl_rcu_reserve(jl_rcu *r, size_t k)
{
    if (r->n + k <= r->cap)
        return 0;
    size_t ncap = (r->n + k) * 2 + 16;
    void **nv = realloc(r->retired, ncap * sizeof(*nv));
    if (!nv)
        return -1;
    r->retired = nv;
    r->cap = ncap;
    return 0;
}

void jl_rcu_retire(jl_rcu *r, void *p)
{
    if (p)
        r->retired[r->n++] = p;
}

void jl_rcu_reclaim(jl_rcu *r)
{
    if (!r->n || atomic_load(&r->readers) != 0)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->retired[i]);
    r->n = 0;
}
