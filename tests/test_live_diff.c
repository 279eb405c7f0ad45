/* test_live_diff.c - `powerapi profile --repeat 5` and `powerapi diff` on
 * a real workload (issue 44): a C program in two versions, the second
 * doing 50 % more work in grow_work() and 20 % less in shrink_work(),
 * built with a different code layout (aligned otherwise, a
 * function between them) under another name.  diff names both with the
 * right signs and changes within 5 points (against the unchanged
 * function's: see relative()), marks the unchanged function
 * not significant, and --fail-above 10 fails one way and passes the
 * other; the differential page in headless Chromium: its legend, a loss
 * and a gain coloured as the legend says, the search's summed change.
 * About 10 s. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* each function does its own work (self energy), its loop inlined */
static const char workload[] =
    "#include <stdint.h>\n"
    "static volatile uint64_t sink;\n"
    "#define SPIN(n) do { uint64_t x = 1; for (long i = 0; i < (n); i++) \\\n"
    "    x = x * 6364136223846793005ull + 1442695040888963407ull; sink += x; } while (0)\n"
    "__attribute__((noipa)) void grow_work(long n) { SPIN(n); }\n"
    "#ifdef V2\n"
    "__attribute__((noipa)) void padding(long n) { sink += n; }\n"
    "#endif\n"
    "__attribute__((noipa)) void shrink_work(long n) { SPIN(n); }\n"
    "__attribute__((noipa)) void same_work(long n) { SPIN(n); }\n"
    "int main(void) {\n"
    "    long u = 8000000;\n"
    "#ifdef V2\n"
    "    padding(1); grow_work(u * 45); shrink_work(u * 8); same_work(u * 10);\n"
    "#else\n"
    "    grow_work(u * 30); shrink_work(u * 10); same_work(u * 10);\n"
    "#endif\n"
    "    return 0; }\n";

static char *dir;

static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "%s: exit %d\n%s", cmd, rc, out ? out : "");
    free(out);
}

static void setup(void)
{
    dir = pa_test_tmpdir();
    pa_test_write(dir, "work.c", "%s", workload);
    /* the same program built twice, each with its own layout and name */
    sh("cd %s && cc -O2 -o work-1 work.c && cc -O2 -falign-functions=64 -DV2 -o work-2 work.c",
       dir);
    for (int v = 1; v <= 2; v++) {
        char out[512], cmd[512];
        snprintf(out, sizeof(out), "%s/p%d", dir, v);
        snprintf(cmd, sizeof(cmd), "%s/work-%d", dir, v);
        char *args[] = {"profile", "--repeat", "5", "--interval", "250us", "--call-graph",
                        "fp",      "-o",       out, "--",         cmd,     NULL};
        pa_test_cli_run r;
        pa_test_cli(&r, args);
        ck_assert_msg(r.status == 0, "profile --repeat: %d\n%s", r.status, r.err);
        ck_assert(strstr(r.err, "5 runs") && strstr(r.err, "coefficient of variation"));
        pa_test_cli_free(&r);
    }
}

/* the row of name in diff.csv: the self change in percent and verdict */
static int csv_row(const char *csv, const char *name, double *pct, char *verdict, size_t len)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s,", name);
    const char *p = strstr(csv, key);
    if (!p)
        return -1;
    /* function,module,match,self_a,self_a_sd,self_b,self_b_sd,self_change,
     * self_change_pct,self_ci95,self_p,self_verdict */
    const char *f = p + 1;
    for (int i = 0; i < 8; i++)
        f = strchr(f, ',') + 1;
    *pct = strtod(f, NULL);
    for (int i = 0; i < 3; i++)
        f = strchr(f, ',') + 1;
    snprintf(verdict, len, "%.*s", (int)strcspn(f, ","), f);
    return 0;
}

/* A function's change in percent against the unchanged one's: the
 * machine's other jobs move the modelled power of a CPU-second between
 * A's five runs and B's (one shift for every function: -2 to -5 % seen
 * in CI), which the unchanged function, the same work in both, shows */
static double relative(double pct, double same_pct)
{
    return 100 * ((1 + pct / 100) / (1 + same_pct / 100) - 1);
}

static void diff(pa_test_cli_run *r, const char *a, const char *b, const char *out)
{
    char pa_[512], pb_[512], o[512];
    snprintf(pa_, sizeof(pa_), "%s/%s", dir, a);
    snprintf(pb_, sizeof(pb_), "%s/%s", dir, b);
    snprintf(o, sizeof(o), "%s/%s", dir, out);
    /* --min-change 10: the unchanged function, built at another address,
     * runs a few percent faster or slower (its loop's alignment), and 5
     * runs on a loaded 2-core machine find that significant */
    char *args[] = {"diff", "--fail-above", "10", "--min-change", "10", "-o", o, pa_, pb_, NULL};
    pa_test_cli(r, args);
}

