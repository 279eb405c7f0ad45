/*
 * ctx.c - contexts: creation and options, targets, the sampler thread and
 * the result getters.  Every public function takes ctx->lock; a tick holds
 * it throughout, so lifecycle changes land between ticks and nothing is
 * freed under a running callback.  The module lifecycle is in module.c,
 * auto's choices in auto.c, the helpers of module callbacks in modapi.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Context                                                             */
/* ------------------------------------------------------------------ */

static int check_dir(const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return pa__err(-errno, "%s root '%s': %s (give an existing directory)", what, path,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pa__err(-ENOTDIR, "%s root '%s' is not a directory", what, path);
    return 0;
}

int pa_ctx_new(pa_ctx **out, const pa_ctx_opts *opts)
{
    if (!out)
        return pa__err(-EINVAL, "pa_ctx_new: out is NULL");
    const char *procfs = opts && opts->procfs ? opts->procfs : "/proc";
    const char *sysfs = opts && opts->sysfs ? opts->sysfs : "/sys";
    const char *devfs = opts && opts->devfs ? opts->devfs : "/dev";
    const char *rootfs = opts && opts->rootfs ? opts->rootfs : "/";
    const char *hwdb = opts && opts->hwdb ? opts->hwdb : getenv("POWERAPI_HWDB");
    int rc = check_dir("procfs", procfs);
    if (rc == 0)
        rc = check_dir("sysfs", sysfs);
    if (rc < 0)
        return rc;
    if (hwdb && *hwdb && access(hwdb, R_OK) < 0)
        return pa__err(-errno, "hardware database '%s': %s", hwdb, strerror(errno));
    pa_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return pa__err(-ENOMEM, "pa_ctx_new: out of memory");
    ctx->procfs = strdup(procfs);
    ctx->sysfs = strdup(sysfs);
    ctx->devfs = strdup(devfs);
    ctx->rootfs = strdup(rootfs);
    ctx->hwdb = hwdb && *hwdb ? strdup(hwdb) : NULL;
    ctx->cgcache = pa__cgcache_new(opts ? opts->rootfs : NULL);
    if (!ctx->procfs || !ctx->sysfs || !ctx->devfs || !ctx->rootfs || !ctx->cgcache ||
        (hwdb && *hwdb && !ctx->hwdb))
        goto fail;
    ctx->env.procfs = ctx->procfs;
    ctx->env.sysfs = ctx->sysfs;
    ctx->env.devfs = ctx->devfs;
    ctx->env.rootfs = ctx->rootfs;
    ctx->env.hwdb = ctx->hwdb;
    ctx->env.ctx = ctx;
    if (pa__comp_init(ctx) < 0)
        goto fail;          /* more built-in components than PA_MAX_COMPONENTS */
    ctx->auto_dirty = true; /* auto fills in at the first tick */
    ctx->clk_tck = sysconf(_SC_CLK_TCK);
    if (ctx->clk_tck <= 0)
        ctx->clk_tck = 100;
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctx->cond, &ca);
    pthread_condattr_destroy(&ca);
    *out = ctx;
    return 0;
fail:
    pa__cgcache_free(ctx->cgcache);
    free(ctx->procfs);
    free(ctx->sysfs);
    free(ctx->devfs);
    free(ctx->rootfs);
    free(ctx->hwdb);
    free(ctx);
    return pa__err(-ENOMEM, "pa_ctx_new: out of memory");
}

void pa_ctx_free(pa_ctx *ctx)
{
    if (!ctx)
        return;
    pa_stop(ctx);
    pa_module *m = ctx->modules;
    while (m) {
        pa_module *n = m->next;
        pa__module_destroy(m);
        m = n;
    }
    pa__tasktab_free(&ctx->procs);
    pa__tasktab_free(&ctx->threads);
    pa__tasktab_free(&ctx->trees);
    for (size_t i = 0; i < ctx->ngone; i++)
        pa__task_free(ctx->gone[i]);
    free(ctx->gone);
    for (size_t i = 0; i < ctx->ncgroups; i++)
        free(ctx->cgroups[i]);
    free(ctx->cgroups);
    free(ctx->cgroup_j);
    free(ctx->cgroup_ctr);
    pa__cgcache_free(ctx->cgcache);
    for (size_t i = 0; i < ctx->ncounters; i++)
        free(ctx->counter_names[i]);
    free(ctx->watches);
    free(ctx->registered);
    for (size_t i = 0; i < ctx->ndisabled; i++)
        free(ctx->disabled[i]);
    free(ctx->disabled);
    free(ctx->rtargets);
    free(ctx->rcounters);
    free(ctx->rcomp);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < ctx->blobs[k].cap; i++)
            free(ctx->blobs[k].v[i].data);
        free(ctx->blobs[k].v);
    }
    free(ctx->win);
    free(ctx->cg_scratch);
    pa__exits_free(ctx);
    pa__scopes_free(ctx);
    pthread_mutex_destroy(&ctx->lock);
    pthread_cond_destroy(&ctx->cond);
    free(ctx->procfs);
    free(ctx->sysfs);
    free(ctx->devfs);
    free(ctx->rootfs);
    free(ctx->hwdb);
    free(ctx->calibration);
    free(ctx);
}

