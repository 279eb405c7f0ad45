/* test_profout.c - the call tree the profile writers share (profcore/):
 * nodes that differ only in line fold into one per function for the
 * collapsed stacks and the flame graph, and pprof gets one location per
 * (function, line), the lines of inlined chains, and the samples' ids
 * leaf first (profile.pb.gz read back with zlib and protobuf-c).  And the
 * files' one mkdir -p (pc_out_mkdirs). */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "pprof.pb-c.h"
#include "profout.h"
#include "testutil.h"

/* main (func 0) at line 20 calls work (func 1), sampled at lines 5 and 6
 * (3 J and 1 J); at line 21 it calls work again, sampled at line 5
 * (2 J); helper (func 2) inlined into work at work's line 7, sampled at
 * helper's line 30 (0.5 J). */
static pc_tree_node *tree(size_t *n)
{
    static const struct {
        int func, parent, line, inlined;
        double self_j;
    } v[] = {
        {0, -1, 20, 0, 0}, {1, 0, 5, 0, 3}, {1, 0, 6, 0, 1},    {0, -1, 21, 0, 0},
        {1, 3, 5, 0, 2},   {1, 0, 7, 0, 0}, {2, 5, 30, 1, 0.5},
    };
    *n = sizeof(v) / sizeof(v[0]);
    pc_tree_node *t = calloc(*n, sizeof(*t));
    ck_assert(t != NULL);
    for (size_t i = 0; i < *n; i++) {
        t[i] = (pc_tree_node){.func = v[i].func,
                              .parent = v[i].parent,
                              .first_child = -1,
                              .next_sibling = -1,
                              .line = v[i].line,
                              .inlined = (unsigned char)v[i].inlined,
                              .self_j = v[i].self_j,
                              .self_samples = v[i].self_j > 0 ? 1 : 0};
        if (v[i].parent >= 0) {
            t[i].next_sibling = t[v[i].parent].first_child;
            t[v[i].parent].first_child = (int)i;
        }
    }
    return t;
}

static const char *const names[] = {"main", "work", "helper"};
static const char *fname(const void *ctx, int f)
{
    (void)ctx;
    return names[f];
}
static const char *ffile(const void *ctx, int f)
{
    (void)ctx;
    (void)f;
    return "w.c";
}
static int fline(const void *ctx, int f)
{
    (void)ctx;
    return f == 0 ? 19 : f == 1 ? 3 : 29; /* declarations */
}

/* pc_tree_subtree: the stacks of one root function (a scope's frame) */
START_TEST(subtree_of_one_root)
{
    size_t n, m;
    pc_tree_node *t = tree(&n), *f = NULL;
    /* a second root, helper (func 2), calling work (func 1) for 4 J */
    t = realloc(t, (n + 2) * sizeof(*t));
    ck_assert(t != NULL);
    t[n] = (pc_tree_node){.func = 2, .parent = -1, .first_child = (int)n + 1, .next_sibling = -1};
    t[n + 1] = (pc_tree_node){
        .func = 1, .parent = (int)n, .first_child = -1, .next_sibling = -1, .self_j = 4};
    ck_assert_int_eq(pc_tree_subtree(t, n + 2, 2, &f, &m), 0);
    ck_assert_uint_eq(m, 2);
    ck_assert_int_eq(f[0].func, 2);
    ck_assert_int_eq(f[0].parent, -1);
    ck_assert_int_eq(f[0].first_child, 1);
    ck_assert_int_eq(f[1].parent, 0);
    ck_assert_int_eq(f[1].next_sibling, -1);
    pc_tree_totals(f, m);
    ck_assert_double_eq_tol(f[0].total_j, 4.0, 1e-12);
    free(f);
    /* main's: its 7 nodes, 6.5 J; work is no root: nothing */
    ck_assert_int_eq(pc_tree_subtree(t, n + 2, 0, &f, &m), 0);
    ck_assert_uint_eq(m, n);
    pc_tree_totals(f, m);
    ck_assert_double_eq_tol(f[0].total_j + f[3].total_j, 6.5, 1e-12);
    free(f);
    ck_assert_int_eq(pc_tree_subtree(t, n + 2, 1, &f, &m), 0);
    ck_assert_ptr_null(f);
    ck_assert_uint_eq(m, 0);
    free(t);
}
END_TEST

