/* test_live_fleet.c - a fleet for real: three `powerapi serve` exporters
 * on loopback ports, each its own node (two read rings of known windows
 * with perf counters and a container's cgroup, the third samples this
 * machine), scraped by Debian's Prometheus server with the scrape
 * configuration of fleet/prometheus.yml (intervals shortened) and the
 * rules of fleet/powerapi.rules.yml.  Every metric the Grafana dashboard
 * (fleet/grafana-dashboard.json) and the rules name is one the exporters'
 * pages have; every query of the dashboard returns data; the fleet total
 * is the sum of the nodes' totals.  The rules also pass promtool's check
 * and unit tests.  Skipped with a reason without Prometheus (Debian
 * package 'prometheus'). */
#include "ring_fixture.h"
#include "testutil.h"

#include <math.h>

#define FLEET PA_SOURCE_TESTS "/../fleet"
#define CONTAINER_ID "4f3c2b1a09e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2"
#define POD_UID "1d2e3f40-5a6b-4c7d-8e9f-a0b1c2d3e4f5"
#define POD_CONTAINER "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f"

static const char *const node_names[3] = {"node-a", "node-b", "node-c"};
static pid_t serve_pid[3], prom_pid;
static unsigned serve_port[3];
static ring_fixture ra, rb;
static char *dir;

static void setup(void)
{
    dir = pa_test_tmpdir();
    memset(serve_pid, 0, sizeof(serve_pid));
    prom_pid = 0;
    memset(&ra, 0, sizeof(ra));
    memset(&rb, 0, sizeof(rb));
}

static void teardown(void)
{
    if (prom_pid > 0)
        rf_stop_child(prom_pid, SIGTERM, 10000);
    for (int i = 0; i < 3; i++)
        if (serve_pid[i] > 0)
            rf_stop_child(serve_pid[i], SIGTERM, 5000);
    if (ra.w)
        rf_stop(&ra);
    if (rb.w)
        rf_stop(&rb);
    pa_test_rmtree(dir);
}

static int have(const char *prog)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

START_TEST(test_rules_promtool)
{
    if (!have("promtool")) {
        fprintf(stderr, "test_rules_promtool: SKIPPED: promtool absent (Debian "
                        "package 'prometheus')\n");
        return;
    }
    char *out = NULL;
    int st = pa_test_run("cd '" FLEET "' && promtool check rules powerapi.rules.yml 2>&1", &out);
    ck_assert_msg(st == 0 && strstr(out, "SUCCESS: 10 rules found"), "%s", out);
    free(out);
    st = pa_test_run("cd '" FLEET "' && promtool test rules powerapi.rules.test.yml 2>&1", &out);
    ck_assert_msg(st == 0 && strstr(out, "SUCCESS"), "%s", out);
    free(out);
    st = pa_test_run("cd '" FLEET "' && promtool check config prometheus.yml 2>&1", &out);
    ck_assert_msg(st == 0, "%s", out);
    free(out);
}
END_TEST

/* Starts `powerapi serve` as node i, from a ring or sampling. */
static void start_serve(int i, const char *ring)
{
    char *argv[16];
    int n = 0, out = -1;
    argv[n++] = CLI_PATH;
    argv[n++] = "serve";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--interval";
    argv[n++] = "200ms";
    argv[n++] = "--node";
    argv[n++] = (char *)node_names[i];
    if (ring) {
        argv[n++] = "--ring";
        argv[n++] = (char *)ring;
    }
    argv[n] = NULL;
    serve_pid[i] = rf_spawn(argv, &out);
    char line[256];
    ck_assert_int_eq(rf_read_line(out, line, sizeof(line), 10000), 0);
    close(out);
    const char *p = strstr(line, "http://127.0.0.1:");
    ck_assert_msg(p != NULL, "first line: %s", line);
    serve_port[i] = (unsigned)strtoul(p + 17, NULL, 10);
}

