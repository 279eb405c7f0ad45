/*
 * pdiff.c - two profiles compared: functions matched by name (and
 * module; a module renamed between builds, "[unknown] MOD+0x..." frames by
 * module only, and renames said, not matched), each change with Welch's
 * t-test where both sides have repeats (Holm-adjusted across functions),
 * and the union of both call trees for the differential flame graph.
 */
#include "pdiff_int.h"
#include "profcore.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* One value of a function on one side, per run (zeros when absent). */
static void values(const pc_side *s, int fn, int total, double *out)
{
    for (size_t r = 0; r < s->runs; r++)
        out[r] = fn < 0 ? 0 : total ? s->fns[fn].total[r] : s->fns[fn].self[r];
}

static void change_of(const double *a, size_t na, const double *b, size_t nb, pc_change *c)
{
    memset(c, 0, sizeof(*c));
    pc_stats_mean_sd(a, na, &c->a, &c->a_sd);
    pc_stats_mean_sd(b, nb, &c->b, &c->b_sd);
    c->change = c->b - c->a;
    c->pct = c->a > 0 ? 100 * c->change / c->a : 0;
    c->p = -1;
    c->significant = -1;
    if (na >= 2 && nb >= 2) {
        double df;
        c->p = pc_stats_welch(a, na, b, nb, &df, &c->ci95);
        c->significant = c->p < 0.05;
    }
}

/* Holm's step-down adjustment of the rows' p-values (self, then total):
 * at most 5 % chance of one false "significant" among all the functions. */
static int cmp_p(const void *x, const void *y)
{
    double a = (*(pc_change *const *)x)->p, b = (*(pc_change *const *)y)->p;
    return a < b ? -1 : a > b;
}

static int holm(pc_diff_row *rows, size_t n, int total, double min_j)
{
    pc_change **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        pc_change *c = total ? &rows[i].total : &rows[i].self;
        if (c->p >= 0 && fmax(c->a, c->b) >= min_j)
            v[m++] = c;
        else if (c->p >= 0)
            c->significant = 0; /* too small to be more than noise */
    }
    qsort(v, m, sizeof(*v), cmp_p);
    double run = 0;
    for (size_t i = 0; i < m; i++) {
        double adj = fmin(1, (double)(m - i) * v[i]->p);
        run = fmax(run, adj);
        v[i]->p = run;
        v[i]->significant = run < 0.05;
    }
    free(v);
    return 0;
}

static int add_row(pc_diff *d, size_t *cap, const pc_side *a, int fa, const pc_side *b, int fb,
                   int match)
{
    if (PA__GROW(d->rows, *cap, d->nrows + 1, 256) < 0)
        return -ENOMEM;
    pc_diff_row *r = &d->rows[d->nrows++];
    memset(r, 0, sizeof(*r));
    const pside_fn *f = fb >= 0 ? &b->fns[fb] : &a->fns[fa];
    r->name = f->name;
    r->module = f->module;
    r->a_module = fa >= 0 ? a->fns[fa].module : NULL;
    r->match = match == PC_MATCH_NAME && f->unsure ? PC_MATCH_UNSURE : match;
    double va[a->runs], vb[b->runs];
    for (int t = 0; t < 2; t++) {
        values(a, fa, t, va);
        values(b, fb, t, vb);
        change_of(va, a->runs, vb, b->runs, t ? &r->total : &r->self);
    }
    if (r->match == PC_MATCH_UNSURE)
        snprintf(r->note, sizeof(r->note), "unsure: unnamed code of %s, matched by module only",
                 r->module);
    if (match == PC_MATCH_MODULE)
        snprintf(r->note, sizeof(r->note), "module %s in A, %s in B", a->fns[fa].module, r->module);
    return 0;
}

/* B's functions not matched yet, by name (interned pointer) only. */
typedef struct name_map {
    int *slot;
    size_t cap;
} name_map;