int pa_ctx_set_calibration(pa_ctx *ctx, const char *path)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_ctx_set_calibration: ctx is NULL");
    char *copy = NULL;
    if (path) {
        pa_curve c;
        int rc = pa__calib_read(path, &c);
        if (rc < 0)
            return rc;
        if (!(copy = strdup(path)))
            return pa__err(-ENOMEM, "pa_ctx_set_calibration: out of memory");
    }
    pthread_mutex_lock(&ctx->lock);
    free(ctx->calibration);
    ctx->calibration = copy;
    ctx->env.calibration = copy;
    ctx->auto_dirty = true; /* auto's choice of a CPU formula may change */
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int pa_machine_get(pa_ctx *ctx, pa_machine *out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "pa_machine_get: ctx and out are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (!ctx->tick) {
        rc = pa__err(-ENODATA, "pa_machine_get: no tick yet (tick first)");
    } else {
        /* the last tick's frame: the slot before the current one */
        const pa_sysread *s = &ctx->sys[!ctx->sys_cur];
        memset(out, 0, sizeof(*out));
        out->ncpus = s->ncpus;
        snprintf(out->cpu_model, sizeof(out->cpu_model), "%s", s->cpu_model);
        out->nominal_mhz = s->nominal_mhz;
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

int pa_watch_pid(pa_ctx *ctx, pid_t pid, unsigned flags)
{
    if (!ctx || pid <= 0)
        return pa__err(-EINVAL, "pid %d: not a process id", (int)pid);
    if (flags & ~(unsigned)(PA_WATCH_THREADS | PA_WATCH_CHILDREN))
        return pa__err(-EINVAL, "pid %d: unknown watch flags 0x%x", (int)pid, flags);
    char path[PA_PATH_MAX];
    if (pa__path(path, sizeof(path), ctx->procfs, "%d/stat", (int)pid) < 0 ||
        access(path, F_OK) < 0) {
        char hp[40];
        if (pa__procfs_hidepid(ctx->procfs, hp, sizeof(hp)))
            return pa__err(-ESRCH,
                           "pid %d: no such process, or one of another user "
                           "that %s hides (mounted with %s); run as root or "
                           "as a member of the mount's gid= group",
                           (int)pid, ctx->procfs, hp);
        return pa__err(-ESRCH, "pid %d: no such process (%s not found)", (int)pid, path);
    }
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    size_t i;
    for (i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid)
            break;
    if (i == ctx->nwatches) {
        size_t need = ctx->nwatches + 1;
        if (PA__GROW(ctx->watches, ctx->watches_cap, need, 8) < 0) {
            rc = pa__err(-ENOMEM, "out of memory");
            goto out;
        }
        ctx->nwatches++;
    }
    ctx->watches[i].pid = pid;
    ctx->watches[i].flags = flags;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_unwatch_pid(pa_ctx *ctx, pid_t pid)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_unwatch_pid: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    int rc = pa__err(-ESRCH, "pid %d is not watched", (int)pid);
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid) {
            ctx->watches[i] = ctx->watches[--ctx->nwatches];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_watch_all(pa_ctx *ctx, int on)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_watch_all: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    ctx->watch_all = on != 0;
    ctx->watch_all_threads = (on & PA_WATCH_ALL_THREADS) != 0;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int pa_report_cgroups(pa_ctx *ctx, int on)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_report_cgroups: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    ctx->cgroups_on = on != 0;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Ticks and the sampler                                               */
/* ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool in_callback(pa_ctx *ctx)
{
    return ctx->in_cb && pthread_equal(ctx->cb_thread, pthread_self());
}

int pa_tick_at(pa_ctx *ctx, uint64_t time_ns)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_tick: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    if (in_callback(ctx))
        rc = pa__err(-EBUSY, "pa_tick: not allowed inside a report callback");
    else
        rc = pa__tick_locked(ctx, time_ns);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_tick(pa_ctx *ctx)
{
    return pa_tick_at(ctx, now_ns());
}

static void *sampler_main(void *arg)
{
    pa_ctx *ctx = arg;
    pthread_mutex_lock(&ctx->lock);
    uint64_t next = now_ns();
    while (!ctx->stopping) {
        uint64_t t = now_ns();
        if (t < next) {
            struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                                  .tv_nsec = (long)(next % 1000000000u)};
            pthread_cond_timedwait(&ctx->cond, &ctx->lock, &ts);
            continue;
        }
        uint64_t when = now_ns();
        if (when <= ctx->last_time_ns)
            when = ctx->last_time_ns + 1;
        int rc = pa__tick_locked(ctx, when);
        /* a tick that ran late does not make the next ones bunch up */
        next += ctx->period_ns;
        if (next < t)
            next = t + ctx->period_ns;
        pa_report *copy = NULL;
        if (rc == 0 && ctx->have_report && ctx->cb && ctx->report.time_ns == ctx->last_time_ns &&
            pa__report_copy(&ctx->report, &copy) == 0) {
            pa_report_cb cb = ctx->cb;
            void *user = ctx->cb_user;
            ctx->in_cb = true;
            ctx->cb_thread = pthread_self();
            pthread_mutex_unlock(&ctx->lock);
            cb(ctx, copy, user);
            pa_report_free(copy);
            pthread_mutex_lock(&ctx->lock);
            ctx->in_cb = false;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return NULL;
}

int pa_start(pa_ctx *ctx, uint64_t period_ns, pa_report_cb cb, void *user)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_start: ctx is NULL");
    if (period_ns < 1000000)
        return pa__err(-EINVAL, "pa_start: period %llu ns is below 1 ms",
                       (unsigned long long)period_ns);
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (ctx->running) {
        rc = pa__err(-EALREADY, "pa_start: the sampler is already running");
        goto out;
    }
    ctx->period_ns = period_ns;
    ctx->cb = cb;
    ctx->cb_user = user;
    ctx->stopping = false;
    rc = -pthread_create(&ctx->sampler, NULL, sampler_main, ctx);
    if (rc < 0) {
        pa__err(rc, "pa_start: cannot create the sampler thread: %s", strerror(-rc));
        goto out;
    }
    ctx->running = true;
out:
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_stop(pa_ctx *ctx)
{
    if (!ctx)
        return pa__err(-EINVAL, "pa_stop: ctx is NULL");
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->running) {
        pthread_mutex_unlock(&ctx->lock);
        return pa__err(-ENOENT, "pa_stop: the sampler is not running");
    }
    if (pthread_equal(ctx->sampler, pthread_self())) {
        pthread_mutex_unlock(&ctx->lock);
        return pa__err(-EDEADLK, "pa_stop: not allowed from a report callback");
    }
    ctx->stopping = true;
    pthread_cond_broadcast(&ctx->cond);
    pthread_t th = ctx->sampler;
    pthread_mutex_unlock(&ctx->lock);
    pthread_join(th, NULL);
    pthread_mutex_lock(&ctx->lock);
    ctx->running = false;
    ctx->stopping = false;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static int target_power(pa_ctx *ctx, pa_target_type type, pid_t id, pa_power *out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "power getter: ctx and out are required");
    pthread_mutex_lock(&ctx->lock);
    int rc = pa__target_power_locked(ctx, type, id, out);
    pthread_mutex_unlock(&ctx->lock);
    const char *what = type == PA_TARGET_THREAD ? "thread" : "pid";
    if (rc == -ESRCH)
        return pa__err(-ESRCH,
                       "%s %d: not a target of this context (watch it "
                       "first, or it exited)",
                       what, (int)id);
    if (rc == -ENODATA)
        return pa__err(-ENODATA, "%s %d: no complete window yet (tick again)", what, (int)id);
    return rc;
}

int pa_pid_power(pa_ctx *ctx, pid_t pid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_PROCESS, pid, out);
}

