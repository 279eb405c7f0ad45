/*
 * output.c - JSON lines, CSV and table writers for pa_report.
 *
 * JSON and CSV follow DESIGN.md section 8 field for field; extra fields
 * (the system's energy_j, cpu_time_s (busy CPU time) and sensors; "exited"
 * on a target's last record) come after the contracted ones.  The table is for
 * people: the system line, the assumptions, then the targets sorted by power.
 */
#include "output.h"
#include "cpupct.h"
#include "profout.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int rp_out_parse_format(const char *s, rp_out_format *out)
{
    if (!s)
        return -EINVAL;
    if (!strcmp(s, "table"))
        *out = RP_OUT_TABLE;
    else if (!strcmp(s, "csv"))
        *out = RP_OUT_CSV;
    else if (!strcmp(s, "json") || !strcmp(s, "jsonl"))
        *out = RP_OUT_JSON;
    else
        return -EINVAL;
    return 0;
}

void rp_out_init(rp_out *o, FILE *f, rp_out_format format)
{
    memset(o, 0, sizeof(*o));
    o->f = f;
    o->format = format;
    o->fit_fd = -1;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        off_t off = ftello(f);
        o->seekable = off >= 0;
        o->good = off >= 0 ? (long long)off : 0;
    }
}

/* Ends a record: flushes it whole, or fails with -errno and, on a regular
 * file, cuts what reached the file of this record (a full file system)
 * and drops what stdio still holds of it. */
static int record_end(rp_out *o)
{
    FILE *f = o->f;
    if (fflush(f) == 0 && !ferror(f)) {
        if (o->seekable) {
            off_t off = ftello(f);
            if (off >= 0)
                o->good = (long long)off;
        }
        return 0;
    }
    int err = errno ? errno : EIO;
    __fpurge(f);
    clearerr(f);
    if (o->seekable && ftruncate(fileno(f), (off_t)o->good) == 0)
        fseeko(f, (off_t)o->good, SEEK_SET);
    return -err;
}

static void csv_counters_free(rp_out *o)
{
    for (size_t i = 0; i < o->csv_ncounters; i++)
        free(o->csv_counters[i]);
    free(o->csv_counters);
    o->csv_counters = NULL;
    o->csv_ncounters = 0;
}

void rp_out_fini(rp_out *o)
{
    if (o)
        csv_counters_free(o);
}

double rp_out_live_time_base(void)
{
    struct timespec m, r;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &r);
    return (double)(r.tv_sec - m.tv_sec) + (r.tv_nsec - m.tv_nsec) / 1e9;
}

/* ------------------------------------------------------------------ */
/* Scalars                                                             */
/* ------------------------------------------------------------------ */

/* Fixed 6 decimals, trailing zeros removed: stable across runs, exact
 * enough for watts and joules, and never an exponent. */
static void fmt_number(char *buf, size_t len, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "null");
        return;
    }
    if (fabs(v) < 5e-7)
        v = 0; /* no "-0" */
    snprintf(buf, len, "%.6f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
}

void rp_out_json_number(FILE *f, double v)
{
    char buf[64];
    fmt_number(buf, sizeof(buf), v);
    fputs(buf, f);
}

static void csv_number(FILE *f, double v)
{
    char buf[64];
    fmt_number(buf, sizeof(buf), v);
    if (strcmp(buf, "null"))
        fputs(buf, f);
}

static double report_time(const rp_out *o, uint64_t time_ns)
{
    return o->time_base_s + (double)time_ns / 1e9;
}

static double target_interval(const pa_report *r, const pa_target_info *t)
{
    return t->power.interval_s > 0 ? t->power.interval_s : r->interval_s;
}

static const char *type_name(const rp_out *o, pa_target_type t)
{
    switch (t) {
    case PA_TARGET_PROCESS:
        return "process";
    case PA_TARGET_THREAD:
        return "thread";
    case PA_TARGET_TREE:
        return "tree";
    case PA_TARGET_CGROUP:
        return o->group_type ? o->group_type : "cgroup";
    case PA_TARGET_EXITED:
        return "exited";
    case PA_TARGET_UNACCOUNTED:
        return "unaccounted";
    case PA_TARGET_VM:
        return "vm";
    }
    return "unknown";
}

/* Calls fn for each "; "-separated item of the assumed list, trimmed. */
static void each_assumed(const char *list, void (*fn)(void *, const char *, size_t), void *arg)
{
    const char *p = list ? list : "";
    while (*p) {
        const char *end = strchr(p, ';');
        if (!end)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a)
            fn(arg, a, (size_t)(b - a));
        p = *end ? end + 1 : end;
    }
}

/* each_assumed, then the carbon intensity when o states one: the
 * assumption of the grams beside the joules */
static void each_assumed_o(const rp_out *o, const char *list,
                           void (*fn)(void *, const char *, size_t), void *arg)
{
    each_assumed(list, fn, arg);
    char a[128];
    if (o->carbon_g_per_kwh > 0 && pa_carbon_assumption(o->carbon_g_per_kwh, a, sizeof(a)) > 0)
        fn(arg, a, strlen(a));
}

const char *rp_out_source_words(const char *cpu_source)
{
    if (cpu_source && !strcmp(cpu_source, "rapl"))
        return "measured";
    if (cpu_source && !strcmp(cpu_source, "host"))
        return "measured (host)";
    return "modelled";
}

double rp_out_co2e_g(double g_per_kwh, double energy_j)
{
    double g;
    return pa_carbon_g(energy_j, g_per_kwh, &g) == 0 ? g : NAN;
}

/* The grams of CO2e of energy_j at o's intensity; NaN (written null or
 * empty) when the energy is unknown. */
static double co2e_g(const rp_out *o, double energy_j)
{
    return rp_out_co2e_g(o->carbon_g_per_kwh, energy_j);
}

/* ------------------------------------------------------------------ */
/* Selection: --top applies to top-level targets (processes, trees);   */
/* threads follow their process, cgroups are always kept.              */
/* ------------------------------------------------------------------ */

static const pa_report *sort_report; /* qsort has no user pointer */

