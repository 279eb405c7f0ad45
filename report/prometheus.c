/*
 * prometheus.c - a pa_report as a page of the Prometheus text exposition
 * format (version 0.0.4): what `powerapi serve` publishes at /metrics
 * (the metrics are listed in its --help and in DESIGN.md section 10).
 */
#include "prometheus.h"
#include "output.h" /* rp_out_co2e_g */
#include "util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A label value: backslash, double quote and newline escaped, and bytes
 * that are not UTF-8 replaced by U+FFFD (Prometheus requires UTF-8). */
static void put_label(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned char c = *p;
        if (c == '\\') {
            fputs("\\\\", f);
            p++;
        } else if (c == '"') {
            fputs("\\\"", f);
            p++;
        } else if (c == '\n') {
            fputs("\\n", f);
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            size_t n = pa__utf8_len(p); /* RFC 3629, as the JSON writer */
            if (n) {
                fwrite(p, 1, n, f);
                p += n;
            } else {
                fputs("\xef\xbf\xbd", f);
                p++;
            }
        }
    }
}

static void put_value(FILE *f, double v)
{
    if (isnan(v))
        fputs(" NaN\n", f);
    else if (isinf(v))
        fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
    else
        fprintf(f, " %.10g\n", v);
}

static void put_help(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels of a cgroup series: the path, the container, pod and unit it
 * is (DESIGN.md section 14; empty ones left out), the node. */
static void put_cgroup_labels(FILE *f, const pa_target_info *t, const rp_prom_opts *o)
{
    fputs("{cgroup=\"", f);
    put_label(f, t->cgroup);
    fputc('"', f);
    const pa_cgroup_names *n = t->names;
    if (n) {
        const char *v[] = {n->container_id, n->container_name, n->runtime,
                           n->pod_name,     n->pod_namespace,  n->unit};
        static const char *const k[] = {"container_id", "container_name", "runtime",
                                        "pod_name",     "pod_namespace",  "unit"};
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
            if (!*v[i])
                continue;
            fprintf(f, ",%s=\"", k[i]);
            put_label(f, v[i]);
            fputc('"', f);
        }
    }
    fputs(",node=\"", f);
    put_label(f, o->node);
    fputc('"', f); /* the caller closes the braces */
}

static int by_power_desc(const void *a, const void *b)
{
    const pa_target_info *x = *(const pa_target_info *const *)a;
    const pa_target_info *y = *(const pa_target_info *const *)b;
    if (x->power.total_w != y->power.total_w)
        return x->power.total_w > y->power.total_w ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
}

/* Targets of one type kept by --min-watts and (limit) --top, most
 * powerful first.  Returns the count; *out is malloc'd (NULL when 0 or
 * ENOMEM). */
static size_t select_targets(const pa_report *r, pa_target_type type, const rp_prom_opts *o,
                             bool limit, const pa_target_info ***out)
{
    *out = NULL;
    const pa_target_info **v = malloc((r->ntargets + 1) * sizeof(*v));
    if (!v)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != type || (t->power.flags & PA_POWER_EXITED))
            continue;
        if (o->min_watts > 0 && !(t->power.total_w >= o->min_watts))
            continue;
        v[n++] = t;
    }
    qsort(v, n, sizeof(*v), by_power_desc);
    if (limit && o->top && n > o->top)
        n = o->top;
    *out = v;
    return n;
}

/* The HELP of a *_co2e_grams_total series: the intensity assumed. */
static void co2e_help(char *buf, size_t len, const char *what, const rp_prom_opts *o)
{
    snprintf(buf, len,
             "Grams of CO2e of %s at an assumed carbon intensity of %g gCO2e/kWh "
             "(--carbon-intensity: given, not measured).",
             what, o->carbon_g_per_kwh);
}

/* The process series: the first keep of v (most powerful first), the
 * others summed in one series pid="[other]" (a bounded page however many
 * processes run), and how many were folded. */
