/*
 * engine.c - one tick: sample every sensor, compute deltas, run the
 * formulas, integrate energy, publish the report.  Called with the
 * context lock held, so no lifecycle change can interleave.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A failing module is retried after 2, 4, 8 ... up to 64 ticks. */
static void module_failed(pa_module *m, uint64_t tick, int rc)
{
    if (!m->err[0] || m->fail_count == 0) {
        const char *msg = pa_last_error();
        snprintf(m->err, sizeof(m->err), "%s", msg && *msg ? msg : pa_strerror(rc));
    }
    m->fail_count++;
    unsigned shift = m->fail_count < 6 ? (unsigned)m->fail_count : 6;
    m->retry_tick = tick + (1u << shift);
}

static void module_ok(pa_module *m)
{
    m->fail_count = 0;
    m->retry_tick = 0;
    m->err[0] = '\0';
}

static void free_gone(pa_ctx *ctx)
{
    for (size_t i = 0; i < ctx->ngone; i++)
        pa__task_free(ctx->gone[i]);
    ctx->ngone = 0;
}

bool pa__watched_with(const pa_ctx *ctx, pid_t pid, unsigned flags)
{
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid && (ctx->watches[i].flags & flags) == flags)
            return true;
    return false;
}

static void unwatch_gone(pa_ctx *ctx, pid_t pid)
{
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid) {
            ctx->watches[i] = ctx->watches[--ctx->nwatches];
            return;
        }
}

static bool watched_pid(const pa_ctx *ctx, pid_t pid)
{
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid)
            return true;
    return false;
}

/* Is the task still asked for?  One that is not was unwatched, and is
 * dropped without being reported as exited. */
static bool still_watched(const pa_ctx *ctx, const pa_task *t)
{
    const pa_task *p = t->type == PA_TARGET_PROCESS ? t : pa__tasktab_get(&ctx->procs, t->pid);
    pid_t root = p ? p->tree_root : 0;
    if (t->type == PA_TARGET_PROCESS)
        return ctx->watch_all || watched_pid(ctx, t->pid) ||
               (root && pa__watched_with(ctx, root, PA_WATCH_CHILDREN));
    return (ctx->watch_all_threads && p) || pa__watched_with(ctx, t->pid, PA_WATCH_THREADS) ||
           (root && pa__watched_with(ctx, root, PA_WATCH_CHILDREN | PA_WATCH_THREADS));
}

/* Tasks no sensor saw this tick have exited: report them once more. */
static int detect_exits(pa_ctx *ctx, uint64_t tick)
{
    pa_tasktab *tabs[2] = {&ctx->threads, &ctx->procs};
    for (int k = 0; k < 2; k++) {
        bool removed = false;
        for (size_t i = tabs[k]->n; i-- > 0;) {
            pa_task *t = tabs[k]->v[i];
            if (t->seen_tick == tick)
                continue;
            removed = true;
            if (!still_watched(ctx, t)) {
                pa__tasktab_remove_at(tabs[k], i);
                pa__task_free(t);
                continue;
            }
            if (t->type == PA_TARGET_PROCESS && !pa__watched_with(ctx, t->pid, PA_WATCH_CHILDREN))
                unwatch_gone(ctx, t->pid);
            if (pa__task_retire(ctx, tabs[k], i) < 0)
                return -ENOMEM;
        }
        if (removed && pa__tasktab_reindex(tabs[k]) < 0)
            return -ENOMEM;
    }
    return 0;
}

bool pa__in_tree(const pa_ctx *ctx, const pa_task *p, pid_t root)
{
    for (int depth = 0; p && depth < 128; depth++) {
        if (p->pid == root)
            return true;
        if (p->ppid <= 0 || p->ppid == p->pid)
            return false;
        p = pa__tasktab_get(&ctx->procs, p->ppid);
    }
    return false;
}

/* A tree's CPU time is the sum over its live members of their own and
 * their reaped children's time: continuous when a member exits and is
 * reaped by another member. */
