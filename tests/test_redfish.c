/*
 * test_redfish.c - the redfish sensor against a BMC's Redfish service on
 * loopback (tests/redfish_standin.py: DMTF's public-rackmount1 mockup over
 * HTTPS with a test CA, Basic authentication; one service for every case,
 * started once), with the platform formula on the 2-socket server fixture
 * (issue 46; DESIGN.md section 19): the known answer through Redfish (a
 * reading of 150 W with RAPL at 45 W leaves 105 W), EnvironmentMetrics and
 * the older Power resource, wrong credentials, a credentials file others
 * may read, an unknown CA and insecure=1, a failing BMC, and a slow BMC
 * that never stalls the tick.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define TOL 1e-6

static char *svc_dir; /* the stand-in's folder: port, ca.pem, credentials */
static char base[128], ca[512], cred[512];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bench {
    char *root;
    pa_ctx *ctx;
    uint64_t t_ns;
    unsigned long long pkg0;
    unsigned long busy, u100;
} bench;

/* The server fixture with procfs-cpu, rapl, rapl-share, the redfish
 * sensor with opts (its url= and credentials= first) and platform. */
static int bench_open(bench *b, const char *prefix, const char *opts, const char *credfile)
{
    memset(b, 0, sizeof(*b));
    b->root = pa_test_fixture_copy("rapl-server2s");
    b->ctx = pa_test_ctx(b->root);
    b->pkg0 = 100000000;
    b->busy = 100000;
    b->u100 = 1200;
    ck_assert_int_eq(pa_module_enable(b->ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(b->ctx, "rapl", NULL), 0);
    ck_assert_int_eq(pa_module_enable(b->ctx, "rapl-share", NULL), 0);
    ck_assert_int_eq(pa_module_enable(b->ctx, "platform", "split=cpu"), 0);
    ck_assert_int_eq(pa_watch_all(b->ctx, 1), 0);
    char o[2048];
    /* opts first: the first of a key wins */
    snprintf(o, sizeof(o), "%s%surl=%s%s,credentials=%s,cacert=%s,period=0.2,timeout=1", opts,
             opts[0] ? "," : "", base, prefix, credfile ? credfile : cred, ca);
    return pa_module_enable(b->ctx, "redfish", o);
}

/* One 1 s window of the fixture's clock: 2 of 4 CPU-s busy, web 1.2 s,
 * 45 J on package 0; returns the tick's wall time. */
static double bench_step(bench *b)
{
    b->busy += 200;
    b->u100 += 120;
    b->pkg0 += 45000000;
    pa_test_write(b->root, "proc/stat",
                  "cpu  %lu 0 0 300000 0 0 0 0 0 0\ncpu0 %lu 0 0 75000 0 0 0 0 0 0\n"
                  "cpu1 %lu 0 0 75000 0 0 0 0 0 0\ncpu2 %lu 0 0 75000 0 0 0 0 0 0\n"
                  "cpu3 %lu 0 0 75000 0 0 0 0 0 0\nintr 0\nctxt 1\nbtime 1732200000\n",
                  b->busy, b->busy / 4, b->busy / 4, b->busy / 4, b->busy / 4);
    pa_test_write(b->root, "proc/100/stat",
                  "100 (web) R 1 100 100 0 -1 4194560 100 0 0 0 %lu 0 0 0 20 0 1 0 40100 "
                  "17530880 1043 18446744073709551615 0 0 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n",
                  b->u100);
    pa_test_write(b->root, "sys/class/powercap/intel-rapl:0/energy_uj", "%llu\n", b->pkg0);
    b->t_ns += NS_PER_S;
    double t0 = now_s();
    pa_tick_at(b->ctx, b->t_ns);
    return now_s() - t0;
}

static void bench_close(bench *b)
{
    pa_ctx_free(b->ctx);
    pa_test_rmtree(b->root);
}

/* The redfish module's last failure ("" none). */
static void module_why(pa_ctx *ctx, char *out, size_t len)
{
    pa_module_info mi;
    ck_assert_int_eq(pa_module_get(ctx, "redfish", &mi), 0);
    snprintf(out, len, "%s", mi.why);
}

/* Ticks (10 ms of real time apart) until the report has a wall reading
 * (its watts, the report in *out) or the module failed (-1, why in
 * *why), at most 15 s (a first TLS handshake is slow under valgrind). */
static double wall_w(bench *b, pa_report **out, char *why, size_t len)
{
    for (double t0 = now_s(); now_s() - t0 < 15;) {
        bench_step(b);
        pa_report *r = NULL;
        if (pa_report_get(b->ctx, &r) == 0) {
            for (size_t i = 0; i < r->ndevices; i++)
                if (!strcmp(r->devices[i].component, "wall")) {
                    double w = r->devices[i].power_w;
                    *out = r;
                    return w;
                }
            pa_report_free(r);
        }
        module_why(b->ctx, why, len);
        if (why[0])
            return -1;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

/* The known answer through Redfish: EnvironmentMetrics reading 150 W,
 * RAPL 45 W: platform 105 W, the machine's total the wall's. */
START_TEST(known_answer_over_https)
{
    char why[512];
    bench b;
    ck_assert_int_eq(bench_open(&b, "/watts/150", "", NULL), 0);
    pa_report *r = NULL;
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), 150, TOL);
    ck_assert_double_eq_tol(r->system.cpu_w, 45, TOL);
    ck_assert_double_eq_tol(r->system.total_w, 150, TOL);
    for (size_t k = 0; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "platform"))
            ck_assert_double_eq_tol(r->system_component_w[k], 105, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "redfish: /redfish/v1/Chassis/1U/EnvironmentMetrics"));
    ck_assert_ptr_nonnull(strstr(r->assumed, "PowerWatts.Reading"));
    pa_report_free(r);
    bench_close(&b);
}
END_TEST