static void put_processes(FILE *f, const pa_target_info **v, size_t n, size_t keep,
                          const rp_prom_opts *o)
{
    pa_target_info other;
    memset(&other, 0, sizeof(other));
    snprintf(other.comm, sizeof(other.comm), "[other]");
    for (size_t i = keep; i < n; i++) {
        other.power.total_w += v[i]->power.total_w;
        other.power.total_j += v[i]->power.total_j;
    }
    static const char *const name[3] = {"powerapi_process_power_watts",
                                        "powerapi_process_energy_joules_total",
                                        "powerapi_process_co2e_grams_total"};
    char carbon[256];
    co2e_help(carbon, sizeof(carbon), "a process's energy since powerapi first saw it", o);
    const char *const help[3] = {"Power of a process over the last window (CPU and NIC).",
                                 "Energy of a process since powerapi first saw it.", carbon};
    for (int m = 0; m < (o->carbon_g_per_kwh > 0 ? 3 : 2); m++) {
        put_help(f, name[m], m ? "counter" : "gauge", help[m]);
        for (size_t i = 0; i <= keep && !(i == keep && keep == n); i++) {
            const pa_target_info *t = i < keep ? v[i] : &other;
            if (i < keep)
                fprintf(f, "%s{pid=\"%d\",comm=\"", name[m], (int)t->pid);
            else
                fprintf(f, "%s{pid=\"[other]\",comm=\"", name[m]);
            put_label(f, t->comm);
            fputs("\"}", f);
            put_value(f, m == 2   ? rp_out_co2e_g(o->carbon_g_per_kwh, t->power.total_j)
                         : m == 1 ? t->power.total_j
                                  : t->power.total_w);
        }
    }
    put_help(f, "powerapi_process_series_folded", "gauge",
             "Processes of the last page folded into the pid=\"[other]\" series "
             "(beyond --max-processes or --top).");
    fputs("powerapi_process_series_folded", f);
    put_value(f, (double)(n - keep));
}

/* Perf counters of the selected targets as per-second rates (gauges):
 * a window's count divided by its length.  Not a _total counter: the
 * counts are per window, and with --window pages overlap, so a sum made
 * here would count windows twice.  Nothing when the report has none. */
static void put_counter_rates(FILE *f, const pa_report *r, const pa_target_info **v, size_t n,
                              int cgroup, const rp_prom_opts *o)
{
    if (!r->ncounters || !(r->interval_s > 0))
        return;
    const char *name = cgroup ? "powerapi_cgroup_perf_events_per_second"
                              : "powerapi_process_perf_events_per_second";
    put_help(f, name, "gauge",
             cgroup ? "Perf event count of a cgroup v2 per second over the "
                      "last window, scaled for multiplexing (task-clock: "
                      "ns per second)."
                    : "Perf event count of a process per second over the "
                      "last window, scaled for multiplexing (task-clock: "
                      "ns per second).");
    for (size_t i = 0; i < n; i++) {
        if (!v[i]->counters)
            continue;
        for (size_t e = 0; e < r->ncounters; e++) {
            if (cgroup) {
                fputs(name, f);
                put_cgroup_labels(f, v[i], o);
                fputs(",event=\"", f);
            } else {
                fprintf(f, "%s{pid=\"%d\",comm=\"", name, (int)v[i]->pid);
                put_label(f, v[i]->comm);
                fputs("\",event=\"", f);
            }
            put_label(f, r->counter_names[e]);
            fputs("\"}", f);
            put_value(f, v[i]->counters[e] / r->interval_s);
        }
    }
}

/* The cgroup series: at most --max-cgroups of them (the most powerful),
 * the rest folded into one series cgroup="[other]" whose count is said. */
