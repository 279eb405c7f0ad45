/*
 * otlp.c - a pa_report as an OTLP ExportMetricsServiceRequest (protobuf-c,
 * from the vendored opentelemetry-proto files, report/opentelemetry-proto).
 *
 * The series are those of the Prometheus page (prometheus.c), selected the
 * same way; the names follow OpenTelemetry's semantic conventions where they
 * have one (hw.power, hw.energy, process.*, container.*, k8s.*, host.name)
 * and are ours (powerapi.*) where they do not; README "OTLP metrics" has the
 * table.  Every message lives in one arena freed after packing.
 */
#include "otlp.h"
#include "output.h" /* rp_out_co2e_g, rp_out_source_words */
#include "util.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_kv;
typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_any;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint otlp_point;
typedef Opentelemetry__Proto__Metrics__V1__Metric otlp_metric;

/* The metrics, in the order they are sent.  kind 1: a cumulative monotonic
 * sum (energies, grams, counts since start), 0: a gauge. */
enum {
    M_POWER,
    M_ENERGY,
    M_CO2E,
    M_FOLDED,
    M_PFOLDED,
    M_RATE,
    M_GPU_IDLE,
    M_EXITED,
    M_CARBON,
    M_WINDOW,
    M_INFO,
    M_DROPPED,
    M_COUNT
};
static const struct {
    const char *name, *unit, *desc;
    int sum;
} defs[M_COUNT] = {
    [M_POWER] = {"hw.power", "W",
                 "Power over the last window (powerapi.target: process, cgroup, system, "
                 "device, exited, unaccounted; hw.type: the hardware it covers, host = all "
                 "components summed).",
                 0},
    [M_ENERGY] = {"hw.energy", "J", "Energy since powerapi first saw the target.", 1},
    [M_CO2E] = {"powerapi.co2e", "g",
                "Grams of CO2e of the energy at the assumed carbon intensity "
                "(--carbon-intensity: given, not measured).",
                1},
    [M_FOLDED] = {"powerapi.cgroup.series_folded", "{cgroup}",
                  "Cgroups folded into the cgroup \"[other]\" series (beyond --max-cgroups).", 0},
    [M_PFOLDED] = {"powerapi.process.series_folded", "{process}",
                   "Processes folded into the process \"[other]\" series (beyond --top or "
                   "--max-processes).",
                   0},
    [M_RATE] = {"powerapi.perf.event.rate", "{event}/s",
                "Perf event count per second over the last window, scaled for multiplexing "
                "(task-clock: ns per second).",
                0},
    [M_GPU_IDLE] = {"powerapi.gpu.idle_power", "W",
                    "The idle part of a GPU's power (its lowest so far, or the idle= option).", 0},
    [M_EXITED] = {"powerapi.exited.processes", "{process}",
                  "Processes born and exited inside the last window (0: estimated without "
                  "counting).",
                  0},
    [M_CARBON] = {"powerapi.carbon.intensity", "g/kW.h",
                  "The carbon intensity assumed (--carbon-intensity).", 0},
    [M_WINDOW] = {"powerapi.window.duration", "s", "Length of the window the power covers.", 0},
    [M_INFO] = {"powerapi.info", "1",
                "How the figures are made: formulas, CPU source, exits, constants assumed.", 0},
    [M_DROPPED] = {"powerapi.otlp.dropped_batches", "{batch}",
                   "Batches this exporter dropped, oldest first, because its queue was full "
                   "(the receiver was away longer than the queue holds).",
                   1},
};

typedef struct block {
    struct block *next;
    size_t used, size;
    max_align_t data[];
} block;

typedef struct builder {
    block *arena;
    otlp_point **pts[M_COUNT];
    size_t npts[M_COUNT], cap[M_COUNT];
    const rp_otlp_opts *o;
    int err;
} builder;

