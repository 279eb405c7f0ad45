/*
 * rapl_share.c - the "rapl-share" formula (XeMPower attribution; DESIGN.md
 * section 6.2).
 *
 * Measured package power over the window, summed over sockets:
 *
 *     P_pkg = sum_sockets delta E_pkg / d
 *
 * split across targets by their share of unhalted core cycles (the perf
 * sensor's cycles counter per target, and system-wide cycles_all), or by
 * CPU time when no cycle counter is open:
 *
 *     idle=split      P_i = P_pkg . w_i / W
 *     idle=separate   P_i = P_pkg . (busy / capacity) . w_i / W   (default)
 *
 * with w_i the target's cycles (or CPU seconds) in the window and W the
 * weight of all tasks.  When every process is watched, W is the sum over
 * the processes (cycles or time no process accounts for, such as
 * interrupts or tasks that exited unseen, is spread over them as the
 * package power they cause is); otherwise W is the system's (cycles_all,
 * or the busy CPU seconds of /proc/stat), never less than the processes'
 * sum, so shares never exceed 1.
 *
 * idle is the power no task caused: P_pkg minus the active part (0 with
 * idle=split while tasks ran).  When every process is watched it is
 * computed as P_pkg minus what the processes got, so attributed + idle =
 * P_pkg exactly, every tick.  DRAM power is reported on its own.
 *
 * Per socket: on a machine with more than one package, when the rapl
 * sensor knows the CPU -> package map (sysfs physical_package_id), every
 * process is watched, and every target in the window last ran on a CPU
 * of a package RAPL reads (proc(5) stat field 39), each package's power
 * is split among the targets that last ran on it, by the same weights:
 *
 *     P_i = P_s . f . w_i / W_s      s = package of task i's last CPU
 *
 * with W_s the weight of the processes on s and f = 1 (idle=split) or the
 * busy fraction of the package's own CPUs in the window (idle=separate:
 * busy / (busy + idle) of their /proc/stat cpuN lines; the system's
 * fraction where those lines are missing, which assumed says).  A package
 * no process ran on is idle.  idle = P_pkg minus
 * what the processes got, so conservation stays exact.  Otherwise the
 * packages are summed as above; `assumed` says which and why.  A process's
 * last CPU is its main thread's: the threads of a process spread over
 * packages are attributed with it.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct share_state {
    bool split;
} share_state;

static const char *const share_options[] = {"idle", NULL};

static int parse_idle(const pa_options *opts, bool *split)
{
    const char *v = pa_options_get(opts, "idle");
    if (!v || !strcmp(v, "separate"))
        *split = false;
    else if (!strcmp(v, "split"))
        *split = true;
    else
        return pa__err(-EINVAL,
                       "rapl-share: idle must be 'separate' or "
                       "'split', not '%s'",
                       v);
    return 0;
}

static int share_probe(const pa_env *env, char *why, size_t wl)
{
    char tmp[1024];
    int rc = pa__mod_rapl.probe(env, tmp, sizeof(tmp));
    /* tmp starts with "rapl: " */
    snprintf(why, wl, "%s%s", rc < 0 ? "" : "rapl-share: measured by ", tmp);
    return rc;
}

static int share_start(pa_module *m, const pa_options *opts)
{
    bool split;
    int rc = parse_idle(opts, &split);
    if (rc < 0)
        return rc;
    share_state *st = calloc(1, sizeof(*st));
    if (!st)
        return pa__err(-ENOMEM, "rapl-share: out of memory");
    st->split = split;
    m->priv = st;
    return 0;
}

static int share_configure(pa_module *m, const pa_options *opts)
{
    share_state *st = m->priv;
    bool split;
    int rc = parse_idle(opts, &split);
    if (rc < 0)
        return rc;
    st->split = split;
    return 0;
}

static void share_stop(pa_module *m)
{
    free(m->priv);
    m->priv = NULL;
}

/* Index in pkg[] of the package task k last ran on, or -1. */
static int task_package(const pa_sysread *s, const pa_task *k, const int *pkg, int npkg)
{
    if (k->last_cpu < 0 || (unsigned)k->last_cpu >= s->ncpu_socket)
        return -1;
    int sock = s->cpu_socket[k->last_cpu];
    for (int i = 0; sock >= 0 && i < npkg; i++)
        if (pkg[i] == sock)
            return i;
    return -1;
}

