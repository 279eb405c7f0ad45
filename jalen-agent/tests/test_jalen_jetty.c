/*
 * test_jalen_jetty.c - an embedded Jetty 9 (Debian's libjetty9-java) under
 * wrk on 127.0.0.1 for 5 s with the agent: no crash, every output complete
 * and parseable, Jetty's and the handler's frames in methods.csv, socket
 * bytes counted.  Skipped (with a message) when the jars or wrk are absent.
 */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jtest.h"

/* Starts java CLASS PORT [EXTRA] under the agent with opts on cp; *port
 * is where it serves. */
static pid_t start_server(const char *opts, const char *cp, const char *cls, const char *extra,
                          const char *errf, int *fd, int *port)
{
    const char *args[] = {cls, "0", extra, NULL};
    char line[256];
    pid_t pid = jt_spawn(opts, cp, args, fd, errf);
    ck_assert_int_gt(pid, 0);
    ck_assert_msg(jt_wait_line(*fd, "READY ", line, sizeof(line), 60) == 0, "%s did not start",
                  cls);
    *port = atoi(line + 6);
    ck_assert_int_gt(*port, 0);
    return pid;
}

/* wrk ARGS against 127.0.0.1:port; the requests it completed. */
static long run_wrk(const char *dir, int port, const char *args, const char *path)
{
    char wrkout[4200], cmd[8192];
    snprintf(wrkout, sizeof(wrkout), "%s/wrk.txt", dir);
    snprintf(cmd, sizeof(cmd), "%s %s http://127.0.0.1:%d%s > %s 2>&1", JALEN_WRK, args, port, path,
             wrkout);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "wrk failed (%d)", rc);
    char *w = jt_read(wrkout);
    ck_assert_ptr_nonnull(w);
    char *req = strstr(w, " requests in ");
    ck_assert_msg(req != NULL, "wrk output: %s", w);
    while (req > w && req[-1] != ' ' && req[-1] != '\n')
        req--;
    long nreq = atol(req);
    ck_assert_msg(!strstr(w, "Non-2xx"), "errors from Jetty: %s", w);
    free(w);
    return nreq;
}

/* SIGTERM, and the server ends as a JVM does on it. */
static void stop_server(pid_t pid, int fd)
{
    ck_assert_int_eq(kill(pid, 0), 0); /* still alive: no crash */
    kill(pid, SIGTERM);
    int st = jt_wait(pid, 60);
    close(fd);
    ck_assert_msg(st >= 0 && ((WIFEXITED(st) && (WEXITSTATUS(st) == 143 || WEXITSTATUS(st) == 0)) ||
                              (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)),
                  "Jetty status %d", st);
}

static void jetty_under_wrk(const char *mode)
{
    if (!*JALEN_JETTY_CP || !*JALEN_WRK) {
        fprintf(stderr, "SKIP: Jetty jars (libjetty9-java) or wrk not found at configure time\n");
        return;
    }
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200], p[4200];
    snprintf(opts, sizeof(opts), "out=%s/out,mode=%s,filter=JettyServer+org.eclipse.", dir, mode);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    int fd, port;
    pid_t pid = start_server(opts, JALEN_JETTY_CP, "JettyServer", NULL, errf, &fd, &port);
    long nreq = run_wrk(dir, port, "-t2 -c16 -d5s", "/hello");
    fprintf(stderr, "[%s] wrk: %ld requests in 5 s\n", mode, nreq);
    ck_assert_msg(nreq > 1000, "only %ld requests", nreq);

    stop_server(pid, fd);
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