static int compute_trees(pa_ctx *ctx, pa_frame *f)
{
    for (size_t w = 0; w < ctx->nwatches; w++) {
        if (!(ctx->watches[w].flags & PA_WATCH_CHILDREN))
            continue;
        pid_t root = ctx->watches[w].pid;
        pa_task *tree = pa__tasktab_get(&ctx->trees, root);
        uint64_t cpu = 0, rx = 0, tx = 0;
        unsigned have = 0;
        double ctr[PA_MAX_COUNTERS] = {0}, mux = 1.0;
        size_t members = 0;
        const pa_task *rootp = NULL;
        for (size_t i = 0; i < ctx->procs.n; i++) {
            pa_task *p = ctx->procs.v[i];
            if (!pa__in_tree(ctx, p, root))
                continue;
            members++;
            if (p->pid == root)
                rootp = p;
            p->watched = true;
            p->tree_root = root;
            cpu += p->cur.cpu_ns + p->cur.child_cpu_ns;
            have |= p->cur.have & PA_RD_CPU;
            if (p->cur.have & PA_RD_NET) {
                rx += p->cur.net_rx;
                tx += p->cur.net_tx;
                have |= PA_RD_NET;
            }
            if ((p->cur.have & PA_RD_COUNTERS) && p->ctr_cur) {
                for (size_t c = 0; c < ctx->ncounters; c++)
                    ctr[c] += p->ctr_cur[c];
                if (p->cur.multiplex < mux)
                    mux = p->cur.multiplex;
                have |= PA_RD_COUNTERS;
            }
        }
        if (!members)
            continue; /* exits are detected below */
        if (!tree) {
            tree = pa__task_new(PA_TARGET_TREE, root, 0);
            if (!tree || pa__tasktab_put(&ctx->trees, tree, root) < 0) {
                pa__task_free(tree);
                return -ENOMEM;
            }
            tree->first_tick = f->tick;
            tree->cgroup = -1;
        }
        if (rootp) {
            memcpy(tree->comm, rootp->comm, sizeof(tree->comm));
            tree->start_ticks = rootp->start_ticks;
            tree->ppid = rootp->ppid;
        }
        tree->seen_tick = f->tick;
        tree->cur.cpu_ns = cpu;
        tree->cur.net_rx = rx;
        tree->cur.net_tx = tx;
        tree->cur.have = have;
        tree->cur.multiplex = mux;
        if ((have & PA_RD_COUNTERS) && pa__task_alloc_counters(ctx, tree) == 0 && tree->ctr_cur)
            memcpy(tree->ctr_cur, ctr, sizeof(ctr));
        else
            tree->cur.have &= ~PA_RD_COUNTERS;
    }
    bool removed = false;
    for (size_t i = ctx->trees.n; i-- > 0;) {
        pa_task *t = ctx->trees.v[i];
        if (t->seen_tick == f->tick)
            continue;
        if (pa__task_retire(ctx, &ctx->trees, i) < 0)
            return -ENOMEM;
        unwatch_gone(ctx, t->pid);
        removed = true;
    }
    if (removed && pa__tasktab_reindex(&ctx->trees) < 0)
        return -ENOMEM;
    return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* A task first seen this tick has a window only if it was born after the
 * previous tick (all its CPU time then falls in the window). */
static void task_delta(pa_ctx *ctx, pa_task *t, uint64_t tick, const pa_sysread *prev_sys)
{
    t->in_window = false;
    t->d_cpu_s = 0;
    t->d_rx = t->d_tx = 0;
    t->flags = 0;
    if (!t->had_window)
        t->flags |= PA_POWER_FIRST;
    if (t->first_tick == tick) {
        uint64_t start_ns = t->start_ticks * (uint64_t)(1000000000 / ctx->clk_tck);
        bool born =
            prev_sys && prev_sys->uptime_ns && t->start_ticks && start_ns >= prev_sys->uptime_ns;
        if (!born)
            return;
        memset(&t->prev, 0, sizeof(t->prev));
        t->prev.have = t->cur.have;
        if (t->ctr_prev)
            memset(t->ctr_prev, 0, PA_MAX_COUNTERS * sizeof(double));
    }
    if ((t->cur.have & PA_RD_CPU) && (t->prev.have & PA_RD_CPU))
        t->d_cpu_s = (double)sub0(t->cur.cpu_ns, t->prev.cpu_ns) / 1e9;
    if ((t->cur.have & PA_RD_NET) && (t->prev.have & PA_RD_NET)) {
        t->d_rx = sub0(t->cur.net_rx, t->prev.net_rx);
        t->d_tx = sub0(t->cur.net_tx, t->prev.net_tx);
    }
    if (t->ctr_cur && (t->cur.have & PA_RD_COUNTERS) && (t->prev.have & PA_RD_COUNTERS))
        for (size_t i = 0; i < ctx->ncounters; i++) {
            double d = t->ctr_cur[i] - t->ctr_prev[i];
            t->ctr_d[i] = d > 0 ? d : 0;
        }
    else if (t->ctr_d)
        memset(t->ctr_d, 0, PA_MAX_COUNTERS * sizeof(double));
    t->in_window = true;
    t->had_window = true;
}

static void sys_delta(pa_frame_delta *d, const pa_sysread *cur, const pa_sysread *prev)
{
    d->cur = cur;
    d->prev = prev;
    d->have = cur->have & prev->have;
    d->ncpus = cur->ncpus;
    d->capacity_s = d->interval_s * cur->ncpus;
    if (d->have & PA_HAVE_CPU) {
        d->busy_s = (double)sub0(cur->busy_ns, prev->busy_ns) / 1e9;
        d->idle_s = (double)sub0(cur->idle_ns, prev->idle_ns) / 1e9;
    }
    d->nfreq = 0;
    if (d->have & PA_HAVE_FREQ)
        for (unsigned i = 0; i < cur->nfreq; i++)
            for (unsigned j = 0; j < prev->nfreq; j++)
                if (cur->freq[i].khz == prev->freq[j].khz) {
                    d->freq[d->nfreq].khz = cur->freq[i].khz;
                    d->freq[d->nfreq].time_ns = sub0(cur->freq[i].time_ns, prev->freq[j].time_ns);
                    d->nfreq++;
                    break;
                }
    d->nrapl = 0;
    if (d->have & PA_HAVE_RAPL)
        for (unsigned i = 0; i < cur->nrapl; i++)
            for (unsigned j = 0; j < prev->nrapl; j++)
                if (cur->rapl[i].socket == prev->rapl[j].socket &&
                    cur->rapl[i].kind == prev->rapl[j].kind) {
                    pa_rapl_delta *r = &d->rapl[d->nrapl++];
                    r->socket = cur->rapl[i].socket;
                    r->kind = cur->rapl[i].kind;
                    r->energy_j =
                        (double)sub0(cur->rapl[i].energy_uj, prev->rapl[j].energy_uj) / 1e6;
                    break;
                }
    d->nnic = 0;
    if (d->have & PA_HAVE_NIC)
        for (unsigned i = 0; i < cur->nnic; i++)
            for (unsigned j = 0; j < prev->nnic; j++)
                if (!strcmp(cur->nic[i].name, prev->nic[j].name)) {
                    pa_nic_delta *n = &d->nic[d->nnic++];
                    n->nic = &cur->nic[i];
                    n->rx_bytes = sub0(cur->nic[i].rx_bytes, prev->nic[j].rx_bytes);
                    n->tx_bytes = sub0(cur->nic[i].tx_bytes, prev->nic[j].tx_bytes);
                    break;
                }
    d->cycles_all = 0;
    if ((d->have & PA_HAVE_CYCLES) && cur->cycles_all > prev->cycles_all)
        d->cycles_all = cur->cycles_all - prev->cycles_all;
}

static void join_names(char *buf, size_t len, const pa_module *mods, pa_module_kind kind,
                       uint64_t tick)
{
    buf[0] = '\0';
    for (const pa_module *m = mods; m; m = m->next) {
        if (m->ops->kind != kind || m->retry_tick > tick)
            continue;
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "%s%s", u ? "+" : "", m->ops->name);
    }
}

