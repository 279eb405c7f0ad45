/* test_live_serve.c - `powerapi serve` sampling this machine itself (its
 * own series, promtool), and a real Prometheus server, started here on
 * loopback, scraping a ring-fed exporter and answering queries with the
 * known window's exact values.  Skipped with a reason when Prometheus is
 * absent (Debian package 'prometheus'). */
#include "ring_fixture.h"
#include "testutil.h"

#include <stdarg.h>

static pid_t serve_pid, prom_pid, daemon_pid;
static int serve_out = -1;
static unsigned serve_port;
static ring_fixture rf;
static char *dir;

static void start_serve(const char *ring)
{
    char *argv[16];
    int n = 0;
    argv[n++] = CLI_PATH;
    argv[n++] = "serve";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--interval";
    argv[n++] = "200ms";
    argv[n++] = "--max-processes"; /* every process its own series */
    argv[n++] = "1000000";
    if (ring) {
        argv[n++] = "--ring";
        argv[n++] = (char *)ring;
    }
    argv[n] = NULL;
    serve_pid = rf_spawn(argv, &serve_out);
    char line[256];
    ck_assert_int_eq(rf_read_line(serve_out, line, sizeof(line), 10000), 0);
    const char *p = strstr(line, "http://127.0.0.1:");
    ck_assert_msg(p != NULL, "first line: %s", line);
    serve_port = (unsigned)strtoul(p + 17, NULL, 10);
}

static void setup(void)
{
    dir = pa_test_tmpdir();
    serve_pid = prom_pid = daemon_pid = 0;
    memset(&rf, 0, sizeof(rf));
}

static void teardown(void)
{
    if (prom_pid > 0)
        rf_stop_child(prom_pid, SIGTERM, 10000);
    if (serve_pid > 0)
        rf_stop_child(serve_pid, SIGTERM, 5000);
    if (daemon_pid > 0)
        rf_stop_child(daemon_pid, SIGTERM, 5000);
    if (serve_out >= 0)
        close(serve_out);
    serve_out = -1;
    if (rf.w)
        rf_stop(&rf);
    pa_test_rmtree(dir);
}

START_TEST(test_own_sampling)
{
    start_serve(NULL);
    char *resp = NULL;
    int st = 0;
    for (int i = 0; i < 50 && st != 200; i++) { /* 503 until a window */
        free(resp);
        resp = NULL;
        usleep(100000);
        st = rf_get(serve_port, "/metrics", &resp);
    }
    ck_assert_int_eq(st, 200);
    const char *b = rf_body(resp);
    char mine[96];
    snprintf(mine, sizeof(mine), "powerapi_process_power_watts{pid=\"%d\",comm=\"powerapi\"} ",
             (int)serve_pid);
    ck_assert_msg(strstr(b, mine) != NULL, "no series of the exporter itself:\n%s", b);
    ck_assert_ptr_nonnull(strstr(b, "powerapi_system_power_watts{component=\"cpu\"} "));
    ck_assert_ptr_nonnull(strstr(b, "powerapi_cgroup_power_watts{cgroup=\""));
    ck_assert_ptr_nonnull(strstr(b, "powerapi_info{formula=\""));
    if (system("command -v promtool >/dev/null 2>&1") == 0) {
        char path[4200], cmd[8400];
        snprintf(path, sizeof(path), "%s/m.txt", dir);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(b, f);
        fclose(f);
        snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
        char *out = NULL;
        int pst = pa_test_run(cmd, &out);
        ck_assert_msg(pst == 0, "promtool: %s", out ? out : "");
        free(out);
    } else {
        fprintf(stderr, "test_own_sampling: promtool check SKIPPED: promtool absent\n");
    }
    free(resp);
}
END_TEST

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The value of the task-clock rate of this process on a page, or -1. */
static double my_task_clock(const char *page)
{
    char pre[96];
    snprintf(pre, sizeof(pre), "powerapi_process_perf_events_per_second{pid=\"%d\",",
             (int)getpid());
    for (const char *p = strstr(page, pre); p; p = strstr(p + 1, pre)) {
        const char *nl = strchr(p, '\n');
        const char *ev = strstr(p, "event=\"perf::TASK-CLOCK\"} ");
        if (ev && (!nl || ev < nl))
            return strtod(ev + strlen("event=\"perf::TASK-CLOCK\"} "), NULL);
    }
    return -1;
}

/* `powerapi daemon --sensor perf:...` publishes perf counters; `serve
 * --ring` shows this busy process's task-clock: about 1e9 ns per second
 * of the window while it burns one CPU. */