static int cmp_power(const void *a, const void *b)
{
    const pa_target_info *x = &sort_report->targets[*(const size_t *)a];
    const pa_target_info *y = &sort_report->targets[*(const size_t *)b];
    if (x->power.total_w != y->power.total_w)
        return x->power.total_w > y->power.total_w ? -1 : 1;
    if (x->power.cpu_time_s != y->power.cpu_time_s)
        return x->power.cpu_time_s > y->power.cpu_time_s ? -1 : 1;
    if (x->type != y->type) /* trees before the processes they sum */
        return x->type == PA_TARGET_TREE ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return strcmp(x->comm, y->comm);
}

/* Machine formats list targets in a stable order (the engine's follows
 * directory listings): processes by pid, each followed by its threads,
 * then trees, then cgroups by path. */
static int cmp_stable(const void *a, const void *b)
{
    const pa_target_info *x = &sort_report->targets[*(const size_t *)a];
    const pa_target_info *y = &sort_report->targets[*(const size_t *)b];
    int gx = x->type == PA_TARGET_TREE ? 1 : x->type == PA_TARGET_CGROUP ? 2 : 0;
    int gy = y->type == PA_TARGET_TREE ? 1 : y->type == PA_TARGET_CGROUP ? 2 : 0;
    /* what no live process accounts for comes last */
    gx = x->type == PA_TARGET_EXITED || x->type == PA_TARGET_UNACCOUNTED ? 10 + (int)x->type : gx;
    gy = y->type == PA_TARGET_EXITED || y->type == PA_TARGET_UNACCOUNTED ? 10 + (int)y->type : gy;
    if (gx != gy)
        return gx < gy ? -1 : 1;
    if (gx == 2)
        return strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    int tx = x->type == PA_TARGET_THREAD, ty = y->type == PA_TARGET_THREAD;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    /* a reused pid: the new process, then the exited one */
    int ex = (x->power.flags & PA_POWER_EXITED) != 0;
    int ey = (y->power.flags & PA_POWER_EXITED) != 0;
    if (ex != ey)
        return ex < ey ? -1 : 1;
    return strcmp(x->comm, y->comm);
}

static void sort_stable(const pa_report *r, size_t *idx, size_t n)
{
    sort_report = r;
    qsort(idx, n, sizeof(*idx), cmp_stable);
    sort_report = NULL;
}

static void sort_by_power(const pa_report *r, size_t *idx, size_t n)
{
    sort_report = r;
    qsort(idx, n, sizeof(*idx), cmp_power);
    sort_report = NULL;
}

static bool is_top_level(const pa_report *r, const pa_target_info *t)
{
    if (t->type == PA_TARGET_PROCESS || t->type == PA_TARGET_TREE || t->type == PA_TARGET_VM ||
        t->type == PA_TARGET_EXITED || t->type == PA_TARGET_UNACCOUNTED)
        return true;
    if (t->type != PA_TARGET_THREAD)
        return false;
    for (size_t i = 0; i < r->ntargets; i++) /* orphan thread */
        if (r->targets[i].type == PA_TARGET_PROCESS && r->targets[i].pid == t->pid)
            return false;
    return true;
}

/* sel[i] = whether target i is printed.  Returns -ENOMEM. */
static int select_targets(const rp_out *o, const pa_report *r, bool *sel)
{
    size_t n = r->ntargets;
    for (size_t i = 0; i < n; i++)
        sel[i] = true;
    if (!o->top)
        return 0;
    size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    size_t ntop = 0;
    for (size_t i = 0; i < n; i++)
        if (is_top_level(r, &r->targets[i]))
            idx[ntop++] = i;
    sort_by_power(r, idx, ntop);
    for (size_t k = o->top; k < ntop; k++) {
        const pa_target_info *t = &r->targets[idx[k]];
        sel[idx[k]] = false;
        if (t->type != PA_TARGET_PROCESS)
            continue;
        for (size_t i = 0; i < n; i++)
            if (r->targets[i].type == PA_TARGET_THREAD && r->targets[i].pid == t->pid)
                sel[i] = false;
    }
    free(idx);
    return 0;
}

/* ------------------------------------------------------------------ */
/* JSON lines                                                          */
/* ------------------------------------------------------------------ */

struct json_list {
    FILE *f;
    bool first;
};

static void json_assumed_item(void *arg, const char *s, size_t len)
{
    struct json_list *l = arg;
    char *copy = strndup(s, len);
    if (!l->first)
        fputc(',', l->f);
    l->first = false;
    pa__json_write(l->f, copy ? copy : "");
    free(copy);
}

static void json_key_num(FILE *f, const char *key, double v, bool comma)
{
    fprintf(f, "%s\"%s\":", comma ? "," : "", key);
    rp_out_json_number(f, v);
}

/* ,"co2e_g":G,"carbon_intensity_g_per_kwh":I of a record's total
 * energy, when o states an intensity */
static void json_carbon(const rp_out *o, double total_j)
{
    if (o->carbon_g_per_kwh <= 0)
        return;
    json_key_num(o->f, "co2e_g", co2e_g(o, total_j), true);
    json_key_num(o->f, "carbon_intensity_g_per_kwh", o->carbon_g_per_kwh, true);
}

/* Components beyond cpu and nic (those of registered formulas: "gpu"),
 * read by name from the report; none in reports without them, so the
 * records of cpu and nic keep their form.  Names are [a-z0-9_]. */
#define FIXED_COMPS 2

static bool has_component(const pa_report *r, const char *name)
{
    for (size_t k = FIXED_COMPS; k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], name))
            return true;
    return false;
}

static void json_components(FILE *f, const pa_report *r, const double *v)
{
    for (size_t k = FIXED_COMPS; v && k < r->ncomponents; k++)
        json_key_num(f, r->component_names[k], v[k], true);
}

/* The row of target t in the report's component arrays, or NULL. */
static const double *target_comps(const pa_report *r, const pa_target_info *t, const double *base)
{
    if (!base || r->ncomponents <= FIXED_COMPS || t < r->targets || t >= r->targets + r->ntargets)
        return NULL; /* a record of r->exited has no components of its own */
    return base + (size_t)(t - r->targets) * r->ncomponents;
}