static void *a_alloc(builder *b, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!b->arena || b->arena->size - b->arena->used < n) {
        size_t size = n > 65536 ? n : 65536;
        block *k = malloc(sizeof(*k) + size);
        if (!k) {
            b->err = -ENOMEM;
            return NULL;
        }
        k->next = b->arena;
        k->used = 0;
        k->size = size;
        b->arena = k;
    }
    void *p = (char *)b->arena->data + b->arena->used;
    b->arena->used += n;
    memset(p, 0, n);
    return p;
}

/* s in valid UTF-8 (protobuf strings must be): s itself when it is (it
 * outlives the encoding), else a copy with the bytes that are not replaced
 * by U+FFFD, as on the Prometheus page. */
static char *a_str(builder *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p && (*p < 0x80 || pa__utf8_len(p)))
        p += *p < 0x80 ? 1 : pa__utf8_len(p);
    if (!*p)
        return (char *)(s ? s : "");
    p = (const unsigned char *)s;
    char *out = a_alloc(b, strlen(s) * 3 + 1);
    if (!out)
        return (char *)"";
    char *w = out;
    while (*p) {
        size_t n = *p < 0x80 ? 1 : pa__utf8_len(p);
        if (n) {
            memcpy(w, p, n);
            w += n;
            p += n;
        } else {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
            p++;
        }
    }
    *w = '\0';
    return out;
}

/* A formatted string in the arena, for the attributes made of a buffer
 * that would be reused: fmt takes a string, then an int ("%.0d" of 0
 * prints nothing). */
static const char *a_printf(builder *b, const char *fmt, const char *s, int i)
{
    int n = snprintf(NULL, 0, fmt, s ? s : "", i);
    char *out = n >= 0 ? a_alloc(b, (size_t)n + 1) : NULL;
    if (!out)
        return "";
    snprintf(out, (size_t)n + 1, fmt, s ? s : "", i);
    return out;
}

/* An attribute as this file lists them: a string, or an integer when s is
 * NULL. */
typedef struct kv {
    const char *k, *s;
    int64_t i;
} kv;

static otlp_kv **a_attrs(builder *b, const kv *in, size_t n, size_t *nout)
{
    otlp_kv **v = a_alloc(b, (n ? n : 1) * sizeof(*v));
    size_t m = 0;
    for (size_t i = 0; v && i < n; i++) {
        if (in[i].s && !in[i].s[0])
            continue; /* unknown: left out, as the page's empty labels */
        otlp_kv *x = a_alloc(b, sizeof(*x));
        otlp_any *a = a_alloc(b, sizeof(*a));
        if (!x || !a)
            break;
        *x = (otlp_kv)OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
        *a = (otlp_any)OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
        x->key = (char *)in[i].k;
        x->value = a;
        if (in[i].s) {
            a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
            a->string_value = a_str(b, in[i].s);
        } else {
            a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
            a->int_value = in[i].i;
        }
        v[m++] = x;
    }
    *nout = m;
    return v;
}

static void point(builder *b, int m, const kv *attrs, size_t n, double value)
{
    if (b->npts[m] == b->cap[m]) {
        size_t cap = b->cap[m] ? 2 * b->cap[m] : 16;
        otlp_point **v = realloc(b->pts[m], cap * sizeof(*v));
        if (!v) {
            b->err = -ENOMEM;
            return;
        }
        b->pts[m] = v;
        b->cap[m] = cap;
    }
    otlp_point *p = a_alloc(b, sizeof(*p));
    if (!p)
        return;
    *p = (otlp_point)OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__INIT;
    p->attributes = a_attrs(b, attrs, n, &p->n_attributes);
    p->time_unix_nano = b->o->time_unix_ns;
    if (defs[m].sum)
        p->start_time_unix_nano = b->o->start_unix_ns;
    p->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
    p->as_double = value;
    b->pts[m][b->npts[m]++] = p;
}

/* "measured" when the CPU figure comes from RAPL, "measured (host)" from
 * the host's measurement of this VM, else "modelled". */
