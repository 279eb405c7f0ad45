/* test_otlp.c - report/otlp.c's request, unpacked with protobuf-c: what the
 * live test's ring fixture has none of (the exited and unaccounted
 * targets, a GPU, a container in a pod, the carbon series, bytes that are
 * not UTF-8) and the page's bounds (--top, --min-watts, --max-cgroups).
 * The decoding by an independent runtime is test_live_otlp's. */
#include "otlp.h"
#include "testutil.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest otlp_req;
typedef Opentelemetry__Proto__Metrics__V1__Metric otlp_metric;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint otlp_point;

static pa_cgroup_names pod = {.runtime = "containerd",
                              .container_id = "0123456789abcdef",
                              .container_name = "web",
                              .pod_name = "web-7d9f",
                              .pod_namespace = "shop",
                              .pod_uid = "1f2e3d4c-aaaa-bbbb-cccc-0123456789ab"};

static const char *const comps[3] = {"cpu", "nic", "gpu"};
static const double sys_w[3] = {10, 1, 50}, sys_j[3] = {100, 10, 500};
/* targets x components: java, bad, exited, unaccounted, the cgroup */
static const double tw[15] = {4, 0, 20, 1, 0, 0, 0.5, 0, 0, 0.25, 0, 0, 5, 0, 20};
static const double tj[15] = {40, 0, 200, 10, 0, 0, 5, 0, 0, 2.5, 0, 0, 50, 0, 200};
static const pa_device_info gpu = {.component = "gpu",
                                   .index = 0,
                                   .vendor = "nvidia",
                                   .name = "NVIDIA H100",
                                   .uuid = "GPU-1234",
                                   .bus = "0000:01:00.0",
                                   .source = "measured",
                                   .power_w = 50,
                                   .idle_w = 30,
                                   .energy_j = 500};

static void make(pa_report *r, pa_target_info *t)
{
    memset(r, 0, sizeof(*r));
    memset(t, 0, 5 * sizeof(*t));
    r->time_ns = 1;
    r->interval_s = 0.5;
    r->system = (pa_power){.cpu_w = 10, .nic_w = 1, .idle_w = 3, .total_w = 61, .total_j = 610};
    r->formula = "rapl-share+nic-linear+nvml-share";
    r->sensors = "rapl+procfs-cpu+nic+nvml";
    r->cpu_source = "rapl";
    r->assumed = "nic: 1 W per Gbit/s";
    r->exits_source = "taskstats";
    t[0] = (pa_target_info){.type = PA_TARGET_PROCESS, .pid = 42, .comm = "java", .names = &pod};
    t[0].power = (pa_power){.total_w = 24, .total_j = 240};
    t[1] = (pa_target_info){.type = PA_TARGET_PROCESS, .pid = 7, .comm = "\xff-bad"};
    t[1].power = (pa_power){.total_w = 1, .total_j = 10};
    t[2] = (pa_target_info){.type = PA_TARGET_EXITED, .processes = 12};
    t[2].power = (pa_power){.total_w = 0.5, .total_j = 5};
    t[3] = (pa_target_info){.type = PA_TARGET_UNACCOUNTED};
    t[3].power = (pa_power){.total_w = 0.25, .total_j = 2.5};
    t[4] = (pa_target_info){.type = PA_TARGET_CGROUP,
                            .cgroup = "/kubepods.slice/pod.slice/cri-containerd-0123.scope",
                            .names = &pod};
    t[4].power = (pa_power){.total_w = 25, .total_j = 250};
    r->ntargets = 5;
    r->targets = t;
    r->ncomponents = 3;
    r->component_names = comps;
    r->system_component_w = sys_w;
    r->system_component_j = sys_j;
    r->target_component_w = tw;
    r->target_component_j = tj;
    r->ndevices = 1;
    r->devices = &gpu;
}

static otlp_req *encode(const pa_report *r, const rp_otlp_opts *o)
{
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(rp_otlp_encode(r, o, &buf, &len), 0);
    otlp_req *q =
        opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__unpack(
            NULL, len, buf);
    free(buf);
    ck_assert_ptr_nonnull(q);
    return q;
}

