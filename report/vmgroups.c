/*
 * vmgroups.c - `--group-by vm` and `--vms` (issue 41; DESIGN.md section
 * 18): a report's process and thread records summed into one record per
 * virtual machine, with its vCPU threads' part apart.
 *
 * A VM's processes are its hypervisor's and those in the VM's own cgroup
 * (libvirt's scope, Proxmox's VMID.scope, KubeVirt's compute container:
 * swtpm, virtiofsd, virt-launcher); pa_vms_of_process says which.  The
 * library keeps no energy per VM, so the grouping keeps it: each window
 * adds its records' watts times their window to the VM's joules, which
 * is what the library does per target (DESIGN.md section 2, step 6).
 * Everything else (processes in no VM, the exited and unaccounted
 * records) is one record, "[not in a VM]", so that the VMs and it add up
 * to the system's busy power, every window.
 */
#include "vmgroups.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vm_acc {
    pid_t pid;
    char name[128];
    double cpu_j, nic_j, total_j, vcpu_j, emulator_j;
    double comp_j[PA_MAX_COMPONENTS]; /* each component's, as the report's */
} vm_acc;

struct rp_vmgroups {
    pa_vms *vms;
    vm_acc *acc; /* per record of the last report, the rest last */
    size_t nacc;
    pa_report r;
    pa_target_info *t;
    double *wj; /* per record: cpu, nic, total, vcpu joules of the window */
    bool *seen; /* per record: its hypervisor's threads were in the window */
    size_t cap;
    /* per record: each component's watts (the report's target_component_w
     * summed), then its joules; nk columns */
    double *comp;
    size_t nk, comp_cap;
    /* rp_vmgroups_merge: r's targets, then the VM records */
    pa_report m;
    pa_target_info *mt;
    double *mcomp; /* watts of every target, then their joules */
    size_t mcap, mcomp_cap;
    pid_t *watched; /* the hypervisors watched with their threads */
    size_t nwatched;
};

int rp_vmgroups_new(rp_vmgroups **out, const char *procfs, const char *rootfs)
{
    rp_vmgroups *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    int err = pa_vms_new(&g->vms, procfs, rootfs);
    if (err < 0) {
        free(g);
        return err;
    }
    *out = g;
    return 0;
}

void rp_vmgroups_free(rp_vmgroups *g)
{
    if (!g)
        return;
    pa_vms_free(g->vms);
    free(g->acc);
    free(g->t);
    free(g->wj);
    free(g->seen);
    free(g->comp);
    free(g->mt);
    free(g->mcomp);
    free(g->watched);
    free(g);
}

/* Watches the hypervisors of the last scan with their threads, and stops
 * watching those gone (a long monitor's list does not grow with every VM
 * it ever saw; every process stays watched by pa_watch_all). */
static void watch_threads(rp_vmgroups *g, pa_ctx *ctx)
{
    size_t n = pa_vms_count(g->vms);
    for (size_t i = 0; i < g->nwatched; i++)
        if (!pa_vms_of_process(g->vms, g->watched[i], NULL))
            (void)pa_unwatch_pid(ctx, g->watched[i]);
    pid_t *w = realloc(g->watched, (n ? n : 1) * sizeof(*w));
    if (w)
        g->watched = w;
    g->nwatched = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = pa_vms_get(g->vms, i)->pid;
        if (pa_watch_pid(ctx, pid, PA_WATCH_THREADS) == 0 && w) /* gone: no matter */
            g->watched[g->nwatched++] = pid;
    }
}

int rp_vmgroups_scan(rp_vmgroups *g, pa_ctx *ctx)
{
    int err = pa_vms_scan(g->vms);
    if (err == 0 && ctx)
        watch_threads(g, ctx);
    return err;
}

const pa_vms *rp_vmgroups_vms(const rp_vmgroups *g)
{
    return g->vms;
}

static int reserve(rp_vmgroups *g, size_t n)
{
    if (n <= g->cap)
        return 0;
    pa_target_info *t = realloc(g->t, n * sizeof(*t));
    if (t)
        g->t = t;
    double *wj = realloc(g->wj, n * 4 * sizeof(*wj));
    if (wj)
        g->wj = wj;
    bool *seen = realloc(g->seen, n * sizeof(*seen));
    if (seen)
        g->seen = seen;
    if (!t || !wj || !seen)
        return -ENOMEM;
    g->cap = n;
    return 0;
}