/* Why the packages cannot be attributed one by one (NULL: they can). */
static const char *per_socket_refusal(const pa_frame_delta *d, const int *pkg, int npkg)
{
    const pa_sysread *s = d->cur;
    if (!s || s->ncpu_socket == 0)
        return "the CPU -> package map is unknown";
    if (!d->ctx || !d->ctx->watch_all)
        return "not every process is watched";
    for (size_t i = 0; i < d->ntasks; i++) {
        const pa_task *k = d->tasks[i];
        if (k->type != PA_TARGET_PROCESS && k->type != PA_TARGET_THREAD)
            return "a process tree spans packages";
        if (task_package(s, k, pkg, npkg) < 0)
            return "a target's last CPU or its package is unknown";
    }
    return NULL;
}

/* The window's RAPL energy by kind, and each package domain's power. */
typedef struct rapl_sums {
    double pkg_j, dram_j, psys_j;
    int pkg[PA_MAX_RAPL]; /* socket of each package domain */
    double pkg_w[PA_MAX_RAPL];
    int npkg;
} rapl_sums;

static bool rapl_sum(const pa_frame_delta *d, rapl_sums *r)
{
    bool have_pkg = false;
    memset(r, 0, sizeof(*r));
    for (unsigned i = 0; i < d->nrapl; i++) {
        if (d->rapl[i].kind == PA_RAPL_PKG) {
            r->pkg_j += d->rapl[i].energy_j;
            have_pkg = true;
            r->pkg[r->npkg] = d->rapl[i].socket;
            r->pkg_w[r->npkg++] = d->rapl[i].energy_j / d->interval_s;
        } else if (d->rapl[i].kind == PA_RAPL_DRAM) {
            r->dram_j += d->rapl[i].energy_j;
        } else if (d->rapl[i].kind == PA_RAPL_PSYS) {
            r->psys_j += d->rapl[i].energy_j;
        }
    }
    return have_pkg;
}

/* Busy CPU seconds of package pkg's CPUs over the window (/proc/stat
 * cpuN lines), 0 when unknown. */
static double package_busy_s(const pa_frame_delta *d, int pkg)
{
    const pa_sysread *s = d->cur;
    unsigned n = 0;
    for (unsigned c = 0; c < s->ncpu_socket; c++)
        n += s->cpu_socket[c] == pkg;
    double u = pa__package_busy(d, s->cpu_socket, s->ncpu_socket, pkg);
    return u > 0 ? u * n * d->interval_s : 0;
}

/* Each package's power over the targets on it (by the package of their
 * last CPU), its active part by its CPUs' busy fraction, or frac. */
static void split_per_package(const share_state *st, const pa_frame_delta *d, const rapl_sums *r,
                              const pa_share_w *sw, double frac, double p, pa_power_table *t)
{
    const int *pkg = r->pkg;
    int npkg = r->npkg, ci = sw->ci;
    bool cycles = sw->cycles;
    double pfrac[PA_MAX_RAPL];
    bool sys_frac = false;
    for (int i = 0; i < npkg; i++) {
        double u =
            st->split ? 1 : pa__package_busy(d, d->cur->cpu_socket, d->cur->ncpu_socket, pkg[i]);
        if (u < 0) {
            u = frac;
            sys_frac = true;
        }
        pfrac[i] = u > 1 ? 1 : u;
    }
    pa__assume(t->assumed, PA_MAX_ASSUMED,
               st->split  ? "rapl-share: per package, each target on the "
                            "package of its last CPU"
               : sys_frac ? "rapl-share: per package, each target on the "
                            "package of its last CPU; a package's active "
                            "part scaled by the system busy fraction (no "
                            "/proc/stat cpuN lines for its CPUs)"
                          : "rapl-share: per package, each target on the "
                            "package of its last CPU; each package's "
                            "active part scaled by its CPUs' busy "
                            "fraction");
    double w_pkg[PA_MAX_RAPL] = {0};
    for (size_t i = 0; i < d->ntasks; i++) {
        const pa_task *k = d->tasks[i];
        double w = cycles ? (k->ctr_d ? k->ctr_d[ci] : 0) : k->d_cpu_s;
        if (k->type == PA_TARGET_PROCESS && w > 0)
            w_pkg[task_package(d->cur, k, pkg, npkg)] += w;
    }
    /* by CPU time, a package's weight is at least its CPUs' busy time:
     * what no process explains is not spread over its survivors */
    double active_w = 0;
    for (int i = 0; i < npkg; i++) {
        double busy_s = cycles ? 0 : package_busy_s(d, pkg[i]);
        if (busy_s > w_pkg[i])
            w_pkg[i] = busy_s;
        active_w += r->pkg_w[i] * pfrac[i];
    }
    for (size_t i = 0; i < d->ntasks; i++) {
        pa_task *k = d->tasks[i];
        int s = task_package(d->cur, k, pkg, npkg);
        double w = cycles ? (k->ctr_d ? k->ctr_d[ci] : 0) : k->d_cpu_s;
        if (!(w > 0) || !(w_pkg[s] > 0))
            w = 0;
        else if (w > w_pkg[s])
            w = w_pkg[s]; /* a thread away from its process */
        k->cpu_w = w > 0 ? r->pkg_w[s] * pfrac[s] * w / w_pkg[s] : 0;
    }
    t->cpu_w = p;
    t->idle_w = p - active_w;
    if (t->idle_w < 0)
        t->idle_w = 0;
}

