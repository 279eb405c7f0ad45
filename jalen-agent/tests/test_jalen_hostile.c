/*
 * test_jalen_hostile.c - the agent under hostile conditions (real JVMs):
 * thousands of short-lived threads, class unloading, System.exit while
 * sampling, SIGTERM mid-window, SIGKILL (last complete window stays), bad
 * options (the JVM runs on unprofiled after one stderr line); a SIGTRAP
 * not from the agent's clocks; the benchmark's pause hook.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jtest.h"

static char *run(const char *extra, const char *const *args, int *status)
{
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200];
    snprintf(opts, sizeof(opts), "out=%s/out,quiet%s%s", dir, extra ? "," : "", extra ? extra : "");
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    ck_assert_int_gt(pid, 0);
    *status = jt_wait(pid, 120);
    return dir;
}

static char *summary(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *s = jt_read(p);
    ck_assert_msg(s != NULL, "no summary.json");
    return s;
}

START_TEST(short_lived_threads)
{
    const char *args[] = {"Hostile", "threads", "2000", NULL};
    int st;
    char *dir = run(NULL, args, &st);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
    jt_csv th;
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    size_t shorts = 0;
    for (size_t i = 0; i < th.n; i++)
        shorts += !strncmp(th.rows[i].f[1], "short-", 6);
    fprintf(stderr, "short-lived threads in threads.csv: %zu\n", shorts);
    /* every one, also when the kernel gives a tid again (a busy host goes
     * round its 32768 tids in seconds): a row each */
    ck_assert_msg(shorts == 2000, "%zu of 2000 short-lived threads accounted", shorts);
    jt_csv_free(&th);
    char *s = summary(dir);
    ck_assert(jt_json_true(s, "complete"));
    free(s);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(class_unloading)
{
    const char *args[] = {"Hostile", "unload", JALEN_CLASSES, NULL};
    int st;
    char *dir = run("mode=cpu", args, &st);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(exit_while_sampling)
{
    /* System.exit after 1.5 s and once each of the 3 burners has used
     * 0.5 s of CPU: samples follow CPU time, not wall time (thread CPU
     * timers fire at the scheduler tick, at most 250 per CPU-second here),
     * so ~375 samples or more however loaded the host; after a fixed 1.5 s
     * the burners had 0.17 s each at load 17, 142-177 samples */
    const char *args[] = {"Hostile", "exit", "1.5", "0.5", NULL};
    int st;
    char *dir = run("interval=1ms", args, &st);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 3, "java status %d, not exit 3",
                  st);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    char *s = summary(dir);
    ck_assert(jt_json_true(s, "complete"));
    ck_assert_msg(jt_json_num(s, "samples") > 100, "samples %.0f", jt_json_num(s, "samples"));
    free(s);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

static char *start_forever(const char *extra, pid_t *pid)
{
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200], line[256];
    snprintf(opts, sizeof(opts), "out=%s/out,quiet,window=500ms%s%s", dir, extra ? "," : "",
             extra ? extra : "");
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"Hostile", "forever", NULL};
    int fd;
    *pid = jt_spawn(opts, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(*pid, 0);
    ck_assert_msg(jt_wait_line(fd, "READY", line, sizeof(line), 60) == 0, "no READY");
    close(fd);
    return dir;
}

