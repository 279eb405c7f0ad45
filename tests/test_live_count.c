/*
 * test_live_count.c - `powerapi profile --count` (DESIGN.md 13.7) on a C
 * program built here: work_f() runs 1 ms of CPU time and work_g() 0.25 ms;
 * the main thread calls work_f 300 times and work_g 600 times (shuffled),
 * a second thread work_g 600 times more, and getppid() 777 times.
 *
 * Expected: the calls exact (300, 1200, 777: the thread's counted by
 * inheritance, a library's function as libc:getppid, the two work_
 * functions by one wildcard), calls.csv and summary.json agreeing; the
 * energy per call of work_f 4 x work_g's within 25 % (their energy is
 * sampled at 1 ms: about 600 samples); a function that is not there and
 * a stripped program, a library not found, a JVM (Java methods are
 * jalen's) and a kernel function without a kprobe PMU: one line each,
 * naming the fix.  With --count-time, each function's mean wall time per
 * call: at least the CPU time it spins (1 ms, 0.25 ms), getppid's less.  Each case prints
 * its duration.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char WORK_C[] =
    "#include <pthread.h>\n#include <stdlib.h>\n#include <time.h>\n#include <unistd.h>\n"
    "static unsigned long sink;\n"
    "static unsigned long long cpu_ns(void) { struct timespec t;\n"
    "  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }\n"
    "__attribute__((noinline)) void work_f(void) { unsigned long long e = cpu_ns() + 1000000;\n"
    "  unsigned long x = sink; while (cpu_ns() < e) for (int i = 0; i < 100; i++) x = x * 3 + 1;\n"
    "  sink = x; }\n"
    "__attribute__((noinline)) void work_g(void) { unsigned long long e = cpu_ns() + 250000;\n"
    "  unsigned long x = sink; while (cpu_ns() < e) for (int i = 0; i < 100; i++) x = x * 5 + 7;\n"
    "  sink = x; }\n"
    "static void *side(void *a) { (void)a; for (int i = 0; i < 600; i++) work_g(); return 0; }\n"
    "int main(void) { pthread_t t; pthread_create(&t, 0, side, 0);\n"
    "  srand(45); int nf = 300, ng = 600;\n"
    "  while (nf + ng) { if (rand() % (nf + ng) < nf) { work_f(); nf--; } else { work_g(); ng--; } "
    "}\n"
    "  pthread_join(t, 0); long s = 0; for (int i = 0; i < 777; i++) s += getppid();\n"
    "  return s == 0; }\n";

static char *dir;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void build(void)
{
    dir = pa_test_tmpdir();
    pa_test_write(dir, "work.c", "%s", WORK_C);
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "cd %s && cc -O2 -g -fno-ipa-icf -o work work.c -pthread 2>&1 && "
             "cp work work-stripped && strip work-stripped",
             dir);
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "cc: %s", out ? out : "");
    free(out);
}

/* calls.csv's row of fn over every thread (pid and tid 0, the first):
 * its calls and energy per call. */
static void row(const char *csv, const char *fn, unsigned long long *calls, double *per,
                double *wall_ms)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s,", fn);
    const char *r = strstr(csv, key);
    ck_assert_msg(r != NULL, "calls.csv: no %s: %s", fn, csv);
    r = strchr(r + strlen(key), ','); /* after file */
    ck_assert_msg(r && !strncmp(r, ",0,0,", 5), "calls.csv: %s's first row not its total", fn);
    r += 4;
    double e, se, sper, cpu;
    ck_assert_int_eq(
        sscanf(r, ",%llu,%lf,%lf,%lf,%lf,%lf,%lf", calls, &e, &se, per, &sper, &cpu, wall_ms), 7);
}