/* The component rows of n records of nk components each, zeroed. */
static int reserve_comp(rp_vmgroups *g, size_t n, size_t nk)
{
    if (2 * n * nk > g->comp_cap) {
        double *c = realloc(g->comp, 2 * n * nk * sizeof(*c));
        if (!c)
            return -ENOMEM;
        g->comp = c;
        g->comp_cap = 2 * n * nk;
    }
    g->nk = nk;
    if (nk)
        memset(g->comp, 0, 2 * n * nk * sizeof(double));
    return 0;
}

/* The record of process or thread x: a VM's index, or nvms for the rest. */
static size_t record_of(const rp_vmgroups *g, const pa_target_info *x, size_t nvms)
{
    const pa_vm_info *v =
        pa_vms_of_process(g->vms, x->pid, x->type == PA_TARGET_THREAD ? NULL : x->cgroup);
    return v ? (size_t)(v - pa_vms_get(g->vms, 0)) : nvms;
}

static void add_power(pa_target_info *t, double *wj, const pa_target_info *x, double d)
{
    pa_power *p = &t->power;
    const pa_power *q = &x->power;
    p->cpu_w += q->cpu_w;
    p->nic_w += q->nic_w;
    p->total_w += q->total_w;
    p->cpu_time_s += q->cpu_time_s;
    p->flags |= q->flags & PA_POWER_MEASURED;
    t->net_rx_bytes += x->net_rx_bytes;
    t->net_tx_bytes += x->net_tx_bytes;
    t->has_net |= x->has_net;
    wj[0] += q->cpu_w * d;
    wj[1] += q->nic_w * d;
    wj[2] += q->total_w * d;
}

/* Whether tid is one of v's vCPU threads. */
static bool is_vcpu(const pa_vm_info *v, pid_t tid)
{
    for (unsigned i = 0; i < v->nvcpus; i++)
        if (v->vcpu_tids[i] == tid)
            return true;
    return false;
}

/* Sums r's records into g->t[0..nvms] (the rest last). */
static void sum_records(rp_vmgroups *g, const pa_report *r, size_t nvms)
{
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *x = &r->targets[i];
        double d = x->power.interval_s > 0 ? x->power.interval_s : r->interval_s;
        if (x->type == PA_TARGET_PROCESS || x->type == PA_TARGET_EXITED ||
            x->type == PA_TARGET_UNACCOUNTED) {
            size_t k = x->type == PA_TARGET_PROCESS ? record_of(g, x, nvms) : nvms;
            add_power(&g->t[k], g->wj + 4 * k, x, d);
            for (size_t c = 0; c < g->nk; c++) { /* its components (gpu ...) */
                double cw = r->target_component_w[i * g->nk + c];
                g->comp[k * g->nk + c] += cw;
                g->comp[(nvms + 1 + k) * g->nk + c] += cw * d; /* the window's J */
            }
            if (k < nvms && x->pid == g->t[k].pid)
                memcpy(g->t[k].comm, x->comm, sizeof(x->comm));
        } else if (x->type == PA_TARGET_THREAD) {
            size_t k = record_of(g, x, nvms);
            if (k == nvms)
                continue;
            g->seen[k] = true;
            if (is_vcpu(g->t[k].vm, x->tid)) {
                g->t[k].vcpu_w += x->power.total_w;
                g->wj[4 * k + 3] += x->power.total_w * d;
            }
        }
    }
}

/* The energy of each record: its earlier windows' (g->acc, matched by pid
 * and name) and this one's; g->acc becomes this report's. */
static int accumulate(rp_vmgroups *g, size_t n)
{
    vm_acc *acc = calloc(n, sizeof(*acc));
    if (!acc)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) {
        pa_target_info *t = &g->t[k];
        acc[k].pid = t->vm ? t->pid : 0;
        snprintf(acc[k].name, sizeof(acc[k].name), "%s", t->vm ? t->vm->name : "");
        for (size_t j = 0; j < g->nacc; j++)
            if (g->acc[j].pid == acc[k].pid && !strcmp(g->acc[j].name, acc[k].name)) {
                acc[k] = g->acc[j];
                break;
            }
        double *w = g->wj + 4 * k;
        acc[k].cpu_j += w[0];
        acc[k].nic_j += w[1];
        acc[k].total_j += w[2];
        for (size_t c = 0; c < g->nk && c < PA_MAX_COMPONENTS; c++) {
            acc[k].comp_j[c] += g->comp[(n + k) * g->nk + c];
            g->comp[(n + k) * g->nk + c] = acc[k].comp_j[c];
        }
        bool split = t->vm && g->seen[k] && t->vm->nvcpus;
        if (split) {
            /* A thread's CPU time is read in ns (schedstat), its process's in
             * clock ticks (stat): the vCPUs can read a little more than the
             * whole, and are then the whole. */
            if (t->vcpu_w > t->power.total_w) {
                t->vcpu_w = t->power.total_w;
                w[3] = w[2];
            }
            acc[k].vcpu_j += w[3];
            acc[k].emulator_j += w[2] - w[3];
            t->emulator_w = t->power.total_w - t->vcpu_w;
        } else if (t->vm) {
            t->vcpu_w = t->emulator_w = -1; /* the threads were not told apart */
        }
        t->power.cpu_j = acc[k].cpu_j;
        t->power.nic_j = acc[k].nic_j;
        t->power.total_j = acc[k].total_j;
        t->vcpu_j = acc[k].vcpu_j;
        t->emulator_j = acc[k].emulator_j;
    }
    free(g->acc);
    g->acc = acc;
    g->nacc = n;
    return 0;
}