/* SIGTERM (and SIGINT) mid-window: the JVM's orderly exit flushes. */
static void signal_mid_window(int sig)
{
    pid_t pid;
    char *dir = start_forever(NULL, &pid);
    usleep(1700000); /* 3 windows and a bit */
    kill(pid, sig);
    int st = jt_wait(pid, 60);
    ck_assert_msg(st >= 0, "JVM did not exit after signal %d", sig);
    ck_assert_msg((WIFEXITED(st) && WEXITSTATUS(st) == 128 + sig) ||
                      (WIFSIGNALED(st) && WTERMSIG(st) == sig),
                  "unexpected status %d", st);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    char *s = summary(dir);
    ck_assert_msg(jt_json_true(s, "complete"), "signal %d: last window not flushed", sig);
    ck_assert_msg(jt_json_num(s, "windows") >= 3, "windows %.0f", jt_json_num(s, "windows"));
    free(s);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(sigterm_mid_window)
{
    signal_mid_window(SIGTERM);
}
END_TEST

START_TEST(sigint_mid_window)
{
    signal_mid_window(SIGINT);
}
END_TEST

START_TEST(sigkill_keeps_last_window)
{
    pid_t pid;
    char *dir = start_forever(NULL, &pid);
    usleep(1800000);
    kill(pid, SIGKILL);
    jt_wait(pid, 30);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    char *s = summary(dir);
    ck_assert_msg(!jt_json_true(s, "complete"), "complete after SIGKILL?");
    ck_assert_msg(jt_json_num(s, "windows") >= 1, "no window written before SIGKILL");
    free(s);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* perf's clocks send SIGTRAP (signal=auto on Linux 5.13 on): a SIGTRAP
 * that is not theirs (kill -TRAP here; a breakpoint alike) still has the
 * action it had without the agent, the JVM's default: it dies of it, its
 * samples taken until then. */
START_TEST(foreign_sigtrap_keeps_its_action)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the default action dumps core */
    pid_t pid;
    char *dir = start_forever(NULL, &pid);
    usleep(1200000);
    char p[4200];
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *s = jt_read(p);
    ck_assert_msg(s, "no summary.json after 2 windows");
    if (!strstr(s, "\"signal\": \"SIGTRAP\""))
        fprintf(stderr, "note: the clocks send no SIGTRAP here (%.80s)\n", strstr(s, "\"signal\""));
    ck_assert_msg(jt_json_num(s, "samples") > 0, "no sample before the SIGTRAP");
    free(s);
    kill(pid, SIGTRAP);
    int st = jt_wait(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTRAP,
                  "a JVM sent SIGTRAP ended with status %d, not by the signal", st);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(bad_option_runs_unprofiled)
{
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200], p[4200];
    snprintf(opts, sizeof(opts), "out=%s/out,intervall=5ms", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"Hostile", "threads", "50", NULL};
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    int st = jt_wait(pid, 60);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    char *err = jt_read(errf);
    ck_assert_ptr_nonnull(err);
    ck_assert_int_eq(jt_lines(err), 1);
    ck_assert_msg(!strncmp(err, "jalen: ", 7) && strstr(err, "'intervall'") &&
                      strstr(err, "did you mean 'interval'"),
                  "stderr: %s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    ck_assert_int_ne(access(p, F_OK), 0);

    /* a bad value, and fail=abort: the JVM refuses to start */
    snprintf(opts, sizeof(opts), "out=%s/out,mode=fast,fail=abort", dir);
    pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    st = jt_wait(pid, 60);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0, "fail=abort: status %d", st);
    err = jt_read(errf);
    ck_assert_msg(err && strstr(err, "jalen: bad value 'fast' for 'mode'"), "stderr: %s", err);
    free(err);

    /* a duration without a unit (issue 31: 5 was taken as 5 s) and a bad
     * clock or signal: one line each naming the forms, fail=abort stops
     * the JVM */
    const char *bad[][2] = {{"interval=5", "jalen: bad value '5' for 'interval': no unit"},
                            {"window=2", "jalen: bad value '2' for 'window': no unit"},
                            {"clock=tsc", "jalen: bad value 'tsc' for 'clock'"},
                            {"signal=usr1", "jalen: bad value 'usr1' for 'signal'"}};
    for (int i = 0; i < 4; i++) {
        snprintf(opts, sizeof(opts), "out=%s/out,%s,fail=abort", dir, bad[i][0]);
        pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
        st = jt_wait(pid, 60);
        ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: status %d", bad[i][0],
                      st);
        err = jt_read(errf);
        ck_assert_msg(err && strstr(err, bad[i][1]), "%s: stderr: %s", bad[i][0], err);
        free(err);
    }

    /* a module libpowerapi does not know: one line, runs on */
    snprintf(opts, sizeof(opts), "out=%s/out,formula=no-such-formula", dir);
    pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    st = jt_wait(pid, 60);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    err = jt_read(errf);
    ck_assert_msg(err && jt_lines(err) == 1 && strstr(err, "no-such-formula"), "stderr: %s", err);
    free(err);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* Issue 31 item 1: a run whose threads are never sampled (interval=1s on a
 * JVM that lives 0.1 s) says so, with the reason, on its closing line and
 * in summary.json; its Java threads' energy is [unattributed], none lost. */
START_TEST(no_sample_said)
{
    char *dir = jt_tmpdir();
    char p[4200], opts[4200];
    snprintf(p, sizeof(p), "%s/err", dir);
    snprintf(opts, sizeof(opts), "out=%s/out,interval=1s", dir);
    const char *args[] = {"Hello", NULL};
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, p);
    int st = jt_wait(pid, 60);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d", st);
    char *err = jt_read(p);
    ck_assert_msg(err && strstr(err, "jalen: no stack sample in "), "stderr: %s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *sum = jt_read(p);
    ck_assert_msg(sum && strstr(sum, "\"samples_note\": \"no stack sample in ") &&
                      jt_json_num(sum, "samples") == 0 &&
                      jt_json_num(sum, "windows_without_samples") >= 1,
                  "%s", sum);
    /* the Java threads' energy is [unattributed], the JVM's own threads'
     * under their pseudo-threads: nothing lost */
    double un = jt_json_num(sum, "unattributed_energy_j");
    ck_assert_msg(un > 0 && fabs(un + jt_json_num(sum, "attributed_energy_j") -
                                 jt_json_num(sum, "process_energy_j")) < 1e-6,
                  "%s", sum);
    free(sum);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* formula= alone brings its sensors (the library's rule), disable= keeps
 * auto's NIC model out, and disabling a sensor the formula requires is one
 * line naming the formula. */
START_TEST(formula_brings_its_sensors)
{
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200];
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"Known", "1", NULL};
    snprintf(opts, sizeof(opts), "out=%s/out,quiet,formula=cpu-tdp:tdp=45W,disable=nic-linear",
             dir);
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    int st = jt_wait(pid, 100);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    char *err = jt_read(errf);
    ck_assert_msg(!err || !*err, "stderr: %s", err ? err : "");
    free(err);
    char *s = summary(dir);
    ck_assert_msg(strstr(s, "\"formula\": \"cpu-tdp\"") && strstr(s, "\"sensors\": \"procfs-cpu\""),
                  "summary: %s", s);
    ck_assert_msg(jt_json_num(s, "process_energy_j") > 0, "no energy: %s", s);
    free(s);

    snprintf(opts, sizeof(opts), "out=%s/out2,formula=cpu-tdp,disable=procfs-cpu", dir);
    pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    st = jt_wait(pid, 100);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    err = jt_read(errf);
    ck_assert_msg(err && jt_lines(err) == 1 && strstr(err, "'disable'") &&
                      strstr(err, "disable cpu-tdp first"),
                  "stderr: %s", err ? err : "");
    free(err);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* The benchmark hook: with JALEN_BENCH_PAUSE_FILE naming a file that exists
 * the whole run, the agent takes no sample and counts no socket byte, yet
 * the outputs are complete and conserve energy: the Java threads' energy
 * is all [unattributed] */
START_TEST(bench_pause_file)
{
    char *dir = jt_tmpdir();
    char pf[4200];
    snprintf(pf, sizeof(pf), "%s/paused", dir);
    FILE *f = fopen(pf, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    setenv("JALEN_BENCH_PAUSE_FILE", pf, 1);
    char opts[4096], errf[4200], p[4200];
    snprintf(opts, sizeof(opts), "mode=cpu,out=%s/out,quiet", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"Known", "2", NULL};
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, NULL, errf);
    unsetenv("JALEN_BENCH_PAUSE_FILE");
    ck_assert_int_gt(pid, 0);
    int st = jt_wait(pid, 100);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "java failed (%d)", st);
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    char *s = summary(dir);
    ck_assert(jt_json_true(s, "complete"));
    ck_assert_msg(jt_json_num(s, "samples") == 0, "%.0f samples while paused",
                  jt_json_num(s, "samples"));
    double e = jt_json_num(s, "process_energy_j");
    double attributed = jt_json_num(s, "attributed_energy_j");
    ck_assert_msg(e > 0, "no process energy");
    free(s);
    jt_csv th;
    snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    ck_assert_msg(jt_csv_sum(&th, 6) == 0, "%.0f socket bytes counted while paused",
                  jt_csv_sum(&th, 6));
    ck_assert_msg(jt_num(jt_csv_find(&th, 1, "burner"), 2) > 0.5, "burner did not run");
    /* only the pseudo-threads' energy ([GC], [VM], ...) is attributed */
    double pseudo = 0;
    for (size_t i = 0; i < th.n; i++)
        if (!strcmp(th.rows[i].f[0], "0"))
            pseudo += jt_num(&th.rows[i], 3);
    ck_assert_msg(fabs(attributed - pseudo) <= 0.005 * e,
                  "attributed %.3f J, pseudo-threads %.3f J (of %.3f J)", attributed, pseudo, e);
    jt_csv_free(&th);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_hostile");
    TCase *tc = tcase_create("hostile");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, short_lived_threads);
    tcase_add_test(tc, no_sample_said);
    tcase_add_test(tc, class_unloading);
    tcase_add_test(tc, exit_while_sampling);
    tcase_add_test(tc, sigterm_mid_window);
    tcase_add_test(tc, sigint_mid_window);
    tcase_add_test(tc, sigkill_keeps_last_window);
    tcase_add_test(tc, foreign_sigtrap_keeps_its_action);
    tcase_add_test(tc, bad_option_runs_unprofiled);
    tcase_add_test(tc, formula_brings_its_sensors);
    tcase_add_test(tc, bench_pause_file);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