/* The report's component watts and joules of a target (row of
 * ncomp): what the target or cgroup got of each component. */
static void fill_comps(const pa_ctx *ctx, double *w, double *j, const double *tw, const double *tj,
                       bool gone)
{
    for (size_t k = 0; k < ctx->ncomp; k++) {
        w[k] = gone ? 0 : tw[k];
        j[k] = tj[k];
    }
}

static void fill_target(pa_ctx *ctx, pa_target_info *ti, const pa_task *t, double interval_s,
                        uint64_t time_ns, bool measured, double *ctr)
{
    memset(ti, 0, sizeof(*ti));
    ti->type = t->type;
    ti->pid = t->pid;
    ti->tid = t->type == PA_TARGET_THREAD ? t->tid : 0;
    ti->ppid = t->ppid;
    memcpy(ti->comm, t->comm, sizeof(ti->comm));
    ti->comm[PA_COMM_MAX - 1] = '\0';
    ti->cgroup = t->cgroup >= 0 && (size_t)t->cgroup < ctx->ncgroups ? ctx->cgroups[t->cgroup] : "";
    if (ctx->cgroups_on && !ctx->names_off && *ti->cgroup)
        ti->names = pa__cgcache_get(ctx->cgcache, (size_t)t->cgroup, ti->cgroup, time_ns);
    pa__task_power(ctx, t, interval_s, time_ns, measured, &ti->power);
    ti->has_net = !t->gone && (t->cur.have & PA_RD_NET) != 0;
    ti->net_rx_bytes = t->gone ? 0 : t->d_rx;
    ti->net_tx_bytes = t->gone ? 0 : t->d_tx;
    ti->multiplex = t->cur.multiplex > 0 ? t->cur.multiplex : 1.0;
    ti->processes = t->type == PA_TARGET_EXITED ? t->nprocs : 0;
    if (ctr && ctx->ncounters) {
        for (size_t i = 0; i < ctx->ncounters; i++)
            ctr[i] = t->ctr_d && !t->gone ? t->ctr_d[i] : 0;
        ti->counters = ctr;
    }
}

/* The cgroup records of a report, from k on (their processes summed);
 * returns the next free index. */
