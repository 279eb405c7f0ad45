/*
 * cpus.c - the machine's CPUs as the CPU modules see them: the package of
 * each online CPU (sysfs topology, for rapl and the CPU formulas), a
 * package's busy share over a window, and a window's CPU count and busy
 * seconds (the CPU formulas).  Only the library's file helpers below it.
 */
#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int pa__cpu_package(const pa_env *env, int cpu)
{
    char rel[96], buf[32];
    snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    if (pa__read_file(env->sysfs, rel, buf, sizeof(buf)) <= 0)
        return -1;
    return atoi(buf);
}

unsigned pa__cpu_packages(const pa_env *env, int16_t *map, size_t cap)
{
    char buf[4096];
    for (size_t i = 0; i < cap; i++)
        map[i] = -1;
    int *cpus = malloc(cap * sizeof(*cpus));
    if (!cpus || pa__read_file(env->sysfs, "devices/system/cpu/online", buf, sizeof(buf)) <= 0) {
        free(cpus);
        return 0;
    }
    int n = pa__parse_cpulist(buf, cpus, (int)cap);
    unsigned top = 0;
    for (int i = 0; i < n; i++) {
        if (cpus[i] < 0 || (size_t)cpus[i] >= cap)
            continue;
        int s = pa__cpu_package(env, cpus[i]);
        if (s < 0 || s > INT16_MAX)
            continue;
        map[cpus[i]] = (int16_t)s;
        if ((unsigned)cpus[i] + 1 > top)
            top = (unsigned)cpus[i] + 1;
    }
    free(cpus);
    return top;
}

double pa__package_busy(const pa_frame_delta *d, const int16_t *map, unsigned nmap, int pkg)
{
    const pa_sysread *c = d->cur, *p = d->prev;
    if (!c || !p)
        return -1;
    unsigned n = nmap;
    if (c->ncpu_time < n)
        n = c->ncpu_time;
    if (p->ncpu_time < n)
        n = p->ncpu_time;
    uint64_t busy = 0, all = 0;
    for (unsigned k = 0; k < n; k++) {
        if (map[k] != pkg || c->cpu_busy_ns[k] == UINT64_MAX || p->cpu_busy_ns[k] == UINT64_MAX ||
            c->cpu_busy_ns[k] < p->cpu_busy_ns[k] || c->cpu_idle_ns[k] < p->cpu_idle_ns[k])
            continue;
        uint64_t b = c->cpu_busy_ns[k] - p->cpu_busy_ns[k];
        busy += b;
        all += b + (c->cpu_idle_ns[k] - p->cpu_idle_ns[k]);
    }
    if (all == 0)
        return -1;
    return (double)busy / (double)all;
}

unsigned pa__delta_ncpus(const pa_frame_delta *d)
{
    unsigned ncpus = d->ncpus ? d->ncpus : (d->cur ? d->cur->ncpus : 0);
    return ncpus ? ncpus : 1;
}

double pa__delta_busy_s(const pa_frame_delta *d, bool *summed)
{
    *summed = !(d->have & PA_HAVE_CPU);
    if (!*summed)
        return d->busy_s;
    double busy = 0;
    for (size_t i = 0; i < d->ntasks; i++)
        if (d->tasks[i]->type == PA_TARGET_PROCESS)
            busy += d->tasks[i]->d_cpu_s;
    return busy;
}