static int name_map_build(name_map *m, const pc_side *b, const unsigned char *used)
{
    m->cap = 16;
    while (m->cap < 2 * b->nfns + 2)
        m->cap *= 2;
    m->slot = calloc(m->cap, sizeof(int));
    if (!m->slot)
        return -ENOMEM;
    for (size_t i = 0; i < b->nfns; i++) {
        if (used[i])
            continue;
        size_t q = pa__hash_u64((uintptr_t)b->fns[i].name) & (m->cap - 1);
        while (m->slot[q])
            q = (q + 1) & (m->cap - 1);
        m->slot[q] = (int)i + 1;
    }
    return 0;
}

static int name_map_take(name_map *m, const pc_side *b, unsigned char *used, const char *name)
{
    for (size_t q = pa__hash_u64((uintptr_t)name) & (m->cap - 1); m->slot[q];
         q = (q + 1) & (m->cap - 1)) {
        int i = m->slot[q] - 1;
        if (!used[i] && b->fns[i].name == name) {
            used[i] = 1;
            return i;
        }
    }
    return -1;
}

static int match_all(pc_diff *d, const pc_side *a, const pc_side *b)
{
    unsigned char *used = calloc(b->nfns + 1, 1), *done = calloc(a->nfns + 1, 1);
    size_t cap = 0;
    int rc = used && done ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < a->nfns; i++) {
        int j = pc__side_find(b, a->fns[i].name, a->fns[i].module);
        if (j >= 0 && !used[j]) {
            used[j] = done[i] = 1;
            rc = add_row(d, &cap, a, (int)i, b, j, PC_MATCH_NAME);
        }
    }
    name_map m = {0};
    if (rc == 0)
        rc = name_map_build(&m, b, used);
    for (size_t i = 0; rc == 0 && i < a->nfns; i++) {
        if (done[i])
            continue;
        int j = name_map_take(&m, b, used, a->fns[i].name);
        rc = add_row(d, &cap, a, (int)i, b, j, j >= 0 ? PC_MATCH_MODULE : PC_MATCH_ONLY_A);
    }
    for (size_t j = 0; rc == 0 && j < b->nfns; j++)
        if (!used[j])
            rc = add_row(d, &cap, a, -1, b, (int)j, PC_MATCH_ONLY_B);
    free(m.slot);
    free(used);
    free(done);
    return rc;
}

/* Whether module ma of A became mb in B: the same, or a function matched
 * by name across them (an executable built under another name). */
static int same_module(const pc_diff *d, const char *ma, const char *mb)
{
    if (ma == mb)
        return 1;
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i].match == PC_MATCH_MODULE && d->rows[i].a_module == ma &&
            d->rows[i].module == mb)
            return 1;
    return 0;
}

/* A function gone from A and one new in B, in the same module, each with
 * 1 % of the energy (min_j) and self energies within a factor of 2: perhaps one renamed; said on
 * both, not matched (the numbers stay each on its own row). */
static void renames(pc_diff *d, double min_j)
{
    for (size_t i = 0; i < d->nrows; i++) {
        pc_diff_row *r = &d->rows[i];
        if (r->match != PC_MATCH_ONLY_A || r->self.a < min_j || r->self.a <= 0)
            continue;
        pc_diff_row *best = NULL;
        double bestq = 2;
        for (size_t j = 0; j < d->nrows; j++) {
            pc_diff_row *q = &d->rows[j];
            if (q->match != PC_MATCH_ONLY_B || q->note[0] || q->self.b < min_j || q->self.b <= 0 ||
                !same_module(d, r->module, q->module))
                continue;
            double ratio = fmax(q->self.b / r->self.a, r->self.a / q->self.b);
            if (ratio < bestq) {
                bestq = ratio;
                best = q;
            }
        }
        if (!best)
            continue;
        snprintf(r->note, sizeof(r->note), "renamed to %.60s? (not matched)", best->name);
        snprintf(best->note, sizeof(best->note), "renamed from %.60s? (not matched)", r->name);
    }
}