/* The devices of the window (the GPUs), "devices":[...], when any. */
static void json_devices(FILE *f, const pa_report *r)
{
    if (!r->ndevices)
        return;
    fputs(",\"devices\":[", f);
    for (size_t i = 0; i < r->ndevices; i++) {
        const pa_device_info *d = &r->devices[i];
        const char *keys[6] = {"component", "vendor", "name", "uuid", "bus", "source"};
        const char *vals[6] = {d->component, d->vendor, d->name, d->uuid, d->bus, d->source};
        fprintf(f, "%s{\"index\":%d", i ? "," : "", d->index);
        for (int k = 0; k < 6; k++) {
            fprintf(f, ",\"%s\":", keys[k]);
            pa__json_write(f, vals[k]);
        }
        json_key_num(f, "power_w", d->power_w, true);
        json_key_num(f, "idle_w", d->idle_w, true);
        json_key_num(f, "energy_j", d->energy_j, true);
        fprintf(f, ",\"split\":%s}", d->split ? "true" : "false");
    }
    fputc(']', f);
}

static void json_system(rp_out *o, const pa_report *r)
{
    FILE *f = o->f;
    fputs("{\"type\":\"system\"", f);
    json_key_num(f, "time", report_time(o, r->time_ns), true);
    json_key_num(f, "interval_s", r->interval_s, true);
    fputs(",\"formula\":", f);
    pa__json_write(f, r->formula);
    fputs(",\"sources\":{\"cpu\":", f);
    pa__json_write(f, r->cpu_source ? r->cpu_source : "model");
    fputs("},\"power_w\":{", f);
    json_key_num(f, "cpu", r->system.cpu_w, false);
    json_key_num(f, "nic", r->system.nic_w, true);
    json_components(f, r, r->system_component_w);
    json_key_num(f, "total", r->system.total_w, true);
    json_key_num(f, "idle", r->system.idle_w, true);
    /* measured RAPL domains of their own, when the machine has them (a
     * formula's component of the same name comes first) */
    if (r->dram_w > 0 && !has_component(r, "dram"))
        json_key_num(f, "dram", r->dram_w, true);
    if (r->psys_w > 0)
        json_key_num(f, "psys", r->psys_w, true);
    fputc('}', f);
    /* relative error the model states for its cpu figure, when known */
    if (r->model_error >= 0)
        json_key_num(f, "model_error", r->model_error, true);
    fputs(",\"assumed\":[", f);
    struct json_list l = {f, true};
    each_assumed_o(o, r->assumed, json_assumed_item, &l);
    fputs("],\"energy_j\":{", f);
    json_key_num(f, "cpu", r->system.cpu_j, false);
    json_key_num(f, "nic", r->system.nic_j, true);
    json_components(f, r, r->system_component_j);
    json_key_num(f, "total", r->system.total_j, true);
    fputc('}', f);
    json_carbon(o, r->system.total_j);
    json_key_num(f, "cpu_time_s", r->system.cpu_time_s, true);
    if (r->exits_source && *r->exits_source && strcmp(r->exits_source, "none")) {
        fputs(",\"exits\":{\"source\":", f);
        pa__json_write(f, r->exits_source);
        fprintf(f, ",\"lost\":%llu}", (unsigned long long)r->exits_lost);
    }
    json_devices(f, r);
    fputs(",\"sensors\":", f);
    pa__json_write(f, r->sensors);
    fputs("}\n", f);
}

void rp_out_exited_label(const pa_target_info *t, char *out, size_t len)
{
    /* "[exited: 1,204 processes]"; an estimate cannot count them */
    char num[32];
    unsigned n = t->processes;
    if (n >= 1000000)
        snprintf(num, sizeof(num), "%u,%03u,%03u", n / 1000000, n / 1000 % 1000, n % 1000);
    else if (n >= 1000)
        snprintf(num, sizeof(num), "%u,%03u", n / 1000, n % 1000);
    else
        snprintf(num, sizeof(num), "%u", n);
    if (n)
        snprintf(out, len, "[exited: %s process%s]", num, n == 1 ? "" : "es");
    else
        snprintf(out, len, "[exited]");
}

void rp_out_cgroup_label(const pa_target_info *t, char *out, size_t len)
{
    const pa_cgroup_names *n = t->names;
    if (n && n->container_name[0])
        snprintf(out, len, "%s", n->container_name);
    else if (n && n->container_id[0])
        snprintf(out, len, "%.12s", n->container_id);
    else if (n && n->pod_name[0])
        snprintf(out, len, "pod %s/%s", n->pod_namespace, n->pod_name);
    else if (n && n->pod_uid[0])
        snprintf(out, len, "pod %.13s", n->pod_uid);
    else if (n && n->unit[0])
        snprintf(out, len, "%s", n->unit);
    else {
        /* keep the end of a long cgroup path, the most specific part */
        const char *cg = t->cgroup && *t->cgroup ? t->cgroup : "?";
        size_t l = strlen(cg);
        if (l > 24)
            snprintf(out, len, "...%s", cg + l - 21);
        else
            snprintf(out, len, "%s", cg);
    }
}

/* The names of a record's cgroup (DESIGN.md section 8.1): the fields
 * known, then where they came from. */
static void json_names(FILE *f, const pa_cgroup_names *n)
{
    if (!n)
        return;
    const char *v[] = {n->container_id,  n->container_name, n->runtime, n->pod_name,
                       n->pod_namespace, n->pod_uid,        n->unit,    n->source};
    for (size_t i = 0; i < RP_OUT_NNAMES + 1; i++) {
        if (!*v[i])
            continue;
        fprintf(f, ",\"%s\":", i < RP_OUT_NNAMES ? rp_out_name_keys[i] : "names_source");
        pa__json_write(f, v[i]);
    }
}

/* A VM record's names and its vCPU part (DESIGN.md section 18). */
static void json_vm(FILE *f, const pa_target_info *t)
{
    const pa_vm_info *v = t->vm;
    const char *s[][2] = {
        {"vm_name", v->name},       {"vm_uuid", v->uuid}, {"hypervisor", v->hypervisor},
        {"vm_manager", v->manager}, {"vm_id", v->id},     {"names_source", v->source}};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        if (*s[i][1]) {
            fprintf(f, ",\"%s\":", s[i][0]);
            pa__json_write(f, s[i][1]);
        }
    fprintf(f, ",\"threads\":%u,\"vcpus\":%u", v->nthreads, v->nvcpus);
    bool known = t->vcpu_w >= 0;
    json_key_num(f, "vcpu_w", known ? t->vcpu_w : NAN, true);
    json_key_num(f, "emulator_w", known ? t->emulator_w : NAN, true);
    json_key_num(f, "vcpu_j", t->vcpu_j, true);
    json_key_num(f, "emulator_j", t->emulator_j, true);
}

