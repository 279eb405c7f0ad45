/*
 * test_jalen_trace.c - trace=PATTERNS (DESIGN.md 11.2) on known answers:
 * TraceWork.java calls a() 1,000 times at 1 ms of CPU and b() 4,000 times
 * at 0.25 ms (shuffled), rec(9) 10 times (100 calls, recursive), fail()
 * 50 times (each throws) and Node's constructor 20 times.
 *
 * Expected, in one JVM (JDK 17): every count exact; a's self energy per
 * call 4 x b's within 5 %; a's and b's energy within 5 % of what the
 * sampler (interval=1ms) gave their frames (methods.csv's total); a
 * recursion's inclusive CPU time its outermost calls' alone (equal to the
 * sum of its calls' self time); the 50 exceptions counted as thrown; a
 * pattern naming a class never loaded said in one line.  A malformed
 * pattern: one line, the JVM runs on.  On the second JDK (Temurin 25):
 * the calls exact and the 4:1 ratio again, on a shorter run; its
 * java.lang.Integer (class file 69, newer than ASM 9.4 reads) left as it
 * is with one line, the JVM running on.  At runtime,
 * on a JVM started without the agent: `powerapi jalen PID start
 * trace=TraceWork.b` traces the loaded class (calls counted), `trace`
 * alone removes it (no call counted while removed, the JVM runs on), and
 * `trace TraceWork.b` adds it again (calls counted again); the same
 * through the agent's MXBean (trace, TracedCalls) from inside the JVM.
 * trace=java.util.*.* (JDK 17): the count of methods said (over 1,000),
 * the hidden classes that cannot be retransformed in one line, the JVM
 * running on.  Native methods, counted at their Java call sites (both
 * JDKs, in the same JVMs): NativeBurn.burn() (our own, in C: 0.5 ms of CPU
 * time) called from two sites, its calls exact and its self energy per
 * call 2 x b()'s within 5 %; NativeBurn.fail() (throws in C) counted as
 * thrown; the virtual NativeBurn.where() through a call site naming its
 * subclass; the JDK's native Thread.holdsLock(); and through the MXBean, added then removed at
 * runtime, its caller loaded before (retransformed): 100 calls counted between them only.  Each
 * case prints its duration (the suite's time budget).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jtest.h"

enum { C_M, C_THREAD, C_TID, C_CALLS, C_THROWN, C_OPEN, C_NOENTRY, C_CPU, C_SCPU };
enum { C_E = 16, C_SE, C_EPC, C_SEPC, C_ACROSS };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const jt_row *row(const jt_csv *c, const char *name)
{
    const jt_row *r = jt_csv_find(c, C_M, name);
    ck_assert_msg(r != NULL, "calls.csv: no row '%s'", name);
    ck_assert_str_eq(r->f[C_THREAD], "[all threads]");
    return r;
}

static void calls(const jt_csv *c, const char *name, double want, double thrown)
{
    const jt_row *r = row(c, name);
    ck_assert_msg(jt_num(r, C_CALLS) == want && jt_num(r, C_THROWN) == thrown,
                  "%s: %g calls, %g thrown; expected %g and %g", name, jt_num(r, C_CALLS),
                  jt_num(r, C_THROWN), want, thrown);
    ck_assert_msg(jt_num(r, C_OPEN) == 0 && jt_num(r, C_NOENTRY) == 0 && jt_num(r, C_ACROSS) == 0,
                  "%s: %g open at the end, %g exits without entry, %g across a change", name,
                  jt_num(r, C_OPEN), jt_num(r, C_NOENTRY), jt_num(r, C_ACROSS));
}

/* Runs TraceWork NA under the agent with opts (out=DIR/out added) and
 * returns its stderr (free it); asserts it exited 0 having printed done. */