/* One HTTP/1.1 GET with an extra header line (may be ""): the response. */
static char *http_get(int port, const char *path, const char *header)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
    char req[1024];
    int n =
        snprintf(req, sizeof(req),
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", path, header);
    ck_assert_int_eq(write(s, req, (size_t)n), n);
    size_t cap = 1 << 18, len = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    ssize_t r;
    while (len < cap - 1 && (r = read(s, buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(s);
    ck_assert_msg(!strncmp(buf, "HTTP/1.1 200", 12), "GET %s (%s): %.80s", path, header, buf);
    return buf;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* EnergyFilter (jalen-api.jar) in ScopeServer: /a 3 ms of CPU a call, /b
 * 1 ms, /c/{id} 100,000 bytes, under wrk for 2 s, after requests with a
 * good traceparent and malformed ones. */
START_TEST(jetty_scopes)
{
    if (!*JALEN_JETTY_CP || !*JALEN_WRK || !*JALEN_API_JAR) {
        fprintf(stderr, "SKIP: Jetty jars, wrk or jalen-api.jar not found at configure time\n");
        return;
    }
    char *dir = jt_tmpdir();
    char opts[4096], errf[4200], p[4200], cp[8192], logf[4200];
    snprintf(opts, sizeof(opts), "out=%s/out,window=500ms", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    snprintf(cp, sizeof(cp), "%s:%s", JALEN_JETTY_CP, JALEN_API_JAR);
    snprintf(logf, sizeof(logf), "%s/requests.jsonl", dir);
    int fd, port;
    pid_t pid = start_server(opts, cp, "ScopeServer", logf, errf, &fd, &port);

    static const char good[] =
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n";
    char *r = http_get(port, "/a", good);
    const char *st = strstr(r, "Server-Timing: cpu;dur=");
    ck_assert_msg(st != NULL, "no Server-Timing: %s", r);
    double dur_ms = 0, joules = -1;
    ck_assert_int_eq(sscanf(st, "Server-Timing: cpu;dur=%lf, energy;desc=\"%lf J (estimate)\"",
                            &dur_ms, &joules),
                     2);
    ck_assert_msg(dur_ms >= 3.0 && joules >= 0, "Server-Timing %.3f ms %.6f J", dur_ms, joules);
    free(r);
    /* wrong length, upper-case hex, a zero trace id, a zero parent id,
     * unknown versions: ignored, and the request served */
    static const char *const bad[] = {
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\r\n",
        "traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\r\n",
        "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n",
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01\r\n",
        "traceparent: ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
        "traceparent: 01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
        "traceparent: zz\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        free(http_get(port, "/a", bad[i]));
    /* the OpenTelemetry stand-in got jalen.energy_j from each request */
    r = http_get(port, "/otel", "");
    ck_assert_msg(strstr(r, "\r\n\r\notel 8\n") != NULL, "otel: %s", r);
    free(r);

    char args[4400];
    snprintf(args, sizeof(args), "-t1 -c4 -d2s -s %s/../jetty/paths.lua", JALEN_JAVA_SRC);
    long nreq = run_wrk(dir, port, args, "/");
    stop_server(pid, fd);

    jt_csv c;
    snprintf(p, sizeof(p), "%s/out/scopes.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &c), 0);
    const jt_row *a = jt_csv_find(&c, 0, "GET /a"), *b = jt_csv_find(&c, 0, "GET /b"),
                 *cc = jt_csv_find(&c, 0, "GET /c/{id}"), *o = jt_csv_find(&c, 0, "GET /otel"),
                 *z = jt_csv_find(&c, 0, "GET /z");
    ck_assert_msg(a && b && cc && o && z, "scopes.csv rows GET /a, /b, /c/{id}, /otel, /z");
    double calls = jt_num(a, 1) + jt_num(b, 1) + jt_num(cc, 1) + jt_num(z, 1) - 8;
    fprintf(stderr,
            "[scopes] wrk %ld requests, scopes %.0f; J per call /a %.6f, /b %.6f (%.3f:1), /c "
            "%.6f; /c %.0f bytes a call\n",
            nreq, calls, jt_num(a, 7), jt_num(b, 7), jt_num(a, 7) / jt_num(b, 7), jt_num(cc, 7),
            jt_num(cc, 6) / jt_num(cc, 1));
    /* wrk counts the responses it read; at its end up to one request per
     * connection was served but not read */
    ck_assert_msg(calls >= nreq && calls <= nreq + 4, "%.0f calls for %ld requests", calls, nreq);
    /* each call also pays what any request costs inside the filter (Jetty's
     * dispatch, the response's sending): /z, which does nothing of its own,
     * measures it; less that, /a and /b are their spins, 3:1 */
    double own = (jt_num(a, 7) - jt_num(z, 7)) / (jt_num(b, 7) - jt_num(z, 7));
    fprintf(stderr, "[scopes] /z %.6f J a call; /a:/b less it %.3f:1\n", jt_num(z, 7), own);
    ck_assert_msg(fabs(own - 3) <= 0.15, "/a:/b per call less a request's own cost: %.3f", own);
    ck_assert_msg(jt_num(a, 7) / jt_num(b, 7) > 2 && jt_num(a, 7) / jt_num(b, 7) < 3.1,
                  "/a:/b per call %.3f", jt_num(a, 7) / jt_num(b, 7));
    /* 100,000 bytes of body and its headers a call; the calls in flight
     * when wrk stopped (one per connection at most) may have been cut */
    double nc = jt_num(cc, 1), bytes = jt_num(cc, 6);
    ck_assert_msg(bytes >= 100000 * (nc - 4) && bytes <= 100500 * nc,
                  "/c: %.0f bytes in %.0f calls", bytes, nc);

    char *log = jt_read(logf);
    ck_assert_ptr_nonnull(log);
    ck_assert_int_eq(jt_lines(log), (int)jt_csv_sum(&c, 1));
    ck_assert_int_eq(count(log, "\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\",\"span_id\":"
                                "\"00f067aa0ba902b7\""),
                     1);
    ck_assert_int_eq(count(log, "\"trace_id\":\""), 1);
    free(log);
    jt_csv_free(&c);
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *s = jt_read(p);
    double proc = jt_json_num(s, "process_energy_j"), sc = jt_json_num(s, "scoped_energy_j"),
           un = jt_json_num(s, "unscoped_energy_j");
    ck_assert_msg(fabs(sc + un - proc) <= 0.005 * proc, "scoped %g + unscoped %g vs %g", sc, un,
                  proc);
    free(s);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

/* One request through each servlet filter without a container, under
 * the agent (tests/web/FilterRun.java): the javax.servlet filter and the
 * jakarta.servlet one made from the same source, which no Debian container
 * can run. */
static void filter_run(const char *cls, const char *servlet_jar)
{
    if (!*JALEN_WEB_TEST_CLASSES || !*servlet_jar) {
        fprintf(stderr, "SKIP: %s: no servlet API jar or jalen-api.jar at configure time\n", cls);
        return;
    }
    char *dir = jt_tmpdir();
    char cp[8192], errf[4200], opts[4300], log[4300], line[512];
    snprintf(cp, sizeof(cp), "%s:%s:%s", JALEN_WEB_TEST_CLASSES, JALEN_API_JAR, servlet_jar);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    snprintf(opts, sizeof(opts), "out=%s/out,quiet", dir);
    snprintf(log, sizeof(log), "%s/requests.jsonl", dir);
    const char *args[] = {cls, log, NULL};
    int fd;
    pid_t pid = jt_spawn(opts, cp, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    int got = jt_wait_line(fd, "FILTER OK", line, sizeof(line), 60);
    int st = jt_wait(pid, 30);
    close(fd);
    char *err = jt_read(errf);
    ck_assert_msg(got == 0 && st == 0, "%s: status %d: %s", cls, st, err ? err : "");
    free(err);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(filter_javax)
{
    filter_run("FilterRun", JALEN_SERVLET_JAR);
}
END_TEST

START_TEST(filter_jakarta)
{
    filter_run("JakartaFilterRun", JALEN_JAKARTA_JAR);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_jetty");
    TCase *tc = tcase_create("jetty");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, jetty_cpu);
    tcase_add_test(tc, jetty_scopes);
    tcase_add_test(tc, filter_javax);
    tcase_add_test(tc, filter_jakarta);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