static void json_target(rp_out *o, const pa_report *r, const pa_target_info *t)
{
    FILE *f = o->f;
    fputs("{\"type\":", f);
    pa__json_write(f, type_name(o, t->type));
    json_key_num(f, "time", report_time(o, t->power.time_ns ? t->power.time_ns : r->time_ns), true);
    json_key_num(f, "interval_s", target_interval(r, t), true);
    if (t->type == PA_TARGET_CGROUP) {
        fputs(",\"cgroup\":", f);
        pa__json_write(f, t->cgroup);
    } else if (t->type == PA_TARGET_VM) {
        fprintf(f, ",\"pid\":%ld,\"comm\":", (long)t->pid);
        pa__json_write(f, t->comm);
        if (t->vm)
            json_vm(f, t);
    } else if (t->type == PA_TARGET_EXITED || t->type == PA_TARGET_UNACCOUNTED) {
        if (t->type == PA_TARGET_EXITED)
            fprintf(f, ",\"processes\":%u", t->processes);
        fputs(",\"comm\":", f);
        pa__json_write(f, t->comm);
    } else {
        fprintf(f, ",\"pid\":%ld", (long)t->pid);
        if (t->type == PA_TARGET_THREAD)
            fprintf(f, ",\"tid\":%ld", (long)t->tid);
        fputs(",\"comm\":", f);
        pa__json_write(f, t->comm);
    }
    if (t->type != PA_TARGET_VM) /* a VM's names_source is its name's */
        json_names(f, t->names);
    json_key_num(f, "cpu_time_s", t->power.cpu_time_s, true);
    fputs(",\"power_w\":{", f);
    json_key_num(f, "cpu", t->power.cpu_w, false);
    json_key_num(f, "nic", t->power.nic_w, true);
    json_components(f, r, target_comps(r, t, r->target_component_w));
    json_key_num(f, "total", t->power.total_w, true);
    fputs("},\"energy_j\":{", f);
    json_key_num(f, "cpu", t->power.cpu_j, false);
    json_key_num(f, "nic", t->power.nic_j, true);
    json_components(f, r, target_comps(r, t, r->target_component_j));
    json_key_num(f, "total", t->power.total_j, true);
    fputc('}', f);
    json_carbon(o, t->power.total_j);
    if (t->has_net)
        fprintf(f, ",\"net_bytes\":{\"rx\":%llu,\"tx\":%llu}", (unsigned long long)t->net_rx_bytes,
                (unsigned long long)t->net_tx_bytes);
    if (t->counters && r->ncounters) {
        fputs(",\"counters\":{", f);
        for (size_t i = 0; i < r->ncounters; i++) {
            if (i)
                fputc(',', f);
            pa__json_write(f, r->counter_names[i]);
            fputc(':', f);
            rp_out_json_number(f, t->counters[i]);
        }
        fputc('}', f);
        json_key_num(f, "multiplex", t->multiplex, true);
    }
    if (t->power.flags & PA_POWER_EXITED)
        fputs(",\"exited\":true", f);
    fputs("}\n", f);
}

/* The selected targets in the stable order; *n receives their count. */
static size_t *stable_order(const pa_report *r, const bool *sel, size_t *n)
{
    size_t *idx = malloc((r->ntargets ? r->ntargets : 1) * sizeof(*idx));
    if (!idx)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (sel[i])
            idx[(*n)++] = i;
    sort_stable(r, idx, *n);
    return idx;
}

/* With exited_list, the exited record gives way to its processes' own
 * records when every one of them is in the report (PA_EXITED_MAX). */
static bool listed_instead(const rp_out *o, const pa_report *r, const pa_target_info *t)
{
    return o->exited_list && t->type == PA_TARGET_EXITED && t->processes > 0 &&
           r->nexited == t->processes;
}

static int json_report(rp_out *o, const pa_report *r, const bool *sel)
{
    size_t n;
    size_t *idx = stable_order(r, sel, &n);
    if (!idx)
        return -ENOMEM;
    json_system(o, r);
    for (size_t k = 0; k < n; k++)
        if (!listed_instead(o, r, &r->targets[idx[k]]))
            json_target(o, r, &r->targets[idx[k]]);
    for (size_t k = 0; o->exited_list && k < r->nexited; k++)
        json_target(o, r, &r->exited[k]);
    free(idx);
    return 0;
}

/* ------------------------------------------------------------------ */
/* CSV                                                                 */
/* ------------------------------------------------------------------ */

const char *const rp_out_name_keys[RP_OUT_NNAMES] = {
    "container_id", "container_name", "runtime", "pod_name", "pod_namespace", "pod_uid", "unit"};

static const char *const csv_fixed[] = {
    "type",          "time",         "interval_s",    "pid",          "tid",
    "cgroup",        "comm",         "cpu_time_s",    "power_w.cpu",  "power_w.nic",
    "power_w.total", "power_w.idle", "energy_j.cpu",  "energy_j.nic", "energy_j.total",
    "formula",       "sources.cpu",  "assumed",       "sensors",      "net_bytes.rx",
    "net_bytes.tx",  "multiplex",    "exited",        "container_id", "container_name",
    "runtime",       "pod_name",     "pod_namespace", "pod_uid",      "unit",
    "processes",     "exits",
};
#define CSV_NFIXED (sizeof(csv_fixed) / sizeof(csv_fixed[0]))