static int build_cgroups(pa_ctx *ctx, const pa_frame_delta *d, const pa_power_table *tab,
                         uint64_t time_ns, double *cw, double *cj, size_t *kp)
{
    size_t nc = ctx->ncounters, ncomp = ctx->ncomp;
    size_t ncg = ctx->ncgroups, k = *kp;
    /* per cgroup: watts per component, then cpu_s, rx, tx, members */
    enum { CS = PA_MAX_COMPONENTS, RX, TX, MEM, NF };
    if (PA__GROW(ctx->cg_scratch, ctx->cg_scratch_cap, ncg * NF, 64) < 0)
        return -ENOMEM;
    double *s = ctx->cg_scratch;
    memset(s, 0, ncg * NF * sizeof(double));
    for (size_t i = 0; i < ctx->nwin; i++) {
        const pa_task *t = ctx->win[i];
        if (t->type != PA_TARGET_PROCESS || t->cgroup < 0)
            continue;
        double *c = s + (size_t)t->cgroup * NF;
        for (size_t e = 0; e < ncomp; e++)
            c[e] += pa__task_w(t, e);
        c[CS] += t->d_cpu_s;
        c[RX] += (double)t->d_rx;
        c[TX] += (double)t->d_tx;
        c[MEM] += 1;
    }
    for (size_t g = 0; g < ncg; g++) {
        const double *c = s + g * NF;
        if (c[MEM] == 0)
            continue;
        pa_target_info *ti = &ctx->rtargets[k];
        double *ctr = ctx->rcounters + k * nc;
        fill_comps(ctx, cw + k * ncomp, cj + k * ncomp, c, ctx->cgroup_j[g], false);
        k++;
        memset(ti, 0, sizeof(*ti));
        /* counters and multiplexing: counted per cgroup by a sensor
         * over this window, else the sum of the cgroup's processes */
        double mux = 1.0;
        const pa_cgroup_ctr *cc = g < ctx->cgroup_ctr_cap ? &ctx->cgroup_ctr[g] : NULL;
        if (nc && cc && cc->cur_tick == ctx->tick && cc->prev_tick + 1 == ctx->tick) {
            for (size_t e = 0; e < nc; e++) {
                double dv = cc->cur[e] - cc->prev[e];
                ctr[e] = dv > 0 ? dv : 0;
            }
            if (cc->multiplex > 0 && cc->multiplex < 1)
                mux = cc->multiplex;
            ti->counters = ctr;
        } else if (nc) {
            memset(ctr, 0, nc * sizeof(double));
            for (size_t i = 0; i < ctx->nwin; i++) {
                const pa_task *t = ctx->win[i];
                if (t->type != PA_TARGET_PROCESS || t->cgroup != (int)g || !t->ctr_d)
                    continue;
                for (size_t e = 0; e < nc; e++)
                    ctr[e] += t->ctr_d[e];
                if (t->cur.multiplex > 0 && t->cur.multiplex < mux)
                    mux = t->cur.multiplex;
            }
            ti->counters = ctr;
        }
        ti->type = PA_TARGET_CGROUP;
        ti->cgroup = ctx->cgroups[g];
        ti->names = ctx->names_off ? NULL : pa__cgcache_get(ctx->cgcache, g, ti->cgroup, time_ns);
        ti->power.cpu_w = c[PA_COMP_CPU - 1];
        ti->power.nic_w = c[PA_COMP_NIC - 1];
        ti->power.cpu_j = ctx->cgroup_j[g][PA_COMP_CPU - 1];
        ti->power.nic_j = ctx->cgroup_j[g][PA_COMP_NIC - 1];
        for (size_t e = 0; e < ncomp; e++) {
            ti->power.total_w += c[e];
            ti->power.total_j += ctx->cgroup_j[g][e];
        }
        ti->power.interval_s = d->interval_s;
        ti->power.cpu_time_s = c[CS];
        ti->power.time_ns = time_ns;
        ti->power.flags = tab->measured ? PA_POWER_MEASURED : 0;
        ti->net_rx_bytes = (uint64_t)c[RX];
        ti->net_tx_bytes = (uint64_t)c[TX];
        ti->multiplex = mux;
    }
    *kp = k;
    return 0;
}

/* A record of a process folded into the exited target (no counters,
 * no components beyond the pa_power). */
struct exited_fill {
    double interval_s;
    uint64_t time_ns;
    bool measured;
};

static void exited_fill(pa_ctx *ctx, pa_target_info *ti, const pa_task *t, void *user)
{
    const struct exited_fill *ef = user;
    fill_target(ctx, ti, t, ef->interval_s, ef->time_ns, ef->measured, NULL);
    ti->power.flags |= PA_POWER_EXITED | PA_POWER_FIRST;
}