static void put_cgroups(FILE *f, const pa_target_info **cgs, size_t nc, const rp_prom_opts *o)
{
    size_t keep = o->max_cgroups && nc > o->max_cgroups ? o->max_cgroups : nc;
    pa_target_info other;
    memset(&other, 0, sizeof(other));
    other.cgroup = "[other]";
    for (size_t i = keep; i < nc; i++) {
        other.power.total_w += cgs[i]->power.total_w;
        other.power.total_j += cgs[i]->power.total_j;
    }
    static const char *const name[3] = {"powerapi_cgroup_power_watts",
                                        "powerapi_cgroup_energy_joules_total",
                                        "powerapi_cgroup_co2e_grams_total"};
    char carbon[256];
    co2e_help(carbon, sizeof(carbon), "a cgroup's energy", o);
    const char *const help[3] = {
        "Power of a cgroup (its processes summed) over the last window; labelled with "
        "the container, pod and unit it is.",
        "Energy of a cgroup (its processes summed, those that ended too) since powerapi "
        "first saw it.",
        carbon};
    for (int m = 0; m < (o->carbon_g_per_kwh > 0 ? 3 : 2); m++) {
        put_help(f, name[m], m ? "counter" : "gauge", help[m]);
        for (size_t i = 0; i <= keep; i++) {
            const pa_target_info *t = i < keep ? cgs[i] : &other;
            if (i == keep && keep == nc)
                break;
            fputs(name[m], f);
            put_cgroup_labels(f, t, o);
            fputc('}', f);
            put_value(f, m == 2   ? rp_out_co2e_g(o->carbon_g_per_kwh, t->power.total_j)
                         : m == 1 ? t->power.total_j
                                  : t->power.total_w);
        }
    }
    put_help(f, "powerapi_cgroup_series_folded", "gauge",
             "Cgroups of the last page folded into the cgroup=\"[other]\" series "
             "(beyond --max-cgroups).");
    fputs("powerapi_cgroup_series_folded", f);
    put_value(f, (double)(nc - keep));
}

/* The labels of a VM series (DESIGN.md section 18): its name, uuid and
 * hypervisor ("" for the processes in no VM and the folded ones). */
static void put_vm_labels(FILE *f, const char *name, const pa_vm_info *v, const rp_prom_opts *o)
{
    fputs("{vm_name=\"", f);
    put_label(f, name);
    fputs("\",vm_uuid=\"", f);
    put_label(f, v ? v->uuid : "");
    fputs("\",hypervisor=\"", f);
    put_label(f, v ? v->hypervisor : "");
    fputs("\",node=\"", f);
    put_label(f, o->node);
    fputs("\"}", f);
}

/* The VM series: at most max_cgroups VMs (the most powerful; the same
 * bound as the containers'), the rest folded into vm_name="[other]". */
static void put_vms(FILE *f, const rp_prom_opts *o)
{
    const pa_report *r = o->vms;
    const pa_target_info **v = malloc((r->ntargets ? r->ntargets : 1) * sizeof(*v));
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_VM) /* a ring's window holds the others too */
            v[n++] = &r->targets[i];
    size_t keep = o->max_cgroups && n > o->max_cgroups ? o->max_cgroups : n;
    qsort(v, n, sizeof(*v), by_power_desc);
    static const char *const name[4] = {
        "powerapi_vm_power_watts", "powerapi_vm_energy_joules_total",
        "powerapi_vm_vcpu_power_watts", "powerapi_vm_vcpu_energy_joules_total"};
    static const char *const help[4] = {
        "Power of a VM (its hypervisor's processes and threads summed) over the last window; "
        "vm_name=\"[not in a VM]\": the other processes.",
        "Energy of a VM since powerapi first saw it.",
        "Power of a VM's vCPU threads (the guest's work) over the last window; the rest of "
        "powerapi_vm_power_watts is the emulator's. Absent when its threads are not named.",
        "Energy of a VM's vCPU threads over the windows where they were told apart."};
    for (int m = 0; m < 4; m++) {
        put_help(f, name[m], m % 2 ? "counter" : "gauge", help[m]);
        double other = 0;
        for (size_t i = 0; i < n; i++) {
            const pa_target_info *t = v[i];
            double x = m == 0   ? t->power.total_w
                       : m == 1 ? t->power.total_j
                       : m == 2 ? t->vcpu_w
                                : t->vcpu_j;
            if (m >= 2 && (!t->vm || t->vcpu_w < 0))
                continue;
            if (i >= keep) {
                other += x;
                continue;
            }
            fputs(name[m], f);
            put_vm_labels(f, t->vm ? t->vm->name : t->comm, t->vm, o);
            put_value(f, x);
        }
        if (keep < n) {
            fputs(name[m], f);
            put_vm_labels(f, "[other]", NULL, o);
            put_value(f, other);
        }
    }
    put_help(f, "powerapi_vm_series_folded", "gauge",
             "VMs of the last page folded into the vm_name=\"[other]\" series "
             "(beyond --max-cgroups).");
    fputs("powerapi_vm_series_folded", f);
    put_value(f, (double)(n - keep));
    free(v);
}