static int csv_header(rp_out *o, const pa_report *r)
{
    csv_counters_free(o);
    if (r && r->ncounters) {
        o->csv_counters = calloc(r->ncounters, sizeof(char *));
        if (!o->csv_counters)
            return -ENOMEM;
        for (size_t i = 0; i < r->ncounters; i++) {
            o->csv_counters[i] = strdup(r->counter_names[i]);
            if (!o->csv_counters[i]) {
                o->csv_ncounters = i;
                csv_counters_free(o);
                return -ENOMEM;
            }
        }
        o->csv_ncounters = r->ncounters;
    }
    o->csv_ncomps = 0;
    for (size_t k = FIXED_COMPS; r && k < r->ncomponents; k++)
        snprintf(o->csv_comps[o->csv_ncomps++], sizeof(o->csv_comps[0]), "%s",
                 r->component_names[k]);
    for (size_t i = 0; i < CSV_NFIXED; i++)
        fprintf(o->f, "%s%s", i ? "," : "", csv_fixed[i]);
    for (size_t i = 0; i < o->csv_ncomps; i++)
        fprintf(o->f, ",power_w.%s,energy_j.%s", o->csv_comps[i], o->csv_comps[i]);
    for (size_t i = 0; i < o->csv_ncounters; i++) {
        fputs(",counters.", o->f);
        pa__csv_write(o->f, o->csv_counters[i]);
    }
    if (o->carbon_g_per_kwh > 0)
        fputs(",co2e_g,carbon_intensity_g_per_kwh", o->f);
    if (o->command_columns)
        fputs(",exit_status,duration_s", o->f);
    fputc('\n', o->f);
    o->csv_header_done = 1;
    return 0;
}

static void csv_assumed_item(void *arg, const char *s, size_t len)
{
    struct json_list *l = arg;
    if (!l->first)
        fputc(';', l->f);
    l->first = false;
    fwrite(s, 1, len, l->f);
}

/* The assumed list, ';'-joined and trimmed, as one field. */
static void csv_assumed(const rp_out *o, const char *list)
{
    FILE *f = o->f;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    struct json_list l = {m, true};
    each_assumed_o(o, list, csv_assumed_item, &l);
    fclose(m);
    pa__csv_write(f, buf);
    free(buf);
}

/* Component columns are those of the header (w and j of each): a report
 * without one leaves it empty. */
static void csv_components(rp_out *o, const pa_report *r, const double *w, const double *j)
{
    for (size_t i = 0; i < o->csv_ncomps; i++) {
        size_t k = FIXED_COMPS;
        while (w && j && k < r->ncomponents && strcmp(r->component_names[k], o->csv_comps[i]))
            k++;
        bool have = w && j && k < r->ncomponents;
        fputc(',', o->f);
        if (have)
            csv_number(o->f, w[k]);
        fputc(',', o->f);
        if (have)
            csv_number(o->f, j[k]);
    }
}

/* The carbon columns of the header, when o states an intensity */
static void csv_carbon(const rp_out *o, double total_j)
{
    if (o->carbon_g_per_kwh <= 0)
        return;
    fputc(',', o->f);
    csv_number(o->f, co2e_g(o, total_j));
    fputc(',', o->f);
    csv_number(o->f, o->carbon_g_per_kwh);
}

/* Counter columns are those of the header; a report with other counters
 * leaves the missing ones empty (a new header is not started mid-file). */
static void csv_counters(rp_out *o, const pa_report *r, const double *v)
{
    for (size_t i = 0; i < o->csv_ncounters; i++) {
        fputc(',', o->f);
        if (!v)
            continue;
        for (size_t k = 0; k < r->ncounters; k++)
            if (!strcmp(r->counter_names[k], o->csv_counters[i])) {
                csv_number(o->f, v[k]);
                break;
            }
    }
}

static void csv_system(rp_out *o, const pa_report *r)
{
    FILE *f = o->f;
    fputs("system,", f);
    csv_number(f, report_time(o, r->time_ns));
    fputc(',', f);
    csv_number(f, r->interval_s);
    fputs(",,,,,", f); /* pid tid cgroup comm */
    csv_number(f, r->system.cpu_time_s);
    fputc(',', f);
    csv_number(f, r->system.cpu_w);
    fputc(',', f);
    csv_number(f, r->system.nic_w);
    fputc(',', f);
    csv_number(f, r->system.total_w);
    fputc(',', f);
    csv_number(f, r->system.idle_w);
    fputc(',', f);
    csv_number(f, r->system.cpu_j);
    fputc(',', f);
    csv_number(f, r->system.nic_j);
    fputc(',', f);
    csv_number(f, r->system.total_j);
    fputc(',', f);
    pa__csv_write(f, r->formula);
    fputc(',', f);
    pa__csv_write(f, r->cpu_source ? r->cpu_source : "model");
    fputc(',', f);
    csv_assumed(o, r->assumed);
    fputc(',', f);
    pa__csv_write(f, r->sensors);
    fputs(",,,,,,,,,,,", f); /* net rx tx, multiplex, exited, the names */
    fputs(",,", f);          /* processes */
    pa__csv_write(f, r->exits_source ? r->exits_source : "");
    csv_components(o, r, r->system_component_w, r->system_component_j);
    csv_counters(o, r, NULL);
    csv_carbon(o, r->system.total_j);
    if (o->command_columns)
        fputs(",,", f);
    fputc('\n', f);
}