START_TEST(known_answers)
{
    pa_test_cli_run r;
    diff(&r, "p1", "p2", "d12");
    ck_assert_msg(r.status == 1, "a regression of ~+26 %% passed --fail-above 10: %d\n%s%s",
                  r.status, r.out, r.err);
    ck_assert(strstr(r.err, "the total rose by"));
    ck_assert(strstr(r.out, "Welch's t-test"));
    pa_test_cli_free(&r);
    char path[600];
    snprintf(path, sizeof(path), "%s/d12/diff.csv", dir);
    char *csv = pa_test_slurp(path);
    ck_assert(csv);
    double g, s, u;
    char vg[32], vs[32], vu[32];
    ck_assert_msg(csv_row(csv, "grow_work", &g, vg, sizeof(vg)) == 0 &&
                      csv_row(csv, "shrink_work", &s, vs, sizeof(vs)) == 0 &&
                      csv_row(csv, "same_work", &u, vu, sizeof(vu)) == 0,
                  "%.2000s", csv);
    fprintf(stderr,
            "known_answers: grow_work %+.1f %% (%s), shrink_work %+.1f %% (%s), "
            "same_work %+.1f %% (%s)\n",
            g, vg, s, vs, u, vu);
    ck_assert_msg(fabs(relative(g, u) - 50) <= 5, "grow_work %+.1f %% (%+.1f %% against same_work)",
                  g, relative(g, u));
    ck_assert_msg(fabs(relative(s, u) + 20) <= 5,
                  "shrink_work %+.1f %% (%+.1f %% against same_work)", s, relative(s, u));
    ck_assert_str_eq(vs, "significant");
    ck_assert_str_eq(vg, "significant");
    ck_assert_msg(!strcmp(vu, "within noise"), "same_work %+.1f %%: %s", u, vu);
    /* matched across the builds: the executable's name differs */
    ck_assert(strstr(csv, "grow_work,work-2,module renamed"));
    free(csv);
    diff(&r, "p2", "p1", "d21");
    ck_assert_msg(r.status == 0, "the reverse failed --fail-above 10: %d\n%s", r.status, r.err);
    pa_test_cli_free(&r);
}
END_TEST

#ifndef PA_SANITIZE_BUILD
static char *dom_of(const char *hash)
{
    char cmd[4096], *dom = NULL;
    snprintf(cmd, sizeof(cmd),
             "timeout 60 chromium --headless --no-sandbox --disable-gpu "
             "--user-data-dir=%s/chromium --dump-dom 'file://%s/d12/flamegraph.html%s' "
             "2>/dev/null",
             dir, dir, hash);
    pa_test_run(cmd, &dom);
    ck_assert_msg(dom && strstr(dom, "id=\"info\""), "no page for %s", hash);
    return dom;
}
#endif

START_TEST(page_in_chromium)
{
#ifndef PA_SANITIZE_BUILD
    if (system("command -v chromium >/dev/null 2>&1") != 0) {
        fprintf(stderr, "page_in_chromium: SKIPPED: no chromium\n");
        return;
    }
    pa_test_cli_run r;
    diff(&r, "p1", "p2", "d12");
    pa_test_cli_free(&r);
    char *dom = dom_of("");
    ck_assert_msg(strstr(dom, "red: more energy in B than in A (a loss), blue: less (a gain)"),
                  "legend: %.600s", strstr(dom, "id=\"info\""));
    free(dom);
    /* the colour words are the legend's, the colour itself red's or blue's hue */
    dom = dom_of("#kind=^grow_work$");
    ck_assert_msg(strstr(dom, ": loss (red, hsl(0,"), "%.300s", strstr(dom, "id=\"info\""));
    free(dom);
    dom = dom_of("#kind=^shrink_work$");
    ck_assert_msg(strstr(dom, ": gain (blue, hsl(220,"), "%.300s", strstr(dom, "id=\"info\""));
    free(dom);
    dom = dom_of("#q=_work$");
    const char *m = strstr(dom, "matched: change +");
    ck_assert_msg(m, "%.300s", strstr(dom, "id=\"info\""));
    free(dom);
#endif
}
END_TEST

static void teardown(void)
{
    pa_test_rmtree(dir);
}

static Suite *suite(void)
{
    Suite *s = suite_create("live_diff");
    TCase *tc = tcase_create("diff");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, known_answers);
    tcase_add_test(tc, page_in_chromium);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