/* Target k of the report from task t; returns k + 1. */
static size_t put_target(pa_ctx *ctx, const pa_task *t, const pa_frame_delta *d, bool measured,
                         uint64_t time_ns, double *cw, double *cj, size_t k)
{
    size_t nc = ctx->ncounters, ncomp = ctx->ncomp;
    bool live = !t->gone || t->in_window;
    fill_target(ctx, &ctx->rtargets[k], t, d->interval_s, time_ns, measured,
                ctx->rcounters + k * nc);
    for (size_t e = 0; e < ncomp; e++) {
        cw[k * ncomp + e] = live ? pa__task_w(t, e) : 0;
        cj[k * ncomp + e] = pa__task_j(t, e);
    }
    return k + 1;
}

static int build_report(pa_ctx *ctx, const pa_frame_delta *d, const pa_power_table *tab,
                        uint64_t time_ns)
{
    size_t nc = ctx->ncounters, ncomp = ctx->ncomp;
    size_t ncg = ctx->cgroups_on ? ctx->ncgroups : 0;
    const pa_task *folds[2];
    size_t nfold = pa__exits_targets(ctx, folds);
    size_t n = ctx->nwin + ctx->ngone + ncg + nfold;
    /* rcomp: the watts of n targets (ncomp each), then their joules, then
     * the system's watts and joules */
    if (PA__GROW(ctx->rtargets, ctx->rtargets_cap, n + 1, 64) < 0 ||
        PA__GROW(ctx->rcounters, ctx->rcounters_cap, (n + 1) * nc + 1, 64) < 0 ||
        PA__GROW(ctx->rcomp, ctx->rcomp_cap, (2 * n + 2) * ncomp + 1, 64) < 0)
        return -ENOMEM;
    double *cw = ctx->rcomp, *cj = cw + n * ncomp, *sys = cj + n * ncomp;
    size_t k = 0;
    for (size_t i = 0; i < ctx->nwin + ctx->ngone; i++) {
        const pa_task *t = i < ctx->nwin ? ctx->win[i] : ctx->gone[i - ctx->nwin];
        /* a gone task with a last window is in both lists; a process born
         * and gone in the window is in the exited target */
        if (t->folded || (i >= ctx->nwin && t->in_window))
            continue;
        k = put_target(ctx, t, d, tab->measured, time_ns, cw, cj, k);
    }
    if (ncg && build_cgroups(ctx, d, tab, time_ns, cw, cj, &k) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < nfold; i++)
        k = put_target(ctx, folds[i], d, tab->measured, time_ns, cw, cj, k);
    fill_comps(ctx, sys, sys + ncomp, tab->comp_w, ctx->sys_j, false);
    pa_report *r = &ctx->report;
    r->tick = ++ctx->windows;
    r->time_ns = time_ns;
    r->interval_s = d->interval_s;
    r->system = ctx->sys_power;
    join_names(ctx->rformula, sizeof(ctx->rformula), ctx->modules, PA_FORMULA, ctx->tick);
    join_names(ctx->rsensors, sizeof(ctx->rsensors), ctx->modules, PA_SENSOR, ctx->tick);
    /* "host": the host's measurement of this VM (the host sensor, DESIGN.md
     * section 18.2), split by the same formula as RAPL's */
    const char *rapl_path = ctx->sys[ctx->sys_cur].rapl_path;
    snprintf(ctx->rsource, sizeof(ctx->rsource), "%s",
             !tab->measured               ? "model"
             : !strcmp(rapl_path, "host") ? "host"
                                          : "rapl");
    snprintf(ctx->rassumed, sizeof(ctx->rassumed), "%s", tab->assumed);
    r->formula = ctx->rformula;
    r->sensors = ctx->rsensors;
    r->cpu_source = ctx->rsource;
    r->assumed = ctx->rassumed;
    r->ntargets = k;
    r->targets = ctx->rtargets;
    r->ncounters = nc;
    r->counter_names = (const char *const *)ctx->counter_names;
    r->dram_w = tab->dram_w;
    r->psys_w = tab->psys_w;
    r->model_error = tab->model_error;
    r->ncomponents = ncomp;
    r->component_names = ctx->comp_ptrs;
    r->system_component_w = sys;
    r->system_component_j = sys + ncomp;
    r->target_component_w = cw;
    r->target_component_j = cj;
    memcpy(ctx->rdev, tab->dev, tab->ndev * sizeof(*tab->dev));
    r->ndevices = tab->ndev;
    r->devices = tab->ndev ? ctx->rdev : NULL;
    r->exits_source = ctx->rexits_src;
    r->exits_lost = ctx->exits_lost;
    struct exited_fill ef = {d->interval_s, time_ns, tab->measured};
    int nex = pa__exits_records(ctx, exited_fill, &ef);
    if (nex < 0)
        return -ENOMEM;
    r->nexited = (size_t)nex;
    r->exited = nex ? ctx->rexited : NULL;
    ctx->have_report = true;
    return 0;
}

/* Energy of the window: each target's, its cgroup's and the system's
 * joules per component, and the system's power record. */