static const otlp_metric *metric(const otlp_req *q, const char *name)
{
    const Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sm =
        q->resource_metrics[0]->scope_metrics[0];
    for (size_t i = 0; i < sm->n_metrics; i++)
        if (!strcmp(sm->metrics[i]->name, name))
            return sm->metrics[i];
    return NULL;
}

static const char *attr(const otlp_point *p, const char *key, char *buf, size_t len)
{
    for (size_t i = 0; i < p->n_attributes; i++) {
        if (strcmp(p->attributes[i]->key, key))
            continue;
        const Opentelemetry__Proto__Common__V1__AnyValue *v = p->attributes[i]->value;
        if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE)
            snprintf(buf, len, "%lld", (long long)v->int_value);
        else
            snprintf(buf, len, "%s", v->string_value);
        return buf;
    }
    return NULL;
}

/* The points of a metric whose attribute key is value (NULL: any); the
 * count, and the first's value in *v. */
static size_t find(const otlp_req *q, const char *name, const char *key, const char *value,
                   double *v)
{
    const otlp_metric *m = metric(q, name);
    if (!m)
        return 0;
    size_t n = m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM
                   ? m->sum->n_data_points
                   : m->gauge->n_data_points;
    otlp_point **pts = m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM
                           ? m->sum->data_points
                           : m->gauge->data_points;
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[256];
        const char *a = key ? attr(pts[i], key, buf, sizeof(buf)) : NULL;
        if (key && (!a || strcmp(a, value)))
            continue;
        if (!found++ && v)
            *v = pts[i]->as_double;
    }
    return found;
}

static void free_req(otlp_req *q)
{
    opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__free_unpacked(
        q, NULL);
}

START_TEST(test_everything)
{
    pa_report r;
    pa_target_info t[5];
    make(&r, t);
    rp_otlp_opts o = {.prom = {.max_cgroups = 10, .carbon_g_per_kwh = 360, .node = "node-1"},
                      .start_unix_ns = 1000,
                      .time_unix_ns = 2000,
                      .dropped_batches = 3};
    otlp_req *q = encode(&r, &o);
    double v = 0;
    /* a container in a pod, and a process in it: the semantic conventions. names */
    ck_assert_uint_eq(find(q, "hw.energy", "k8s.pod.uid", pod.pod_uid, &v),
                      4); /* process, cgroup; host, gpu */
    ck_assert_uint_eq(find(q, "hw.power", "k8s.namespace.name", "shop", NULL), 4);
    ck_assert_uint_eq(find(q, "hw.power", "container.id", "0123456789abcdef", NULL), 4);
    ck_assert_uint_eq(find(q, "hw.power", "container.name", "web", NULL), 4);
    /* the exits */
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.target", "exited", &v), 1);
    ck_assert_double_eq(v, 0.5);
    ck_assert_uint_eq(find(q, "hw.energy", "powerapi.target", "unaccounted", &v), 1);
    ck_assert_double_eq(v, 2.5);
    ck_assert_uint_eq(find(q, "powerapi.exited.processes", NULL, NULL, &v), 1);
    ck_assert_double_eq(v, 12);
    /* the GPU: the device, and the share of the process and the cgroup */
    ck_assert_uint_eq(find(q, "hw.power", "hw.id", "GPU-1234", &v), 1);
    ck_assert_double_eq(v, 50);
    ck_assert_uint_eq(find(q, "powerapi.gpu.idle_power", "hw.name", "NVIDIA H100", &v), 1);
    ck_assert_double_eq(v, 30);
    ck_assert_uint_eq(find(q, "hw.power", "hw.type", "gpu", NULL),
                      4); /* device, 42, cgroup, system */
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.component", "gpu", &v), 1);
    ck_assert_double_eq(v, 50);
    /* measured: RAPL */
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.source", "modelled", NULL), 0);
    /* carbon: 610 J at 360 g/kWh */
    ck_assert_uint_eq(find(q, "powerapi.co2e", "powerapi.target", "system", &v), 1);
    ck_assert_double_eq_tol(v, 610 / 3.6e6 * 360, 1e-12);
    ck_assert_uint_eq(find(q, "powerapi.carbon.intensity", NULL, NULL, &v), 1);
    /* not UTF-8: U+FFFD, as on the page */
    ck_assert_uint_eq(find(q, "hw.power", "process.executable.name", "\xef\xbf\xbd-bad", NULL), 1);
    ck_assert_uint_eq(find(q, "powerapi.otlp.dropped_batches", NULL, NULL, &v), 1);
    ck_assert_double_eq(v, 3);
    /* every sum cumulative, monotonic, from the start given */
    const otlp_metric *m = metric(q, "hw.energy");
    ck_assert_int_eq(
        m->sum->aggregation_temporality,
        OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE);
    ck_assert(m->sum->is_monotonic);
    ck_assert_uint_eq(m->sum->data_points[0]->start_time_unix_nano, 1000);
    ck_assert_uint_eq(m->sum->data_points[0]->time_unix_nano, 2000);
    ck_assert_str_eq(m->unit, "J");
    ck_assert_str_eq(metric(q, "hw.power")->unit, "W");
    free_req(q);
}
END_TEST