static const char *source_of(const pa_report *r)
{
    return rp_out_source_words(r->cpu_source);
}

/* The container, pod or unit a target is in, where known. */
static size_t names_attrs(const pa_cgroup_names *c, kv *a)
{
    if (!c)
        return 0;
    kv v[] = {{"container.id", c->container_id, 0}, {"container.name", c->container_name, 0},
              {"container.runtime", c->runtime, 0}, {"k8s.pod.name", c->pod_name, 0},
              {"k8s.pod.uid", c->pod_uid, 0},       {"k8s.namespace.name", c->pod_namespace, 0},
              {"powerapi.unit", c->unit, 0}};
    memcpy(a, v, sizeof(v));
    return sizeof(v) / sizeof(v[0]);
}

/* The attributes of a target (process or cgroup) into kv[], at most 15
 * (a process in a container carries its names too). */
static size_t target_attrs(builder *b, const pa_report *r, const pa_target_info *t,
                           const char *hwtype, kv *a)
{
    size_t n = 0;
    a[n++] = (kv){"hw.type", hwtype, 0};
    a[n++] = (kv){"powerapi.source", source_of(r), 0};
    if (t->type == PA_TARGET_PROCESS && t->pid == 0 && !strcmp(t->comm, "[other]")) {
        /* literals: the folded target is the caller's, gone before the
         * request is packed */
        a[n++] = (kv){"hw.id", "process:[other]", 0};
        a[n++] = (kv){"powerapi.target", "process", 0};
        a[n++] = (kv){"process.executable.name", "[other]", 0};
    } else if (t->type == PA_TARGET_PROCESS) {
        a[n++] = (kv){"hw.id", a_printf(b, "process:%s%d", "", (int)t->pid), 0};
        a[n++] = (kv){"powerapi.target", "process", 0};
        a[n++] = (kv){"process.pid", NULL, t->pid};
        a[n++] = (kv){"process.executable.name", t->comm, 0};
    } else {
        a[n++] = (kv){"hw.id", a_printf(b, "cgroup:%s%.0d", t->cgroup, 0), 0};
        a[n++] = (kv){"powerapi.target", "cgroup", 0};
        a[n++] = (kv){"powerapi.cgroup", t->cgroup ? t->cgroup : "", 0};
    }
    return n + names_attrs(t->names, a + n);
}

/* Power, energy (and grams) of the selected targets of one type. */
static void put_targets(builder *b, const pa_report *r, const pa_target_info **v, size_t n)
{
    kv a[18];
    for (size_t i = 0; i < n; i++) {
        size_t k = target_attrs(b, r, v[i], "host", a);
        point(b, M_POWER, a, k, v[i]->power.total_w);
        point(b, M_ENERGY, a, k, v[i]->power.total_j);
        if (b->o->prom.carbon_g_per_kwh > 0)
            point(b, M_CO2E, a, k, rp_out_co2e_g(b->o->prom.carbon_g_per_kwh, v[i]->power.total_j));
        for (size_t e = 0; v[i]->counters && r->interval_s > 0 && e < r->ncounters; e++) {
            a[k] = (kv){"powerapi.event", r->counter_names[e], 0};
            point(b, M_RATE, a, k + 1, v[i]->counters[e] / r->interval_s);
        }
    }
}

/* The processes: the first keep, the rest summed in "[other]" (as the
 * page's pid="[other]"). */
static void put_processes(builder *b, const pa_report *r, const pa_target_info **v, size_t n,
                          size_t keep)
{
    put_targets(b, r, v, keep);
    if (keep < n) {
        pa_target_info other;
        memset(&other, 0, sizeof(other));
        other.type = PA_TARGET_PROCESS;
        snprintf(other.comm, sizeof(other.comm), "[other]");
        for (size_t i = keep; i < n; i++) {
            other.power.total_w += v[i]->power.total_w;
            other.power.total_j += v[i]->power.total_j;
        }
        const pa_target_info *p = &other;
        put_targets(b, r, &p, 1);
    }
    point(b, M_PFOLDED, NULL, 0, (double)(n - keep));
}

