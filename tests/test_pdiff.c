/* test_pdiff.c - `powerapi diff` (issue 44) on synthetic profiles, no
 * machine noise: Student's t and Welch's test against known values; A
 * against itself (two seeded draws of one distribution, 5 runs each)
 * reports nothing significant in at least 9 of 10 trials; a known shift
 * (+30 % in one function, -10 % in another) is found with its signs and
 * shares; matching across builds (a renamed executable, "[unknown]"
 * frames by module, a renamed function said); the files; --fail-above
 * both ways; bad input, one line and exit 2 each; a pprof read back. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdiff.h"
#include "profcore.h"
#include "profout.h"
#include "testutil.h"

/* a normal draw (Box-Muller) from a seeded generator of the test's own */
static unsigned long long rng;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(double mean, double sd)
{
    return mean + sd * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

typedef struct fn_spec {
    const char *name, *module;
    double self_j;
} fn_spec;

/* One profile folder: functions.csv, summary.json, energy.collapsed
 * (main -> each function), each self energy drawn with relative noise. */
static void write_run(const char *dir, const char *rel, const fn_spec *f, size_t n, double noise)
{
    char csv[8192] = "function,module,source,self_energy_j,total_energy_j,self_samples,"
                     "total_samples,cpu_time_s\n",
         col[8192] = "", row[512];
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        double j = fmax(0, normal(f[i].self_j, noise * f[i].self_j));
        total += j;
        snprintf(row, sizeof(row), "%s,%s,,%.6f,%.6f,1,1,0.1\n", f[i].name, f[i].module, j, j);
        strcat(csv, row);
        snprintf(row, sizeof(row), "main;%s %lld\n", f[i].name, llround(j * 1e6));
        strcat(col, row);
    }
    snprintf(row, sizeof(row), "main,%s,,0,%.6f,0,1,0.1\n", f[0].module, total);
    strcat(csv, row);
    char path[512];
    snprintf(path, sizeof(path), "%s/functions.csv", rel);
    pa_test_write(dir, path, "%s", csv);
    snprintf(path, sizeof(path), "%s/summary.json", rel);
    pa_test_write(dir, path, "{\"process_energy_j\": %.6f, \"complete\": true}\n", total);
    snprintf(path, sizeof(path), "%s/energy.collapsed", rel);
    pa_test_write(dir, path, "%s", col);
}

static void write_side(const char *dir, const char *name, const fn_spec *f, size_t n, int runs,
                       double noise)
{
    for (int r = 1; r <= runs; r++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "%s/run-%d", name, r);
        write_run(dir, rel, f, n, noise);
    }
}