/* The mockup as it is (374 W), a chassis that links only the older Power
 * resource (PowerControl[0].PowerConsumedWatts, 344 W), and one with only
 * a PowerSubsystem. */
START_TEST(mockup_resources)
{
    bench b;
    pa_report *r = NULL;
    char why[512];
    ck_assert_int_eq(bench_open(&b, "", "", NULL), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), 374, TOL);
    pa_report_free(r);
    bench_close(&b);
    ck_assert_int_eq(bench_open(&b, "/legacy", "", NULL), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), 344, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "PowerControl.0.PowerConsumedWatts"));
    pa_report_free(r);
    bench_close(&b);
    /* a chassis with only a PowerSubsystem: its supplies' input power
     * (the mockup's Bay1 gives 937.4 W, Bay2 no Metrics) */
    ck_assert_int_eq(bench_open(&b, "/psu", "", NULL), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), 937.4, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "1 power supplies' InputPowerWatts summed"));
    pa_report_free(r);
    bench_close(&b);
}
END_TEST

/* Wrong credentials: no reading, the module says HTTP 401 and the fix; a
 * credentials file others may read is refused at enable. */
START_TEST(credentials)
{
    char *d = pa_test_tmpdir(), wrong[512], why[512];
    snprintf(wrong, sizeof(wrong), "%s/cred", d);
    pa_test_write(d, "cred", "powerapi:wrong\n");
    ck_assert_int_eq(chmod(wrong, 0644), 0);
    bench b;
    ck_assert_int_eq(bench_open(&b, "", "", wrong), -EPERM);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "chmod 600"));
    bench_close(&b);
    ck_assert_int_eq(chmod(wrong, 0600), 0);
    ck_assert_int_eq(bench_open(&b, "", "", wrong), 0);
    pa_report *r = NULL;
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), -1, TOL);
    ck_assert_msg(strstr(why, "HTTP 401") && strstr(why, "credentials"), "%s", why);
    bench_close(&b);
    pa_test_rmtree(d);
}
END_TEST