static char *run(const char *dir, const char *opts, const char *na)
{
    char all[4096], errf[4200];
    snprintf(all, sizeof(all), "%s,out=%s/out", opts, dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"TraceWork", na, JALEN_TEST_NATIVE, NULL};
    int fd = -1;
    pid_t pid = jt_spawn(all, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    char line[256] = "";
    int got = jt_wait_line(fd, "done", line, sizeof(line), 120);
    int st = jt_wait(pid, 60);
    close(fd);
    char *err = jt_read(errf);
    ck_assert_msg(got == 0 && st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "TraceWork did not end well (status %d): %s", st, err ? err : "");
    return err;
}

static const char *PATS =
    "trace=TraceWork.a;TraceWork.b;TraceWork.rec;TraceWork.fail(I)V;"
    "TraceWork$Node.<init>;NoSuch.klass;"
    "java.lang.Integer.parseInt(Ljava/lang/String;)I;"
    "NativeBurn.burn;NativeBurn.fail;TraceWork$Burner.where;java.lang.Thread.holdsLock";

/* The native methods, counted at their call sites (TraceWork A LIB): burn()
 * A / 5 times from each of two sites, fail() 10 times (each throws), the
 * virtual where() 20 times through its subclass Burner (the class the
 * call site names: counted under NativeBurn's name), the JDK's native
 * Thread.holdsLock() 20 times; burn's self energy per call 2 x b's (0.5 ms against 0.25 ms of
 * CPU time) within 5 %.  Returns that ratio. */
static double natives(const jt_csv *c, double na)
{
    calls(c, "NativeBurn.burn()V", 2 * (na / 5), 0);
    calls(c, "NativeBurn.fail()V", 10, 10);
    calls(c, "NativeBurn.where()I", 20, 0);
    calls(c, "java.lang.Thread.holdsLock(Ljava/lang/Object;)Z", 20, 0);
    double ratio =
        jt_num(row(c, "NativeBurn.burn()V"), C_SEPC) / jt_num(row(c, "TraceWork.b()V"), C_SEPC);
    printf("trace: native burn() %.6f J/call, ratio to b() %.3f (2 expected)\n",
           jt_num(row(c, "NativeBurn.burn()V"), C_SEPC), ratio);
    ck_assert_msg(fabs(ratio - 2) <= 0.1, "burn:b self energy per call %.3f, expected 2 +- 5 %%",
                  ratio);
    return ratio;
}

START_TEST(test_known_answers)
{
    double t0 = now_s();
    char *dir = jt_tmpdir(), p[4200];
    char opts[1024];
    snprintf(opts, sizeof(opts), "interval=1ms,%s", PATS);
    char *err = run(dir, opts, "1000");
    /* the pattern naming no loaded class, in one line */
    ck_assert_msg(strstr(err, "jalen: trace pattern #6 (class 'NoSuch') traced no method"),
                  "no line for the pattern that matched nothing: %s", err);
    ck_assert_msg(!strstr(err, "left as it is"), "a class was not rewritten: %s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    jt_csv c, m;
    snprintf(p, sizeof(p), "%s/out/calls.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &c), 0);
    ck_assert_int_eq(c.bad, 0);
    calls(&c, "TraceWork.a()V", 1000, 0);
    calls(&c, "TraceWork.b()V", 4000, 0);
    calls(&c, "TraceWork.rec(I)I", 100, 0);
    calls(&c, "TraceWork.fail(I)V", 50, 50);
    calls(&c, "TraceWork$Node.<init>(I)V", 20, 0);
    natives(&c, 1000);
    /* a boot class loaded before VMInit, retransformed then; its pattern
     * has a descriptor with a ';' (main parses its argument once) */
    ck_assert_msg(jt_num(row(&c, "java.lang.Integer.parseInt(Ljava/lang/String;)I"), C_CALLS) >= 1,
                  "Integer.parseInt not traced");
    /* a recursion: inclusive time once (its outermost calls) = the sum of
     * its calls' self times (a callee's time is the callee's) */
    const jt_row *rr = row(&c, "TraceWork.rec(I)I");
    ck_assert_msg(fabs(jt_num(rr, C_CPU) - jt_num(rr, C_SCPU)) <= 2e-9,
                  "rec: inclusive %.9f s, self %.9f s", jt_num(rr, C_CPU), jt_num(rr, C_SCPU));
    const jt_row *ra = row(&c, "TraceWork.a()V"), *rb = row(&c, "TraceWork.b()V");
    double ratio = jt_num(ra, C_SEPC) / jt_num(rb, C_SEPC);
    printf("trace: a %.6f J/call, b %.6f J/call, ratio %.3f (4 expected)\n", jt_num(ra, C_SEPC),
           jt_num(rb, C_SEPC), ratio);
    ck_assert_msg(fabs(ratio - 4) <= 0.2, "a:b self energy per call %.3f, expected 4 +- 5 %%",
                  ratio);
    /* the sampler's energy of the same frames (inclusive) */
    snprintf(p, sizeof(p), "%s/out/methods.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &m), 0);
    const char *names[2] = {"TraceWork.a", "TraceWork.b"};
    const jt_row *tr[2] = {ra, rb};
    for (int i = 0; i < 2; i++) {
        const jt_row *s = jt_csv_find(&m, 0, names[i]);
        ck_assert_msg(s != NULL, "methods.csv: no %s", names[i]);
        double ts = jt_num(tr[i], C_E), ss = jt_num(s, 2);
        printf("trace: %s traced %.4f J, sampled %.4f J (%+.1f %%)\n", names[i], ts, ss,
               (ts / ss - 1) * 100);
        ck_assert_msg(fabs(ts - ss) <= 0.05 * ss, "%s: traced %.4f J, sampler %.4f J (5 %%)",
                      names[i], ts, ss);
    }
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *sum = jt_read(p);
    ck_assert_msg(sum && strstr(sum, "{\"method\": \"TraceWork.a()V\", \"calls\": 1000,"),
                  "summary.json: no traced a() with 1000 calls");
    ck_assert_msg(strstr(sum, "\"trace_energy_model\": "), "summary.json: no trace_energy_model");
    free(sum);
    /* the flame graph's tooltip of a traced frame */
    snprintf(p, sizeof(p), "%s/out/flamegraph.html", dir);
    char *html = jt_read(p);
    ck_assert_msg(html && strstr(html, "\"traced: 1000 calls, ") &&
                      strstr(html, "\"traced: 4000 calls, "),
                  "flamegraph.html: no tooltip line for the traced a() and b()");
    free(html);
    jt_csv_free(&c);
    jt_csv_free(&m);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_known_answers %.1f s\n", now_s() - t0);
}
END_TEST

START_TEST(test_bad_pattern)
{
    double t0 = now_s();
    char *dir = jt_tmpdir();
    char *err = run(dir, "trace=TraceWork.a;nodot", "0");
    ck_assert_msg(strstr(err, "jalen: trace pattern 'nodot' is not CLASS.METHOD") &&
                      strstr(err, "the JVM runs on without profiling") && jt_lines(err) == 1,
                  "malformed pattern: %s", err);
    free(err);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_bad_pattern %.1f s\n", now_s() - t0);
}
END_TEST

/* A pattern naming thousands of methods (java.util's, boot classes
 * retransformed at VMInit): the count said, the classes that cannot be
 * retransformed (hidden lambda classes) in one line, the JVM runs on. */
START_TEST(test_many)
{
    double t0 = now_s();
    char *dir = jt_tmpdir();
    char *err = run(dir, "trace=java.util.*.*", "0");
    ck_assert_msg(strstr(err, "jalen: trace= matches 1000 methods so far") &&
                      strstr(err, "jalen: trace= traced "),
                  "no count of the methods traced: %s", err);
    const char *l = strstr(err, "cannot be retransformed");
    ck_assert_msg(l && !strstr(l + 1, "cannot be retransformed"),
                  "not one line for the classes that cannot be retransformed: %s", err);
    free(err);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_many %.1f s\n", now_s() - t0);
}
END_TEST

START_TEST(test_other_jdk)
{
    if (!jt_other_jdk("trace= on a second JDK"))
        return;
    double t0 = now_s();
    char *dir = jt_tmpdir(), p[4200];
    char *err =
        run(dir,
            "trace=TraceWork.a;TraceWork.b;TraceWork.fail;"
            "java.lang.Integer.parseInt(Ljava/lang/String;)I;"
            "NativeBurn.burn;NativeBurn.fail;TraceWork$Burner.where;java.lang.Thread.holdsLock",
            "250");
    /* JDK 25's own classes are class file 69, newer than Debian's ASM
     * 9.4 reads: said in one line, the class left as it is; the classes
     * that only call a traced native (java.util.zip.Inflater calls
     * Thread.holdsLock), said once for all; Thread itself, whose native
     * alone is named, is not read with ASM */
    const char *line = strstr(err, "jalen: trace=: class java/lang/Integer left as it is");
    int left = 0, sites = 0;
    for (const char *q = err; (q = strstr(q, "left as it is")); q++)
        left++;
    for (const char *q = err; (q = strstr(q, "which calls a traced native method")); q++)
        sites++;
    ck_assert_msg(line && strstr(line, "Unsupported class file major version") && sites <= 1 &&
                      left == 1 + sites,
                  "the classes ASM cannot read: %s", err);
    free(err);
    jt_csv c;
    snprintf(p, sizeof(p), "%s/out/calls.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &c), 0);
    calls(&c, "TraceWork.a()V", 250, 0);
    calls(&c, "TraceWork.b()V", 1000, 0);
    calls(&c, "TraceWork.fail(I)V", 50, 50);
    double ratio =
        jt_num(row(&c, "TraceWork.a()V"), C_SEPC) / jt_num(row(&c, "TraceWork.b()V"), C_SEPC);
    ck_assert_msg(fabs(ratio - 4) <= 0.2, "a:b %.3f on the second JDK", ratio);
    double nr = natives(&c, 250);
    jt_csv_free(&c);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_other_jdk %.1f s (ratio %.3f, native %.3f)\n", now_s() - t0, ratio, nr);
}
END_TEST

/* `powerapi jalen ARGS`: its status; what it printed in out. */
static int cli(const char *args, char *out, size_t len)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s jalen %s 2>&1", CLI_BIN, args);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen");
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The calls of TraceWork.b so far: dump, then calls.csv's total row. */
static double calls_now(pid_t pid, const char *dir)
{
    char a[256], out[4096], p[4200];
    snprintf(a, sizeof(a), "%d dump", (int)pid);
    ck_assert_msg(cli(a, out, sizeof(out)) == 0, "dump: %s", out);
    jt_csv c;
    snprintf(p, sizeof(p), "%s/out/calls.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &c), 0);
    double n = jt_num(row(&c, "TraceWork.b()V"), C_CALLS);
    jt_csv_free(&c);
    return n;
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

START_TEST(test_runtime)
{
    double t0 = now_s();
    char *dir = jt_tmpdir(), a[4400], out[4096], errf[4200], line[64];
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"TraceWork", "loop", "4000", NULL};
    int fd = -1;
    pid_t pid = jt_spawn(NULL, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    ck_assert_int_eq(jt_wait_line(fd, "ready", line, sizeof(line), 30), 0);
    snprintf(a, sizeof(a), "%d start -o %s/out 'trace=TraceWork.b,quiet'", (int)pid, dir);
    ck_assert_msg(cli(a, out, sizeof(out)) == 0, "start: %s", out);
    pause_s(0.5);
    snprintf(a, sizeof(a), "%d trace", (int)pid);
    ck_assert_msg(cli(a, out, sizeof(out)) == 0 && strstr(out, "tracing removed"),
                  "trace (remove): %s", out);
    double c1 = calls_now(pid, dir);
    pause_s(0.4);
    double c2 = calls_now(pid, dir);
    snprintf(a, sizeof(a), "%d trace 'TraceWork.b'", (int)pid);
    ck_assert_msg(cli(a, out, sizeof(out)) == 0 && strstr(out, "tracing TraceWork.b"),
                  "trace (add): %s", out);
    pause_s(0.4);
    double c3 = calls_now(pid, dir);
    printf("trace: at runtime %g calls traced, %g after 0.4 s removed, %g after 0.4 s again\n", c1,
           c2, c3);
    ck_assert_msg(c1 > 50 && c2 == c1 && c3 > c2 + 50,
                  "calls at runtime: %g traced, %g removed (same expected), %g added again", c1, c2,
                  c3);
    snprintf(a, sizeof(a), "%d stop", (int)pid);
    ck_assert_msg(cli(a, out, sizeof(out)) == 0, "stop: %s", out);
    ck_assert_int_eq(jt_wait_line(fd, "done", line, sizeof(line), 30), 0);
    int st = jt_wait(pid, 30);
    close(fd);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the JVM: status %d", st);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_runtime %.1f s\n", now_s() - t0);
}
END_TEST

START_TEST(test_mxbean)
{
    double t0 = now_s();
    char *dir = jt_tmpdir(), opts[4200], errf[4200], line[1024], a1[512] = "", c1[1024] = "",
         a2[512] = "", c2[1024] = "", n1[1024] = "", n2[1024] = "";
    snprintf(opts, sizeof(opts), "quiet,out=%s/out", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"TraceWork", "mx", JALEN_TEST_NATIVE, NULL};
    int fd = -1;
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    char *bufs[6] = {a1, c1, n1, a2, c2, n2};
    const char *pre[6] = {"answer", "calls", "native", "answer", "calls", "native"};
    for (int i = 0; i < 6; i++) {
        int rc = jt_wait_line(fd, pre[i], line, sizeof(line), 30);
        ck_assert_msg(rc == 0, "no '%s' line from the MXBean run (%s so far)", pre[i], a1);
        snprintf(bufs[i], i % 3 ? 1024 : 512, "%s", line);
    }
    ck_assert_int_eq(jt_wait_line(fd, "done", line, sizeof(line), 30), 0);
    int st = jt_wait(pid, 30);
    close(fd);
    printf("trace: MXBean: %s | %s | %s | %s | %s | %s\n", a1, c1, n1, a2, c2, n2);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the JVM: status %d", st);
    ck_assert_msg(strstr(a1, "jalen: tracing TraceWork.b") && strstr(a2, "tracing removed"),
                  "answers: '%s', '%s'", a1, a2);
    ck_assert_msg(!strncmp(c1, "calls: TraceWork.b()V,[all threads],0,100,", 42) &&
                      !strncmp(c2, "calls: TraceWork.b()V,[all threads],0,100,", 42),
                  "calls after adding, then removing: '%s', '%s'", c1, c2);
    /* the native's caller, loaded before: retransformed when added and
     * when removed, its 100 calls counted between them only */
    const char *nat = "native: NativeBurn.burn()V,[all threads],0,100,";
    ck_assert_msg(!strncmp(n1, nat, strlen(nat)) && !strncmp(n2, nat, strlen(nat)),
                  "native calls after adding, then removing: '%s', '%s'", n1, n2);
    jt_rmtree(dir);
    free(dir);
    printf("trace: test_mxbean %.1f s\n", now_s() - t0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, test_known_answers);
    tcase_add_test(tc, test_bad_pattern);
    tcase_add_test(tc, test_many);
    tcase_add_test(tc, test_other_jdk);
    tcase_add_test(tc, test_runtime);
    tcase_add_test(tc, test_mxbean);
    suite_add_tcase(s, tc);
    return jt_run_suite(s);
}