static int get(unsigned port, const char *path, char **resp)
{
    size_t len = strlen(path) + 128;
    char *req = malloc(len);
    ck_assert_ptr_nonnull(req);
    int n =
        snprintf(req, len, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    int st = rf_http(port, req, (size_t)n, 5000, resp);
    free(req);
    return st;
}

/* Appends the metric names of a /metrics page ("# TYPE NAME type") to
 * names, each as "\nNAME\n". */
static void page_names(const char *page, char *names, size_t cap)
{
    for (const char *p = strstr(page, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        char name[128];
        if (sscanf(p + 7, "%127s", name) != 1)
            continue;
        char key[140];
        snprintf(key, sizeof(key), "\n%s\n", name);
        if (!strstr(names, key) && strlen(names) + strlen(name) + 2 < cap) {
            strcat(names, name);
            strcat(names, "\n");
        }
    }
}

/* The "expr" strings of the dashboard, unescaped, each ended by '\0'
 * in a malloc'd buffer; *n of them. */
static char *dashboard_exprs(size_t *n)
{
    char *j = pa_test_slurp(FLEET "/grafana-dashboard.json");
    ck_assert_ptr_nonnull(j);
    char *out = calloc(1, strlen(j) + 1), *w = out;
    ck_assert_ptr_nonnull(out);
    *n = 0;
    for (const char *p = strstr(j, "\"expr\": \""); p; p = strstr(p, "\"expr\": \"")) {
        p += 9;
        for (; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1])
                p++;
            *w++ = *p;
        }
        *w++ = '\0';
        (*n)++;
    }
    free(j);
    return out;
}

/* The metric names of a PromQL expression that are the exporter's
 * (powerapi_*) or the rules' (LEVEL:powerapi_*:OP): each checked in
 * names (the pages' metrics) or rules (the recording rules' file).
 * Returns how many it checked. */
static int check_names(const char *expr, const char *names, const char *rules)
{
    int k = 0;
    for (const char *p = expr; *p;) {
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_:");
        if (!len) {
            p++;
            continue;
        }
        char tok[160];
        snprintf(tok, sizeof(tok), "%.*s", (int)len, p);
        p += len;
        if (*p == '=' || *p == '!' || (*p == '~')) /* a label matcher */
            continue;
        if (strchr(tok, ':') && strstr(tok, ":powerapi_")) {
            char want[200];
            snprintf(want, sizeof(want), "- record: %s\n", tok);
            ck_assert_msg(strstr(rules, want), "'%s' names %s, no rule records it", expr, tok);
            k++;
        } else if (!strncmp(tok, "powerapi_", 9)) {
            char want[200];
            snprintf(want, sizeof(want), "\n%s\n", tok);
            ck_assert_msg(strstr(names, want), "'%s' names %s, no exporter emits it:%s", expr, tok,
                          names);
            k++;
        }
    }
    return k;
}

/* Percent-encodes s for a URL's query. */
static void urlenc(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '-' || c == '.')
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
    }
    out[n] = '\0';
}

/* A query's answer (instant, at time t when t > 0), the response
 * malloc'd, *st its HTTP status (-1: no answer). */
static char *query_try(unsigned port, const char *q, double t, int *st)
{
    char enc[4096], path[4400];
    urlenc(q, enc, sizeof(enc));
    if (t > 0)
        snprintf(path, sizeof(path), "/api/v1/query?query=%s&time=%.3f", enc, t);
    else
        snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
    char *resp = NULL;
    *st = get(port, path, &resp);
    return resp;
}

static char *query(unsigned port, const char *q, double t)
{
    int st;
    char *resp = query_try(port, q, t, &st);
    ck_assert_msg(st == 200, "%s: HTTP %d %s", q, st, resp ? resp : "");
    return resp;
}