/* The test CA not given: the certificate is refused and the fix named;
 * insecure=1 reads it and says the certificate was not checked. */
START_TEST(certificates)
{
    bench b;
    char why[512];
    pa_report *r = NULL;
    ck_assert_int_eq(bench_open(&b, "", "", NULL), 0);
    bench_close(&b);
    char o[64];
    snprintf(o, sizeof(o), "insecure=1");
    ck_assert_int_eq(bench_open(&b, "/watts/200", o, NULL), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), 200, TOL);
    ck_assert_ptr_nonnull(strstr(r->assumed, "certificate not checked (insecure=1)"));
    pa_report_free(r);
    bench_close(&b);
    /* no cacert: the system's CAs do not know the test CA */
    memset(&b, 0, sizeof(b));
    b.root = pa_test_fixture_copy("rapl-server2s");
    b.ctx = pa_test_ctx(b.root);
    ck_assert_int_eq(pa_module_enable(b.ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(b.ctx, "platform", NULL), 0);
    char opts[8192];
    /* loading the system CAs is slow under valgrind: a long timeout */
    snprintf(opts, sizeof(opts), "url=%s,credentials=%s,period=0.2,timeout=10", base, cred);
    ck_assert_int_eq(pa_module_enable(b.ctx, "redfish", opts), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), -1, TOL);
    ck_assert_msg(strstr(why, "cacert=FILE") != NULL, "%s", why);
    bench_close(&b);
}
END_TEST

/* http-meter on the same service: a smart plug's JSON (Tasmota's path)
 * and a PDU outlet's Prometheus series in mW (scale=0.001), each 150 W
 * with RAPL at 45 W: platform 105 W; a path that is absent is named. */
START_TEST(http_meter)
{
    const char *cases[][2] = {
        {"/plug/150", "path=StatusSNS.ENERGY.Power"},
        {"/metrics/150000", "metric=pdu_outlet_power_watts{outlet=\"3\"},scale=0.001"},
        {"/plug/150", "path=StatusSNS.ENERGY.Watts"}};
    for (int c = 0; c < 3; c++) {
        bench b;
        memset(&b, 0, sizeof(b));
        b.root = pa_test_fixture_copy("rapl-server2s");
        b.ctx = pa_test_ctx(b.root);
        b.pkg0 = 100000000;
        b.busy = 100000;
        b.u100 = 1200;
        ck_assert_int_eq(pa_module_enable(b.ctx, "procfs-cpu", NULL), 0);
        ck_assert_int_eq(pa_module_enable(b.ctx, "rapl", NULL), 0);
        ck_assert_int_eq(pa_module_enable(b.ctx, "rapl-share", NULL), 0);
        ck_assert_int_eq(pa_module_enable(b.ctx, "platform", NULL), 0);
        char o[2048], why[512] = "";
        snprintf(o, sizeof(o), "url=%s%s,%s,credentials=%s,cacert=%s,period=0.2", base, cases[c][0],
                 cases[c][1], cred, ca);
        int rc = pa_module_enable(b.ctx, "http-meter", o);
        ck_assert_msg(rc == 0, "%s", pa_last_error());
        pa_report *r = NULL;
        double w = -1;
        for (double t0 = now_s(); now_s() - t0 < 15 && w < 0 && !why[0];) {
            bench_step(&b);
            if (pa_report_get(b.ctx, &r) < 0)
                continue; /* the first tick only primes */
            for (size_t i = 0; i < r->ndevices; i++)
                if (!strcmp(r->devices[i].component, "wall"))
                    w = r->devices[i].power_w;
            for (size_t k = 0; w >= 0 && k < r->ncomponents; k++)
                if (!strcmp(r->component_names[k], "platform"))
                    ck_assert_double_eq_tol(r->system_component_w[k], 105, TOL);
            pa_report_free(r);
            pa_module_info mi;
            ck_assert_int_eq(pa_module_get(b.ctx, "http-meter", &mi), 0);
            snprintf(why, sizeof(why), "%s", mi.why);
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        }
        if (c < 2)
            ck_assert_msg(fabs(w - 150) < TOL, "%s: %g W (%s)", cases[c][0], w, why);
        else
            ck_assert_msg(strstr(why, "StatusSNS.ENERGY.Watts absent"), "%s", why);
        bench_close(&b);
    }
}
END_TEST