/* The whole machine's meter (issue 46): the wall's power and energy,
 * labelled sensor and meter, when the platform formula reported one. */
static void put_wall(FILE *f, const pa_report *r)
{
    static const char *const dn[2] = {"powerapi_wall_power_watts",
                                      "powerapi_wall_energy_joules_total"};
    static const char *const dh[2] = {
        "The whole machine's power from its meter (acpi-power, ipmi, redfish, http-meter), "
        "aligned to the window.",
        "The whole machine's energy from its meter since powerapi first read it."};
    for (int m = 0; m < 2; m++)
        for (size_t i = 0; i < r->ndevices; i++) {
            const pa_device_info *d = &r->devices[i];
            if (strcmp(d->component, "wall"))
                continue;
            put_help(f, dn[m], m ? "counter" : "gauge", dh[m]);
            fprintf(f, "%s{sensor=\"", dn[m]);
            put_label(f, d->vendor);
            fputs("\",meter=\"", f);
            put_label(f, d->name);
            fputs("\"}", f);
            put_value(f, m ? d->energy_j : d->power_w);
        }
}

/* The GPUs (issue 28): each device's power, idle part and energy,
 * labelled index, uuid, name, vendor, bus and source (measured,
 * integrated); the GPU watts and joules of the selected processes and
 * cgroups that have GPU energy.  Nothing when the report has no component
 * "gpu". */