static void integrate(pa_ctx *ctx, const pa_frame_delta *d, const pa_power_table *tab,
                      const pa_sysread *cur, uint64_t time_ns)
{
    size_t ncomp = ctx->ncomp;
    for (size_t i = 0; i < ctx->nwin; i++) {
        pa_task *t = ctx->win[i];
        bool cg =
            t->type == PA_TARGET_PROCESS && t->cgroup >= 0 && (size_t)t->cgroup < ctx->ncgroups;
        for (size_t k = 0; k < ncomp; k++) {
            double e = pa__task_w(t, k) * d->interval_s;
            double *j = pa__task_jp(t, k);
            if (j)
                *j += e;
            if (cg)
                ctx->cgroup_j[t->cgroup][k] += e;
        }
        t->last_cpu_s = t->d_cpu_s;
    }
    pa_power *sp = &ctx->sys_power;
    sp->total_w = sp->total_j = 0;
    for (size_t k = 0; k < ncomp; k++) {
        ctx->sys_j[k] += tab->comp_w[k] * d->interval_s;
        sp->total_w += tab->comp_w[k];
        sp->total_j += ctx->sys_j[k];
    }
    sp->cpu_w = tab->cpu_w;
    sp->nic_w = tab->nic_w;
    sp->idle_w = tab->idle_w;
    sp->cpu_j = ctx->sys_j[PA_COMP_CPU - 1];
    sp->nic_j = ctx->sys_j[PA_COMP_NIC - 1];
    sp->interval_s = d->interval_s;
    sp->cpu_time_s = d->busy_s;
    sp->time_ns = time_ns;
    sp->flags =
        (tab->measured ? PA_POWER_MEASURED : 0) | (cur->rapl_resets ? PA_POWER_RAPL_RESET : 0);
}

/* Frame: every enabled sensor's sample (the one that discovers the tasks
 * first: the module list's order); returns how many produced a reading. */
static int sample_sensors(pa_ctx *ctx, pa_frame *frame)
{
    int sensors_ok = 0;
    uint64_t tick = frame->tick;
    for (pa_module *m = ctx->modules; m; m = m->next) {
        if (m->ops->kind != PA_SENSOR || !m->ops->sample || m->retry_tick > tick)
            continue;
        int rc = m->ops->sample(m, frame);
        if (rc < 0) {
            module_failed(m, tick, rc);
            continue;
        }
        module_ok(m);
        sensors_ok++;
        if (pa__ops_flags(m->ops) & PA_MOD_DISCOVERS_TASKS)
            frame->scanned = true;
    }
    return sensors_ok;
}

/* This tick's readings become the previous ones. */
static void readings_rotate(pa_ctx *ctx, uint64_t tick)
{
    pa_tasktab *tabs[3] = {&ctx->procs, &ctx->threads, &ctx->trees};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < tabs[k]->n; i++) {
            pa_task *t = tabs[k]->v[i];
            if (t->seen_tick != tick)
                continue;
            t->prev = t->cur;
            t->cur.have = 0;
            if (t->ctr_cur)
                memcpy(t->ctr_prev, t->ctr_cur, PA_MAX_COUNTERS * sizeof(double));
        }
    for (size_t g = 0; g < ctx->cgroup_ctr_cap; g++) {
        pa_cgroup_ctr *c = &ctx->cgroup_ctr[g];
        if (c->cur_tick != tick)
            continue;
        memcpy(c->prev, c->cur, sizeof(c->prev));
        c->prev_tick = tick;
    }
}

/* Every enabled formula's compute: those flagged PA_MOD_AFTER_FORMULAS
 * (platform) last, so that they read the others' figures. */
static void compute_formulas(pa_ctx *ctx, const pa_frame_delta *d, pa_power_table *tab,
                             uint64_t tick)
{
    for (int after = 0; after < 2; after++)
        for (pa_module *m = ctx->modules; m; m = m->next) {
            if (m->ops->kind != PA_FORMULA || !m->ops->compute || m->retry_tick > tick ||
                !(pa__ops_flags(m->ops) & PA_MOD_AFTER_FORMULAS) != !after)
                continue;
            tab->component = m->comp;
            int rc = m->ops->compute(m, d, tab);
            if (rc < 0)
                module_failed(m, tick, rc);
            else
                module_ok(m);
        }
}

