/* tasks.c - the context's tables of processes, threads and trees. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pa_task *pa__task_new(pa_target_type type, pid_t pid, pid_t tid)
{
    pa_task *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->type = type;
    t->pid = pid;
    t->tid = tid;
    t->cgroup = -1;
    t->last_cpu = -1;
    for (int i = 0; i < PA_TASK_FDS; i++)
        t->fd[i] = -1;
    t->cur.multiplex = t->prev.multiplex = 1.0;
    return t;
}

void pa__task_free(pa_task *task)
{
    if (!task)
        return;
    for (int i = 0; i < PA_TASK_FDS; i++)
        if (task->fd[i] >= 0)
            close(task->fd[i]);
    free(task->ctr_cur); /* ctr_prev and ctr_d live in the same block */
    free(task->ext);
    free(task);
}

static size_t slot_of(pid_t id, size_t cap)
{
    return pa__hash_u64((uint32_t)id) & (cap - 1);
}

static pid_t key_of(const pa_task *t)
{
    return t->type == PA_TARGET_THREAD ? t->tid : t->pid;
}

pa_task *pa__tasktab_get(const pa_tasktab *t, pid_t id)
{
    if (!t->idx_cap)
        return NULL;
    for (size_t s = slot_of(id, t->idx_cap);; s = (s + 1) & (t->idx_cap - 1)) {
        int32_t i = t->idx[s];
        if (i < 0)
            return NULL;
        if (key_of(t->v[i]) == id)
            return t->v[i];
    }
}

int pa__tasktab_reindex(pa_tasktab *t)
{
    size_t cap = t->idx_cap ? t->idx_cap : 64;
    while (cap < 2 * (t->n + 1))
        cap *= 2;
    if (cap != t->idx_cap) {
        int32_t *idx = malloc(cap * sizeof(*idx));
        if (!idx)
            return -ENOMEM;
        free(t->idx);
        t->idx = idx;
        t->idx_cap = cap;
    }
    memset(t->idx, 0xff, t->idx_cap * sizeof(*t->idx));
    for (size_t i = 0; i < t->n; i++) {
        size_t s = slot_of(key_of(t->v[i]), t->idx_cap);
        while (t->idx[s] >= 0)
            s = (s + 1) & (t->idx_cap - 1);
        t->idx[s] = (int32_t)i;
    }
    return 0;
}

int pa__tasktab_put(pa_tasktab *t, pa_task *task, pid_t id)
{
    if (PA__GROW(t->v, t->cap, t->n + 1, 64) < 0)
        return -ENOMEM;
    t->v[t->n++] = task;
    if (2 * (t->n + 1) > t->idx_cap)
        return pa__tasktab_reindex(t);
    size_t s = slot_of(id, t->idx_cap);
    while (t->idx[s] >= 0)
        s = (s + 1) & (t->idx_cap - 1);
    t->idx[s] = (int32_t)(t->n - 1);
    return 0;
}

void pa__tasktab_remove_at(pa_tasktab *t, size_t i)
{
    t->v[i] = t->v[--t->n];
}

void pa__tasktab_free(pa_tasktab *t)
{
    for (size_t i = 0; i < t->n; i++)
        pa__task_free(t->v[i]);
    free(t->v);
    free(t->idx);
    memset(t, 0, sizeof(*t));
}

pa_task *pa__task_find(pa_ctx *ctx, pa_target_type type, pid_t id)
{
    switch (type) {
    case PA_TARGET_PROCESS:
        return pa__tasktab_get(&ctx->procs, id);
    case PA_TARGET_THREAD:
        return pa__tasktab_get(&ctx->threads, id);
    case PA_TARGET_TREE:
        return pa__tasktab_get(&ctx->trees, id);
    default:
        return NULL;
    }
}

int pa__gone_push(pa_ctx *ctx, pa_task *t)
{
    if (PA__GROW(ctx->gone, ctx->gone_cap, ctx->ngone + 1, 32) < 0)
        return -ENOMEM;
    ctx->gone[ctx->ngone++] = t;
    return 0;
}

int pa__win_push(pa_ctx *ctx, pa_task *t)
{
    if (PA__GROW(ctx->win, ctx->win_cap, ctx->nwin + 1, 256) < 0)
        return -ENOMEM;
    ctx->win[ctx->nwin++] = t;
    return 0;
}

/* Moves task i of table tab to the list of tasks reported exited. */
int pa__task_retire(pa_ctx *ctx, pa_tasktab *tab, size_t i)
{
    pa_task *t = tab->v[i];
    if (pa__gone_push(ctx, t) < 0)
        return -ENOMEM;
    t->gone = true;
    t->in_window = false; /* until its exit records give it a last one */
    /* its fds refer to a dead task: release them now */
    for (int k = 0; k < PA_TASK_FDS; k++)
        if (t->fd[k] >= 0) {
            close(t->fd[k]);
            t->fd[k] = -1;
        }
    pa__tasktab_remove_at(tab, i);
    return 0;
}

int pa__task_alloc_counters(pa_ctx *ctx, pa_task *t)
{
    if (!ctx->ncounters || t->ctr_cur)
        return 0;
    double *c = calloc(3 * PA_MAX_COUNTERS, sizeof(double));
    if (!c)
        return -ENOMEM;
    t->ctr_cur = c;
    t->ctr_prev = c + PA_MAX_COUNTERS;
    t->ctr_d = c + 2 * PA_MAX_COUNTERS;
    return 0;
}

