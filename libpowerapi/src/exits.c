/*
 * exits.c - the CPU time of processes that exit between two ticks
 * (DESIGN.md section 2, "Exits").
 *
 * A process that exits inside a window is no longer in procfs at the
 * tick that ends it, and one born and gone between two ticks never was:
 * without more, the CPU power it caused would be spread over the
 * survivors.  A sensor that sees exits (procfs-cpu reading the kernel's
 * taskstats) hands each exited task's lifetime CPU time to the frame
 * (pa_frame_task_exit).  Here a watched process that exited gets its
 * last window from its records, the processes never seen alive get
 * windows of their own that the formulas price like any other, and what
 * no process explains is a target of its own: the survivors get only
 * their own share.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pa_frame_task_exit(pa_frame *f, const pa_task_exit *e)
{
    if (!f || !e || e->pid <= 0 || e->tid <= 0)
        return pa__err(-EINVAL, "pa_frame_task_exit: a frame and a record with a pid "
                                "and a tid above 0 are required");
    pa_ctx *ctx = f->ctx;
    if (PA__GROW(ctx->exits, ctx->exits_cap, ctx->nexits + 1, 64) < 0)
        return pa__err(-ENOMEM, "exits: out of memory keeping %zu exit records", ctx->nexits + 1);
    pa_task_exit *c = &ctx->exits[ctx->nexits++];
    *c = *e;
    c->comm[PA_COMM_MAX - 1] = '\0';
    return 0;
}

int pa_frame_exits_source(pa_frame *f, const char *source, uint64_t lost)
{
    if (!f || !source || !*source || strlen(source) >= sizeof(f->ctx->exits_src))
        return pa__err(-EINVAL, "pa_frame_exits_source: a frame and a source name of 1 "
                                "to 15 bytes are required");
    snprintf(f->ctx->exits_src, sizeof(f->ctx->exits_src), "%s", source);
    f->ctx->exits_lost = lost;
    return 0;
}

int pa__exits_apply(pa_ctx *ctx, uint64_t tick)
{
    (void)tick;
    size_t keep = 0;
    for (size_t i = 0; i < ctx->nexits; i++) {
        const pa_task_exit *e = &ctx->exits[i];
        pa_task *p = pa__tasktab_get(&ctx->procs, e->pid);
        if (p) {
            /* a thread of a live process, or the last of one that is
             * gone: its tasks' lifetimes add up to its final CPU time */
            p->dead_ns += e->cpu_ns;
            p->exit_seen = true;
        } else {
            ctx->exits[keep++] = *e; /* never seen alive */
        }
    }
    ctx->nexits = keep;
    return 0;
}

/* A task's figures of this window cleared, with room for every
 * component. */
static int window_reset(pa_ctx *ctx, pa_task *t)
{
    t->cpu_w = t->nic_w = 0;
    t->d_rx = t->d_tx = 0;
    if (ctx->ncomp > 2 && !t->ext && !(t->ext = calloc(2 * PA_EXT_COMPS, sizeof(double))))
        return -ENOMEM;
    if (t->ext)
        memset(t->ext, 0, PA_EXT_COMPS * sizeof(double));
    if (t->ctr_d)
        memset(t->ctr_d, 0, PA_MAX_COUNTERS * sizeof(double));
    return 0;
}

/* Retired processes with exit records: the CPU time between their last
 * sighting and their exit is their last window. */
