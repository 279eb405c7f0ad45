/*
 * test_jalen_diff.c - Java repeats and `powerapi diff` (issue 44): a Java
 * workload in two versions, the second doing 30 % more work in growWork
 * and 20 % less in shrinkWork, each run 5 times under the agent by
 * `powerapi jalen --repeat 5`; `powerapi diff` names both methods with
 * the right signs and changes within 5 points (against sameWork's: see
 * relative()), sameWork not significant (--min-change 10),
 * and --fail-above 10 --function Work.growWork fails one way and passes
 * the other.  About 8 s.
 */
#include <check.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jtest.h"

static const char work[] =
    "public class Work {\n"
    "    static long sink;\n"
    "    static void growWork(long n) { long x = 1; for (long i = 0; i < n; i++)\n"
    "        x = x * 6364136223846793005L + 1442695040888963407L; sink += x; }\n"
    "    static void shrinkWork(long n) { long x = 1; for (long i = 0; i < n; i++)\n"
    "        x = x * 6364136223846793005L + 1442695040888963407L; sink += x; }\n"
    "    static void sameWork(long n) { long x = 1; for (long i = 0; i < n; i++)\n"
    "        x = x * 6364136223846793005L + 1442695040888963407L; sink += x; }\n"
    "    public static void main(String[] a) {\n"
    "        long u = 1000000L;\n"
    "        for (int r = 0; r < 10; r++) { growWork(u * %d); shrinkWork(u * %d); "
    "sameWork(u * 10); }\n"
    "        System.out.println(sink & 1); } }\n";

static char *dir;

static int sh(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, p)) > 0)
        n += r;
    buf[n] = '\0';
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void build(int v, int grow, int shrink)
{
    char path[4200], javac[4200], cmd[9000];
    snprintf(path, sizeof(path), "%s/v%d/Work.java", dir, v);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s/v%d", dir, v);
    ck_assert_int_eq(sh(cmd, NULL), 0);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fprintf(f, work, grow, shrink);
    fclose(f);
    snprintf(javac, sizeof(javac), "%s", JALEN_JAVA);
    snprintf(cmd, sizeof(cmd), "%s/javac -d %s/v%d %s 2>&1", dirname(javac), dir, v, path);
    char *out = NULL;
    ck_assert_msg(sh(cmd, &out) == 0, "%s: %s", cmd, out);
    free(out);
    /* five runs under the agent: powerapi jalen --repeat */
    snprintf(cmd, sizeof(cmd),
             "%s jalen --repeat 5 -o %s/j%d --agent %s --agent-options interval=1ms,quiet -- %s "
             "-cp %s/v%d Work 2>&1",
             CLI_BIN, dir, v, JALEN_AGENT, JALEN_JAVA, dir, v);
    ck_assert_msg(sh(cmd, &out) == 0, "%s:\n%s", cmd, out);
    ck_assert_msg(strstr(out, "5 runs:") && strstr(out, "coefficient of variation"), "%s", out);
    free(out);
}

/* self change in percent and verdict of a method in diff.csv */
static void row(const char *csv, const char *name, double *pct, char *verdict, size_t len)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s,", name);
    const char *f = strstr(csv, key);
    ck_assert_msg(f != NULL, "no %s in %.1500s", name, csv);
    f++;
    for (int i = 0; i < 8; i++)
        f = strchr(f, ',') + 1;
    *pct = strtod(f, NULL);
    for (int i = 0; i < 3; i++)
        f = strchr(f, ',') + 1;
    snprintf(verdict, len, "%.*s", (int)strcspn(f, ","), f);
}

/* A method's change in percent against the unchanged one's: the
 * machine's other jobs move the modelled power of a CPU-second between
 * A's five runs and B's (one shift for every method: -4.6 % seen in a
 * fresh clone), which sameWork, the same work in both, shows */
static double relative(double pct, double same_pct)
{
    return 100 * ((1 + pct / 100) / (1 + same_pct / 100) - 1);
}

START_TEST(java_known_answers)
{
    dir = jt_tmpdir();
    build(1, 30, 10);
    build(2, 39, 8);
    char cmd[9000], *out = NULL;
    /* the method, not the total: a JVM's start and end (JIT, agent, VM
     * threads) weigh a third of these short runs' energy and follow the
     * machine's load, which other jobs share here */
    snprintf(
        cmd, sizeof(cmd),
        "%s diff --fail-above 10 --min-change 10 --function Work.growWork -o %s/d12 %s/j1 %s/j2 "
        "2>&1",
        CLI_BIN, dir, dir, dir);
    int st = sh(cmd, &out);
    ck_assert_msg(st == 1 && strstr(out, "Work.growWork (self) rose by"), "%d: %s", st, out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s/d12/diff.csv", dir);
    char *csv = jt_read(cmd);
    ck_assert(csv != NULL);
    double g, s, u;
    char vg[32], vs[32], vu[32];
    row(csv, "Work.growWork", &g, vg, sizeof(vg));
    row(csv, "Work.shrinkWork", &s, vs, sizeof(vs));
    row(csv, "Work.sameWork", &u, vu, sizeof(vu));
    fprintf(stderr,
            "java_known_answers: growWork %+.1f %% (%s), shrinkWork %+.1f %% (%s), "
            "sameWork %+.1f %% (%s)\n",
            g, vg, s, vs, u, vu);
    ck_assert_msg(fabs(relative(g, u) - 30) <= 5, "growWork %+.1f %% (%+.1f %% against sameWork)",
                  g, relative(g, u));
    ck_assert_msg(fabs(relative(s, u) + 20) <= 5, "shrinkWork %+.1f %% (%+.1f %% against sameWork)",
                  s, relative(s, u));
    ck_assert_str_eq(vg, "significant");
    ck_assert_str_eq(vs, "significant");
    ck_assert_str_eq(vu, "within noise");
    free(csv);
    snprintf(cmd, sizeof(cmd),
             "%s diff -q --fail-above 10 --function Work.growWork -o %s/d21 %s/j2 %s/j1 2>&1",
             CLI_BIN, dir, dir, dir);
    st = sh(cmd, &out);
    ck_assert_msg(st == 0, "reverse: %d: %s", st, out);
    free(out);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_diff");
    TCase *tc = tcase_create("diff");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, java_known_answers);
    suite_add_tcase(s, tc);
    return jt_run_suite(s);
}