static void put_gpu(FILE *f, const pa_report *r, const pa_target_info **v[2], const size_t n[2],
                    const rp_prom_opts *o)
{
    size_t g = 0;
    while (r->target_component_w && g < r->ncomponents && strcmp(r->component_names[g], "gpu"))
        g++;
    if (!r->target_component_w || g == r->ncomponents)
        return;
    static const char *const dn[3] = {"powerapi_gpu_power_watts", "powerapi_gpu_idle_power_watts",
                                      "powerapi_gpu_energy_joules_total"};
    static const char *const dh[3] = {
        "Power of a GPU over the last window (source: measured = its energy counter, "
        "integrated = its power reading times the window).",
        "The idle part of a GPU's power (its lowest so far, or the idle= option).",
        "Energy of a GPU since powerapi first saw it."};
    for (int m = 0; m < 3; m++) {
        put_help(f, dn[m], m == 2 ? "counter" : "gauge", dh[m]);
        for (size_t i = 0; i < r->ndevices; i++) {
            const pa_device_info *d = &r->devices[i];
            if (strcmp(d->component, "gpu"))
                continue; /* the wall's and platform's records: put_wall */
            const char *lv[5] = {d->uuid, d->name, d->vendor, d->bus, d->source};
            static const char *const lk[5] = {"uuid", "name", "vendor", "bus", "source"};
            fprintf(f, "%s{index=\"%d\"", dn[m], d->index);
            for (int k = 0; k < 5; k++) {
                fprintf(f, ",%s=\"", lk[k]);
                put_label(f, lv[k]);
                fputc('"', f);
            }
            fputc('}', f);
            put_value(f, m == 0 ? d->power_w : m == 1 ? d->idle_w : d->energy_j);
        }
    }
    static const char *const tn[2][2] = {
        {"powerapi_process_gpu_power_watts", "powerapi_process_gpu_energy_joules_total"},
        {"powerapi_cgroup_gpu_power_watts", "powerapi_cgroup_gpu_energy_joules_total"}};
    for (int c = 0; c < 2; c++)
        for (int m = 0; m < 2; m++) {
            put_help(f, tn[c][m], m ? "counter" : "gauge",
                     m ? "GPU energy (its share of each device's active part) since powerapi "
                         "first saw it."
                       : "GPU power (its share of each device's active part) over the last "
                         "window.");
            for (size_t i = 0; i < n[c]; i++) {
                size_t row = (size_t)(v[c][i] - r->targets) * r->ncomponents + g;
                if (!(r->target_component_j[row] > 0))
                    continue; /* never on a GPU: no series */
                if (c) {
                    fputs(tn[c][m], f);
                    put_cgroup_labels(f, v[c][i], o);
                    fputc('}', f);
                } else {
                    fprintf(f, "%s{pid=\"%d\",comm=\"", tn[c][m], (int)v[c][i]->pid);
                    put_label(f, v[c][i]->comm);
                    fputs("\"}", f);
                }
                put_value(f, m ? r->target_component_j[row] : r->target_component_w[row]);
            }
        }
}

/* The processes born and exited inside the window, and what no process
 * accounts for: one series each, whatever the number of short-lived
 * pids (every process watched; DESIGN.md section 8.3). */
static void put_exits(FILE *f, const pa_report *r)
{
    const pa_target_info *ex = NULL, *un = NULL;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_EXITED)
            ex = &r->targets[i];
        else if (r->targets[i].type == PA_TARGET_UNACCOUNTED)
            un = &r->targets[i];
    if (!ex || !un)
        return;
    static const struct {
        const char *name, *type, *help;
        int who, what; /* 0 exited 1 unaccounted; 0 W 1 J 2 processes */
    } s[5] = {
        {"powerapi_exited_power_watts", "gauge",
         "Power of the processes that were born and exited inside the last window, summed.", 0, 0},
        {"powerapi_exited_energy_joules_total", "counter",
         "Energy of the processes born and exited between two windows since powerapi started.", 0,
         1},
        {"powerapi_exited_processes", "gauge",
         "Processes born and exited inside the last window (0: estimated without counting).", 0, 2},
        {"powerapi_unaccounted_power_watts", "gauge",
         "Power no process accounts for over the last window (interrupts, exits not recorded).", 1,
         0},
        {"powerapi_unaccounted_energy_joules_total", "counter",
         "Energy no process accounted for since powerapi started.", 1, 1},
    };
    for (int i = 0; i < 5; i++) {
        const pa_target_info *t = s[i].who ? un : ex;
        put_help(f, s[i].name, s[i].type, s[i].help);
        fputs(s[i].name, f);
        put_value(f, s[i].what == 0   ? t->power.total_w
                     : s[i].what == 1 ? t->power.total_j
                                      : (double)t->processes);
    }
}