static void csv_target(rp_out *o, const pa_report *r, const pa_target_info *t)
{
    FILE *f = o->f;
    fprintf(f, "%s,", type_name(o, t->type));
    csv_number(f, report_time(o, t->power.time_ns ? t->power.time_ns : r->time_ns));
    fputc(',', f);
    csv_number(f, target_interval(r, t));
    fputc(',', f);
    if ((t->type != PA_TARGET_CGROUP && t->type != PA_TARGET_EXITED &&
         t->type != PA_TARGET_UNACCOUNTED && t->type != PA_TARGET_VM) ||
        (t->vm && t->pid))
        fprintf(f, "%ld", (long)t->pid);
    fputc(',', f);
    if (t->type == PA_TARGET_THREAD)
        fprintf(f, "%ld", (long)t->tid);
    fputc(',', f);
    if (t->type == PA_TARGET_CGROUP)
        pa__csv_write(f, t->cgroup);
    fputc(',', f);
    if (t->type != PA_TARGET_CGROUP)
        pa__csv_write(f, t->comm);
    fputc(',', f);
    csv_number(f, t->power.cpu_time_s);
    fputc(',', f);
    csv_number(f, t->power.cpu_w);
    fputc(',', f);
    csv_number(f, t->power.nic_w);
    fputc(',', f);
    csv_number(f, t->power.total_w);
    fputs(",,", f); /* idle */
    csv_number(f, t->power.cpu_j);
    fputc(',', f);
    csv_number(f, t->power.nic_j);
    fputc(',', f);
    csv_number(f, t->power.total_j);
    fputs(",,,,,", f); /* formula sources assumed sensors */
    if (t->has_net)
        fprintf(f, "%llu,%llu", (unsigned long long)t->net_rx_bytes,
                (unsigned long long)t->net_tx_bytes);
    else
        fputc(',', f);
    fputc(',', f);
    if (t->counters && r->ncounters)
        csv_number(f, t->multiplex);
    fputc(',', f);
    if (t->power.flags & PA_POWER_EXITED)
        fputs("true", f);
    const pa_cgroup_names *nm = t->names;
    const char *v[RP_OUT_NNAMES] = {""};
    if (nm) {
        const char *w[RP_OUT_NNAMES] = {nm->container_id, nm->container_name, nm->runtime,
                                        nm->pod_name,     nm->pod_namespace,  nm->pod_uid,
                                        nm->unit};
        memcpy(v, w, sizeof(v));
    }
    for (size_t i = 0; i < RP_OUT_NNAMES; i++) {
        fputc(',', f);
        pa__csv_write(f, v[i] ? v[i] : "");
    }
    fputc(',', f);
    if (t->type == PA_TARGET_EXITED)
        fprintf(f, "%u", t->processes);
    fputc(',', f); /* exits: the system row's */
    csv_components(o, r, target_comps(r, t, r->target_component_w),
                   target_comps(r, t, r->target_component_j));
    csv_counters(o, r, t->counters);
    csv_carbon(o, t->power.total_j);
    if (o->command_columns)
        fputs(",,", f);
    fputc('\n', f);
}

static int csv_report(rp_out *o, const pa_report *r, const bool *sel)
{
    if (!o->csv_header_done) {
        int err = csv_header(o, r);
        if (err < 0)
            return err;
    }
    size_t n;
    size_t *idx = stable_order(r, sel, &n);
    if (!idx)
        return -ENOMEM;
    csv_system(o, r);
    for (size_t k = 0; k < n; k++)
        if (!listed_instead(o, r, &r->targets[idx[k]]))
            csv_target(o, r, &r->targets[idx[k]]);
    for (size_t k = 0; o->exited_list && k < r->nexited; k++)
        csv_target(o, r, &r->exited[k]);
    free(idx);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Table                                                               */
/* ------------------------------------------------------------------ */

static void table_assumed_item(void *arg, const char *s, size_t len)
{
    fprintf((FILE *)arg, "  assumed: %.*s\n", (int)len, s);
}

static void count_item(void *arg, const char *s, size_t len)
{
    (void)s;
    (void)len;
    ++*(size_t *)arg;
}

static void table_clock(const rp_out *o, const pa_report *r, char *buf, size_t len)
{
    if (o->time_base_s != 0) {
        time_t t = (time_t)report_time(o, r->time_ns);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(buf, len, "%H:%M:%S", &tm);
    } else {
        snprintf(buf, len, "t=%.3f s", report_time(o, r->time_ns));
    }
}

/* A name fit for a terminal: control characters and invalid UTF-8 become
 * '?' (a comm may hold any byte but NUL). */
static void printable(char *dst, size_t len, const char *src)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && o + 5 < len;) {
        size_t n = *p >= 0x80 ? pa__utf8_len(p) : 1;
        if (n == 0 || *p < 0x20 || *p == 0x7f) {
            dst[o++] = '?';
            p++;
            continue;
        }
        memcpy(dst + o, p, n);
        o += n;
        p += n;
    }
    dst[o] = '\0';
}

/* One row; true when its CPU% was capped (rp_out_cpu_pct). */
static bool table_row(const rp_out *o, const pa_report *r, const pa_target_info *t, int indent,
                      bool nic)
{
    FILE *f = o->f;
    char pid[16] = "", tid[16] = "", name[96], safe[4 * PA_COMM_MAX + 8];
    printable(safe, sizeof(safe), t->comm[0] ? t->comm : "?");
    const char *comm = safe;
    switch (t->type) {
    case PA_TARGET_PROCESS:
        snprintf(pid, sizeof(pid), "%ld", (long)t->pid);
        snprintf(name, sizeof(name), "%s", comm);
        break;
    case PA_TARGET_THREAD:
        snprintf(pid, sizeof(pid), "%ld", (long)t->pid);
        snprintf(tid, sizeof(tid), "%ld", (long)t->tid);
        snprintf(name, sizeof(name), "%s%s", indent ? "  " : "", comm);
        break;
    case PA_TARGET_TREE:
        snprintf(pid, sizeof(pid), "%ld", (long)t->pid);
        snprintf(name, sizeof(name), "%s +children", comm);
        break;
    case PA_TARGET_EXITED:
        rp_out_exited_label(t, name, sizeof(name));
        break;
    case PA_TARGET_UNACCOUNTED:
        snprintf(name, sizeof(name), "%s", comm);
        break;
    case PA_TARGET_VM:
        if (t->vm)
            snprintf(pid, sizeof(pid), "%ld", (long)t->pid);
        snprintf(name, sizeof(name), "%.95s", t->vm && t->vm->name[0] ? t->vm->name : comm);
        break;
    default:
        rp_out_cgroup_label(t, name, sizeof(name));
        break;
    }
    bool capped;
    double pct = rp_out_cpu_pct(o->procfs, t, target_interval(r, t), &capped);
    /* a capped figure is marked in the column's last place */
    fprintf(f, capped ? "%8s %8s  %-24.24s %5.1f* %8.2f " : "%8s %8s  %-24.24s %6.1f %8.2f ", pid,
            tid, name, pct, t->power.cpu_w);
    if (nic)
        fprintf(f, "%8.2f ", t->power.nic_w);
    const double *cw = target_comps(r, t, r->target_component_w);
    for (size_t k = FIXED_COMPS; cw && k < r->ncomponents; k++)
        fprintf(f, "%8.2f ", cw[k]); /* "GPU W" */
    fprintf(f, "%8.2f %10.2f", t->power.total_w, t->power.total_j);
    if (o->carbon_g_per_kwh > 0)
        fprintf(f, " %10.6f", co2e_g(o, t->power.total_j));
    fprintf(f, "%s\n", (t->power.flags & PA_POWER_EXITED) ? "  (exited)" : "");
    return capped;
}