static int last_windows(pa_ctx *ctx)
{
    for (size_t i = 0; i < ctx->ngone; i++) {
        pa_task *t = ctx->gone[i];
        if (t->type != PA_TARGET_PROCESS || !t->exit_seen || t->in_window ||
            !(t->prev.have & PA_RD_CPU))
            continue;
        if (window_reset(ctx, t) < 0)
            return -ENOMEM;
        t->d_cpu_s = t->dead_ns > t->prev.cpu_ns ? (double)(t->dead_ns - t->prev.cpu_ns) / 1e9 : 0;
        t->flags = t->had_window ? 0 : PA_POWER_FIRST;
        t->in_window = true;
        t->had_window = true;
        if (pa__win_push(ctx, t) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int exit_cmp(const void *a, const void *b)
{
    const pa_task_exit *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* A process born and gone in the window, folded into PA_TARGET_EXITED:
 * freed at the next tick with the other gone tasks. */
static pa_task *folded_new(pa_ctx *ctx, pid_t pid, pid_t ppid, const char *comm, double cpu_s,
                           uint64_t tick)
{
    pa_task *t = pa__task_new(PA_TARGET_PROCESS, pid, 0);
    if (!t)
        return NULL;
    if (pa__gone_push(ctx, t) < 0) {
        pa__task_free(t);
        return NULL;
    }
    t->ppid = ppid;
    snprintf(t->comm, sizeof(t->comm), "%s", comm);
    t->first_tick = t->seen_tick = tick;
    t->gone = t->folded = t->in_window = t->had_window = true;
    t->flags = PA_POWER_FIRST;
    t->d_cpu_s = cpu_s;
    if (window_reset(ctx, t) < 0 || pa__win_push(ctx, t) < 0)
        return NULL;
    return t;
}

/* Its cgroup and last CPU are its parent's, the nearest one alive (a
 * shell that ran it may itself be gone). */
static void folded_inherit(pa_ctx *ctx, pa_task **born, size_t n, pa_task *t)
{
    pid_t pp = t->ppid;
    for (int depth = 0; pp > 0 && depth < 16; depth++) {
        const pa_task *par = pa__tasktab_get(&ctx->procs, pp);
        if (par) {
            t->cgroup = par->cgroup;
            t->last_cpu = par->last_cpu;
            return;
        }
        size_t lo = 0, hi = n; /* born[] is sorted by pid */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (born[mid]->pid < pp)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || born[lo]->pid != pp || born[lo] == t)
            return;
        pp = born[lo]->ppid;
    }
}

/* Processes never seen alive, from the kernel's exit records: one task
 * per thread group, its threads' lifetimes summed. */
static int born_from_records(pa_ctx *ctx, uint64_t tick)
{
    if (ctx->nexits > 1) /* no array at all before the first record */
        qsort(ctx->exits, ctx->nexits, sizeof(*ctx->exits), exit_cmp);
    pa_task **born = NULL;
    size_t nborn = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < ctx->nexits && rc == 0;) {
        size_t j = i;
        uint64_t cpu = 0;
        const pa_task_exit *lead = &ctx->exits[i];
        for (; j < ctx->nexits && ctx->exits[j].pid == lead->pid; j++) {
            cpu += ctx->exits[j].cpu_ns;
            if (ctx->exits[j].tid == ctx->exits[j].pid)
                lead = &ctx->exits[j];
        }
        pa_task *t = folded_new(ctx, lead->pid, lead->ppid, lead->comm, (double)cpu / 1e9, tick);
        if (!t || PA__GROW(born, cap, nborn + 1, 64) < 0)
            rc = -ENOMEM;
        else
            born[nborn++] = t;
        i = j;
    }
    for (size_t i = 0; i < nborn && rc == 0; i++)
        folded_inherit(ctx, born, nborn, born[i]);
    free(born);
    return rc;
}

/* Without exit records: the survivors' reaped children's time (cutime,
 * cstime) grew by what their children used over their whole lives; less
 * what the retired processes among those children had already been
 * counted for, it is what the children that came and went used, and
 * /proc/stat's busy time bounds it. */
static int born_estimate(pa_ctx *ctx, uint64_t tick, double busy_s)
{
    uint64_t grew = 0, known = 0;
    double procs = 0;
    for (size_t i = 0; i < ctx->nwin; i++) {
        const pa_task *t = ctx->win[i];
        if (t->type != PA_TARGET_PROCESS)
            continue;
        procs += t->d_cpu_s;
        if (!t->gone && (t->cur.have & PA_RD_CHILD) && t->cur.child_cpu_ns > t->prev.child_cpu_ns)
            grew += t->cur.child_cpu_ns - t->prev.child_cpu_ns;
    }
    for (size_t i = 0; i < ctx->ngone; i++) {
        const pa_task *t = ctx->gone[i];
        const pa_task *par = pa__tasktab_get(&ctx->procs, t->ppid);
        if (t->type == PA_TARGET_PROCESS && !t->in_window && par && par->seen_tick == tick)
            known += t->prev.cpu_ns + t->prev.child_cpu_ns;
    }
    double est = grew > known ? (double)(grew - known) / 1e9 : 0;
    double room = busy_s - procs;
    if (est > room)
        est = room > 0 ? room : 0;
    if (!(est > 0))
        return 0;
    return folded_new(ctx, 0, 0, "[exited]", est, tick) ? 0 : -ENOMEM;
}

int pa__exits_window(pa_ctx *ctx, uint64_t tick, double busy_s)
{
    int rc = last_windows(ctx);
    const char *src = !ctx->watch_all     ? "none"
                      : ctx->exits_src[0] ? ctx->exits_src
                                          : "children-time";
    snprintf(ctx->rexits_src, sizeof(ctx->rexits_src), "%s", src);
    if (rc == 0 && ctx->watch_all)
        rc = ctx->exits_src[0] ? born_from_records(ctx, tick) : born_estimate(ctx, tick, busy_s);
    ctx->nexits = 0;
    return rc;
}

static pa_task *fold_target(pa_ctx *ctx, pa_task **slot, pa_target_type type, const char *comm)
{
    if (!*slot) {
        pa_task *t = pa__task_new(type, 0, 0);
        if (!t)
            return NULL;
        snprintf(t->comm, sizeof(t->comm), "%s", comm);
        *slot = t;
    }
    pa_task *t = *slot;
    if (window_reset(ctx, t) < 0)
        return NULL;
    t->in_window = true;
    t->seen_tick = ctx->tick;
    t->flags = t->had_window ? 0 : PA_POWER_FIRST;
    t->had_window = true;
    return t;
}

int pa__exits_fold(pa_ctx *ctx, const pa_power_table *tab, double interval_s, double busy_s)
{
    if (!ctx->watch_all)
        return 0;
    pa_task *ex = fold_target(ctx, &ctx->exited_t, PA_TARGET_EXITED, "[exited]");
    pa_task *un =
        ex ? fold_target(ctx, &ctx->unacc_t, PA_TARGET_UNACCOUNTED, "[unaccounted]") : NULL;
    if (!un)
        return -ENOMEM;
    double live_w[PA_MAX_COMPONENTS] = {0}, ex_w[PA_MAX_COMPONENTS] = {0};
    double live_s = 0, ex_s = 0;
    unsigned n = 0;
    for (size_t i = 0; i < ctx->nwin; i++) {
        const pa_task *t = ctx->win[i];
        if (t->type != PA_TARGET_PROCESS)
            continue;
        for (size_t k = 0; k < ctx->ncomp; k++)
            (t->folded ? ex_w : live_w)[k] += pa__task_w(t, k);
        if (t->folded) {
            ex_s += t->d_cpu_s;
            n += t->pid > 0;
        } else {
            live_s += t->d_cpu_s;
        }
    }
    for (size_t k = 0; k < ctx->ncomp; k++) {
        double rest =
            tab->comp_w[k] - (k == PA_COMP_CPU - 1 ? tab->idle_w : 0) - live_w[k] - ex_w[k];
        /* rounding only (a formula never gives the tasks more than the
         * system's active power) */
        if (rest < 1e-9 * (tab->comp_w[k] > 0 ? tab->comp_w[k] : 1))
            rest = 0;
        *pa__task_wp(ex, k) = ex_w[k];
        *pa__task_wp(un, k) = rest;
        *pa__task_jp(ex, k) += ex_w[k] * interval_s;
        *pa__task_jp(un, k) += rest * interval_s;
    }
    ex->d_cpu_s = ex_s;
    ex->nprocs = n;
    un->d_cpu_s = busy_s - live_s - ex_s > 0 ? busy_s - live_s - ex_s : 0;
    return 0;
}

size_t pa__exits_targets(const pa_ctx *ctx, const pa_task **out2)
{
    if (!ctx->watch_all || !ctx->exited_t || !ctx->unacc_t || !ctx->exited_t->in_window)
        return 0;
    out2[0] = ctx->exited_t;
    out2[1] = ctx->unacc_t;
    return 2;
}

int pa__exits_records(pa_ctx *ctx, pa__exits_fill_fn fill, void *user)
{
    size_t n = 0;
    for (size_t i = 0; i < ctx->nwin && n < PA_EXITED_MAX; i++) {
        const pa_task *t = ctx->win[i];
        if (!t->folded || t->pid <= 0)
            continue;
        if (PA__GROW(ctx->rexited, ctx->rexited_cap, n + 1, 64) < 0)
            return -ENOMEM;
        fill(ctx, &ctx->rexited[n++], t, user);
    }
    return (int)n;
}

void pa__exits_free(pa_ctx *ctx)
{
    free(ctx->rexited);
    ctx->rexited = NULL;
    ctx->rexited_cap = 0;
    free(ctx->exits);
    ctx->exits = NULL;
    ctx->nexits = ctx->exits_cap = 0;
    pa__task_free(ctx->exited_t);
    pa__task_free(ctx->unacc_t);
    ctx->exited_t = ctx->unacc_t = NULL;
}