static pc_diff *compare(const char *dir, const char *a, const char *b)
{
    char pa_[512], pb_[512], err[512];
    snprintf(pa_, sizeof(pa_), "%s/%s", dir, a);
    snprintf(pb_, sizeof(pb_), "%s/%s", dir, b);
    pc_side *sa, *sb;
    ck_assert_msg(pc_side_load(pa_, &sa, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(pc_side_load(pb_, &sb, err, sizeof(err)) == 0, "%s", err);
    pc_diff *d;
    ck_assert_int_eq(pc_diff_new(sa, sb, 5, &d, err, sizeof(err)), 0);
    pc_side_free(sa);
    pc_side_free(sb);
    return d;
}

START_TEST(student_welch)
{
    ck_assert(fabs(pc_stats_t_quantile(0.95, 4) - 2.7764) < 1e-3);
    ck_assert(fabs(pc_stats_t_quantile(0.95, 10) - 2.2281) < 1e-3);
    ck_assert(fabs(pc_stats_t_quantile(0.95, 1e6) - 1.9600) < 1e-3);
    const double a[] = {1, 2, 3, 4, 5}, b[] = {2, 3, 4, 5, 6};
    double df, ci;
    /* t = 1, df = 8: p = 0.3466 (R: t.test(a, b)) */
    double p = pc_stats_welch(a, 5, b, 5, &df, &ci);
    ck_assert_msg(fabs(p - 0.3466) < 1e-3, "p %f", p);
    ck_assert(fabs(df - 8) < 1e-9);
    ck_assert(fabs(ci - 2.306) < 1e-3);
    const double c[] = {10, 11, 12, 10.5, 11.5};
    p = pc_stats_welch(a, 5, c, 5, &df, &ci);
    ck_assert(p < 1e-4);
}
END_TEST

static const fn_spec base[] = {{"parse", "app", 3.0},
                               {"render", "app", 2.0},
                               {"idle_loop", "app", 1.0},
                               {"memcpy", "libc.so.6", 0.5}};

/* A against itself: ten seeded trials of two independent draws of the
 * same profile (5 runs each, 5 % noise): nothing significant, the total
 * nor any function, in at least 9. */
START_TEST(self_is_noise)
{
    int clean = 0;
    for (int trial = 0; trial < 10; trial++) {
        rng = 1000 + (unsigned long long)trial;
        char *dir = pa_test_tmpdir();
        write_side(dir, "a", base, 4, 5, 0.05);
        write_side(dir, "b", base, 4, 5, 0.05);
        pc_diff *d = compare(dir, "a", "b");
        int sig = pc_diff_total(d)->significant == 1;
        size_t n;
        const pc_diff_row *r = pc_diff_rows(d, &n);
        for (size_t i = 0; i < n; i++)
            sig |= r[i].self.significant == 1 || r[i].total.significant == 1;
        clean += !sig;
        pc_diff_free(d);
        pa_test_rmtree(dir);
    }
    fprintf(stderr, "self_is_noise: %d of 10 trials without a significant change\n", clean);
    ck_assert_msg(clean >= 9, "only %d of 10 trials without a significant change", clean);
}
END_TEST

/* A and B of 5 runs each (2 % noise), B doing 30 % more in parse and 10 %
 * less in render: their folder */
static char *shifted(void)
{
    char *dir = pa_test_tmpdir();
    fn_spec b[4];
    memcpy(b, base, sizeof(b));
    b[0].self_j *= 1.3;
    b[1].self_j *= 0.9;
    write_side(dir, "a", base, 4, 5, 0.02);
    write_side(dir, "b", b, 4, 5, 0.02);
    return dir;
}

/* B does 30 % more in parse, 10 % less in render: both found, signs and
 * shares of the total's change right, the others within the noise. */
START_TEST(known_shift)
{
    rng = 42;
    char *dir = shifted();
    pc_diff *d = compare(dir, "a", "b");
    const pc_diff_row *p = pc_diff_find(d, "parse"), *r = pc_diff_find(d, "render"),
                      *i = pc_diff_find(d, "idle_loop");
    ck_assert(p && r && i);
    ck_assert_int_eq(p->self.significant, 1);
    ck_assert_int_eq(r->self.significant, 1);
    ck_assert_int_eq(i->self.significant, 0);
    ck_assert_msg(fabs(p->self.pct - 30) < 5, "parse %+.1f %%", p->self.pct);
    ck_assert_msg(fabs(r->self.pct + 10) < 5, "render %+.1f %%", r->self.pct);
    /* +0.9 J and -0.2 J of a +0.7 J change */
    ck_assert_msg(fabs(p->share - 128.6) < 10, "share %.1f", p->share);
    ck_assert_int_eq(pc_diff_total(d)->significant, 1);
    size_t n;
    ck_assert_str_eq(pc_diff_rows(d, &n)[0].name, "parse"); /* largest change first */
    ck_assert(strstr(pc_diff_method(d), "Welch"));
    pc_diff_free(d);
    pa_test_rmtree(dir);
}
END_TEST

/* Two builds: the executable renamed (app-1 -> app-2), unnamed code at
 * other addresses, and one function renamed. */
START_TEST(matching)
{
    rng = 7;
    char *dir = pa_test_tmpdir();
    const fn_spec a[] = {{"parse", "app-1", 3},
                         {"[unknown] libz.so.1+0x1a2b", "libz.so.1", 1},
                         {"tokenize", "app-1", 2},
                         {"free", "libc.so.6", 0.5}};
    const fn_spec b[] = {{"parse", "app-2", 3},
                         {"[unknown] libz.so.1+0x3c4d", "libz.so.1", 1},
                         {"lex_tokens", "app-2", 2},
                         {"free", "libc.so.6", 0.5}};
    write_run(dir, "a", a, 4, 0);
    write_run(dir, "b", b, 4, 0);
    pc_diff *d = compare(dir, "a", "b");
    const pc_diff_row *p = pc_diff_find(d, "parse"), *u = pc_diff_find(d, "[unknown] libz.so.1"),
                      *t = pc_diff_find(d, "tokenize"), *l = pc_diff_find(d, "lex_tokens"),
                      *f = pc_diff_find(d, "free");
    ck_assert(p && u && t && l && f);
    ck_assert_int_eq(p->match, PC_MATCH_MODULE);
    ck_assert(strstr(p->note, "app-1") && strstr(p->note, "app-2"));
    ck_assert(fabs(p->self.change) < 1e-9);
    ck_assert_int_eq(u->match, PC_MATCH_UNSURE);
    ck_assert(strstr(u->note, "unsure"));
    ck_assert_int_eq(f->match, PC_MATCH_NAME);
    /* a rename is said on both rows, not matched */
    ck_assert_int_eq(t->match, PC_MATCH_ONLY_A);
    ck_assert_int_eq(l->match, PC_MATCH_ONLY_B);
    ck_assert_msg(strstr(t->note, "renamed to lex_tokens"), "%s", t->note);
    ck_assert(strstr(l->note, "renamed from tokenize"));
    ck_assert_int_eq(pc_diff_total(d)->significant, -1); /* single runs: no test */
    pc_diff_free(d);
    pa_test_rmtree(dir);
}
END_TEST

/* tokenize (2 J under main in A) is gone in B, where main's own energy
 * rose by as much: said to be inlined, not matched */
START_TEST(inlined)
{
    char *dir = pa_test_tmpdir();
    const fn_spec a[] = {{"tokenize", "app", 2}, {"parse", "app", 3}},
                  b[] = {{"main", "app", 2}, {"parse", "app", 3}};
    write_run(dir, "a", a, 2, 0);
    write_run(dir, "b", b, 2, 0);
    pc_diff *d = compare(dir, "a", "b");
    const pc_diff_row *t = pc_diff_find(d, "tokenize");
    ck_assert(t != NULL);
    ck_assert_int_eq(t->match, PC_MATCH_ONLY_A);
    ck_assert_msg(strstr(t->note, "inlined into main?"), "%s", t->note);
    pc_diff_free(d);
    pa_test_rmtree(dir);
}
END_TEST

static void run_cli(pa_test_cli_run *r, const char *dir, const char *a, const char *b,
                    const char *x1, const char *x2)
{
    char pa_[512], pb_[512], out[512];
    snprintf(pa_, sizeof(pa_), "%s/%s", dir, a);
    snprintf(pb_, sizeof(pb_), "%s/%s", dir, b);
    snprintf(out, sizeof(out), "%s/out", dir);
    char *args[] = {"diff", pa_, pb_, "-o", out, (char *)x1, (char *)x2, NULL};
    pa_test_cli(r, args);
}

/* The command: its files, --fail-above on a regression and on its
 * reverse, in percent and joules, and on one function. */
START_TEST(cli_files_and_fail)
{
    rng = 11;
    char *dir = shifted();
    pa_test_cli_run r;
    run_cli(&r, dir, "a", "b", "--fail-above", "10");
    ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
    ck_assert(strstr(r.err, "the total rose by") && strstr(r.err, "significant"));
    ck_assert(strstr(r.out, "parse") && strstr(r.out, "Welch"));
    pa_test_cli_free(&r);
    run_cli(&r, dir, "b", "a", "--fail-above", "10");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    pa_test_cli_free(&r);
    run_cli(&r, dir, "a", "b", "--fail-above", "0.5J");
    ck_assert_int_eq(r.status, 1);
    pa_test_cli_free(&r);
    run_cli(&r, dir, "a", "b", "--function", "render");
    ck_assert_int_eq(r.status, 0); /* no threshold given: nothing checked */
    pa_test_cli_free(&r);
    char pa_[512], pb_[512], out[512];
    snprintf(pa_, sizeof(pa_), "%s/a", dir);
    snprintf(pb_, sizeof(pb_), "%s/b", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    char *args[] = {"diff", pa_, pb_, "--function", "render", "--fail-above", "5", "-o", out, NULL};
    pa_test_cli(&r, args); /* options after A and B; render fell: passes */
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    pa_test_cli_free(&r);
    static const char *const files[] = {"diff.csv", "diff.json", "diff.md", "flamegraph.html"};
    for (size_t i = 0; i < 4; i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/out/%s", dir, files[i]);
        char *s = pa_test_slurp(path);
        ck_assert_msg(s && strstr(s, "parse"), "%s", path);
        if (i == 1)
            ck_assert(strstr(s, "\"method\": \"Welch's t-test"));
        if (i == 3)
            ck_assert(strstr(s, "\"diff\":true") && strstr(s, "\"a\":"));
        free(s);
    }
    pa_test_rmtree(dir);
}
END_TEST

/* one line on stderr, exit 2 */
static void bad(const char *dir, const char *a, const char *b, const char *words)
{
    pa_test_cli_run r;
    run_cli(&r, dir, a, b, NULL, NULL);
    ck_assert_msg(r.status == 2, "%s %s: status %d", a, b, r.status);
    ck_assert_msg(strstr(r.err, words), "%s %s: %s", a, b, r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
    pa_test_cli_free(&r);
}

START_TEST(bad_input)
{
    rng = 3;
    char *dir = pa_test_tmpdir();
    write_run(dir, "a", base, 4, 0);
    /* a jalen folder */
    pa_test_write(dir, "j/methods.csv",
                  "method,self_energy_j,total_energy_j,cpu_energy_j,net_energy_j,self_samples,"
                  "total_samples,net_bytes\nMain.work,1.0,1.0,1.0,0,10,10,0\n");
    pa_test_write(dir, "j/summary.json", "{\"process_energy_j\": 1.0}\n");
    pa_test_write(dir, "j/energy.collapsed", "Main.work 1000000\n");
    bad(dir, "a", "j", "of the same tool");
    /* a missing file */
    write_run(dir, "m", base, 4, 0);
    pa_test_remove(dir, "m/summary.json");
    bad(dir, "a", "m", "summary.json: No such file");
    /* an empty profile */
    pa_test_write(dir, "e/functions.csv",
                  "function,module,source,self_energy_j,total_energy_j,"
                  "self_samples,total_samples,cpu_time_s\n");
    pa_test_write(dir, "e/summary.json", "{\"process_energy_j\": 0}\n");
    bad(dir, "a", "e", "empty profile");
    /* a pprof of allocations: sample type alloc_space/bytes only */
    static const unsigned char pb[] = {0x0a, 4,    0x08, 1,   0x10, 2,   0x32, 0,   0x32, 11,
                                       'a',  'l',  'l',  'o', 'c',  '_', 's',  'p', 'a',  'c',
                                       'e',  0x32, 5,    'b', 'y',  't', 'e',  's'};
    char path[512];
    snprintf(path, sizeof(path), "%s/alloc.pb", dir);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(pb, 1, sizeof(pb), f) == sizeof(pb));
    fclose(f);
    bad(dir, "alloc.pb", "alloc.pb", "without an energy");
    bad(dir, "a", "nothing-here", "nothing-here: No such file");
    bad(dir, "a", "e/functions.csv", "not a pprof");
    pa_test_rmtree(dir);
}
END_TEST

static const char *const pnames[] = {"main", "hot", "cold"};
static const char *pname(const void *ctx, int f)
{
    (void)ctx;
    return pnames[f];
}

/* profile.pb.gz as profcore writes it, read back: energy per function */
START_TEST(pprof_side)
{
    char *dir = pa_test_tmpdir();
    pc_tree_node n[3] = {
        {.func = 0, .parent = -1, .first_child = 1, .next_sibling = -1, .self_j = 0.5},
        {.func = 1, .parent = 0, .first_child = -1, .next_sibling = 2, .self_j = 3},
        {.func = 2, .parent = 0, .first_child = -1, .next_sibling = -1, .self_j = 1}};
    for (int i = 0; i < 3; i++)
        n[i].self_samples = 1;
    pc_tree t = {.nodes = n, .n = 3, .nfuncs = 3, .name = pname};
    ck_assert_int_eq(pc_tree_write_pprof(&t, dir, 1000000, 1, "test"), 0);
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
    pc_side *a, *b;
    ck_assert_msg(pc_side_load(path, &a, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(pc_side_load(path, &b, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(pc_side_tool(a), "pprof");
    ck_assert_str_eq(pc_side_unit(a), "J");
    pc_diff *d;
    ck_assert_int_eq(pc_diff_new(a, b, 5, &d, err, sizeof(err)), 0);
    ck_assert(fabs(pc_diff_total(d)->a - 4.5) < 1e-6);
    const pc_diff_row *h = pc_diff_find(d, "hot"), *m = pc_diff_find(d, "main");
    ck_assert(h && m);
    ck_assert(fabs(h->self.a - 3) < 1e-6);
    ck_assert(fabs(m->total.a - 4.5) < 1e-6);
    pc_diff_free(d);
    pc_side_free(a);
    pc_side_free(b);
    pa_test_rmtree(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pdiff");
    TCase *tc = tcase_create("diff");
    tcase_add_test(tc, student_welch);
    tcase_add_test(tc, self_is_noise);
    tcase_add_test(tc, known_shift);
    tcase_add_test(tc, matching);
    tcase_add_test(tc, inlined);
    tcase_add_test(tc, cli_files_and_fail);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, pprof_side);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
