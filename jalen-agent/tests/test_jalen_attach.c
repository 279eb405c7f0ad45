/*
 * test_jalen_attach.c - jalen attached to a running JVM (issue 31 item 14):
 * `powerapi jalen PID start|status|dump|stop`, on JDK 17 and the second
 * JDK.
 *
 * Burn.java: thread "burner" spends 60/30/10 % of its CPU time in
 * burnA/burnB/burnC.  A launch-time run (-agentpath, 3 s) and a run
 * attached to a JVM that has run for 1.5 s (2.5 s of profiling, then dump)
 * give each method's inclusive share of the burner's energy; they agree
 * within 3 points, and each is 60/30/10 within 5.  A second start while
 * the first runs, status, stop (complete files, the summary on the
 * terminal), a second run in the same JVM (start after stop: its own
 * energy and duration, the files of a launch-time run, the same shares),
 * and the JVM running on to its normal end with exit 0.
 * Errors, one line each and nothing done to the target: a JVM started with
 * -XX:+DisableAttachMechanism, a process that is not a JVM (it survives:
 * no SIGQUIT), a pid that does not exist, another user's JVM.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jtest.h"

/* Runs `powerapi jalen ARGS` (a shell line after the program, "2>&1"
 * appended); its output (malloc'd) and exit status. */
static char *cli(const char *args, int *status)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s %s jalen %s 2>&1",
             getenv("PA_ATTACH_PREFIX") ? getenv("PA_ATTACH_PREFIX") : "", CLI_BIN, args);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen");
    size_t cap = 1 << 16, n = 0;
    char *out = calloc(1, cap);
    size_t r;
    while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
        n += r;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    fprintf(stderr, "[attach] $ powerapi jalen %s -> %d\n%s", args, *status, out);
    return out;
}

/* `powerapi jalen PID CMD`: exit status st, and want in what it says. */
static void expect(pid_t pid, const char *cmd, int st, const char *want)
{
    char a[256];
    int got = 0;
    snprintf(a, sizeof(a), "%d %s", (int)pid, cmd);
    char *o = cli(a, &got);
    ck_assert_msg(got == st && strstr(o, want), "%s: %d %s", cmd, got, o);
    free(o);
}