/* A failing BMC (HTTP 500) is named; a slow one (3 s an answer, timeout
 * 0.4 s) never stalls a tick: every tick returns in under 100 ms while the
 * poll hangs, and the module then says it timed out. */
START_TEST(failing_and_slow_bmc)
{
    bench b;
    char why[512];
    pa_report *r = NULL;
    ck_assert_int_eq(bench_open(&b, "/fail", "", NULL), 0);
    ck_assert_double_eq_tol(wall_w(&b, &r, why, sizeof(why)), -1, TOL);
    ck_assert_msg(strstr(why, "HTTP 500") != NULL, "%s", why);
    bench_close(&b);
    ck_assert_int_eq(bench_open(&b, "/slow", "timeout=0.4", NULL), 0);
    double worst = 0, t0 = now_s();
    why[0] = '\0';
    /* until the module says the request timed out (0.4 s), at most 15 s */
    while (now_s() - t0 < 15 && !why[0]) {
        double t = bench_step(&b);
        worst = t > worst ? t : worst;
        module_why(b.ctx, why, sizeof(why));
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    printf("slow BMC: longest tick %.1f ms over %.2f s\n", worst * 1e3, now_s() - t0);
    ck_assert_msg(worst < 0.1, "a tick took %.3f s", worst);
    ck_assert_msg(strstr(why, "timeout=") != NULL, "%s", why);
    bench_close(&b);
}
END_TEST

int main(void)
{
    double t0 = now_s();
    /* outside a test case: no ck_ call (pa_test_tmpdir, pa_test_run) */
    char tmpl[] = "/tmp/pa-redfish-XXXXXX", cmd[8192], port[32] = "";
    svc_dir = mkdtemp(tmpl) ? strdup(tmpl) : NULL;
    snprintf(cmd, sizeof(cmd), "python3 '%s/redfish_standin.py' '%s/svc'", PA_SOURCE_TESTS,
             svc_dir ? svc_dir : "");
    FILE *p = svc_dir ? popen(cmd, "r") : NULL;
    if (!p || !fgets(port, sizeof(port), p) || pclose(p) != 0 || atoi(port) <= 0) {
        printf("test_redfish: the stand-in did not start (python3 and openssl needed)\n");
        return 1;
    }
    snprintf(base, sizeof(base), "https://127.0.0.1:%d", atoi(port));
    snprintf(cred, sizeof(cred), "%s/svc/credentials", svc_dir);
    snprintf(ca, sizeof(ca), "%s/svc/ca.pem", svc_dir);
    Suite *s = suite_create("redfish");
    TCase *tc = tcase_create("redfish");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, known_answer_over_https);
    tcase_add_test(tc, mockup_resources);
    tcase_add_test(tc, credentials);
    tcase_add_test(tc, certificates);
    tcase_add_test(tc, failing_and_slow_bmc);
    tcase_add_test(tc, http_meter);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    char pidf[4300];
    snprintf(pidf, sizeof(pidf), "%s/svc/pid", svc_dir);
    char *pid = pa_test_slurp(pidf);
    if (pid && atoi(pid) > 0)
        kill(atoi(pid), SIGTERM);
    free(pid);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", svc_dir);
    if (system(cmd) != 0)
        rc = 1;
    free(svc_dir);
    printf("test_redfish: %.2f s\n", now_s() - t0);
    return rc;
}
