/*
 * modapi.c - what a module's callbacks call (powerapi.h, "Writing
 * modules"): its state and environment, frames for user sensors, deltas
 * and power tables for user formulas.  Called on the sampling thread with
 * ctx->lock held, from inside a tick.
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *pa_module_priv(const pa_module *m)
{
    return m->priv;
}

void pa_module_set_priv(pa_module *m, void *priv)
{
    m->priv = priv;
}

const pa_env *pa_module_env(const pa_module *m)
{
    return m->ctx ? &m->ctx->env : NULL;
}

void pa_module_errorf(pa_module *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof(m->err), fmt, ap);
    va_end(ap);
    pa__err(0, "%s", m->err);
}

const char *pa_env_procfs(const pa_env *env)
{
    return env->procfs;
}

const char *pa_env_sysfs(const pa_env *env)
{
    return env->sysfs;
}

const char *pa_env_devfs(const pa_env *env)
{
    return env->devfs;
}

const char *pa_env_rootfs(const pa_env *env)
{
    return env->rootfs;
}

const char *pa_env_hwdb(const pa_env *env)
{
    return env->hwdb;
}

const char *pa_env_calibration(const pa_env *env)
{
    return env->calibration;
}

int pa_frame_set_cpu_ns(pa_frame *f, pid_t pid, pid_t tid, uint64_t cpu_ns)
{
    pa_ctx *ctx = f->ctx;
    pa_task *t = tid ? pa__task_find(ctx, PA_TARGET_THREAD, tid)
                     : pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    /* a user sensor may be the one that discovers a watched target */
    if (!t && (tid ? pa__watched_with(ctx, pid, PA_WATCH_THREADS)
                   : (ctx->watch_all || pa__watched_with(ctx, pid, 0)))) {
        t = pa__task_seen(f, tid ? PA_TARGET_THREAD : PA_TARGET_PROCESS, pid, tid, 0);
        if (!t)
            return pa__err(-ENOMEM, "out of memory");
        if (tid)
            t->proc = pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    }
    if (!t)
        return pa__err(-ESRCH, "pid %d tid %d: not a target (watch it first)", (int)pid, (int)tid);
    t->cur.cpu_ns = cpu_ns;
    t->cur.have |= PA_RD_CPU;
    t->seen_tick = f->tick;
    return 0;
}

double pa_delta_interval_s(const pa_frame_delta *d)
{
    return d->interval_s;
}

size_t pa_delta_count(const pa_frame_delta *d)
{
    return d->ntasks;
}

double pa_delta_cpu_s(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks ? d->tasks[i]->d_cpu_s : 0;
}

double pa_delta_capacity_s(const pa_frame_delta *d)
{
    return d->capacity_s;
}

double pa_delta_busy_s(const pa_frame_delta *d)
{
    return d->busy_s;
}

/* The formula's component as an index of the power arrays: its id - 1
 * (a formula without one writes the cpu figures, as before abi 3). */
static size_t comp_index(const pa_power_table *t)
{
    return t->component >= 1 && t->component <= PA_MAX_COMPONENTS ? (size_t)t->component - 1 : 0;
}

void pa_table_set_target_w(pa_power_table *t, size_t i, double w)
{
    if (i >= t->ntasks)
        return;
    double *p = pa__task_wp(t->tasks[i], comp_index(t));
    if (p)
        *p = w;
}

void pa_table_set_system_w(pa_power_table *t, double w, double idle_w)
{
    size_t k = comp_index(t);
    t->comp_w[k] = w;
    if (k == PA_COMP_CPU - 1)
        t->idle_w = idle_w;
}

double pa_table_system_comp_w(const pa_power_table *t, pa_component comp)
{
    return comp >= 1 && comp <= PA_MAX_COMPONENTS ? t->comp_w[comp - 1] : 0;
}