static int share_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    share_state *st = m->priv;
    if (!(d->have & PA_HAVE_RAPL) || d->nrapl == 0)
        return pa__err(-ENODATA, "rapl-share: no RAPL reading in this "
                                 "window; enable the rapl sensor (pa_module_enable "
                                 "\"rapl\")");
    if (!(d->interval_s > 0))
        return pa__err(-EINVAL, "rapl-share: empty window");
    rapl_sums r;
    if (!rapl_sum(d, &r))
        return pa__err(-ENODATA, "rapl-share: RAPL gives no package "
                                 "domain on this machine");
    double p = r.pkg_j / d->interval_s;

    pa_share_w sw;
    pa__share_weights(d, &sw);

    double frac = 1; /* active part of the package power */
    if (!st->split) {
        if ((d->have & PA_HAVE_CPU) && d->capacity_s > 0) {
            double u = d->busy_s / d->capacity_s;
            frac = u < 0 ? 0 : u > 1 ? 1 : u;
        } else {
            pa__assume(t->assumed, PA_MAX_ASSUMED, "rapl-share: no CPU busy time, idle=split used");
        }
    }
    double active = p * frac;

    const char *why_sum = r.npkg > 1 ? per_socket_refusal(d, r.pkg, r.npkg) : "";
    if (r.npkg > 1 && !why_sum) {
        split_per_package(st, d, &r, &sw, frac, p, t);
    } else {
        if (r.npkg > 1) {
            char msg[160];
            snprintf(msg, sizeof(msg), "rapl-share: packages summed (%s)", why_sum);
            pa__assume(t->assumed, PA_MAX_ASSUMED, msg);
        }
        pa__share_split(d, t, p, active);
    }
    t->dram_w = r.dram_j / d->interval_s;
    t->psys_w = r.psys_j / d->interval_s;
    t->measured = true;
    return 0;
}

/* package energy from rapl; busy time, per-CPU busy fractions and the
 * targets' CPU time from procfs-cpu; unhalted cycles from perf when it
 * counts them (CPU time otherwise) */
static const char *const share_requires[] = {"rapl", "procfs-cpu", NULL};
static const char *const share_uses[] = {"perf", NULL};

/* Auto takes it wherever its sensor runs (auto enables it only then). */
static int share_fits(const pa_env *env, char *why, size_t len)
{
    (void)env;
    snprintf(why, len, "RAPL is readable: measured power");
    return 1;
}

const pa_module_ops pa__mod_rapl_share = {
    .abi = PA_MODULE_ABI,
    .name = "rapl-share",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .description = "measured RAPL package power split by each target's "
                   "share of unhalted cycles (or CPU time)",
    .options = share_options,
    .probe = share_probe,
    .start = share_start,
    .sample = NULL,
    .compute = share_compute,
    .configure = share_configure,
    .stop = share_stop,
    .requires = share_requires,
    .uses = share_uses,
    .component_name = "cpu",
    .auto_rank = 300, /* measured: before every model */
    .fits = share_fits,
};