char *rp_prom_page(const pa_report *r, const rp_prom_opts *o, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    const pa_target_info **procs, **cgs;
    size_t np;
    size_t nall = rp_prom_select_processes(r, o, &procs, &np);
    size_t nc = select_targets(r, PA_TARGET_CGROUP, o, true, &cgs);

    put_processes(f, procs, nall, np, o);
    put_cgroups(f, cgs, nc, o);
    if (o->vms)
        put_vms(f, o);
    put_counter_rates(f, r, procs, np, 0, o);
    put_counter_rates(f, r, cgs, nc, 1, o);
    const pa_target_info **sel[2] = {procs, cgs};
    const size_t nsel[2] = {np, nc};
    put_gpu(f, r, sel, nsel, o);
    put_wall(f, r);
    put_help(f, "powerapi_system_power_watts", "gauge",
             "Power of the whole machine over the last window; idle is the "
             "CPU power no task caused.");
    static const char *const comp[4] = {"cpu", "nic", "idle", "total"};
    const double val[4] = {r->system.cpu_w, r->system.nic_w, r->system.idle_w, r->system.total_w};
    for (int i = 0; i < 4; i++) {
        fprintf(f, "powerapi_system_power_watts{component=\"%s\"}", comp[i]);
        put_value(f, val[i]);
    }
    /* the components of registered formulas ("gpu"), by name */
    for (size_t k = 2; r->system_component_w && k < r->ncomponents; k++) {
        fprintf(f, "powerapi_system_power_watts{component=\"%s\"}", r->component_names[k]);
        put_value(f, r->system_component_w[k]);
    }
    put_exits(f, r);
    char help[256];
    put_help(f, "powerapi_system_energy_joules_total", "counter",
             "Energy of the whole machine since powerapi started sampling.");
    fputs("powerapi_system_energy_joules_total", f);
    put_value(f, r->system.total_j);
    if (o->carbon_g_per_kwh > 0) {
        co2e_help(help, sizeof(help), "the whole machine's energy since powerapi started", o);
        put_help(f, "powerapi_system_co2e_grams_total", "counter", help);
        fputs("powerapi_system_co2e_grams_total", f);
        put_value(f, rp_out_co2e_g(o->carbon_g_per_kwh, r->system.total_j));
        put_help(f, "powerapi_carbon_intensity_grams_per_kwh", "gauge",
                 "The carbon intensity assumed for the *_co2e_grams_total series "
                 "(--carbon-intensity: given, not measured).");
        fputs("powerapi_carbon_intensity_grams_per_kwh", f);
        put_value(f, o->carbon_g_per_kwh);
    }
    put_help(f, "powerapi_window_seconds", "gauge",
             "Length of the window the power figures cover.");
    fputs("powerapi_window_seconds", f);
    put_value(f, r->interval_s);
    put_help(f, "powerapi_info", "gauge",
             "How the figures are made: formulas, CPU source (rapl = "
             "measured, model = estimated), constants assumed.");
    fputs("powerapi_info{formula=\"", f);
    put_label(f, r->formula);
    fputs("\",cpu_source=\"", f);
    put_label(f, r->cpu_source);
    fputs("\",exits=\"", f);
    put_label(f, r->exits_source ? r->exits_source : "none");
    fputs("\",assumed=\"", f);
    char ci[128];
    if (o->carbon_g_per_kwh > 0 && pa_carbon_assumption(o->carbon_g_per_kwh, ci, sizeof(ci)) > 0) {
        char *as = NULL;
        put_label(f, asprintf(&as, "%s%s%s", r->assumed ? r->assumed : "",
                              r->assumed && r->assumed[0] ? "; " : "", ci) < 0
                         ? r->assumed
                         : as);
        free(as);
    } else {
        put_label(f, r->assumed);
    }
    fputs("\"} 1\n", f);
    free(procs);
    free(cgs);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}

size_t rp_prom_select(const pa_report *r, pa_target_type type, const rp_prom_opts *o,
                      const pa_target_info ***out)
{
    return select_targets(r, type, o, true, out);
}

size_t rp_prom_select_processes(const pa_report *r, const rp_prom_opts *o,
                                const pa_target_info ***out, size_t *keep)
{
    size_t nall = select_targets(r, PA_TARGET_PROCESS, o, false, out);
    size_t np = nall;
    if (o->top && np > o->top)
        np = o->top;
    if (o->max_processes && np > o->max_processes)
        np = o->max_processes;
    *keep = np;
    return nall;
}