int rp_vmgroups_report(rp_vmgroups *g, const pa_report *r, const pa_report **out)
{
    size_t nvms = pa_vms_count(g->vms), n = nvms + 1;
    size_t nk = r->target_component_w && r->target_component_j ? r->ncomponents : 0;
    if (reserve(g, n) < 0 || reserve_comp(g, n, nk) < 0)
        return -ENOMEM;
    memset(g->t, 0, n * sizeof(*g->t));
    memset(g->wj, 0, n * 4 * sizeof(*g->wj));
    memset(g->seen, 0, n * sizeof(*g->seen));
    for (size_t k = 0; k < n; k++) {
        pa_target_info *t = &g->t[k];
        t->type = PA_TARGET_VM;
        t->multiplex = 1;
        t->power.interval_s = r->interval_s;
        t->power.time_ns = r->time_ns;
        t->vm = k < nvms ? pa_vms_get(g->vms, k) : NULL;
        t->pid = t->vm ? t->vm->pid : 0;
        t->cgroup = t->vm ? t->vm->cgroup : "";
        snprintf(t->comm, sizeof(t->comm), "%s", t->vm ? "" : "[not in a VM]");
    }
    sum_records(g, r, nvms);
    if (accumulate(g, n) < 0)
        return -ENOMEM;
    g->r = *r;
    g->r.targets = g->t;
    g->r.ntargets = n;
    g->r.target_component_w = nk ? g->comp : NULL; /* the groups' sums */
    g->r.target_component_j = nk ? g->comp + n * nk : NULL;
    *out = &g->r;
    return 0;
}

int rp_vmgroups_merge(rp_vmgroups *g, const pa_report *r, const pa_report **out)
{
    const pa_report *v = NULL;
    if (rp_vmgroups_report(g, r, &v) < 0)
        return -ENOMEM;
    size_t n = r->ntargets + v->ntargets, nk = r->target_component_w ? r->ncomponents : 0;
    if (n > g->mcap) {
        pa_target_info *t = realloc(g->mt, n * sizeof(*t));
        if (!t)
            return -ENOMEM;
        g->mt = t;
        g->mcap = n;
    }
    if (2 * n * nk > g->mcomp_cap) {
        double *c = realloc(g->mcomp, 2 * n * nk * sizeof(*c));
        if (!c)
            return -ENOMEM;
        g->mcomp = c;
        g->mcomp_cap = 2 * n * nk;
    }
    if (r->ntargets)
        memcpy(g->mt, r->targets, r->ntargets * sizeof(*g->mt));
    memcpy(g->mt + r->ntargets, v->targets, v->ntargets * sizeof(*g->mt)); /* at least 1 */
    g->m = *r;
    g->m.targets = g->mt;
    g->m.ntargets = n;
    if (nk) {
        double *w = g->mcomp, *j = g->mcomp + n * nk;
        memset(g->mcomp, 0, 2 * n * nk * sizeof(double));
        memcpy(w, r->target_component_w, r->ntargets * nk * sizeof(double));
        memcpy(j, r->target_component_j, r->ntargets * nk * sizeof(double));
        if (v->target_component_w) { /* the VM records' sums */
            memcpy(w + r->ntargets * nk, v->target_component_w, v->ntargets * nk * sizeof(double));
            memcpy(j + r->ntargets * nk, v->target_component_j, v->ntargets * nk * sizeof(double));
        }
        g->m.target_component_w = w;
        g->m.target_component_j = j;
    }
    *out = &g->m;
    return 0;
}