int pa__tick_locked(pa_ctx *ctx, uint64_t time_ns)
{
    if (ctx->tick && time_ns <= ctx->last_time_ns)
        return pa__err(-EINVAL, "tick at %llu ns is not after the previous tick (%llu ns)",
                       (unsigned long long)time_ns, (unsigned long long)ctx->last_time_ns);
    if (ctx->auto_dirty)
        pa__auto_fill(ctx);
    free_gone(ctx);
    uint64_t tick = ++ctx->tick;
    pa_sysread *cur = &ctx->sys[ctx->sys_cur];
    const pa_sysread *prev = ctx->have_prev ? &ctx->sys[!ctx->sys_cur] : NULL;
    memset(cur, 0, sizeof(*cur));
    ctx->blobs[ctx->sys_cur].n = 0; /* sensors put this tick's again */
    ctx->nexits = 0;
    ctx->exits_src[0] = '\0';
    snprintf(ctx->rexits_src, sizeof(ctx->rexits_src), "none");
    pa_frame frame = {.ctx = ctx, .tick = tick, .time_ns = time_ns, .sys = cur};

    int sensors_ok = sample_sensors(ctx, &frame);
    if (frame.scanned) {
        int rc = pa__exits_apply(ctx, tick);
        if (rc == 0)
            rc = detect_exits(ctx, tick);
        if (rc == 0)
            rc = compute_trees(ctx, &frame);
        if (rc < 0)
            return pa__err(rc, "tick: out of memory");
    }

    /* deltas */
    ctx->nwin = 0;
    pa_tasktab *tabs[3] = {&ctx->procs, &ctx->threads, &ctx->trees};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < tabs[k]->n; i++) {
            pa_task *t = tabs[k]->v[i];
            if (t->seen_tick != tick)
                continue;
            task_delta(ctx, t, tick, prev);
            t->cpu_w = t->nic_w = 0;
            if (ctx->ncomp > 2 && !t->ext && !(t->ext = calloc(2 * PA_EXT_COMPS, sizeof(double))))
                return pa__err(-ENOMEM, "tick: out of memory");
            if (t->ext)
                memset(t->ext, 0, PA_EXT_COMPS * sizeof(double));
            if (t->in_window && prev && pa__win_push(ctx, t) < 0)
                return pa__err(-ENOMEM, "tick: out of memory");
        }

    int ret = 0;
    if (prev) {
        pa_frame_delta d; /* a few KiB */
        pa_power_table tab;
        memset(&d, 0, sizeof(d));
        memset(&tab, 0, sizeof(tab));
        tab.model_error = -1;
        d.ctx = ctx;
        d.interval_s = (double)(time_ns - ctx->last_time_ns) / 1e9;
        sys_delta(&d, cur, prev);
        if (frame.scanned && pa__exits_window(ctx, tick, d.busy_s) < 0)
            return pa__err(-ENOMEM, "tick: out of memory");
        d.ntasks = ctx->nwin;
        d.tasks = ctx->win;
        d.ncounters = ctx->ncounters;
        d.counter_names = (const char *const *)ctx->counter_names;
        tab.tasks = ctx->win;
        tab.ntasks = ctx->nwin;
        compute_formulas(ctx, &d, &tab, tick);
        integrate(ctx, &d, &tab, cur, time_ns);
        ret = pa__exits_fold(ctx, &tab, d.interval_s, d.busy_s);
        if (ret == 0)
            ret = build_report(ctx, &d, &tab, time_ns);
        pa__scopes_window(ctx);
        if (cur->notes[0])
            pa__assume(ctx->rassumed, sizeof(ctx->rassumed), cur->notes);
        if (ret < 0)
            ret = pa__err(ret, "tick: out of memory building the report");
    }

    readings_rotate(ctx, tick);
    ctx->sys_cur = !ctx->sys_cur;
    ctx->have_prev = true;
    ctx->last_time_ns = time_ns;
    if (ret == 0 && !sensors_ok)
        ret = ctx->modules ? pa__err(-ENODATA, "tick: no sensor produced a reading (see "
                                               "pa_module_list or 'powerapi modules' for why)")
                           : pa__err(-ENODATA, "tick: no module is enabled: auto found none it "
                                               "may use (disabled, or cannot run here: see "
                                               "pa_module_list or 'powerapi modules')");
    return ret;
}

pa_cgroup_ctr *pa__cgroup_ctr(pa_ctx *ctx, size_t g)
{
    if (g >= ctx->ncgroups)
        return NULL;
    if (g >= ctx->cgroup_ctr_cap) {
        size_t old = ctx->cgroup_ctr_cap;
        if (PA__GROW(ctx->cgroup_ctr, ctx->cgroup_ctr_cap, g + 1, 16) < 0)
            return NULL;
        memset(ctx->cgroup_ctr + old, 0, (ctx->cgroup_ctr_cap - old) * sizeof(*ctx->cgroup_ctr));
    }
    return &ctx->cgroup_ctr[g];
}

/* the counters that follow the names in a copy stay aligned */
_Static_assert(sizeof(pa_cgroup_names) % sizeof(double) == 0, "pa_cgroup_names size");

