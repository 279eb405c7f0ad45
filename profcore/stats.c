/*
 * stats.c - what each function (or class) of a profile accumulated, the
 * filtered view, the window's top functions and the sorted tables.
 */
#include "profcore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pc_stat_add(pc_stat *st, const int *ids, int n, const unsigned char *charge, int outside,
                 uint64_t stamp, const pc_sample *s)
{
    if (n <= 0)
        return;
    pc_stat *top = &st[ids[0]];
    top->self_j += s->energy_j;
    top->w_self_j += s->energy_j;
    top->self_samples += s->samples;
    int charged = 0;
    for (int i = 0; i < n; i++) {
        pc_stat *f = &st[ids[i]];
        if (f->stamp != stamp) {
            f->stamp = stamp;
            f->total_j += s->energy_j;
            f->total_samples += s->samples;
            f->cpu_s += s->cpu_s;
            f->cpu_j += s->cpu_j;
            f->net_j += s->net_j;
            f->net_bytes += s->net_bytes;
        }
        /* filtered: the innermost function charged (one charged as a
         * leaf only is passed over further up) */
        if (!charge || charged || charge[ids[i]] == PC_CHARGE_NONE ||
            (charge[ids[i]] == PC_CHARGE_LEAF && i > 0))
            continue;
        f->fself_j += s->energy_j;
        f->fself_samples += s->samples;
        charged = 1;
    }
    if (charge && !charged && outside >= 0) {
        st[outside].fself_j += s->energy_j;
        st[outside].fself_samples += s->samples;
    }
}

int pc_stat_window_top(pc_stat *st, size_t n, int k, int *idx, double *j)
{
    int got = 0;
    for (; got < k; got++) {
        int best = -1;
        double bv = 0;
        for (size_t i = 0; i < n; i++)
            if (st[i].w_self_j > bv) {
                bv = st[i].w_self_j;
                best = (int)i;
            }
        if (best < 0)
            break;
        idx[got] = best;
        j[got] = bv;
        st[best].w_self_j = -bv - 1; /* taken */
    }
    for (size_t i = 0; i < n; i++)
        st[i].w_self_j = 0;
    return got;
}

typedef struct rank_item {
    double key;
    const char *name;
    int i;
} rank_item;

static int rank_cmp(const void *a, const void *b)
{
    const rank_item *x = a, *y = b;
    if (x->key < y->key)
        return 1;
    if (x->key > y->key)
        return -1;
    if (x->name && y->name)
        return strcmp(x->name, y->name);
    return x->i - y->i;
}

int *pc_rank_select(const pc_rank *r, size_t *n)
{
    int *idx = malloc((r->count ? r->count : 1) * sizeof(int));
    rank_item *v = malloc((r->count ? r->count : 1) * sizeof(*v));
    if (!idx || !v) {
        free(idx);
        free(v);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < r->count; i++)
        if (!r->keep || r->keep(r->ctx, (int)i))
            v[k++] = (rank_item){r->key(r->ctx, (int)i), r->name ? r->name(r->ctx, (int)i) : NULL,
                                 (int)i};
    qsort(v, k, sizeof(*v), rank_cmp);
    for (size_t i = 0; i < k; i++)
        idx[i] = v[i].i;
    free(v);
    *n = k;
    return idx;
}

int pc_table_open(pc_out *o, const char *dir, const char *name, const char *header,
                  const pc_rank *r, int **idx, size_t *n)
{
    *idx = NULL;
    *n = 0;
    if (r && !(*idx = pc_rank_select(r, n)))
        return -ENOMEM;
    int rc = pc_out_open(o, dir, name);
    if (rc < 0) {
        free(*idx);
        *idx = NULL;
        return rc;
    }
    fputs(header, o->f);
    return 0;
}