START_TEST(fold_merges_lines)
{
    size_t n, m;
    pc_tree_node *t = tree(&n), *f = NULL;
    ck_assert_int_eq(pc_tree_fold_lines(t, n, &f, &m), 0);
    /* main, main>work, main>work>helper (inlined) */
    ck_assert_uint_eq(m, 3);
    ck_assert_int_eq(f[0].func, 0);
    ck_assert_int_eq(f[0].parent, -1);
    ck_assert_int_eq(f[1].func, 1);
    ck_assert_int_eq(f[1].parent, 0);
    ck_assert_int_eq(f[2].func, 2);
    ck_assert_int_eq(f[2].parent, 1);
    ck_assert_int_eq(f[2].inlined, 1);
    ck_assert_double_eq_tol(f[1].self_j, 6.0, 1e-12);
    ck_assert_uint_eq(f[1].self_samples, 3);
    for (size_t i = 0; i < m; i++)
        ck_assert_int_eq(f[i].line, 0);
    ck_assert_int_eq(f[0].first_child, 1);
    ck_assert_int_eq(f[1].first_child, 2);
    pc_tree_totals(f, m);
    ck_assert_double_eq_tol(f[0].total_j, 6.5, 1e-12);
    /* the collapsed stacks of the folded tree: one line per function path */
    char *dir = pa_test_tmpdir();
    pc_tree pt = {.nodes = f, .n = m, .nfuncs = 3, .name = fname};
    ck_assert_int_eq(pc_tree_write_collapsed(&pt, dir), 0);
    char path[4200];
    snprintf(path, sizeof(path), "%s/energy.collapsed", dir);
    char *col = pa_test_slurp(path);
    ck_assert_str_eq(col, "main;work 6000000\nmain;work;helper 500000\n");
    free(col);
    pa_test_rmtree(dir);
    free(f);
    free(t);
}
END_TEST

/* profile.pb.gz read back */
static Perftools__Profiles__Profile *read_pprof(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
    gzFile g = gzopen(path, "rb");
    ck_assert(g != NULL);
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    int r;
    while ((r = gzread(g, buf + len, (unsigned)(cap - len))) > 0)
        len += (size_t)r;
    gzclose(g);
    Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
    free(buf);
    ck_assert(p != NULL);
    return p;
}

static const Perftools__Profiles__Location *loc_of(const Perftools__Profiles__Profile *p,
                                                   uint64_t id)
{
    for (size_t i = 0; i < p->n_location; i++)
        if (p->location[i]->id == id)
            return p->location[i];
    ck_abort_msg("no location %llu", (unsigned long long)id);
    return NULL;
}

static const char *fn_name(const Perftools__Profiles__Profile *p, uint64_t fid)
{
    for (size_t i = 0; i < p->n_function; i++)
        if (p->function[i]->id == fid)
            return p->string_table[p->function[i]->name];
    return "?";
}

/* "work:5 main:20" for a sample: each location's lines, innermost first */
static void stack_of(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
                     char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n_location_id; i++) {
        const Perftools__Profiles__Location *l = loc_of(p, s->location_id[i]);
        for (size_t j = 0; j < l->n_line; j++)
            k += (size_t)snprintf(out + k, len - k, "%s%s:%lld", k ? " " : "",
                                  fn_name(p, l->line[j]->function_id), (long long)l->line[j]->line);
    }
}