int pa_tid_power(pa_ctx *ctx, pid_t tid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_THREAD, tid, out);
}

int pa_tree_power(pa_ctx *ctx, pid_t pid, pa_power *out)
{
    return target_power(ctx, PA_TARGET_TREE, pid, out);
}

int pa_cgroup_power(pa_ctx *ctx, const char *cgroup, pa_power *out)
{
    if (!ctx || !cgroup || !out)
        return pa__err(-EINVAL, "pa_cgroup_power: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc = pa__err(-ENOENT, "cgroup '%s': no process of it seen in the last window%s", cgroup,
                     ctx->cgroups_on ? "" : " (call pa_report_cgroups)");
    if (ctx->have_report)
        for (size_t i = 0; i < ctx->report.ntargets; i++) {
            const pa_target_info *ti = &ctx->report.targets[i];
            if (ti->type == PA_TARGET_CGROUP && !strcmp(ti->cgroup, cgroup)) {
                *out = ti->power;
                rc = 0;
                break;
            }
        }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_system_power(pa_ctx *ctx, pa_power *out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "pa_system_power: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (!ctx->have_report)
        rc = pa__err(-ENODATA, "no complete window yet (tick twice)");
    else
        *out = ctx->sys_power;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int pa_report_get(pa_ctx *ctx, pa_report **out)
{
    if (!ctx || !out)
        return pa__err(-EINVAL, "pa_report_get: bad arguments");
    pthread_mutex_lock(&ctx->lock);
    int rc;
    if (!ctx->have_report)
        rc = pa__err(-ENODATA, "no complete window yet (tick twice)");
    else
        rc = pa__report_copy(&ctx->report, out);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