/* The cgroups: at most --max-cgroups, the rest summed in "[other]". */
static void put_cgroups(builder *b, const pa_report *r, const pa_target_info **v, size_t n)
{
    const rp_prom_opts *o = &b->o->prom;
    size_t keep = o->max_cgroups && n > o->max_cgroups ? o->max_cgroups : n;
    put_targets(b, r, v, keep);
    if (keep < n) {
        pa_target_info other;
        memset(&other, 0, sizeof(other));
        other.type = PA_TARGET_CGROUP;
        other.cgroup = "[other]";
        for (size_t i = keep; i < n; i++) {
            other.power.total_w += v[i]->power.total_w;
            other.power.total_j += v[i]->power.total_j;
        }
        const pa_target_info *p = &other;
        put_targets(b, r, &p, 1);
    }
    point(b, M_FOLDED, NULL, 0, (double)(n - keep));
}

static const char *hw_type_of(const char *component)
{
    if (strcmp(component, "nic") == 0)
        return "network";
    if (strcmp(component, "idle") == 0)
        return "cpu";
    if (strcmp(component, "total") == 0)
        return "host";
    return component; /* cpu, gpu, and the components of other formulas */
}

static void put_system(builder *b, const pa_report *r)
{
    static const char *const comp[4] = {"cpu", "nic", "idle", "total"};
    const double val[4] = {r->system.cpu_w, r->system.nic_w, r->system.idle_w, r->system.total_w};
    for (size_t k = 0; k < 4 + (r->ncomponents > 2 ? r->ncomponents - 2 : 0); k++) {
        const char *c = k < 4 ? comp[k] : r->component_names[k - 2];
        if (k >= 4 && !r->system_component_w)
            break;
        kv a[] = {{"hw.id", a_printf(b, "system:%s%.0d", c, 0), 0},
                  {"hw.type", hw_type_of(c), 0},
                  {"powerapi.target", "system", 0},
                  {"powerapi.component", c, 0},
                  {"powerapi.source", source_of(r), 0}};
        point(b, M_POWER, a, 5, k < 4 ? val[k] : r->system_component_w[k - 2]);
        if (k == 3) {
            point(b, M_ENERGY, a, 5, r->system.total_j);
            if (b->o->prom.carbon_g_per_kwh > 0)
                point(b, M_CO2E, a, 5,
                      rp_out_co2e_g(b->o->prom.carbon_g_per_kwh, r->system.total_j));
        }
    }
}

/* The GPUs and the GPU share of the selected targets (as put_gpu of
 * prometheus.c): nothing without a component "gpu". */
static void put_gpu(builder *b, const pa_report *r, const pa_target_info **v[2], const size_t n[2])
{
    size_t g = 0;
    while (r->target_component_w && g < r->ncomponents && strcmp(r->component_names[g], "gpu"))
        g++;
    if (!r->target_component_w || g == r->ncomponents)
        return;
    for (size_t i = 0; i < r->ndevices; i++) {
        const pa_device_info *d = &r->devices[i];
        if (strcmp(d->component, "gpu"))
            continue; /* the wall's and platform's records (issue 46) */
        const char *id =
            d->uuid[0] ? a_printf(b, "%s%.0d", d->uuid, 0) : a_printf(b, "gpu:%s%d", "", d->index);
        kv a[] = {{"hw.id", id, 0},
                  {"hw.type", "gpu", 0},
                  {"powerapi.target", "device", 0},
                  {"hw.name", d->name, 0},
                  {"hw.vendor", d->vendor, 0},
                  {"powerapi.gpu.index", NULL, d->index},
                  {"powerapi.gpu.bus", d->bus, 0},
                  {"powerapi.source", d->source, 0}};
        point(b, M_POWER, a, 8, d->power_w);
        point(b, M_GPU_IDLE, a, 8, d->idle_w);
        point(b, M_ENERGY, a, 8, d->energy_j);
    }
    kv a[18];
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < n[c]; i++) {
            size_t row = (size_t)(v[c][i] - r->targets) * r->ncomponents + g;
            if (!(r->target_component_j[row] > 0))
                continue; /* never on a GPU: no series */
            size_t k = target_attrs(b, r, v[c][i], "gpu", a);
            point(b, M_POWER, a, k, r->target_component_w[row]);
            point(b, M_ENERGY, a, k, r->target_component_j[row]);
        }
}

