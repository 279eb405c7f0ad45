/*
 * share.c - the split of a window's CPU power over the targets by their
 * share of unhalted cycles (the perf sensor's counter) or of CPU time,
 * shared by the CPU formulas (rapl-share, cpu-curve; DESIGN.md section
 * 6.2).  In the library so that a formula can be left out of the build
 * without the others.
 */
#include "internal.h"

#include <string.h>
#include <strings.h>

/* Names the perf sensor may give the unhalted core cycles counter. */
static bool is_cycles_name(const char *n)
{
    static const char *const names[] = {
        "UNHALTED_CORE_CYCLES",
        "CPU_CLK_UNHALTED",
        "CPU_CLK_UNHALTED.THREAD",
        "CPU_CLK_UNHALTED:THREAD_P",
        "CYCLES_NOT_IN_HALT",
        "CYCLES",
        "perf::CYCLES",
        "perf::CPU-CYCLES",
        "perf::PERF_COUNT_HW_CPU_CYCLES",
        "cpu-cycles",
        "RETIRED_CYCLES",
        "CPU_CYCLES",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcasecmp(n, names[i]))
            return true;
    return false;
}

static int cycles_index(const pa_frame_delta *d)
{
    for (size_t i = 0; i < d->ncounters && d->counter_names; i++)
        if (d->counter_names[i] && is_cycles_name(d->counter_names[i]))
            return (int)i;
    return -1;
}

void pa__share_weights(const pa_frame_delta *d, pa_share_w *sw)
{
    sw->ci = cycles_index(d);
    sw->cycles = sw->ci >= 0 && (d->have & PA_HAVE_CYCLES) && d->cycles_all > 0;
    double w_sys = sw->cycles ? d->cycles_all : d->busy_s;
    double w_procs = 0;
    for (size_t i = 0; i < d->ntasks; i++) {
        const pa_task *k = d->tasks[i];
        if (k->type != PA_TARGET_PROCESS)
            continue;
        w_procs += sw->cycles ? (k->ctr_d ? k->ctr_d[sw->ci] : 0) : k->d_cpu_s;
    }
    sw->all = d->ctx && d->ctx->watch_all;
    /* the system's weight: what no process accounts for is not spread
     * over the survivors (it is the unaccounted target, exits.c); the
     * processes' own when they add up to more (clock granularity) */
    sw->w_all = w_sys > w_procs ? w_sys : w_procs;
}

void pa__share_split(const pa_frame_delta *d, pa_power_table *t, double p, double active)
{
    pa_share_w sw;
    pa__share_weights(d, &sw);
    for (size_t i = 0; i < d->ntasks; i++) {
        pa_task *k = d->tasks[i];
        double w = sw.cycles ? (k->ctr_d ? k->ctr_d[sw.ci] : 0) : k->d_cpu_s;
        if (!(w > 0) || !(sw.w_all > 0))
            w = 0;
        k->cpu_w = sw.w_all > 0 ? active * w / sw.w_all : 0;
    }
    t->cpu_w = p;
    t->idle_w = p - active;
    if (t->idle_w < 0)
        t->idle_w = 0; /* rounding only: active <= p */
}