/* The column titles; a column for each component beyond cpu and nic
 * ("GPU W"). */
static void table_header(const rp_out *o, const pa_report *r, const char *what, bool nic)
{
    FILE *f = o->f;
    fprintf(f, "%8s %8s  %-24s %6s %8s ", what[0] == 'C' ? "" : "PID", what[0] == 'C' ? "" : "TID",
            what, "CPU%", "CPU W");
    if (nic)
        fprintf(f, "%8s ", "NIC W");
    for (size_t k = FIXED_COMPS; r->target_component_w && k < r->ncomponents; k++) {
        char title[24];
        snprintf(title, sizeof(title), "%.6s W", r->component_names[k]);
        for (char *c = title; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        fprintf(f, "%8s ", title);
    }
    fprintf(f, "%8s %10s", "TOTAL W", "ENERGY J");
    fputs(o->carbon_g_per_kwh > 0 ? "     CO2e g\n" : "\n", f);
}

/* The table's header: the window, the system's figures, each device,
 * the assumptions; its number of lines. */
static size_t table_head(rp_out *o, const pa_report *r, bool nic)
{
    FILE *f = o->f;
    char clock[32];
    const char *src = r->cpu_source ? r->cpu_source : "model";
    if (o->clear)
        fputs("\033[H\033[2J", f);
    table_clock(o, r, clock, sizeof(clock));
    fprintf(f, "powerapi  %s  window %.2f s  formula %s (%s)  sensors %s\n", clock, r->interval_s,
            r->formula && *r->formula ? r->formula : "-", rp_out_source_words(src),
            r->sensors && *r->sensors ? r->sensors : "-");
    fprintf(f, "system    %.2f W  (cpu %.2f W, of which idle %.2f W", r->system.total_w,
            r->system.cpu_w, r->system.idle_w);
    if (nic)
        fprintf(f, "; nic %.2f W", r->system.nic_w);
    for (size_t k = FIXED_COMPS; r->system_component_w && k < r->ncomponents; k++)
        fprintf(f, "; %s %.2f W", r->component_names[k], r->system_component_w[k]);
    fprintf(f, ")  busy %.2f CPU-s  energy %.2f J", r->system.cpu_time_s, r->system.total_j);
    if (o->carbon_g_per_kwh > 0)
        fprintf(f, "  CO2e %.6f g", co2e_g(o, r->system.total_j));
    fputc('\n', f);
    size_t lines = 2 + r->ndevices;
    for (size_t i = 0; i < r->ndevices; i++) {
        const pa_device_info *d = &r->devices[i];
        fprintf(f, "%-9s %.2f W  (idle %.2f W%s)  energy %.2f J  %s %d %s%s%s  %s  %s\n",
                d->component, d->power_w, d->idle_w,
                d->split || !(d->power_w > d->idle_w) ? "" : ", the rest unattributed", d->energy_j,
                d->vendor, d->index, d->name, d->uuid[0] ? " " : "", d->uuid, d->bus, d->source);
    }
    each_assumed_o(o, r->assumed, table_assumed_item, f);
    each_assumed_o(o, r->assumed, count_item, &lines);
    return lines;
}

static int table_report(rp_out *o, const pa_report *r, const bool *sel)
{
    FILE *f = o->f;
    size_t n = r->ntargets;
    bool nic = r->formula && strstr(r->formula, "nic");

    size_t lines = table_head(o, r, nic);
    if (o->quiet_targets)
        return 0;
    /* the screen's height, read each time (the terminal may be resized):
     * header lines, blank, column titles, "(N more)", the cursor line */
    size_t fit = 0;
    struct winsize ws;
    if (!o->top && o->fit_fd >= 0 && ioctl(o->fit_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
        fit = (size_t)ws.ws_row > lines + 4 ? ws.ws_row - lines - 4 : 1;

    size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    size_t *thr = malloc((n ? n : 1) * sizeof(*thr));
    if (!idx || !thr) {
        free(idx);
        free(thr);
        return -ENOMEM;
    }
    size_t ntop = 0, nall = 0, ncg = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_top_level(r, &r->targets[i]))
            continue;
        nall++;
        if (sel[i])
            idx[ntop++] = i;
    }
    sort_by_power(r, idx, ntop);
    if (fit && ntop > fit)
        ntop = fit;

    bool capped = false;
    if (!o->group_type) { /* grouped: no process records */
        fputc('\n', f);
        table_header(o, r, "NAME", nic);
    }
    for (size_t k = 0; k < ntop; k++) {
        const pa_target_info *t = &r->targets[idx[k]];
        capped |= table_row(o, r, t, 0, nic);
        if (t->type != PA_TARGET_PROCESS)
            continue;
        size_t nthr = 0;
        for (size_t i = 0; i < n; i++)
            if (sel[i] && r->targets[i].type == PA_TARGET_THREAD && r->targets[i].pid == t->pid)
                thr[nthr++] = i;
        sort_by_power(r, thr, nthr);
        for (size_t j = 0; j < nthr; j++)
            capped |= table_row(o, r, &r->targets[thr[j]], 1, nic);
    }
    if (nall > ntop)
        fprintf(f, "%8s %8s  (%zu more)\n", "", "", nall - ntop);
    for (size_t i = 0; i < n; i++)
        if (sel[i] && r->targets[i].type == PA_TARGET_CGROUP)
            thr[ncg++] = i;
    if (ncg) {
        sort_by_power(r, thr, ncg);
        char what[24];
        snprintf(what, sizeof(what), "%s", o->group_type ? o->group_type : "cgroup");
        for (char *c = what; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        fputc('\n', f);
        table_header(o, r, what, nic);
        for (size_t j = 0; j < ncg; j++)
            capped |= table_row(o, r, &r->targets[thr[j]], 0, nic);
    }
    if (capped)
        fprintf(f, "%s\n", RP_OUT_CAPPED_NOTE);
    if (!o->clear)
        fputc('\n', f);
    free(thr);
    free(idx);
    return 0;
}

/* ------------------------------------------------------------------ */

char *rp_out_report_text(const pa_report *r, rp_out_format fmt)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    rp_out o;
    rp_out_init(&o, f, fmt);
    int rc = rp_out_report(&o, r);
    rp_out_fini(&o);
    if (fclose(f) != 0 || rc < 0) {
        free(text);
        return NULL;
    }
    return text;
}

int rp_out_report(rp_out *o, const pa_report *r)
{
    bool *sel = calloc(r->ntargets ? r->ntargets : 1, sizeof(*sel));
    if (!sel)
        return -ENOMEM;
    errno = 0;
    int err = select_targets(o, r, sel);
    if (err == 0) {
        switch (o->format) {
        case RP_OUT_JSON:
            err = json_report(o, r, sel);
            break;
        case RP_OUT_CSV:
            err = csv_report(o, r, sel);
            break;
        default:
            err = table_report(o, r, sel);
            break;
        }
    }
    free(sel);
    if (err == 0)
        err = record_end(o);
    return err;
}

/* The command's joules of each component of the last window (the tree's
 * row, else the process's), NULL when there is none: the components past
 * cpu and nic (the GPU), which pa_power does not hold. */
static const double *command_components(const rp_out_command *c)
{
    const pa_report *r = c->last;
    if (!r || !r->target_component_j || r->ncomponents <= FIXED_COMPS)
        return NULL;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < r->ntargets; i++)
            if (r->targets[i].pid == c->pid &&
                r->targets[i].type == (pass ? PA_TARGET_PROCESS : PA_TARGET_TREE))
                return &r->target_component_j[i * r->ncomponents];
    return NULL;
}

