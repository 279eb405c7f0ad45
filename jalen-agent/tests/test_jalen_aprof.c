/*
 * test_jalen_aprof.c - async-profiler's own recovery test programs under
 * jalen, with async-profiler's assertions translated from sample ratios to
 * energy ratios (issue 39; java/async-profiler/README.md).
 *
 * One JVM per JDK (JDK 17, then the second JDK when present) runs the four
 * programs at once, each on its own thread inside a jalen scope named
 * after it (AprofRecovery.java), at interval=1ms with
 * -XX:+DebugNonSafepoints, for 3 s of wall time and at least 1.5 s of CPU
 * time per program (a loaded host gets a longer run, not fewer samples).
 * Of each program's energy (the stacks of energy.collapsed under its
 * "[scope NAME]" root):
 *   - the walks left unknown ([unknown Java], [not walkable ...],
 *     [not Java], [unattributed]) <= 0.5 % for StringBuilderTest, Numbers
 *     and Suppliers, <= 1 % for CodingIntrinsics, async-profiler's bounds;
 *   - StringBuilderTest: StringBuilder.delete called from main >= 80 %;
 *   - Numbers: Numbers.loop >= 80 %, Numbers.avg under it >= 50 %;
 *   - Suppliers: Suppliers.loop >= 50 %;
 *   - CodingIntrinsics: broken stacks <= 1 %.  async-profiler counts the
 *     stacks of one or two frames, the sign of a walk that broke off; a
 *     jalen stack keeps its root, so the walks that broke off are those
 *     that do not reach the runner's frame (AprofRecovery.run): every
 *     pseudo-frame of a failed walk and every partial walk.  Not
 *     [deoptimization]: AsyncGetCallTrace refuses a thread in the
 *     deoptimization handler whatever context it is given (ticks_deopt),
 *     where async-profiler's own walker goes on; 0-1 % of CodingIntrinsics,
 *     printed apart.  The stacks of at most two
 *     frames below the runner are printed too, for comparison: they
 *     include the program's own main;Random.nextBytes and main;runTest,
 *     0.1-0.7 % of a run this short, whose start (interpreted, the JIT
 *     shared with three other programs) weighs more than in async-
 *     profiler's 3 s of the program alone.
 * async-profiler's checks on its stub frames (arraycopy, vtable stub,
 * itable stub) have no counterpart: jalen names no stub frame, a stub's
 * time is its Java caller's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jtest.h"

static const char *const programs[] = {"StringBuilderTest", "Numbers", "Suppliers",
                                       "CodingIntrinsics"};

/* The energy, in the stacks of energy.collapsed under "[scope prog]", of
 * all of them (what NULL), of those that hold the ;-joined frames what
 * (consecutive), of the unknown ones (what "?unknown"), of the broken ones
 * (what "?broken": not reaching AprofRecovery.run, [deoptimization] left
 * out), of the short ones
 * (what "?short": at most two frames below AprofRecovery.run, or under the
 * scope where the stack does not reach it). */