double pa_table_target_comp_w(const pa_power_table *t, size_t i, pa_component comp)
{
    if (i >= t->ntasks || comp < 1 || comp > PA_MAX_COMPONENTS)
        return 0;
    return pa__task_w(t->tasks[i], (size_t)comp - 1);
}

bool pa_table_measured_get(const pa_power_table *t, double *dram_w)
{
    if (dram_w)
        *dram_w = t->measured ? t->dram_w : 0;
    return t->measured;
}

const char *pa_delta_component_name(const pa_frame_delta *d, pa_component comp)
{
    return comp >= 1 && (size_t)comp <= d->ctx->ncomp ? d->ctx->comp_names[comp - 1] : NULL;
}

void pa_table_device(pa_power_table *t, const pa_device_info *dev)
{
    if (t && dev && t->ndev < PA_MAX_DEVICES)
        t->dev[t->ndev++] = *dev;
}

void pa_table_assume(pa_power_table *t, const char *fmt, ...)
{
    char buf[384]; /* a hwdb source (up to 255) with its context */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pa__assume(t->assumed, sizeof(t->assumed), buf);
}

/* ---- keyed frame data (pa_frame_put / pa_delta_get) ---- */

static const pa_blob *blob_find(const pa_blobs *b, const char *key)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->v[i].key, key))
            return &b->v[i];
    return NULL;
}

int pa_frame_put(pa_frame *f, const char *key, const void *data, size_t size)
{
    if (!f || !key || !*key || strlen(key) >= sizeof(((pa_blob *)0)->key) || !data || !size ||
        size > PA_FRAME_DATA_MAX)
        return pa__err(-EINVAL,
                       "pa_frame_put: key '%s' or size %zu "
                       "refused (key 1..31 bytes, size 1..%u)",
                       key ? key : "(null)", size, PA_FRAME_DATA_MAX);
    pa_blobs *b = &f->ctx->blobs[f->ctx->sys_cur];
    pa_blob *e = (pa_blob *)blob_find(b, key);
    if (!e) {
        size_t cap = b->cap;
        if (PA__GROW(b->v, cap, b->n + 1, 4) < 0)
            return pa__err(-ENOMEM, "pa_frame_put: out of memory");
        memset(b->v + b->cap, 0, (cap - b->cap) * sizeof(*b->v));
        b->cap = cap;
        e = &b->v[b->n++];
        snprintf(e->key, sizeof(e->key), "%s", key);
    }
    if (size > e->cap) {
        void *p = realloc(e->data, size);
        if (!p)
            return pa__err(-ENOMEM, "pa_frame_put: out of memory");
        e->data = p;
        e->cap = size;
    }
    memcpy(e->data, data, size);
    e->size = size;
    return 0;
}

const void *pa_delta_get(const pa_frame_delta *d, const char *key, size_t *size, const void **prev,
                         size_t *prev_size)
{
    const pa_ctx *ctx = d->ctx;
    const pa_blob *c = key ? blob_find(&ctx->blobs[ctx->sys_cur], key) : NULL;
    const pa_blob *p = key && ctx->have_prev ? blob_find(&ctx->blobs[!ctx->sys_cur], key) : NULL;
    if (size)
        *size = c ? c->size : 0;
    if (prev)
        *prev = p ? p->data : NULL;
    if (prev_size)
        *prev_size = p ? p->size : 0;
    return c ? c->data : NULL;
}

pa_target_type pa_delta_type(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks ? d->tasks[i]->type : (pa_target_type)0;
}

pid_t pa_delta_pid(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks ? d->tasks[i]->pid : 0;
}

pid_t pa_delta_tid(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks && d->tasks[i]->type == PA_TARGET_THREAD ? d->tasks[i]->tid : 0;
}

int pa_delta_in_tree(const pa_frame_delta *d, size_t i, pid_t root)
{
    return i < d->ntasks && d->tasks[i]->type == PA_TARGET_PROCESS &&
           pa__in_tree(d->ctx, d->tasks[i], root);
}