int rp_out_command_end(rp_out *o, const rp_out_command *c)
{
    FILE *f = o->f;
    const double *comp_j = command_components(c);
    size_t ncomp = comp_j ? c->last->ncomponents : 0;
    errno = 0;
    switch (o->format) {
    case RP_OUT_JSON:
        fprintf(f, "{\"type\":\"command\",\"pid\":%ld,\"exit_status\":%d", (long)c->pid,
                c->exit_status);
        json_key_num(f, "duration_s", c->duration_s, true);
        fputs(",\"energy_j\":{", f);
        json_key_num(f, "cpu", c->energy.cpu_j, false);
        json_key_num(f, "nic", c->energy.nic_j, true);
        for (size_t k = FIXED_COMPS; k < ncomp; k++)
            json_key_num(f, c->last->component_names[k], comp_j[k], true);
        json_key_num(f, "total", c->energy.total_j, true);
        fputc('}', f);
        json_carbon(o, c->energy.total_j);
        if (c->cpu_time_s >= 0)
            json_key_num(f, "cpu_time_s", c->cpu_time_s, true);
        if (c->signal)
            fprintf(f, ",\"signal\":%d", c->signal);
        fputs("}\n", f);
        break;
    case RP_OUT_CSV:
        if (!o->csv_header_done) {
            o->command_columns = 1;
            int err = csv_header(o, NULL);
            if (err < 0)
                return err;
        }
        fprintf(f, "command,,,%ld,,,,", (long)c->pid);
        if (c->cpu_time_s >= 0)
            csv_number(f, c->cpu_time_s);
        fputs(",,,,,", f);
        csv_number(f, c->energy.cpu_j);
        fputc(',', f);
        csv_number(f, c->energy.nic_j);
        fputc(',', f);
        csv_number(f, c->energy.total_j);
        fputs(",,,,,,,,", f); /* formula ... exited */
        for (size_t i = 0; i < RP_OUT_NNAMES; i++)
            fputc(',', f);                           /* the names */
        fputs(",,", f);                              /* processes, exits */
        for (size_t i = 0; i < o->csv_ncomps; i++) { /* each component: its joules */
            size_t k = FIXED_COMPS;
            while (k < ncomp && strcmp(c->last->component_names[k], o->csv_comps[i]))
                k++;
            fputs(",,", f);
            if (k < ncomp)
                csv_number(f, comp_j[k]);
        }
        for (size_t i = 0; i < o->csv_ncounters; i++)
            fputc(',', f);
        csv_carbon(o, c->energy.total_j);
        if (o->command_columns) {
            fprintf(f, ",%d,", c->exit_status);
            csv_number(f, c->duration_s);
        }
        fputc('\n', f);
        break;
    default: {
        fputs("\n Energy of '", f);
        for (char *const *a = c->argv; a && *a; a++)
            fprintf(f, "%s%s", a == c->argv ? "" : " ", *a);
        fprintf(f, "' (pid %ld):\n\n", (long)c->pid);
        fprintf(f, "%16.2f J  total energy\n", c->energy.total_j);
        fprintf(f, "%16.2f J  cpu\n", c->energy.cpu_j);
        fprintf(f, "%16.2f J  nic\n", c->energy.nic_j);
        for (size_t k = FIXED_COMPS; k < ncomp; k++)
            fprintf(f, "%16.2f J  %s\n", comp_j[k], c->last->component_names[k]);
        if (o->carbon_g_per_kwh > 0)
            fprintf(f, "%16.6f g  CO2e at %g g/kWh (assumed)\n", co2e_g(o, c->energy.total_j),
                    o->carbon_g_per_kwh);
        fprintf(f, "%16.2f W  average power\n",
                c->duration_s > 0 ? c->energy.total_j / c->duration_s : 0);
        if (c->cpu_time_s >= 0)
            fprintf(f, "%16.3f s  cpu time  # %.2f CPUs utilized\n", c->cpu_time_s,
                    c->duration_s > 0 ? c->cpu_time_s / c->duration_s : 0);
        fprintf(f, "%16.3f s  elapsed\n", c->duration_s);
        if (c->signal)
            fprintf(f, "%16d    killed by signal %d (%s)\n", c->exit_status, c->signal,
                    strsignal(c->signal));
        else
            fprintf(f, "%16d    exit status\n", c->exit_status);
        if (c->last) {
            const char *src = c->last->cpu_source ? c->last->cpu_source : "model";
            fprintf(f, "\n formulas %s (cpu %s)\n",
                    c->last->formula && *c->last->formula ? c->last->formula : "-",
                    !strcmp(src, "rapl") ? "measured by RAPL" : rp_out_source_words(src));
            each_assumed_o(o, c->last->assumed, table_assumed_item, f);
        }
        fputc('\n', f);
        break;
    }
    }
    return record_end(o);
}