static double under(const char *col, const char *prog, const char *what)
{
    char root[128];
    snprintf(root, sizeof(root), "[scope %s];", prog);
    double sum = 0;
    for (const char *line = col; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[8192];
        if (len < sizeof(buf) && !strncmp(line, root, strlen(root))) {
            memcpy(buf, line, len);
            buf[len] = 0;
            char *sp = strrchr(buf, ' ');
            if (sp) {
                *sp = 0;
                const char *st = buf + strlen(root);
                int hit = 1;
                if (what && !strcmp(what, "?unknown"))
                    hit = strstr(st, "[unknown Java]") || strstr(st, "[not walkable") ||
                          strstr(st, "[not Java]") || strstr(st, "[unattributed]");
                else if (what && !strcmp(what, "?broken"))
                    hit = !strstr(st, "AprofRecovery.run;") && strcmp(st, "[deoptimization]");
                else if (what && !strcmp(what, "?short")) {
                    const char *run = strstr(st, "AprofRecovery.run;");
                    const char *below = run ? run + strlen("AprofRecovery.run;") : st;
                    int frames = 1;
                    for (const char *c = below; *c; c++)
                        frames += *c == ';';
                    hit = frames <= 2;
                } else if (what && what[0] == '~') {
                    /* a frame that begins with what + 1 (a package) */
                    hit = !strncmp(st, what + 1, strlen(what + 1));
                    for (const char *f = strchr(st, ';'); f && !hit; f = strchr(f + 1, ';'))
                        hit = !strncmp(f + 1, what + 1, strlen(what + 1));
                } else if (what) {
                    /* whole frames: what at a frame's start, ending one
                     * (a pseudo-frame without its closing bracket: any
                     * frame it begins) */
                    hit = 0;
                    size_t wl = strlen(what);
                    int prefix = what[0] == '[' && what[wl - 1] != ']';
                    for (const char *f = strstr(st, what); f && !hit; f = strstr(f + 1, what))
                        hit = (f == st || f[-1] == ';') && (prefix || f[wl] == ';' || f[wl] == 0);
                }
                if (hit)
                    sum += strtod(sp + 1, NULL);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return sum;
}

static void check_share(const char *prog, const char *name, double part, double all, double bound,
                        int at_most)
{
    double r = all > 0 ? part / all : 0;
    fprintf(stderr, "[aprof %s] %-17s %-40s %6.2f%% (%s %.1f%%)\n", jt_java, prog, name, 100 * r,
            at_most ? "<=" : ">=", 100 * bound);
    if (at_most)
        ck_assert_msg(all > 0 && r <= bound, "%s: %s %.2f%% of its energy, want <= %.1f%%", prog,
                      name, 100 * r, 100 * bound);
    else
        ck_assert_msg(all > 0 && r >= bound, "%s: %s %.2f%% of its energy, want >= %.1f%%", prog,
                      name, 100 * r, 100 * bound);
}

/* async-profiler's smoke programs (test/test/smoke/SmokeTests.java), its
 * assertions that stacks are there translated to energy: each stack it
 * asks for holds at least 1 % of its program's energy (method1 and method2
 * 44-47 % each, method3's java.io.File frames 8 %, LoadLibrary's
 * sun.management frames 99 %, both JDKs); the threads' own
 * names (one renamed by itself, one ended early) in threads.csv with their
 * methods' energy.  Alloc has no counterpart: jalen samples CPU time, not
 * allocations. */
static void check_smoke(const char *dir, const char *col)
{
    double cpu = under(col, "Cpu", NULL);
    static const char *const cpu_stacks[] = {
        "test.smoke.Cpu.main;test.smoke.Cpu.method1", "test.smoke.Cpu.main;test.smoke.Cpu.method2",
        "test.smoke.Cpu.main;test.smoke.Cpu.method3;~java.io.File"};
    for (size_t k = 0; k < 3; k++) {
        const char *want = cpu_stacks[k];
        double e;
        if (strstr(want, ";~")) { /* the caller's frames, then any java.io.File frame */
            char head[128];
            snprintf(head, sizeof(head), "%.*s", (int)(strstr(want, ";~") - want), want);
            e = under(col, "Cpu", head) > 0 ? under(col, "Cpu", "~java.io.File") : 0;
        } else {
            e = under(col, "Cpu", want);
        }
        check_share("Cpu", want, e, cpu, 0.01, 0);
    }
    check_share("LoadLibrary", "sun.management frames",
                under(col, "LoadLibrary", "~sun.management."), under(col, "LoadLibrary", NULL),
                0.05, 0);
    char p[4200];
    jt_csv th, me;
    snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    snprintf(p, sizeof(p), "%s/out/methods.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &me), 0);
    static const char *const want[2][2] = {
        {"ThreadEarlyEnd", "test.smoke.Threads.methodForThreadEarlyEnd"},
        {"RenamedThread", "test.smoke.Threads.methodForRenamedThread"}};
    for (int i = 0; i < 2; i++) {
        const jt_row *t = jt_csv_find(&th, 1, want[i][0]);
        const jt_row *m = jt_csv_find(&me, 0, want[i][1]);
        fprintf(stderr, "[aprof %s] Threads thread %s %.3f J, %s %.3f J total\n", jt_java,
                want[i][0], t ? jt_num(t, 3) : -1, want[i][1], m ? jt_num(m, 2) : -1);
        ck_assert_msg(t && jt_num(t, 3) > 0, "Threads: no thread %s with energy", want[i][0]);
        ck_assert_msg(m && jt_num(m, 2) > 0, "Threads: no energy in %s", want[i][1]);
    }
    ck_assert_msg(!jt_csv_find(&th, 1, "ThreadWillBeRenamed"), "the old name is still there");
    jt_csv_free(&th);
    jt_csv_free(&me);
}

static void check_programs(void)
{
    char *dir = jt_tmpdir();
    char cp[8400];
    snprintf(cp, sizeof(cp), "%s:%s", JALEN_CLASSES, JALEN_API_JAR);
    /* the -cp given last is the one the JVM takes */
    const char *args[] = {"-cp",
                          cp,
                          "-XX:+UnlockDiagnosticVMOptions",
                          "-XX:+DebugNonSafepoints",
                          "AprofRecovery",
                          "3",
                          "1.5",
                          programs[0],
                          programs[1],
                          programs[2],
                          programs[3],
                          "Cpu",
                          "Threads",
                          "LoadLibrary",
                          NULL};
    char *sum = jt_run_quiet(dir, "mode=cpu,interval=1ms", args, 100);
    fprintf(stderr,
            "[aprof %s] walks failed %.0f, recovered %.0f, to the deepest frame known %.0f\n",
            jt_java, jt_json_num(sum, "walks_failed"), jt_json_num(sum, "walks_recovered"),
            jt_json_num(sum, "walks_partial"));
    free(sum);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out/energy.collapsed", dir);
    char *col = jt_read(p);
    ck_assert_msg(col, "no energy.collapsed");
    for (size_t k = 0; k < sizeof(programs) / sizeof(programs[0]); k++) {
        const char *prog = programs[k];
        double all = under(col, prog, NULL);
        fprintf(stderr, "[aprof %s] %-17s %.3f J\n", jt_java, prog, all / 1e6);
        ck_assert_msg(all > 0, "%s: no energy under [scope %s]", prog, prog);
        check_share(prog, "unknown", under(col, prog, "?unknown"), all,
                    strcmp(prog, "CodingIntrinsics") ? 0.005 : 0.01, 1);
    }
    double sb = under(col, "StringBuilderTest", NULL);
    check_share("StringBuilderTest", "main;StringBuilder.delete",
                under(col, "StringBuilderTest",
                      "test.recovery.StringBuilderTest.main;java.lang.StringBuilder.delete"),
                sb, 0.80, 0);
    double nu = under(col, "Numbers", NULL);
    check_share("Numbers", "Numbers.loop", under(col, "Numbers", "test.recovery.Numbers.loop"), nu,
                0.80, 0);
    check_share("Numbers", "Numbers.loop;Numbers.avg",
                under(col, "Numbers", "test.recovery.Numbers.loop;test.recovery.Numbers.avg"), nu,
                0.50, 0);
    check_share("Suppliers", "Suppliers.loop",
                under(col, "Suppliers", "test.recovery.Suppliers.loop"),
                under(col, "Suppliers", NULL), 0.50, 0);
    double ci = under(col, "CodingIntrinsics", NULL);
    static const char *const roots[] = {"[deoptimization]", "[callers not walkable",
                                        "[unknown Java]",   "[not walkable",
                                        "[not Java]",       "[safepoint]"};
    for (size_t k = 0; k < sizeof(roots) / sizeof(roots[0]); k++) {
        double e = under(col, "CodingIntrinsics", roots[k]);
        if (e > 0)
            fprintf(stderr, "[aprof %s] CodingIntrinsics  of which %s %.2f%%\n", jt_java, roots[k],
                    100 * e / ci);
    }
    check_share("CodingIntrinsics", "broken stacks", under(col, "CodingIntrinsics", "?broken"), ci,
                0.01, 1);
    fprintf(stderr, "[aprof %s] CodingIntrinsics  stacks of one or two frames %.2f%%\n", jt_java,
            ci > 0 ? 100 * under(col, "CodingIntrinsics", "?short") / ci : 0);
    check_smoke(dir, col);
    free(col);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(aprof_jdk17)
{
    check_programs();
}
END_TEST

START_TEST(aprof_other_jdk)
{
    if (jt_other_jdk("async-profiler's recovery programs"))
        check_programs();
}
END_TEST

int main(void)
{
    if (!*JALEN_API_JAR) {
        fprintf(stderr, "SKIP: no jalen-api.jar (AprofRecovery needs the scope API)\n");
        return 0;
    }
    Suite *s = suite_create("jalen_aprof");
    TCase *tc = tcase_create("aprof");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, aprof_jdk17);
    tcase_add_test(tc, aprof_other_jdk);
    suite_add_tcase(s, tc);
    return jt_run_suite(s);
}