/* The inclusive shares of burnA/B/C in the burner's energy of run dir. */
static void shares(const char *dir, double s[3])
{
    char p[4200];
    jt_csv me, th;
    snprintf(p, sizeof(p), "%s/methods.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &me), 0);
    snprintf(p, sizeof(p), "%s/threads.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    const jt_row *tr = jt_csv_find(&th, 1, "burner");
    ck_assert_msg(tr != NULL, "%s: no burner thread", dir);
    double te = jt_num(tr, 3);
    static const char *const m[3] = {"Burn.burnA", "Burn.burnB", "Burn.burnC"};
    for (int i = 0; i < 3; i++) {
        const jt_row *r = jt_csv_find(&me, 0, m[i]);
        ck_assert_msg(r != NULL && te > 0, "%s: no %s", dir, m[i]);
        s[i] = 100 * jt_num(r, 2) / te;
    }
    jt_csv_free(&me);
    jt_csv_free(&th);
}

/* The files a run leaves in dir, sorted, one a line (malloc'd). */
static char *listing(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "ls -1 '%s' | sort", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen");
    char *out = calloc(1, 8192);
    size_t n = fread(out, 1, 8191, p);
    out[n] = '\0';
    pclose(p);
    return out;
}

/* start -> stop -> start -> dump -> stop in one JVM: a bad option refused
 * first, leaving the JVM unprofiled; then a second run that starts from
 * zero (its duration and windows its own, not the first run's added),
 * leaves the files of a launch-time run, complete, and gives the burner's
 * methods 60/30/10 within 5 points (the 3-point agreement with a
 * launch-time run is the first attached run's check). */
static void second_run(const char *dir, pid_t pid, const double ls[3])
{
    char a[4400], p[4200];
    int st = 0;
    /* a bad option: refused in one line, nothing started */
    snprintf(a, sizeof(a), "%d start -o %s/att2 interval=5", (int)pid, dir);
    char *o = cli(a, &st);
    int bad = st == 1 && strstr(o, "interval") && jt_lines(o) == 1;
    free(o);
    snprintf(a, sizeof(a), "%d status", (int)pid);
    o = cli(a, &st);
    ck_assert_msg(bad && st == 1 && strstr(o, "not profiling"), "after a bad start: %d %s", st, o);
    free(o);
    snprintf(a, sizeof(a), "%d start -o %s/att2 interval=1ms", (int)pid, dir);
    o = cli(a, &st);
    ck_assert_msg(st == 0 && strstr(o, "profiling pid"), "second start: %d %s", st, o);
    free(o);
    usleep(2500000);
    expect(pid, "dump", 0, "process energy");
    expect(pid, "stop", 0, "top methods");
    snprintf(p, sizeof(p), "%s/att2", dir);
    double s2[3];
    shares(p, s2);
    fprintf(stderr, "[attach %s] second run %.1f/%.1f/%.1f %% (launch %.1f/%.1f/%.1f)\n", jt_java,
            s2[0], s2[1], s2[2], ls[0], ls[1], ls[2]);
    static const double want[3] = {60, 30, 10};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(s2[i] - want[i]) <= 5, "burn%c: second run %.1f%%, want %.0f", 'A' + i,
                      s2[i], want[i]);
    /* its own run, from zero: its duration, and its windows (one a
     * second: the first run's would be counted again) */
    snprintf(p, sizeof(p), "%s/att2/summary.json", dir);
    char *sum = jt_read(p);
    ck_assert_msg(sum && jt_json_true(sum, "complete"), "second run: summary.json not complete");
    double dur = jt_json_num(sum, "duration_s"), win = jt_json_num(sum, "windows");
    ck_assert_msg(dur > 2 && dur < 5, "second run: duration_s %.2f (its own 2.5 s)", dur);
    ck_assert_msg(win >= 1 && win <= dur + 2, "second run: %.0f windows in %.1f s", win, dur);
    free(sum);
    snprintf(p, sizeof(p), "%s/out", dir);
    char *l1 = listing(p);
    snprintf(p, sizeof(p), "%s/att2", dir);
    char *l2 = listing(p);
    ck_assert_msg(!strcmp(l1, l2), "launch-time files:\n%s\nsecond run's:\n%s", l1, l2);
    free(l1);
    free(l2);
}

static void check_attach(void)
{
    char *dir = jt_tmpdir();
    const char *largs[] = {"Burn", "3", NULL};
    free(jt_run_quiet(dir, "interval=1ms", largs, 100));
    char p[4200], a[4400];
    snprintf(p, sizeof(p), "%s/out", dir);
    double ls[3], as[3];
    shares(p, ls);

    /* the same workload, attached to after 1.5 s */
    int fd = -1, st = 0;
    char line[256];
    const char *args[] = {"Burn", "11", NULL};
    snprintf(p, sizeof(p), "%s/jvm.err", dir);
    pid_t pid = jt_spawn(NULL, JALEN_CLASSES, args, &fd, p);
    ck_assert_int_eq(jt_wait_line(fd, "ready", line, sizeof(line), 60), 0);
    usleep(1500000);
    snprintf(a, sizeof(a), "%d start -o %s/att interval=1ms", (int)pid, dir);
    char *o = cli(a, &st);
    ck_assert_msg(st == 0 && strstr(o, "profiling pid"), "start: %d %s", st, o);
    free(o);
    snprintf(a, sizeof(a), "%d start", (int)pid);
    o = cli(a, &st);
    ck_assert_msg(st == 1 && strstr(o, "already profiling") && jt_lines(o) == 1,
                  "second start: %d %s", st, o);
    free(o);
    usleep(2500000);
    snprintf(a, sizeof(a), "%d status", (int)pid);
    o = cli(a, &st);
    ck_assert_msg(st == 0 && strstr(o, "attached") && jt_lines(o) == 1, "status: %d %s", st, o);
    free(o);
    expect(pid, "dump", 0, "process energy");
    snprintf(p, sizeof(p), "%s/att", dir);
    shares(p, as);
    fprintf(stderr, "[attach %s] launch %.1f/%.1f/%.1f %%, attached %.1f/%.1f/%.1f %%\n", jt_java,
            ls[0], ls[1], ls[2], as[0], as[1], as[2]);
    static const double want[3] = {60, 30, 10};
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(fabs(as[i] - ls[i]) <= 3, "burn%c: attached %.1f%%, launch %.1f%%", 'A' + i,
                      as[i], ls[i]);
        ck_assert_msg(fabs(as[i] - want[i]) <= 5 && fabs(ls[i] - want[i]) <= 5,
                      "burn%c: attached %.1f%%, launch %.1f%%, want %.0f", 'A' + i, as[i], ls[i],
                      want[i]);
    }
    snprintf(a, sizeof(a), "%d stop", (int)pid);
    o = cli(a, &st);
    ck_assert_msg(st == 0 && strstr(o, "top methods") && strstr(o, "Burn.spin"), "stop: %d %s", st,
                  o);
    free(o);
    snprintf(p, sizeof(p), "%s/att/summary.json", dir);
    char *sum = jt_read(p);
    ck_assert_msg(sum && jt_json_true(sum, "complete"), "summary.json not complete after stop");
    free(sum);
    snprintf(a, sizeof(a), "%d status", (int)pid);
    o = cli(a, &st);
    ck_assert_msg(st == 1 && strstr(o, "not profiling") && jt_lines(o) == 1,
                  "status after stop: %d %s", st, o);
    free(o);
    second_run(dir, pid, ls);
    /* detached: the JVM goes on to its end */
    ck_assert_int_eq(jt_wait_line(fd, "done", line, sizeof(line), 60), 0);
    st = jt_wait(pid, 30);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the JVM's exit: %d", st);
    close(fd);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(attach_jdk17)
{
    check_attach();
}
END_TEST

START_TEST(attach_other_jdk)
{
    if (!*JALEN_JAVA_ALT) {
        fprintf(stderr, "SKIP: no second JDK under /usr/lib/jvm at configure time\n");
        return;
    }
    jt_java = JALEN_JAVA_ALT;
    check_attach();
}
END_TEST

START_TEST(attach_refused)
{
    char *dir = jt_tmpdir();
    char p[4200], a[256], line[256];
    int fd = -1, st = 0;
    /* a JVM that accepts no attach */
    const char *args[] = {"-XX:+DisableAttachMechanism", "Burn", "30", NULL};
    snprintf(p, sizeof(p), "%s/jvm.err", dir);
    pid_t jvm = jt_spawn(NULL, JALEN_CLASSES, args, &fd, p);
    ck_assert_int_eq(jt_wait_line(fd, "ready", line, sizeof(line), 60), 0);
    snprintf(a, sizeof(a), "%d start", (int)jvm);
    char *o = cli(a, &st);
    ck_assert_msg(st == 1 && strstr(o, "DisableAttachMechanism") && jt_lines(o) == 1, "%s", o);
    free(o);
    /* another user's JVM (this one, as seen by nobody) */
    if (geteuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0) {
        setenv("PA_ATTACH_PREFIX", "setpriv --reuid=65534 --regid=65534 --clear-groups", 1);
        o = cli(a, &st);
        unsetenv("PA_ATTACH_PREFIX");
    } else {
        o = cli("1 status", &st); /* init: root's */
    }
    ck_assert_msg(st == 1 && strstr(o, "runs as user") && strstr(o, "its own user") &&
                      jt_lines(o) == 1,
                  "%s", o);
    free(o);
    kill(jvm, SIGKILL);
    jt_wait(jvm, 10);
    close(fd);
    /* a process that is not a JVM: refused, and alive (no SIGQUIT) */
    pid_t sl = fork();
    if (sl == 0) {
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    usleep(100000);
    snprintf(a, sizeof(a), "%d status", (int)sl);
    o = cli(a, &st);
    ck_assert_msg(st == 1 && strstr(o, "not a Java virtual machine") && jt_lines(o) == 1, "%s", o);
    free(o);
    ck_assert_msg(waitpid(sl, &st, WNOHANG) == 0, "the process that is not a JVM died");
    kill(sl, SIGKILL);
    waitpid(sl, &st, 0);
    /* no such process; a bad command */
    o = cli("2147483000 status", &st);
    ck_assert_msg(st == 1 && strstr(o, "no process 2147483000") && jt_lines(o) == 1, "%s", o);
    free(o);
    o = cli("1 restart", &st);
    ck_assert_msg(st == 2 && strstr(o, "unknown command 'restart'") && jt_lines(o) == 1, "%s", o);
    free(o);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_attach");
    TCase *tc = tcase_create("attach");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, attach_jdk17);
    tcase_add_test(tc, attach_other_jdk);
    tcase_add_test(tc, attach_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