/* Copies a report and everything it points to into one allocation. */
int pa__report_copy(const pa_report *r, pa_report **out)
{
    size_t nc = r->ncounters, ncomp = r->component_names ? r->ncomponents : 0;
    size_t strs = strlen(r->formula) + strlen(r->sensors) + strlen(r->cpu_source) +
                  strlen(r->assumed) + strlen(r->exits_source ? r->exits_source : "") + 5;
    for (size_t i = 0; i < nc; i++)
        strs += strlen(r->counter_names[i]) + 1;
    for (size_t i = 0; i < ncomp; i++)
        strs += strlen(r->component_names[i]) + 1;
    for (size_t i = 0; i < r->ntargets; i++)
        strs += strlen(r->targets[i].cgroup ? r->targets[i].cgroup : "") + 1;
    size_t nnames = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        nnames += r->targets[i].names != NULL;
    size_t nex = r->exited ? r->nexited : 0;
    for (size_t i = 0; i < nex; i++)
        strs += strlen(r->exited[i].cgroup ? r->exited[i].cgroup : "") + 1;
    size_t ncd = (2 * r->ntargets + 2) * ncomp; /* component doubles */
    size_t sz = sizeof(pa_report) + r->ndevices * sizeof(pa_device_info) +
                (r->ntargets + nex) * sizeof(pa_target_info) +
                (r->ntargets * nc + ncd) * sizeof(double) + (nc + ncomp) * sizeof(char *) +
                nnames * sizeof(pa_cgroup_names) + strs;
    char *block = malloc(sz);
    if (!block)
        return pa__err(-ENOMEM, "report: out of memory copying %zu targets", r->ntargets);
    pa_report *c = (pa_report *)block;
    *c = *r;
    /* doubles, then pointers, then the names records (chars), then text */
    pa_device_info *dev = (pa_device_info *)(c + 1);
    if (r->ndevices)
        memcpy(dev, r->devices, r->ndevices * sizeof(*dev));
    c->devices = r->ndevices ? dev : NULL;
    pa_target_info *ti = (pa_target_info *)(dev + r->ndevices);
    pa_target_info *ex = ti + r->ntargets;
    double *ctr = (double *)(ex + nex);
    double *cw = ctr + r->ntargets * nc, *cj = cw + r->ntargets * ncomp;
    double *sys = cj + r->ntargets * ncomp;
    const char **names = (const char **)(sys + 2 * ncomp);
    const char **cnames = names + nc;
    pa_cgroup_names *cn = (pa_cgroup_names *)(cnames + ncomp);
    char *s = (char *)(cn + nnames);
#define PUT(dst, src)                                                                              \
    do {                                                                                           \
        size_t l_ = strlen(src) + 1;                                                               \
        memcpy(s, src, l_);                                                                        \
        dst = s;                                                                                   \
        s += l_;                                                                                   \
    } while (0)
    PUT(c->formula, r->formula);
    PUT(c->sensors, r->sensors);
    PUT(c->cpu_source, r->cpu_source);
    PUT(c->assumed, r->assumed);
    PUT(c->exits_source, r->exits_source ? r->exits_source : "");
    for (size_t i = 0; i < nc; i++)
        PUT(names[i], r->counter_names[i]);
    for (size_t i = 0; i < ncomp; i++)
        PUT(cnames[i], r->component_names[i]);
    if (ncomp) {
        size_t tb = r->ntargets * ncomp * sizeof(double);
        memcpy(cw, r->target_component_w, tb);
        memcpy(cj, r->target_component_j, tb);
        memcpy(sys, r->system_component_w, ncomp * sizeof(double));
        memcpy(sys + ncomp, r->system_component_j, ncomp * sizeof(double));
    }
    for (size_t i = 0; i < r->ntargets; i++) {
        ti[i] = r->targets[i];
        PUT(ti[i].cgroup, r->targets[i].cgroup ? r->targets[i].cgroup : "");
        if (r->targets[i].names) {
            *cn = *r->targets[i].names;
            ti[i].names = cn++;
        }
        if (nc && r->targets[i].counters) {
            memcpy(ctr + i * nc, r->targets[i].counters, nc * sizeof(double));
            ti[i].counters = ctr + i * nc;
        } else {
            ti[i].counters = NULL;
        }
    }
    for (size_t i = 0; i < nex; i++) {
        ex[i] = r->exited[i];
        PUT(ex[i].cgroup, r->exited[i].cgroup ? r->exited[i].cgroup : "");
        ex[i].names = NULL;
        ex[i].counters = NULL;
    }
#undef PUT
    c->exited = nex ? ex : NULL;
    c->nexited = nex;
    c->targets = ti;
    c->counter_names = nc ? names : NULL;
    c->ncomponents = ncomp;
    c->component_names = ncomp ? cnames : NULL;
    c->target_component_w = ncomp ? cw : NULL;
    c->target_component_j = ncomp ? cj : NULL;
    c->system_component_w = ncomp ? sys : NULL;
    c->system_component_j = ncomp ? sys + ncomp : NULL;
    *out = c;
    return 0;
}

void pa_report_free(pa_report *r)
{
    free(r);
}