/* --top 1 keeps java and folds the other process into "[other]" (as the
 * page does); --min-watts 2 keeps java alone; --max-cgroups 0... 1 folds
 * nothing here; a cgroup beyond it is "[other]". */
START_TEST(test_bounds)
{
    pa_report r;
    pa_target_info t[6];
    make(&r, t);
    t[5] = t[4];
    t[5].cgroup = "/b.slice";
    t[5].names = NULL;
    t[5].power.total_w = 1;
    r.ntargets = 6;
    r.target_component_w = NULL; /* no GPU split: rows of 5 targets */
    r.target_component_j = NULL;
    rp_otlp_opts o = {.prom = {.top = 1, .max_cgroups = 1}};
    otlp_req *q = encode(&r, &o);
    double v;
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.target", "process", NULL), 2);
    ck_assert_uint_eq(find(q, "hw.power", "process.pid", "42", NULL), 1);
    ck_assert_uint_eq(find(q, "hw.power", "hw.id", "process:[other]", &v), 1);
    ck_assert_double_eq(v, 1);
    ck_assert_uint_eq(find(q, "hw.energy", "process.executable.name", "[other]", &v), 1);
    ck_assert_double_eq(v, 10);
    ck_assert_uint_eq(find(q, "powerapi.process.series_folded", NULL, NULL, &v), 1);
    ck_assert_double_eq(v, 1);
    free_req(q);
    /* --max-processes bounds the same way */
    o.prom.top = 0;
    o.prom.max_processes = 1;
    q = encode(&r, &o);
    ck_assert_uint_eq(find(q, "hw.power", "hw.id", "process:[other]", &v), 1);
    ck_assert_double_eq(v, 1);
    free_req(q);
    o.prom.max_processes = 0;
    o.prom.top = 0;
    o.prom.min_watts = 2;
    o.prom.max_cgroups = 1;
    q = encode(&r, &o);
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.target", "process", NULL), 1);
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.target", "cgroup", NULL), 1);
    free_req(q);
    o.prom.min_watts = 0;
    q = encode(&r, &o);
    ck_assert_uint_eq(find(q, "powerapi.process.series_folded", NULL, NULL, &v), 1);
    ck_assert_double_eq(v, 0);
    ck_assert_uint_eq(find(q, "hw.power", "powerapi.cgroup", "[other]", &v), 1);
    ck_assert_double_eq(v, 1);
    ck_assert_uint_eq(find(q, "powerapi.cgroup.series_folded", NULL, NULL, &v), 1);
    ck_assert_double_eq(v, 1);
    free_req(q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("otlp");
    TCase *tc = tcase_create("otlp");
    tcase_add_test(tc, test_everything);
    tcase_add_test(tc, test_bounds);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
