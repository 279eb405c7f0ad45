/*
 * test_jalen_jetty.c - an embedded Jetty 9 (Debian's libjetty9-java) under
 * wrk on 127.0.0.1 for 10 s with the agent: no crash, every output complete
 * and parseable, Jetty's and the handler's frames in methods.csv, socket
 * bytes counted.  Skipped (with a message) when the jars or wrk are absent.
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

static void jetty_under_wrk(const char *mode)
{
    if (!*JALEN_JETTY_CP || !*JALEN_WRK) {
        fprintf(stderr, "SKIP: Jetty jars (libjetty9-java) or wrk not found at configure time\n");
        return;
    }
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200], line[256], p[4200];
    snprintf(opts, sizeof(opts), "out=%s/out,mode=%s,filter=JettyServer+org.eclipse.", dir, mode);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    const char *args[] = {"JettyServer", "0", NULL};
    int fd;
    pid_t pid = jt_spawn(opts, JALEN_JETTY_CP, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    ck_assert_msg(jt_wait_line(fd, "READY ", line, sizeof(line), 60) == 0, "Jetty did not start");
    int port = atoi(line + 6);
    ck_assert_int_gt(port, 0);

    char url[64], wrkout[4200], cmd[8192];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", port);
    snprintf(wrkout, sizeof(wrkout), "%s/wrk.txt", dir);
    snprintf(cmd, sizeof(cmd), "%s -t2 -c16 -d10s %s > %s 2>&1", JALEN_WRK, url, wrkout);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "wrk failed (%d)", rc);
    char *w = jt_read(wrkout);
    ck_assert_ptr_nonnull(w);
    char *req = strstr(w, " requests in ");
    ck_assert_msg(req != NULL, "wrk output: %s", w);
    while (req > w && req[-1] != ' ' && req[-1] != '\n')
        req--;
    long nreq = atol(req);
    fprintf(stderr, "[%s] wrk: %ld requests in 10 s\n", mode, nreq);
    ck_assert_msg(nreq > 1000, "only %ld requests", nreq);
    ck_assert_msg(!strstr(w, "Non-2xx"), "errors from Jetty: %s", w);
    free(w);

    ck_assert_int_eq(kill(pid, 0), 0); /* still alive: no crash */
    kill(pid, SIGTERM);
    int st = jt_wait(pid, 60);
    close(fd);
    ck_assert_msg(st >= 0 && ((WIFEXITED(st) && (WEXITSTATUS(st) == 143 || WEXITSTATUS(st) == 0)) ||
                              (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)),
                  "Jetty status %d", st);
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);

    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *s = jt_read(p);
    ck_assert(jt_json_true(s, "complete"));
    ck_assert_msg(jt_json_num(s, "net_bytes") > 1e6, "net_bytes %.0f", jt_json_num(s, "net_bytes"));
    free(s);

    jt_csv me;
    snprintf(p, sizeof(p), "%s/out/methods.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &me), 0);
    const jt_row *h = jt_csv_find(&me, 0, "JettyServer$EnergyHandler.handle");
    ck_assert_msg(h && jt_num(h, 2) > 0, "handler frame missing");
    const jt_row *ch = jt_csv_find(&me, 0, "org.eclipse.jetty.server.HttpChannel.handle");
    ck_assert_msg(ch && jt_num(ch, 2) > 0, "Jetty HttpChannel.handle frame missing");
    ck_assert_msg(jt_num(ch, 7) > 0, "no socket bytes under HttpChannel.handle");
    jt_csv_free(&me);

    /* filter=JettyServer+org.eclipse.: every row is a match or a pseudo-frame
     * of a Java stack; the pseudo-threads' energy ([GC], [JIT compiler],
     * [VM], [agent]) is under [outside filter] (issue 31 item 9) */
    jt_csv mf;
    snprintf(p, sizeof(p), "%s/out/methods-filtered.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &mf), 0);
    static const char *const pseudo_threads[] = {"[GC]", "[JIT compiler]", "[VM]", "[agent]"};
    for (size_t i = 0; i < mf.n; i++) {
        const char *m = mf.rows[i].f[0];
        ck_assert_msg(!strncmp(m, "JettyServer", 11) || !strncmp(m, "org.eclipse.", 12) ||
                          m[0] == '[',
                      "methods-filtered.csv: %s", m);
        for (size_t k = 0; k < 4; k++)
            ck_assert_msg(strcmp(m, pseudo_threads[k]) || jt_num(&mf.rows[i], 1) == 0,
                          "methods-filtered.csv: %s has self energy", m);
    }
    const jt_row *outside = jt_csv_find(&mf, 0, "[outside filter]");
    ck_assert_msg(outside && jt_num(outside, 1) > 0, "no [outside filter] energy");
    jt_csv_free(&mf);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(jetty_cpu)
{
    jetty_under_wrk("cpu");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_jetty");
    TCase *tc = tcase_create("jetty");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, jetty_cpu);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