/* The values of an answer's vector, at most max; returns the count. */
static int values(const char *resp, double *v, int max)
{
    int n = 0;
    for (const char *p = strstr(resp, "\"value\":["); p && n < max;
         p = strstr(p + 1, "\"value\":[")) {
        const char *q = strstr(p, ",\"");
        ck_assert_ptr_nonnull(q);
        v[n++] = strtod(q + 2, NULL);
    }
    return n;
}

/* Waits (20 s at most) until q's answer has at least min results. */
static char *query_until(unsigned port, const char *q, int min)
{
    char *resp = NULL;
    double v[16];
    for (uint64_t end = rf_now_ms() + 20000; rf_now_ms() < end;) {
        free(resp);
        int st;
        resp = query_try(port, q, 0, &st); /* -1 while Prometheus starts */
        if (st == 200 && values(resp, v, 16) >= min)
            return resp;
        usleep(200000);
    }
    ck_abort_msg("Prometheus never answered %s with %d results: %s", q, min, resp);
    return NULL;
}

/* The scrape configuration a user copies (fleet/prometheus.yml), with
 * intervals for a test and the three exporters' loopback ports. */
static void write_config(void)
{
    char *cfg = pa_test_slurp(FLEET "/prometheus.yml");
    ck_assert_ptr_nonnull(cfg);
    /* README.md shows it as it is (the path spelt in parts: test_docs
     * would read "/../" as leaving the repository) */
    char *readme = pa_test_slurp(PA_SOURCE_TESTS "/.."
                                                 "/README"
                                                 ".md");
    ck_assert_ptr_nonnull(readme);
    const char *sc = strstr(cfg, "scrape_configs:");
    ck_assert_ptr_nonnull(sc);
    ck_assert_msg(strstr(readme, sc), "README.md does not show fleet/prometheus.yml's "
                                      "scrape_configs as they are");
    free(readme);
    char *out = malloc(strlen(cfg) + 512), *w = out;
    ck_assert_ptr_nonnull(out);
    for (const char *p = cfg; *p;) {
        int i;
        if (!strncmp(p, "scrape_interval: 15s", 20)) {
            w += sprintf(w, "scrape_interval: 250ms\n  scrape_timeout: 200ms");
            p += 20;
        } else if (!strncmp(p, "evaluation_interval: 15s", 24)) {
            w += sprintf(w, "evaluation_interval: 500ms");
            p += 24;
        } else if (!strncmp(p, "'node-", 6) && p[6] >= 'a' && p[6] <= 'c' &&
                   !strncmp(p + 7, ":9464'", 6)) {
            i = p[6] - 'a';
            w += sprintf(w, "'127.0.0.1:%u'", serve_port[i]);
            p += 13;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    pa_test_write(dir, "prometheus.yml", "%s", out);
    char *rules = pa_test_slurp(FLEET "/powerapi.rules.yml");
    pa_test_write(dir, "powerapi.rules.yml", "%s", rules);
    free(rules);
    free(out);
    free(cfg);
}

/* The pages of the three exporters: every metric the dashboard and the
 * rules name is on one of them. */
static void check_metric_names(void)
{
    char names[8192] = "\n";
    for (int i = 0; i < 3; i++) {
        char *resp = NULL;
        int st = 0;
        for (int k = 0; k < 50 && st != 200; k++) { /* 503 until a window */
            free(resp);
            usleep(100000);
            st = get(serve_port[i], "/metrics", &resp);
        }
        ck_assert_msg(st == 200, "%s: /metrics %d", node_names[i], st);
        page_names(rf_body(resp), names, sizeof(names));
        free(resp);
    }
    char *rules = pa_test_slurp(FLEET "/powerapi.rules.yml");
    ck_assert_ptr_nonnull(rules);
    size_t n;
    char *exprs = dashboard_exprs(&n), *e = exprs;
    int checked = 0;
    for (size_t i = 0; i < n; i++, e += strlen(e) + 1)
        checked += check_names(e, names, rules);
    /* the rules' own expressions ("expr: ..." up to the next key) */
    for (const char *p = strstr(rules, "expr: "); p; p = strstr(p + 1, "expr: ")) {
        const char *end = strstr(p, "\n      - ");
        char *x = strndup(p + 6, end ? (size_t)(end - p - 6) : strlen(p + 6));
        for (char *c = strstr(x, "\n  "); c; c = strstr(c, "\n  "))
            *c = ' '; /* the folded lines of a block scalar */
        checked += check_names(x, names, rules);
        free(x);
    }
    printf("fleet: %zu dashboard queries, %d metric names checked against the "
           "exporters' pages and the rules\n",
           n, checked);
    ck_assert_int_ge(checked, 25);
    free(exprs);
    free(rules);
}

/* A dashboard query as Grafana sends it: the variables replaced (every
 * node, every event, the range 1m). */
static void substitute(const char *e, char *out, size_t cap)
{
    size_t n = 0;
    while (*e && n + 8 < cap) {
        if (!strncmp(e, "$node", 5) || !strncmp(e, "$event", 6)) {
            n += (size_t)snprintf(out + n, cap - n, ".*");
            e += e[1] == 'n' ? 5 : 6;
        } else if (!strncmp(e, "$__range", 8)) {
            n += (size_t)snprintf(out + n, cap - n, "1m");
            e += 8;
        } else {
            out[n++] = *e++;
        }
    }
    out[n] = '\0';
}

/* The fleet's total and the sum of the nodes' at one instant t (both
 * recorded by the same evaluation): within 1 %.  Returns the fleet's. */
static double check_total(unsigned port, const char *node_rule, const char *fleet_rule, double t)
{
    double v[8], f[2], sum = 0;
    char *r = query(port, node_rule, t);
    int n = values(r, v, 8);
    ck_assert_msg(n == 3, "%s at %.3f: %d nodes: %s", node_rule, t, n, r);
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof(want), "\"node\":\"%s\"", node_names[i]);
        ck_assert_msg(strstr(r, want), "%s: no %s: %s", node_rule, node_names[i], r);
        sum += v[i];
    }
    free(r);
    r = query(port, fleet_rule, t);
    ck_assert_int_eq(values(r, f, 2), 1);
    free(r);
    printf("fleet: %s %.6g, the nodes' sum %.6g (%.3g %%)\n", fleet_rule, f[0], sum,
           sum > 0 ? 100 * fabs(f[0] - sum) / sum : 0.0);
    ck_assert_msg(sum > 0 && fabs(f[0] - sum) <= 0.01 * sum, "%s %.6g, nodes %.6g", fleet_rule,
                  f[0], sum);
    return f[0];
}