/* A function gone from B (1 % of the energy at least, no rename said)
 * whose caller in A's tree (the one through which most of its energy
 * came) gained self energy of at least half of it in B: perhaps inlined
 * into that caller; said, not matched. */
static void inlines(pc_diff *d, double min_j)
{
    for (size_t i = 0; i < d->nrows; i++) {
        pc_diff_row *r = &d->rows[i];
        if (r->match != PC_MATCH_ONLY_A || r->note[0] || r->self.a < min_j)
            continue;
        const char *caller = NULL;
        double best = 0;
        for (size_t k = 0; k < d->nnodes; k++) {
            const pdiff_node *n = &d->nodes[k];
            if (n->name == r->name && n->parent >= 0 && n->a_total > best) {
                best = n->a_total;
                caller = d->nodes[n->parent].name;
            }
        }
        const pc_diff_row *c = caller ? pc_diff_find(d, caller) : NULL;
        if (c && c->match != PC_MATCH_ONLY_A && c->self.change >= 0.5 * r->self.a)
            snprintf(r->note, sizeof(r->note),
                     "inlined into %.60s? (its self energy rose by "
                     "%.3f; not matched)",
                     caller, c->self.change);
    }
}

static int cmp_rows(const void *x, const void *y)
{
    const pc_diff_row *a = x, *b = y;
    double ka = fabs(a->self.change), kb = fabs(b->self.change);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    ka = fabs(a->total.change);
    kb = fabs(b->total.change);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* ---- the union of both trees ---- */

typedef struct tree_build {
    pc_diff *d;
    size_t cap, hcap;
    int *hash;
} tree_build;

static uint64_t node_key(int parent, const char *name)
{
    return pa__hash_pair((uint64_t)(uint32_t)parent, (uintptr_t)name);
}

static uint64_t node_key_at(const void *user, size_t i)
{
    const pdiff_node *n = &((const tree_build *)user)->d->nodes[i];
    return node_key(n->parent, n->name);
}

static int tree_child(tree_build *t, int parent, const char *name)
{
    pc_diff *d = t->d;
    if (pa__index_reserve(&t->hash, &t->hcap, 4096, 0, d->nnodes, node_key_at, t) < 0)
        return -ENOMEM;
    size_t q = node_key(parent, name) & (t->hcap - 1);
    for (; t->hash[q]; q = (q + 1) & (t->hcap - 1)) {
        const pdiff_node *n = &d->nodes[t->hash[q] - 1];
        if (n->parent == parent && n->name == name)
            return t->hash[q] - 1;
    }
    if (PA__GROW(d->nodes, t->cap, d->nnodes + 1, 1024) < 0)
        return -ENOMEM;
    int i = (int)d->nnodes++;
    d->nodes[i] = (pdiff_node){.name = name,
                               .parent = parent,
                               .first_child = -1,
                               .next_sibling = parent >= 0 ? d->nodes[parent].first_child : -1};
    if (parent >= 0)
        d->nodes[parent].first_child = i;
    t->hash[q] = i + 1;
    return i;
}

/* each node of side s (parents first) into the union tree */
static int tree_add(tree_build *t, const pc_side *s, int side)
{
    int *map = malloc((s->nnodes ? s->nnodes : 1) * sizeof(int));
    if (!map)
        return -ENOMEM;
    for (size_t i = 0; i < s->nnodes; i++) {
        const pside_node *n = &s->nodes[i];
        int node = tree_child(t, n->parent >= 0 ? map[n->parent] : -1, n->name);
        if (node < 0) {
            free(map);
            return node;
        }
        map[i] = node;
        if (side)
            t->d->nodes[node].b_self += n->self;
        else
            t->d->nodes[node].a_self += n->self;
    }
    free(map);
    return 0;
}

static int build_tree(pc_diff *d, const pc_side *a, const pc_side *b)
{
    tree_build t = {.d = d};
    int rc = tree_add(&t, a, 0);
    if (rc == 0)
        rc = tree_add(&t, b, 1);
    free(t.hash);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < d->nnodes; i++) {
        d->nodes[i].a_total += d->nodes[i].a_self;
        d->nodes[i].b_total += d->nodes[i].b_self;
    }
    /* children come after their parents */
    for (size_t i = d->nnodes; i-- > 0;) {
        int p = d->nodes[i].parent;
        if (p >= 0) {
            d->nodes[p].a_total += d->nodes[i].a_total;
            d->nodes[p].b_total += d->nodes[i].b_total;
        }
    }
    return 0;
}