START_TEST(test_calls_exact)
{
    double t0 = now_s();
    build();
    char out[4200], work[4200];
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(work, sizeof(work), "%s/work", dir);
    char *const args[] = {"profile",      "--count",    "work_*,libc:getppid",
                          "--count-time", "--interval", "1ms",
                          "-q",           "-o",         out,
                          "--",           work,         NULL};
    pa_test_cli_run r;
    pa_test_cli(&r, args);
    ck_assert_msg(r.status == 0, "profile --count: status %d: %s", r.status, r.err);
    pa_test_cli_free(&r);
    char p[4300];
    snprintf(p, sizeof(p), "%s/calls.csv", out);
    char *csv = pa_test_slurp(p);
    ck_assert_msg(csv != NULL, "no calls.csv");
    unsigned long long nf, ng, np;
    double pf, pg, pp, wf, wg, wp;
    row(csv, "work_f", &nf, &pf, &wf);
    row(csv, "work_g", &ng, &pg, &wg);
    row(csv, "getppid", &np, &pp, &wp);
    /* --count-time: a call's wall time is at least the CPU time it spins */
    printf("count: wall per call work_f %.3f ms, work_g %.3f ms, getppid %.4f ms\n", wf, wg, wp);
    ck_assert_msg(wf >= 0.95 && wg >= 0.24 && wf > wg && wp > 0 && wp < wg,
                  "wall_mean_ms: work_f %.3f (>= 1), work_g %.3f (>= 0.25), getppid %.4f", wf, wg,
                  wp);
    ck_assert_msg(nf == 300 && ng == 1200 && np == 777,
                  "calls: work_f %llu (300), work_g %llu (1200), getppid %llu (777)", nf, ng, np);
    /* by thread: work_g 600 on each of the two threads */
    int per_thread = 0;
    for (const char *q = csv; (q = strstr(q, "\nwork_g,")); q++) {
        const char *f = strchr(q + 8, ','); /* after file */
        int pid = 0, tid = 0;
        unsigned long long n = 0;
        if (f && sscanf(f, ",%d,%d,%llu,", &pid, &tid, &n) == 3 && tid != 0 && n == 600)
            per_thread++;
    }
    ck_assert_msg(per_thread == 2, "calls.csv: work_g not 600 on each thread: %s", csv);
    double ratio = pf / pg;
    printf("count: work_f %.6f J/call, work_g %.6f J/call, ratio %.3f (4 expected)\n", pf, pg,
           ratio);
    ck_assert_msg(fabs(ratio - 4) <= 1.0, "energy per call f:g %.3f, expected 4 +- 25 %%", ratio);
    snprintf(p, sizeof(p), "%s/summary.json", out);
    char *sum = pa_test_slurp(p);
    ck_assert_msg(sum && strstr(sum, "{\"function\": \"work_g\", \"calls\": 1200,") &&
                      strstr(sum, "\"count_energy_model\""),
                  "summary.json: no counted work_g: %s", sum ? sum : "");
    free(sum);
    free(csv);
    pa_test_rmtree(dir);
    dir = NULL;
    printf("count: test_calls_exact %.1f s\n", now_s() - t0);
}
END_TEST

static void refused(const char *spec, const char *prog, const char *want)
{
    char out[4200], work[4200];
    snprintf(out, sizeof(out), "%s/bad", dir);
    snprintf(work, sizeof(work), prog[0] == '/' ? "%.0s%s" : "%s/%s", dir, prog);
    char *const args[] = {"profile", "--count", (char *)spec, "-q", "-o", out, "--", work, NULL};
    pa_test_cli_run r;
    pa_test_cli(&r, args);
    ck_assert_msg(r.status != 0 && strstr(r.err, want) &&
                      strchr(r.err, '\n') == strrchr(r.err, '\n'),
                  "--count %s on %s: status %d, stderr: %s", spec, prog, r.status, r.err);
    pa_test_cli_free(&r);
}

START_TEST(test_refused)
{
    double t0 = now_s();
    build();
    refused("no_such_fn", "work", "no function 'no_such_fn' in");
    refused("work_f", "work-stripped", "stripped?");
    refused("nolib:x", "work", "no library 'nolib'");
    /* a JVM: its methods are JIT code, jalen's trace= counts them */
    refused("main", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "jalen's trace=");
    if (access("/sys/bus/event_source/devices/kprobe/type", R_OK) < 0)
        refused("kernel:do_sys_openat2", "work", "this kernel has no kprobe PMU");
    else
        printf("count: SKIPPED the kprobe refusal: this kernel has a kprobe PMU\n");
    pa_test_rmtree(dir);
    dir = NULL;
    printf("count: test_refused %.1f s\n", now_s() - t0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_count");
    TCase *tc = tcase_create("count");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_calls_exact);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