START_TEST(test_daemon_perf_counters)
{
    pa_ctx *probe = NULL;
    ck_assert_int_eq(pa_ctx_new(&probe, NULL), 0);
    int rc = pa_module_enable(probe, "perf", "events=perf::TASK-CLOCK");
    if (rc == 0)
        rc = pa_tick(probe);
    pa_ctx_free(probe);
    if (rc < 0) {
        fprintf(stderr, "test_daemon_perf_counters: SKIPPED: perf: %s\n", pa_last_error());
        return;
    }
    char ring[64];
    snprintf(ring, sizeof(ring), "pa-test-perfserve-%d", (int)getpid());
    char *argv[] = {CLI_PATH,
                    "daemon",
                    "--ring",
                    ring,
                    "--interval",
                    "100ms",
                    "--capacity",
                    "20",
                    "-q",
                    "--sensor",
                    "procfs-cpu",
                    "--sensor",
                    "perf:events=perf::TASK-CLOCK",
                    NULL};
    int dout = -1;
    daemon_pid = rf_spawn(argv, &dout);
    close(dout);
    pa_ring_reader *r = NULL;
    rc = -ENOENT;
    for (uint64_t end = rf_now_ms() + 10000; rf_now_ms() < end;) {
        rc = pa_ring_open(ring, &r);
        if (rc != -ENOENT && rc != -EAGAIN)
            break;
        usleep(20000);
    }
    ck_assert_msg(rc == 0, "daemon's ring: %s", pa_last_error());
    pa_ring_close(r);
    start_serve(ring);
    double best = -1;
    char *resp = NULL;
    for (int i = 0; i < 20 && best < 5e8; i++) {
        double until = cpu_s() + 0.25; /* busy: one CPU */
        while (cpu_s() < until)
            ;
        free(resp);
        resp = NULL;
        if (rf_get(serve_port, "/metrics", &resp) == 200) {
            double v = my_task_clock(rf_body(resp));
            if (v > best)
                best = v;
        }
    }
    printf("daemon perf: task-clock of the busy test %.3g ns/s\n", best);
    /* a shared 2-CPU machine may give the test less than a CPU */
    ck_assert_msg(best >= 2.5e8 && best <= 1.3e9,
                  "task-clock rate %.3g ns/s (busy: ~1e9); last page:\n%s", best,
                  resp ? rf_body(resp) : "(none)");
    free(resp);
}
END_TEST

/* Queries Prometheus until the answer contains want (or 20 s pass). */
static char *prom_query_until(unsigned port, const char *query, const char *want)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/query?query=%s", query);
    char *resp = NULL;
    uint64_t end = rf_now_ms() + 20000;
    while (rf_now_ms() < end) {
        free(resp);
        resp = NULL;
        if (rf_get(port, path, &resp) == 200 && strstr(rf_body(resp), want))
            return resp;
        usleep(200000);
    }
    ck_abort_msg("Prometheus never answered %s with %s; last: %s", query, want,
                 resp ? resp : "(nothing)");
    return NULL;
}

START_TEST(test_prometheus_scrapes)
{
    if (system("command -v prometheus >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_prometheus_scrapes: SKIPPED: prometheus absent "
                        "(Debian package 'prometheus')\n");
        return;
    }
    rf_start(&rf, "prom");
    start_serve(rf.name);
    unsigned pport = rf_free_port();
    pa_test_write(dir, "prometheus.yml",
                  "global:\n"
                  "  scrape_interval: 250ms\n"
                  "  scrape_timeout: 200ms\n"
                  "scrape_configs:\n"
                  "  - job_name: powerapi\n"
                  "    static_configs:\n"
                  "      - targets: ['127.0.0.1:%u']\n",
                  serve_port);
    prom_pid = rf_start_prometheus(dir, pport);
    /* The target is up, and the values are the known window's. */
    char *r = prom_query_until(pport, "up%7Bjob%3D%22powerapi%22%7D", "\"1\"]");
    free(r);
    r = prom_query_until(pport, "powerapi_process_power_watts%7Bcomm%3D%22java%22%7D",
                         "\"4.125\"]");
    ck_assert_ptr_nonnull(strstr(r, "\"pid\":\"4242\""));
    free(r);
    r = prom_query_until(pport, "powerapi_system_power_watts%7Bcomponent%3D%22idle%22%7D",
                         "\"3\"]");
    free(r);
    r = prom_query_until(pport, "powerapi_process_energy_joules_total%7Bpid%3D%2217%22%7D",
                         "\"15\"]");
    /* The escaped label came back as it was. */
    ck_assert_ptr_nonnull(strstr(r, "\"comm\":\"we\\\"ird\\\\name\""));
    free(r);
    r = prom_query_until(pport, "powerapi_info", "\"cpu_source\":\"model\"");
    free(r);
    int st = rf_stop_child(prom_pid, SIGTERM, 10000);
    prom_pid = 0;
    ck_assert_msg(st >= 0, "prometheus did not stop on SIGTERM");
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("live_serve");
    TCase *tc = tcase_create("live_serve");
    tcase_set_timeout(tc, 90);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_own_sampling);
    tcase_add_test(tc, test_daemon_perf_counters);
    tcase_add_test(tc, test_prometheus_scrapes);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
