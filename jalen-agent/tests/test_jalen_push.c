/*
 * test_jalen_push.c - push=pyroscope=URL and push=otlp=URL (push.c): one
 * JVM pushes every second to both of tests/push_receiver.py's receivers on
 * loopback (Pyroscope's ingest API, OTLP profiles), which decode every
 * push (pprof with an energy sample type; OTLP's dictionary checked) or
 * answer 400.  What the pushes carry, summed, is the JVM's energy in its
 * summary.json: each push is the delta since the one before, none lost,
 * none counted twice.  Bad push options: one line, the JVM runs on.
 */
#include "jtest.h"

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RECEIVER JALEN_JAVA_SRC "/../../../tests/push_receiver.py"

typedef struct receiver {
    pid_t pid;
    int port;
    char out[4200];
} receiver;

static void receiver_start(receiver *r, const char *api, const char *dir)
{
    snprintf(r->out, sizeof(r->out), "%s/%s.jsonl", dir, api);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    r->pid = fork();
    ck_assert_int_ge(r->pid, 0);
    if (r->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl("/usr/bin/python3", "python3", RECEIVER, "--api", api, "--out", r->out, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[128];
    ck_assert_msg(jt_wait_line(fds[0], "port ", line, sizeof(line), 30) == 0,
                  "%s receiver did not start", api);
    close(fds[0]);
    r->port = atoi(line + 5);
}

static void receiver_stop(receiver *r)
{
    kill(r->pid, SIGTERM);
    jt_wait(r->pid, 5);
}

/* Runs python over the receiver's lines: prints "pushes errors joules". */
static void sums(const char *file, const char *api, int *pushes, int *errors, double *joules)
{
    char cmd[9000];
    snprintf(
        cmd, sizeof(cmd),
        "/usr/bin/python3 -c 'import json,sys\n"
        "n=e=0;j=0.0\n"
        "for l in open(sys.argv[1]):\n"
        "  r=json.loads(l);n+=1;e+=\"error\" in r\n"
        "  if sys.argv[2]==\"pyroscope\": j+=r.get(\"totals\",{}).get(\"energy\",0)\n"
        "  else: j+=sum(p[\"total\"] for p in r.get(\"profiles\",[]) if p[\"type\"]==\"energy\")\n"
        "print(n,e,j/1e6)' '%s' %s",
        file, api);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(fscanf(p, "%d %d %lf", pushes, errors, joules), 3);
    pclose(p);
}

START_TEST(pushes_carry_the_energy)
{
    char *dir = jt_tmpdir();
    receiver py, ot;
    receiver_start(&py, "pyroscope", dir);
    receiver_start(&ot, "otlp-profiles", dir);
    char opts[9000];
    snprintf(opts, sizeof(opts),
             "push=pyroscope=http://127.0.0.1:%d,push=otlp=http://127.0.0.1:%d,push-every=1s,"
             "push-label=team=energy,push-spool=%s/spool",
             py.port, ot.port, dir);
    const char *args[] = {"Burn", "3", NULL};
    char *summary = jt_run_quiet(dir, opts, args, 60);
    double total = jt_json_num(summary, "process_energy_j");
    receiver_stop(&py);
    receiver_stop(&ot);
    int n, bad;
    double j;
    sums(py.out, "pyroscope", &n, &bad, &j);
    printf("pyroscope: %d pushes, %.6f J; the JVM's summary %.6f J\n", n, j, total);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(total > 0.1 && fabs(j - total) <= 1e-4 * total + 1e-5, "pushed %.6f J of %.6f", j,
                  total);
    char *text = jt_read(py.out);
    ck_assert_ptr_nonnull(strstr(text, "\"app\": \"Burn\""));
    ck_assert_ptr_nonnull(strstr(text, "\"team\": \"energy\""));
    free(text);
    sums(ot.out, "otlp", &n, &bad, &j);
    printf("otlp: %d pushes, %.6f J\n", n, j);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(fabs(j - total) <= 1e-4 * total + 1e-5, "pushed %.6f J of %.6f", j, total);
    text = jt_read(ot.out);
    ck_assert_ptr_nonnull(strstr(text, "\"service.name\": \"Burn\""));
    free(text);
    free(summary);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(bad_push_options)
{
    static const char *const bad[] = {"push=ftp://x", "push=pyroscope=localhost:4040",
                                      "push-every=10ms", "push-label=team"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *dir = jt_tmpdir(), errf[4200];
        snprintf(errf, sizeof(errf), "%s/stderr", dir);
        const char *args[] = {"Hello", NULL};
        pid_t pid = jt_spawn(bad[i], JALEN_CLASSES, args, NULL, errf);
        ck_assert_int_gt(pid, 0);
        int st = jt_wait(pid, 60);
        char *err = jt_read(errf);
        ck_assert_ptr_nonnull(err);
        printf("%s: %s", bad[i], err);
        ck_assert_msg(jt_lines(err) == 1 && strstr(err, "push"), "%s: %s", bad[i], err);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the JVM did not run on", bad[i]);
        free(err);
        jt_rmtree(dir);
        free(dir);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_push");
    TCase *tc = tcase_create("push");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pushes_carry_the_energy);
    tcase_add_test(tc, bad_push_options);
    suite_add_tcase(s, tc);
    return jt_run_suite(s);
}