/* The exited and unaccounted targets (as put_exits of prometheus.c). */
static void put_exits(builder *b, const pa_report *r)
{
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != PA_TARGET_EXITED && t->type != PA_TARGET_UNACCOUNTED)
            continue;
        const char *who = t->type == PA_TARGET_EXITED ? "exited" : "unaccounted";
        kv a[] = {{"hw.id", who, 0},
                  {"hw.type", "host", 0},
                  {"powerapi.target", who, 0},
                  {"powerapi.source", source_of(r), 0}};
        point(b, M_POWER, a, 4, t->power.total_w);
        point(b, M_ENERGY, a, 4, t->power.total_j);
        if (t->type == PA_TARGET_EXITED)
            point(b, M_EXITED, NULL, 0, (double)t->processes);
    }
}

/* The assumptions, with the carbon intensity's where one is given:
 * written into buf. */
static const char *assumed_of(const pa_report *r, const rp_prom_opts *o, char *buf, size_t len)
{
    char ci[128];
    if (o->carbon_g_per_kwh > 0 && pa_carbon_assumption(o->carbon_g_per_kwh, ci, sizeof(ci)) > 0) {
        snprintf(buf, len, "%s%s%s", r->assumed ? r->assumed : "",
                 r->assumed && r->assumed[0] ? "; " : "", ci);
        return buf;
    }
    return r->assumed ? r->assumed : "";
}

/* Every point of the window into b. */
static void put_all(builder *b, const pa_report *r, const char *assumed)
{
    const rp_otlp_opts *o = b->o;
    const pa_target_info **procs, **cgs;
    size_t np;
    size_t nall = rp_prom_select_processes(r, &o->prom, &procs, &np);
    size_t nc = rp_prom_select(r, PA_TARGET_CGROUP, &o->prom, &cgs);
    put_processes(b, r, procs, nall, np);
    put_cgroups(b, r, cgs, nc);
    const pa_target_info **sel[2] = {procs, cgs};
    const size_t nsel[2] = {np, nc};
    put_gpu(b, r, sel, nsel);
    put_system(b, r);
    put_exits(b, r);
    if (o->prom.carbon_g_per_kwh > 0)
        point(b, M_CARBON, NULL, 0, o->prom.carbon_g_per_kwh);
    point(b, M_WINDOW, NULL, 0, r->interval_s);
    kv info[] = {{"powerapi.formula", r->formula, 0},
                 {"powerapi.cpu_source", r->cpu_source, 0},
                 {"powerapi.exits", r->exits_source ? r->exits_source : "none", 0},
                 {"powerapi.assumed", assumed, 0}};
    point(b, M_INFO, info, 4, 1);
    point(b, M_DROPPED, NULL, 0, (double)o->dropped_batches);
    free(procs);
    free(cgs);
}