START_TEST(test_fleet)
{
    if (!have("prometheus")) {
        fprintf(stderr, "test_fleet: SKIPPED: prometheus absent (Debian package "
                        "'prometheus')\n");
        return;
    }
    uint64_t t0 = rf_now_ms();
    /* node-a: a Docker container's cgroup; node-b: the monitor (conmon,
     * unit "conmon") of a CRI-O container of a Kubernetes pod; node-c:
     * this machine, sampled */
    rf_start_cgroup(&ra, "fleeta", 1, "/system.slice/docker-" CONTAINER_ID ".scope");
    rf_start_cgroup(&rb, "fleetb", 1,
                    "/kubepods.slice/kubepods-besteffort.slice/"
                    "kubepods-besteffort-pod1d2e3f40_5a6b_4c7d_8e9f_a0b1c2d3e4f5.slice/"
                    "crio-conmon-" POD_CONTAINER ".scope");
    start_serve(0, ra.name);
    start_serve(1, rb.name);
    start_serve(2, NULL);
    check_metric_names();
    write_config();
    unsigned pport = rf_free_port();
    prom_pid = rf_start_prometheus(dir, pport);

    /* three nodes recorded, and two evaluations of the fleet's rule */
    free(query_until(pport, "node:powerapi_system_power_watts:sum", 3));
    char *r =
        query_until(pport, "count_over_time(fleet:powerapi_system_power_watts:sum[1m]) >= 2", 1);
    free(r);
    /* every rule loaded and evaluated without error, the alerts too */
    r = NULL;
    ck_assert_int_eq(get(pport, "/api/v1/rules", &r), 200);
    int healthy = 0;
    for (const char *p = strstr(r, "\"health\":\"ok\""); p; p = strstr(p + 1, "\"health\":\"ok\""))
        healthy++;
    ck_assert_msg(healthy == 10 && !strstr(r, "\"health\":\"err"), "%d rules ok: %s", healthy,
                  rf_body(r));
    ck_assert_ptr_nonnull(strstr(r, "\"name\":\"PowerapiProcessHighPower\""));
    free(r);
    /* the node label: the scrape configuration's, and on cgroup series
     * the exporter's own (--node), the same */
    r = query_until(pport, "count by (node) (powerapi_cgroup_power_watts)", 3);
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof(want), "\"node\":\"%s\"", node_names[i]);
        ck_assert_msg(strstr(r, want), "no cgroup series of %s: %s", node_names[i], r);
    }
    free(r);
    /* containers by id, and the pod's of node-b */
    r = query_until(pport, "container:powerapi_power_watts:sum", 2);
    ck_assert_msg(strstr(r, "\"container_id\":\"" CONTAINER_ID "\""), "%s", r);
    ck_assert_msg(strstr(r, "\"container_id\":\"" POD_CONTAINER "\""), "%s", r);
    double cv[4];
    ck_assert_int_eq(values(r, cv, 4), 2);
    ck_assert(cv[0] == 5.6875 && cv[1] == 5.6875); /* the fixture's cgroup */
    free(r);
    r = query_until(pport, "powerapi_cgroup_power_watts{unit=\"conmon\"}", 1);
    ck_assert_msg(strstr(r, "\"node\":\"node-b\""), "%s", r);
    free(r);

    /* every query of the dashboard returns data */
    size_t n;
    char *exprs = dashboard_exprs(&n), *e = exprs;
    for (size_t i = 0; i < n; i++, e += strlen(e) + 1) {
        char q[2048];
        substitute(e, q, sizeof(q));
        free(query_until(pport, q, 1));
    }
    free(exprs);

    /* the fleet's totals are the nodes' sums, at one evaluation */
    /* at the instant of the fleet rule's last evaluation: the node rules
     * of the same group were evaluated at the same instant */
    r = query(pport, "timestamp(fleet:powerapi_system_power_watts:sum)", 0);
    double t;
    ck_assert_int_eq(values(r, &t, 1), 1);
    free(r);
    double w = check_total(pport, "node:powerapi_system_power_watts:sum",
                           "fleet:powerapi_system_power_watts:sum", t);
    /* the two rings' nodes are 11 W each, node-c this machine's power */
    ck_assert_msg(w > 22 && w < 22 + 10000, "fleet %.6g W", w);
    r = query(pport, "node:powerapi_system_power_watts:sum{node=~\"node-a|node-b\"}", t);
    double v[4];
    ck_assert_int_eq(values(r, v, 4), 2);
    ck_assert(v[0] == 11 && v[1] == 11);
    free(r);
    check_total(pport, "node:powerapi_system_energy_joules:sum",
                "fleet:powerapi_system_energy_joules:sum", t);
    printf("fleet: %.1f s from the exporters' start to every check\n",
           (double)(rf_now_ms() - t0) / 1000);
    int st = rf_stop_child(prom_pid, SIGTERM, 10000);
    prom_pid = 0;
    ck_assert_msg(st >= 0, "prometheus did not stop on SIGTERM");
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    Suite *s = suite_create("live_fleet");
    TCase *tc = tcase_create("live_fleet");
    tcase_set_timeout(tc, 90);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_rules_promtool);
    tcase_add_test(tc, test_fleet);
    suite_add_tcase(s, tc);
    int rc = pa_test_main(s);
    rf_sweep();
    return rc;
}
