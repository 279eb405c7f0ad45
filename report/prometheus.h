/*
 * prometheus.h - the Prometheus text exposition format of a pa_report
 * (`powerapi serve`'s /metrics page), apart from the HTTP server so that
 * tests and other exporters can make the same page.  Nothing here prints;
 * thread-safe (no state).
 */
#ifndef PA_REPORT_PROMETHEUS_H
#define PA_REPORT_PROMETHEUS_H

#include <stddef.h>

#include "powerapi.h"

typedef struct rp_prom_opts {
    size_t top;              /* processes and cgroups each, 0 = all */
    double min_watts;        /* drop series below, 0 = none */
    size_t max_cgroups;      /* cgroup series beyond: folded into one */
    size_t max_processes;    /* process series beyond: folded into one
                                (pid="[other]"), 0 = all */
    char node[256];          /* the node label of cgroup series */
    double carbon_g_per_kwh; /* --carbon-intensity: the *_co2e_grams_total
                                series; 0: none */
    const pa_report *vms;    /* the same window grouped by VM
                                (report/vmgroups.h): the powerapi_vm_*
                                series, at most max_cgroups VMs; NULL: none */
} rp_prom_opts;

/* The whole page of r: per process (beyond top or max_processes folded
 * into one series pid="[other]"), per cgroup (labelled with its
 * container, pod and unit; beyond max_cgroups folded into one series
 * cgroup="[other]"), per VM (o->vms: labelled vm_name, vm_uuid,
 * hypervisor; its vCPUs' part apart; beyond max_cgroups folded into
 * vm_name="[other]"), perf counter rates, the system's power by component,
 * the grams of CO2e at carbon_g_per_kwh (when > 0), the window and how the
 * figures are made.  A malloc'd buffer of *len
 * bytes, or NULL (out of memory). */
char *rp_prom_page(const pa_report *r, const rp_prom_opts *o, size_t *len);

/* The targets of one type that the page keeps (--min-watts, --top), most
 * powerful first, for the other exporters of the same series (otlp.h):
 * *out malloc'd (NULL when none or out of memory), the count returned. */
size_t rp_prom_select(const pa_report *r, pa_target_type type, const rp_prom_opts *o,
                      const pa_target_info ***out);

/* The processes of the page: every one above --min-watts, most powerful
 * first (*out malloc'd, NULL when none or out of memory; the count
 * returned), of which the first *keep have series of their own (--top,
 * --max-processes) and the rest are folded into one "[other]" series. */
size_t rp_prom_select_processes(const pa_report *r, const rp_prom_opts *o,
                                const pa_target_info ***out, size_t *keep);

#endif