/* The metrics of b, those with points, into the scope. */
static otlp_metric **metrics_of(builder *b, size_t *count)
{
    otlp_metric **ms = a_alloc(b, M_COUNT * sizeof(*ms));
    size_t n = 0;
    for (int m = 0; ms && m < M_COUNT; m++) {
        if (!b->npts[m])
            continue;
        otlp_metric *x = a_alloc(b, sizeof(*x));
        if (!x)
            break;
        *x = (otlp_metric)OPENTELEMETRY__PROTO__METRICS__V1__METRIC__INIT;
        x->name = (char *)defs[m].name;
        x->unit = (char *)defs[m].unit;
        x->description = (char *)defs[m].desc;
        if (defs[m].sum) {
            Opentelemetry__Proto__Metrics__V1__Sum *s = a_alloc(b, sizeof(*s));
            if (!s)
                break;
            *s = (Opentelemetry__Proto__Metrics__V1__Sum)
                OPENTELEMETRY__PROTO__METRICS__V1__SUM__INIT;
            s->n_data_points = b->npts[m];
            s->data_points = b->pts[m];
            s->aggregation_temporality =
                OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
            s->is_monotonic = 1;
            x->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
            x->sum = s;
        } else {
            Opentelemetry__Proto__Metrics__V1__Gauge *g = a_alloc(b, sizeof(*g));
            if (!g)
                break;
            *g = (Opentelemetry__Proto__Metrics__V1__Gauge)
                OPENTELEMETRY__PROTO__METRICS__V1__GAUGE__INIT;
            g->n_data_points = b->npts[m];
            g->data_points = b->pts[m];
            x->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
            x->gauge = g;
        }
        ms[n++] = x;
    }
    *count = n;
    return ms;
}

/* Packs the request made of b's metrics under the resource. */
static int pack(builder *b, const pa_report *r, const char *assumed, uint8_t **out, size_t *len)
{
    const rp_otlp_opts *o = b->o;
    Opentelemetry__Proto__Resource__V1__Resource res =
        OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
    kv ra[] = {{"service.name", o->service_name ? o->service_name : "powerapi", 0},
               {"host.name", o->prom.node, 0},
               {"powerapi.formula", r->formula, 0},
               {"powerapi.sensors", r->sensors, 0},
               {"powerapi.cpu_source", r->cpu_source, 0},
               {"powerapi.assumed", assumed, 0}};
    res.attributes = a_attrs(b, ra, sizeof(ra) / sizeof(ra[0]), &res.n_attributes);
    Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
        OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
    scope.name = (char *)"powerapi";
    scope.version = (char *)(o->version ? o->version : "");
    Opentelemetry__Proto__Metrics__V1__ScopeMetrics sm =
        OPENTELEMETRY__PROTO__METRICS__V1__SCOPE_METRICS__INIT;
    sm.scope = &scope;
    sm.metrics = metrics_of(b, &sm.n_metrics);
    Opentelemetry__Proto__Metrics__V1__ResourceMetrics rm =
        OPENTELEMETRY__PROTO__METRICS__V1__RESOURCE_METRICS__INIT;
    rm.resource = &res;
    Opentelemetry__Proto__Metrics__V1__ScopeMetrics *smv[1] = {&sm};
    rm.n_scope_metrics = 1;
    rm.scope_metrics = smv;
    Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest req =
        OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_REQUEST__INIT;
    Opentelemetry__Proto__Metrics__V1__ResourceMetrics *rmv[1] = {&rm};
    req.n_resource_metrics = 1;
    req.resource_metrics = rmv;
    if (b->err)
        return b->err;
    size_t n =
        opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__get_packed_size(
            &req);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return -ENOMEM;
    opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__pack(&req, buf);
    *out = buf;
    *len = n;
    return 0;
}

int rp_otlp_encode(const pa_report *r, const rp_otlp_opts *o, uint8_t **out, size_t *len)
{
    builder b;
    memset(&b, 0, sizeof(b));
    b.o = o;
    char assumed[1024];
    const char *as = assumed_of(r, &o->prom, assumed, sizeof(assumed));
    put_all(&b, r, as);
    int rc = pack(&b, r, as, out, len);
    for (int m = 0; m < M_COUNT; m++)
        free(b.pts[m]);
    while (b.arena) {
        block *next = b.arena->next;
        free(b.arena);
        b.arena = next;
    }
    return rc;
}