/* ---- the comparison ---- */

static void describe(pc_diff *d, double min_pct)
{
    if (d->runs_a >= 2 && d->runs_b >= 2)
        snprintf(d->method, sizeof(d->method),
                 "Welch's t-test, two-sided, 95 %%, %zu + %zu runs (functions: Holm-adjusted "
                 "over those with 1 %% of the energy; smaller ones, and changes under %g %%, taken "
                 "as noise)",
                 d->runs_a, d->runs_b, min_pct);
    else
        snprintf(d->method, sizeof(d->method),
                 "no test: %zu + %zu runs (repeat both with powerapi profile --repeat N for "
                 "one)",
                 d->runs_a, d->runs_b);
}

/* changes under min_pct of A's energy: noise, however sure the test */
static void negligible(pc_diff *d, double min_pct)
{
    for (size_t i = 0; i < d->nrows; i++) {
        pc_change *c[2] = {&d->rows[i].self, &d->rows[i].total};
        for (int k = 0; k < 2; k++)
            if (c[k]->significant == 1 && c[k]->a > 0 && fabs(c[k]->pct) < min_pct)
                c[k]->significant = 0;
    }
}

int pc_diff_new(const pc_side *a, const pc_side *b, double min_pct, pc_diff **out, char *err,
                size_t errlen)
{
    if (strcmp(a->unit, b->unit)) {
        snprintf(err, errlen,
                 "A is in %s and B in %s (an energy and a CPU profile): nothing to "
                 "compare",
                 a->unit, b->unit);
        return -EINVAL;
    }
    pc_diff *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->unit = a->unit;
    snprintf(d->tool, sizeof(d->tool), "%s", a->tool);
    d->runs_a = a->runs;
    d->runs_b = b->runs;
    describe(d, min_pct);
    change_of(a->total, a->runs, b->total, b->runs, &d->total);
    int rc = match_all(d, a, b);
    /* the family of tests: the functions with 1 % of the energy */
    double min_j = 0.01 * fmax(d->total.a, d->total.b);
    if (rc == 0)
        rc = holm(d->rows, d->nrows, 0, min_j);
    if (rc == 0)
        rc = holm(d->rows, d->nrows, 1, min_j);
    if (rc == 0)
        rc = build_tree(d, a, b);
    if (rc < 0) {
        pc_diff_free(d);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    for (size_t i = 0; i < d->nrows; i++)
        d->rows[i].share =
            d->total.change != 0 ? 100 * d->rows[i].self.change / d->total.change : 0;
    negligible(d, min_pct);
    renames(d, min_j);
    inlines(d, min_j);
    if (d->nrows)
        qsort(d->rows, d->nrows, sizeof(*d->rows), cmp_rows);
    *out = d;
    return 0;
}

void pc_diff_free(pc_diff *d)
{
    if (!d)
        return;
    free(d->rows);
    free(d->nodes);
    free(d);
}

const pc_change *pc_diff_total(const pc_diff *d)
{
    return &d->total;
}

const pc_diff_row *pc_diff_rows(const pc_diff *d, size_t *n)
{
    *n = d->nrows;
    return d->rows;
}

const char *pc_diff_method(const pc_diff *d)
{
    return d->method;
}

const pc_diff_row *pc_diff_find(const pc_diff *d, const char *name)
{
    for (size_t i = 0; i < d->nrows; i++)
        if (!strcmp(d->rows[i].name, name))
            return &d->rows[i];
    return NULL;
}