START_TEST(pprof_locations_per_line)
{
    size_t n;
    pc_tree_node *t = tree(&n);
    char *dir = pa_test_tmpdir();
    pc_tree pt = {.nodes = t,
                  .n = n,
                  .nfuncs = 3,
                  .name = fname,
                  .file = ffile,
                  .line = fline,
                  .main_name = "w"};
    ck_assert_int_eq(pc_tree_write_pprof(&pt, dir, 10000000, 1.0, "test"), 0);
    Perftools__Profiles__Profile *p = read_pprof(dir);
    /* 3 function locations (declaration lines), then work:5, main:20,
     * work:6, main:21 and the chain helper:30 in work:7 */
    ck_assert_uint_eq(p->n_location, 8);
    ck_assert_uint_eq(p->n_sample, 4);
    static const char *const want[4] = {"work:5 main:20", "work:6 main:20", "work:5 main:21",
                                        "helper:30 work:7 main:20"};
    static const int64_t uj[4] = {3000000, 1000000, 2000000, 500000};
    for (size_t i = 0; i < 4; i++) {
        char got[256];
        stack_of(p, p->sample[i], got, sizeof(got));
        ck_assert_str_eq(got, want[i]);
        ck_assert_int_eq(p->sample[i]->value[2], uj[i]);
    }
    /* work:5 is one location, shared by both of its samples */
    ck_assert_uint_eq(p->sample[0]->location_id[0], p->sample[2]->location_id[0]);
    ck_assert_uint_ne(p->sample[0]->location_id[1], p->sample[2]->location_id[1]);
    /* functions keep their declaration lines */
    for (size_t i = 0; i < p->n_function; i++)
        ck_assert_int_eq(p->function[i]->start_line, fline(NULL, (int)p->function[i]->id - 1));
    perftools__profiles__profile__free_unpacked(p, NULL);
    /* nodes without lines: one location per function, as before lines */
    for (size_t i = 0; i < n; i++)
        t[i].line = 0;
    pc_tree_node *f;
    size_t m;
    ck_assert_int_eq(pc_tree_fold_lines(t, n, &f, &m), 0);
    pt.nodes = f;
    pt.n = m;
    ck_assert_int_eq(pc_tree_write_pprof(&pt, dir, 10000000, 1.0, "test"), 0);
    p = read_pprof(dir);
    ck_assert_uint_eq(p->n_location, 4); /* 3 functions, 1 chain */
    char got[256];
    stack_of(p, p->sample[0], got, sizeof(got));
    ck_assert_str_eq(got, "work:3 main:19");
    perftools__profiles__profile__free_unpacked(p, NULL);
    free(f);
    pa_test_rmtree(dir);
    free(t);
}
END_TEST

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(mkdirs_makes_every_level)
{
    char *dir = pa_test_tmpdir();
    char path[PATH_MAX], file[PATH_MAX];
    snprintf(path, sizeof(path), "%s/a/b/c", dir);
    ck_assert_int_eq(pc_out_mkdirs(path, 0755), 0);
    ck_assert(is_dir(path));
    /* again, and with a trailing slash: what exists is no error */
    ck_assert_int_eq(pc_out_mkdirs(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/a/b/", dir);
    ck_assert_int_eq(pc_out_mkdirs(path, 0755), 0);
    /* a file where a folder should be */
    snprintf(file, sizeof(file), "%s/a/f", dir);
    FILE *f = fopen(file, "w");
    ck_assert(f != NULL);
    fclose(f);
    snprintf(path, sizeof(path), "%s/a/f/g", dir);
    ck_assert_int_eq(pc_out_mkdirs(path, 0755), -ENOTDIR);
    /* longer than PATH_MAX: refused, nothing made */
    char *longp = malloc(PATH_MAX + 16);
    ck_assert(longp != NULL);
    int k = snprintf(longp, PATH_MAX + 16, "%s/", dir);
    memset(longp + k, 'x', (size_t)(PATH_MAX + 15 - k));
    longp[PATH_MAX + 15] = '\0';
    ck_assert_int_eq(pc_out_mkdirs(longp, 0755), -ENAMETOOLONG);
    free(longp);
    pa_test_rmtree(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("profout");
    TCase *tc = tcase_create("tree");
    tcase_add_test(tc, fold_merges_lines);
    tcase_add_test(tc, subtree_of_one_root);
    tcase_add_test(tc, pprof_locations_per_line);
    suite_add_tcase(s, tc);
    TCase *tf = tcase_create("files");
    tcase_add_test(tf, mkdirs_makes_every_level);
    suite_add_tcase(s, tf);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
