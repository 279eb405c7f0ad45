/* test_live_otlp.c - `serve --otlp` and `daemon --otlp` against a real
 * OTLP/HTTP receiver on loopback (tests/push_receiver.py: Debian's protoc
 * and python3-protobuf decode what was sent, from the same vendored
 * .proto files): names, units, attributes and values of a known window
 * against its JSON records (tests/otlp_check.py), the cumulative sums
 * across a receiver stopped and restarted, a queue overflow counted, bad
 * endpoints told in one line each, and the tick's period kept while the
 * receiver hangs. */
#include "ring_fixture.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#define RECEIVER PA_SOURCE_TESTS "/push_receiver.py"
#define CHECKER PA_SOURCE_TESTS "/otlp_check.py"

static ring_fixture rf;
static char *dir;

typedef struct child {
    pid_t pid;
    int out;       /* its stdout */
    int python;    /* a receiver: ended by SIGTERM */
    char err[512]; /* its stderr, a file */
} child;

/* Starts argv (NULL-terminated) with stdout on a pipe, stderr into a file
 * of the test's folder named after tag. */
static child spawn(const char *tag, char *const argv[])
{
    child c = {0};
    snprintf(c.err, sizeof(c.err), "%s/%s.err", dir, tag);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    c.pid = fork();
    ck_assert_int_ge(c.pid, 0);
    if (c.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int e = open(c.err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(p[1], STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    c.out = p[0];
    return c;
}

/* SIGTERM; a powerapi child must then exit with status 0 (a sanitizer's
 * report of a leak makes it fail). */
static void stop(child *c)
{
    if (c->pid > 0) {
        int st = rf_stop_child(c->pid, SIGTERM, 5000);
        ck_assert_msg(st >= 0, "%s: did not stop within 5 s of SIGTERM", c->err);
        ck_assert_msg(c->python || (WIFEXITED(st) && WEXITSTATUS(st) == 0),
                      "%s: exit status %d: %s", c->err, st, pa_test_slurp(c->err));
        close(c->out);
        c->pid = 0;
    }
}

/* A receiver of api (otlp, pyroscope) on port (0: any) answering as mode says, writing
 * what it decodes to dir/<tag>.jsonl; returns its port. */
static unsigned receiver_of(const char *api, child *c, const char *tag, unsigned port,
                            const char *mode)
{
    char out[600], portarg[16];
    snprintf(out, sizeof(out), "%s/%s.jsonl", dir, tag);
    snprintf(portarg, sizeof(portarg), "%u", port);
    char *argv[] = {"/usr/bin/python3", RECEIVER, "--api",  (char *)api,  "--out", out,
                    "--port",           portarg,  "--mode", (char *)mode, NULL};
    *c = spawn(tag, argv);
    c->python = 1;
    char line[128];
    ck_assert_msg(rf_read_line(c->out, line, sizeof(line), 15000) == 0,
                  "the receiver did not start: %s", pa_test_slurp(c->err));
    ck_assert(strncmp(line, "port ", 5) == 0);
    return (unsigned)atoi(line + 5);
}

static unsigned receiver(child *c, const char *tag, unsigned port, const char *mode)
{
    return receiver_of("otlp", c, tag, port, mode);
}

/* `powerapi serve --ring <fixture> --interval 100ms --otlp URL` and more. */
static child serve(const char *tag, const char *url, ...)
{
    char *argv[32];
    int n = 0;
    argv[n++] = CLI_PATH;
    argv[n++] = "serve";
    argv[n++] = "--ring";
    argv[n++] = rf.name;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--interval";
    argv[n++] = "100ms";
    argv[n++] = "--node";
    argv[n++] = "node-1";
    argv[n++] = "--otlp";
    argv[n++] = (char *)url;
    va_list ap;
    va_start(ap, url);
    for (const char *a = va_arg(ap, const char *); a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    child c = spawn(tag, argv);
    char line[256];
    ck_assert_msg(rf_read_line(c.out, line, sizeof(line), 10000) == 0, "serve did not start: %s",
                  pa_test_slurp(c.err));
    return c;
}

static size_t lines_of(const char *tag)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s.jsonl", dir, tag);
    char *s = pa_test_slurp(path);
    size_t n = 0;
    for (char *p = s; p && *p; p++)
        n += *p == '\n';
    free(s);
    return n;
}

static void wait_lines(const char *tag, size_t n, int timeout_ms)
{
    uint64_t end = rf_now_ms() + (uint64_t)timeout_ms;
    while (lines_of(tag) < n && rf_now_ms() < end)
        usleep(20000);
    ck_assert_msg(lines_of(tag) >= n, "%s: %zu requests received, want %zu", tag, lines_of(tag), n);
}

static void check(const char *fmt, ...)
{
    char args[1500], cmd[2000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s", CHECKER, args);
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    printf("%s", out ? out : "");
    ck_assert_msg(st == 0, "%s: %s", cmd, out ? out : "");
    free(out);
}

static void setup(void)
{
    dir = pa_test_tmpdir();
    rf_start(&rf, "otlp");
}

static void teardown(void)
{
    rf_stop(&rf);
    pa_test_rmtree(dir);
}

/* Every thread of pid blocks the stop signals: SIGTERM sent to the process
 * then waits for the main thread's sigtimedwait.  (serve once started its
 * pusher before blocking them: a SIGTERM that came while the main thread
 * was busy went to the pusher and killed serve, status 15, batches lost.) */
static void threads_block_stop_signals(pid_t pid, const char *what)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "%s: %s", path, strerror(errno));
    int threads = 0;
    for (struct dirent *e; (e = readdir(d));) {
        /* the main thread's: it waits for them in sigtimedwait, which
         * unblocks them while it waits */
        if (e->d_name[0] == '.' || atoi(e->d_name) == (int)pid)
            continue;
        char st[384];
        snprintf(st, sizeof(st), "%s/%s/status", path, e->d_name);
        char *text = pa_test_slurp(st);
        if (!text)
            continue; /* a thread that ended meanwhile */
        const char *b = strstr(text, "SigBlk:");
        ck_assert_msg(b != NULL, "%s: no SigBlk", st);
        unsigned long long mask = strtoull(b + 7, NULL, 16);
        for (int sig = SIGHUP; sig <= SIGTERM; sig++)
            if (sig == SIGHUP || sig == SIGINT || sig == SIGQUIT || sig == SIGTERM)
                ck_assert_msg(mask & (1ull << (sig - 1)),
                              "%s: thread %s does not block signal %d (SigBlk %016llx): a %s sent "
                              "to the process may kill it there",
                              what, e->d_name, sig, mask, strsignal(sig));
        threads++;
        free(text);
    }
    closedir(d);
    ck_assert_msg(threads >= 1, "%s: no thread but the main one (the pusher's?)", what);
}

START_TEST(test_exact)
{
    child r, s;
    char url[128];
    unsigned port = receiver(&r, "exact", 0, "ok");
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
    /* a header from the environment too, as OpenTelemetry's SDKs take it */
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "X-Scope-OrgID=tenant%201, x-team = energy", 1);
    s = serve("serve-exact", url, "--otlp-gzip", "--otlp-header", "Authorization: Bearer t0k",
              NULL);
    unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
    wait_lines("exact", 3, 5000);
    threads_block_stop_signals(s.pid, "serve --otlp");
    stop(&s);
    stop(&r);
    char mon[600], cmd[1200];
    snprintf(mon, sizeof(mon), "%s/monitor.json", dir);
    snprintf(cmd, sizeof(cmd), "%s monitor --ring %s --format json --interval 100ms --count 3 > %s",
             CLI_PATH, rf.name, mon);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    check("exact %s/exact.jsonl %s node-1 'Authorization: Bearer t0k' 'X-Scope-OrgID: tenant 1' "
          "'x-team: energy'",
          dir, mon);
}
END_TEST

/* The receiver is killed for 2 s and started again on its port: every
 * window of the outage arrives, the sums keep their start time.  The
 * batch it wrote but was killed before answering comes again, once (at
 * least once, as OTLP's exporters deliver: fc21 saw it). */
START_TEST(test_receiver_restart)
{
    child r, s;
    char url[128];
    /* a port held for this program: nobody else takes it while the
     * receiver is down */
    unsigned port = receiver(&r, "restart", pa_test_free_port(), "ok");
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/metrics", port);
    s = serve("serve-restart", url, NULL);
    wait_lines("restart", 5, 5000);
    rf_stop_child(r.pid, SIGKILL, 1000);
    close(r.out);
    size_t before = lines_of("restart");
    usleep(2000000);
    ck_assert_uint_eq(receiver(&r, "restart", port, "ok"), port);
    /* 20 windows queued; the backoff is at most 2 s */
    wait_lines("restart", before + 25, 6000);
    stop(&s);
    stop(&r);
    check("continuity %s/restart.jsonl", dir);
    char *err = pa_test_slurp(s.err);
    ck_assert_msg(err && strstr(err, "connection refused") && strstr(err, "delivering again"),
                  "serve said: %s", err);
    free(err);
}
END_TEST

/* A queue of 3 while nobody listens: the oldest dropped, counted. */
START_TEST(test_overflow)
{
    child r, s;
    char url[128];
    unsigned port = pa_test_free_port();
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
    s = serve("serve-overflow", url, "--otlp-queue", "3", NULL);
    usleep(1500000);
    ck_assert_uint_eq(receiver(&r, "overflow", port, "ok"), port);
    wait_lines("overflow", 4, 5000);
    stop(&s);
    stop(&r);
    check("dropped %s/overflow.jsonl 5", dir);
    char *err = pa_test_slurp(s.err);
    ck_assert_msg(err && strstr(err, "queue full (3 batches): dropping the oldest"),
                  "serve said: %s", err);
    free(err);
}
END_TEST

/* Refused, TLS to plain HTTP, 404, 401, 500, 503 and a receiver that
 * hangs, all at once: one line each, saying what and what to do. */
START_TEST(test_bad_endpoints)
{
    static const struct {
        const char *tag, *mode, *scheme, *path, *want;
    } cases[] = {
        {"refused", NULL, "http", "", "connection refused: is the receiver running"},
        {"tls", "ok", "https", "", "TLS"},
        {"404", "ok", "http", "/wrong", "HTTP 404: no such path (wrong URL path?"},
        {"401", "status:401", "http", "", "HTTP 401: test receiver says no (authentication"},
        {"500", "status:500", "http", "", "HTTP 500: test receiver says no (the receiver failed"},
        {"503", "status:503", "http", "", "HTTP 503: test receiver says no (the receiver is busy"},
        {"hang", "hang", "http", "", "no answer in time: the receiver hangs"},
    };
    enum { N = sizeof(cases) / sizeof(cases[0]) };
    child r[N], s[N];
    for (int i = 0; i < N; i++) {
        unsigned port =
            cases[i].mode ? receiver(&r[i], cases[i].tag, 0, cases[i].mode) : pa_test_free_port();
        if (!cases[i].mode)
            r[i].pid = 0;
        char url[128], tag[64];
        snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", cases[i].scheme, port, cases[i].path);
        snprintf(tag, sizeof(tag), "serve-%s", cases[i].tag);
        /* a short limit for the receiver that hangs; a loaded machine's
         * handshake may take longer than that */
        s[i] =
            serve(tag, url, "--otlp-timeout", strcmp(cases[i].tag, "hang") ? "3s" : "300ms", NULL);
    }
    usleep(1500000);
    for (int i = 0; i < N; i++) {
        stop(&s[i]);
        stop(&r[i]);
        char *err = pa_test_slurp(s[i].err);
        ck_assert_ptr_nonnull(err);
        printf("%s: %s", cases[i].tag, err);
        int lines = 0; /* the failure's lines, the one at exit aside */
        for (char *p = err, *nl; *p; p = nl + 1) {
            nl = strchr(p, '\n');
            if (!nl)
                break;
            *nl = '\0';
            lines += strstr(p, "otlp: ") && !strstr(p, "not delivered at exit");
            *nl = '\n';
        }
        ck_assert_msg(err && strstr(err, cases[i].want), "%s: serve said: %s", cases[i].tag, err);
        ck_assert_msg(lines == 1, "%s: %d lines, want 1: %s", cases[i].tag, lines, err);
        free(err);
    }
}
END_TEST

/* `daemon --otlp` to a receiver that never answers: the windows in its
 * ring still come every 100 ms (read back with the ring's reader). */
START_TEST(test_tick_while_hung)
{
    child r, d;
    char url[128], ring[64];
    unsigned port = receiver(&r, "hung", 0, "hang");
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
    snprintf(ring, sizeof(ring), "pa-test-otlpd-%d", (int)getpid());
    char *argv[] = {CLI_PATH, "daemon", "--ring",         ring,  "--interval", "100ms",
                    "--otlp", url,      "--otlp-timeout", "30s", "--quiet",    NULL};
    d = spawn("daemon-hung", argv);
    pa_ring_reader *rd = NULL;
    uint64_t end = rf_now_ms() + 5000;
    while (pa_ring_open(ring, &rd) < 0 && rf_now_ms() < end)
        usleep(20000);
    ck_assert_ptr_nonnull(rd);
    uint64_t seq = 0;
    int n = 0;
    double lo = 1e9, hi = 0;
    const pa_report *rep;
    /* the first window (a sanitized build starts slowly), then 2 s */
    end = rf_now_ms() + 10000;
    while (pa_ring_read(rd, &seq, &rep) < 0 && rf_now_ms() < end)
        usleep(10000);
    threads_block_stop_signals(d.pid, "daemon --otlp");
    end = rf_now_ms() + 2000;
    while (rf_now_ms() < end) {
        if (pa_ring_read(rd, &seq, &rep) < 0) {
            usleep(10000);
            continue;
        }
        n++;
        lo = rep->interval_s < lo ? rep->interval_s : lo;
        hi = rep->interval_s > hi ? rep->interval_s : hi;
    }
    pa_ring_close(rd);
    printf("daemon with a hung receiver: %d windows in 2 s, %.3f to %.3f s each\n", n, lo, hi);
    /* a loaded machine moves a tick by tens of ms; a tick held by the push
     * would be 30 s (--otlp-timeout) */
    ck_assert_msg(n >= 12 && lo > 0.02 && hi < 0.5, "%d windows, %.3f to %.3f s", n, lo, hi);
    uint64_t t0 = rf_now_ms();
    stop(&d);
    printf("daemon stopped in %llu ms\n", (unsigned long long)(rf_now_ms() - t0));
    stop(&r);
    char *err = pa_test_slurp(d.err);
    ck_assert_msg(err && strstr(err, "batches not delivered at exit"), "daemon said: %s", err);
    free(err);
}
END_TEST

/* `powerapi profile COMMAND --push pyroscope=URL` of a shell busy for
 * seconds, with a label of its own and more arguments, its output folder
 * dir/<tag>; returns its stderr, malloc'd. */
static char *profile_push(const char *tag, unsigned port, double seconds, const char *label,
                          const char *more)
{
    char url[128], out[600], spool[600], loop[256], errpath[600], cmd[3000];
    snprintf(url, sizeof(url), "pyroscope=http://127.0.0.1:%u", port);
    snprintf(out, sizeof(out), "%s/%s", dir, tag);
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(errpath, sizeof(errpath), "%s/%s.err", dir, tag);
    /* a shell busy for the given seconds (its own clock: no child) */
    snprintf(loop, sizeof(loop),
             "s=$(date +%%s%%N); while [ $(( $(date +%%s%%N) - s )) -lt %.0f ]; do :; done",
             seconds * 1e9);
    snprintf(cmd, sizeof(cmd),
             "%s profile --quiet --window 250ms --push '%s' --push-every 1s --push-spool %s "
             "--push-label %s %s -o %s -- sh -c '%s' 2> %s",
             CLI_PATH, url, spool, label, more, out, loop, errpath);
    ck_assert_msg(pa_test_run(cmd, NULL) == 0, "%s: %s", cmd, pa_test_slurp(errpath));
    return pa_test_slurp(errpath);
}

/* Pyroscope's ingest API and OTLP profiles from one run: every push
 * decodes as pprof with the energy sample type, the labels in the name,
 * one push after another; every OTLP request's dictionary holds, energy
 * first; the energies pushed add up to the profile written at the end. */
START_TEST(test_pyroscope)
{
    child r, o;
    unsigned port = receiver_of("pyroscope", &r, "pyro", 0, "ok");
    char more[128];
    snprintf(more, sizeof(more), "--push otlp=http://127.0.0.1:%u",
             receiver_of("otlp-profiles", &o, "otlp-prof", 0, "ok"));
    free(profile_push("profile-pyro", port, 2.5, "run=a", more));
    stop(&r);
    stop(&o);
    check("pyroscope %s/pyro.jsonl %s/profile-pyro/summary.json sh run=a", dir, dir);
    check("otlp-profiles %s/otlp-prof.jsonl %s/profile-pyro/summary.json sh", dir, dir);
}
END_TEST

/* Nobody listens during a first run: its profiles stay on disk and the
 * next run, with the receiver there, sends them first. */
START_TEST(test_pyroscope_later)
{
    unsigned port = pa_test_free_port();
    char *err = profile_push("profile-down", port, 1.5, "run=down", "");
    ck_assert_msg(err && strstr(err, "connection refused") && strstr(err, "not delivered, kept in"),
                  "profile said: %s", err);
    free(err);
    child r;
    ck_assert_uint_eq(receiver_of("pyroscope", &r, "later", port, "ok"), port);
    err = profile_push("profile-up", port, 0.5, "run=up", "");
    ck_assert_msg(err && strstr(err, "of an earlier run found in"), "profile said: %s", err);
    free(err);
    stop(&r);
    check("pyroscope %s/later.jsonl %s/profile-down/summary.json sh run=down", dir, dir);
}
END_TEST

/* A command with C scopes (DESIGN.md section 15.1): 6 ms in "a" and 2 ms
 * in "b" by turns, for 1.5 s. */
static const char scoped_c[] =
    "#include <powerapi.h>\n"
    "#include <time.h>\n"
    "static volatile double sink;\n"
    "static double now(clockid_t c) {\n"
    "    struct timespec t;\n"
    "    clock_gettime(c, &t);\n"
    "    return t.tv_sec + t.tv_nsec * 1e-9;\n"
    "}\n"
    "static void burn(double s) {\n"
    "    double end = now(CLOCK_THREAD_CPUTIME_ID) + s;\n"
    "    while (now(CLOCK_THREAD_CPUTIME_ID) < end)\n"
    "        for (int i = 0; i < 10000; i++) sink += i * 0.5;\n"
    "}\n"
    "int main(void) {\n"
    "    pa_ctx *ctx;\n"
    "    if (pa_ctx_new(&ctx, NULL) < 0) return 1;\n"
    "    for (double end = now(CLOCK_MONOTONIC) + 1.5; now(CLOCK_MONOTONIC) < end;) {\n"
    "        pa_scope_begin(ctx, \"a\"); burn(0.006); pa_scope_end(ctx, \"a\", NULL);\n"
    "        pa_scope_begin(ctx, \"b\"); burn(0.002); pa_scope_end(ctx, \"b\", NULL);\n"
    "    }\n"
    "    pa_ctx_free(ctx);\n"
    "    return 0;\n"
    "}\n";

/* The scopes as labels: each pushed sample taken inside a scope carries
 * scope=NAME, a pprof label for Pyroscope and a sample attribute in OTLP. */
START_TEST(test_scope_labels)
{
    char path[600], cmd[3000];
    snprintf(path, sizeof(path), "%s/scoped.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(scoped_c, f);
    fclose(f);
#ifdef PA_SANITIZE_BUILD
    const char *san = "-fsanitize=address,undefined";
#else
    const char *san = "";
#endif
    snprintf(cmd, sizeof(cmd),
             "cd %s && cc -O1 %s -I'%s/../libpowerapi/include' -o scoped scoped.c -L'%s' "
             "-lpowerapi -Wl,-rpath,'%s'",
             dir, san, PA_SOURCE_TESTS, PA_BINARY_DIR, PA_BINARY_DIR);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    child r, o;
    unsigned py = receiver_of("pyroscope", &r, "scope-pyro", 0, "ok");
    unsigned ot = receiver_of("otlp-profiles", &o, "scope-otlp", 0, "ok");
    snprintf(cmd, sizeof(cmd),
             "%s profile --quiet --window 250ms --push pyroscope=http://127.0.0.1:%u --push "
             "otlp=http://127.0.0.1:%u --push-every 1s --push-spool %s/spool -o %s/p -- %s/scoped",
             CLI_PATH, py, ot, dir, dir, dir);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 0);
    stop(&r);
    stop(&o);
    check("scopes %s/scope-pyro.jsonl %s/scope-otlp.jsonl a b", dir, dir);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import google.protobuf' "
               "2>/dev/null && command -v protoc >/dev/null") != 0) {
        printf("test_live_otlp: skipped: needs Debian's python3-protobuf and protobuf-compiler "
               "(scripts/deps.sh)\n");
        return 0;
    }
    Suite *s = suite_create("otlp");
    TCase *tc = tcase_create("otlp");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_exact);
    tcase_add_test(tc, test_receiver_restart);
    tcase_add_test(tc, test_overflow);
    tcase_add_test(tc, test_bad_endpoints);
    tcase_add_test(tc, test_tick_while_hung);
    tcase_add_test(tc, test_pyroscope);
    tcase_add_test(tc, test_pyroscope_later);
    tcase_add_test(tc, test_scope_labels);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