pa_task *pa__task_seen(pa_frame *f, pa_target_type type, pid_t pid, pid_t tid, uint64_t start_ticks)
{
    pa_ctx *ctx = f->ctx;
    pa_tasktab *tab = type == PA_TARGET_THREAD ? &ctx->threads : &ctx->procs;
    pid_t id = type == PA_TARGET_THREAD ? tid : pid;
    pa_task *t = pa__tasktab_get(tab, id);
    if (t && start_ticks && t->start_ticks && t->start_ticks != start_ticks) {
        /* the pid was reused: the old task ends here */
        for (size_t i = 0; i < tab->n; i++)
            if (tab->v[i] == t) {
                if (pa__task_retire(ctx, tab, i) < 0)
                    return NULL;
                break;
            }
        if (pa__tasktab_reindex(tab) < 0)
            return NULL;
        t = NULL;
    }
    if (!t) {
        t = pa__task_new(type, pid, tid);
        if (!t)
            return NULL;
        t->start_ticks = start_ticks;
        t->first_tick = f->tick;
        if (pa__task_alloc_counters(ctx, t) < 0 || pa__tasktab_put(tab, t, id) < 0) {
            pa__task_free(t);
            return NULL;
        }
    }
    if (!t->start_ticks)
        t->start_ticks = start_ticks;
    t->seen_tick = f->tick;
    return t;
}

int pa__cgroup_intern(pa_ctx *ctx, const char *path)
{
    for (size_t i = 0; i < ctx->ncgroups; i++)
        if (!strcmp(ctx->cgroups[i], path))
            return (int)i;
    /* two arrays of one capacity */
    size_t need = ctx->ncgroups + 1, cap = ctx->cgroups_cap, ca = cap;
    if (PA__GROW(ctx->cgroups, cap, need, 16) < 0 || PA__GROW(ctx->cgroup_j, ca, need, 16) < 0)
        return -1;
    ctx->cgroups_cap = cap;
    char *s = strdup(path);
    if (!s)
        return -1;
    ctx->cgroups[ctx->ncgroups] = s;
    memset(ctx->cgroup_j[ctx->ncgroups], 0, sizeof(ctx->cgroup_j[0]));
    return (int)ctx->ncgroups++;
}

int pa__counters_declare(pa_ctx *ctx, const char *const *names, size_t n)
{
    if (n > PA_MAX_COUNTERS)
        return pa__err(-EINVAL, "perf: %zu events asked, at most %d per context", n,
                       PA_MAX_COUNTERS);
    char *copy[PA_MAX_COUNTERS] = {0};
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(names[i]);
        if (!copy[i]) {
            for (size_t k = 0; k < i; k++)
                free(copy[k]);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < ctx->ncounters; i++)
        free(ctx->counter_names[i]);
    for (size_t i = 0; i < PA_MAX_COUNTERS; i++)
        ctx->counter_names[i] = copy[i];
    ctx->ncounters = n;
    /* every task gets counter storage; existing values restart at 0 */
    pa_tasktab *tabs[] = {&ctx->procs, &ctx->threads, &ctx->trees};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < tabs[k]->n; i++) {
            pa_task *t = tabs[k]->v[i];
            if (!t->ctr_cur && n && pa__task_alloc_counters(ctx, t) < 0)
                return -ENOMEM;
            if (t->ctr_cur)
                memset(t->ctr_cur, 0, 3 * PA_MAX_COUNTERS * sizeof(double));
            t->cur.have &= ~PA_RD_COUNTERS;
            t->prev.have &= ~PA_RD_COUNTERS;
        }
    return 0;
}

/* ------------------------------------------------------------------ */
/* A task's power, as reports and the getters give it                  */
/* ------------------------------------------------------------------ */

void pa__task_power(const pa_ctx *ctx, const pa_task *t, double interval_s, uint64_t time_ns,
                    bool measured, pa_power *out)
{
    memset(out, 0, sizeof(*out));
    bool live = !t->gone || t->in_window; /* a gone task's last window */
    out->cpu_w = live ? t->cpu_w : 0;
    out->nic_w = live ? t->nic_w : 0;
    out->cpu_j = t->cpu_j;
    out->nic_j = t->nic_j;
    for (size_t k = 0; k < ctx->ncomp; k++) {
        out->total_w += live ? pa__task_w(t, k) : 0;
        out->total_j += pa__task_j(t, k);
    }
    out->interval_s = interval_s;
    out->cpu_time_s = live ? t->d_cpu_s : 0;
    out->time_ns = time_ns;
    out->flags = (t->gone ? PA_POWER_EXITED : t->flags) | (measured ? PA_POWER_MEASURED : 0);
}

int pa__target_power_locked(pa_ctx *ctx, pa_target_type type, pid_t id, pa_power *out)
{
    const pa_task *t = pa__task_find(ctx, type, id);
    if (!t)
        for (size_t i = 0; i < ctx->ngone; i++)
            if (ctx->gone[i]->type == type &&
                (type == PA_TARGET_THREAD ? ctx->gone[i]->tid : ctx->gone[i]->pid) == id)
                t = ctx->gone[i];
    if (!t)
        return -ESRCH;
    if (!ctx->have_report || (!t->in_window && !t->gone))
        return -ENODATA;
    pa__task_power(ctx, t, ctx->sys_power.interval_s, ctx->last_time_ns,
                   (ctx->sys_power.flags & PA_POWER_MEASURED) != 0, out);
    return 0;
}
