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
#include "powerapi_module.h"

#include <errno.h>
#include <stdio.h>
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
        return pa_error_set(-EINVAL,
                            "rapl-share: idle must be 'separate' or "
                            "'split', not '%s'",
                            v);
    return 0;
}

static int share_probe(const pa_env *env, char *why, size_t wl)
{
    char tmp[1024];
    int rc = pa_env_probe(env, "rapl", tmp, sizeof(tmp));
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
        return pa_error_set(-ENOMEM, "rapl-share: out of memory");
    st->split = split;
    pa_module_set_priv(m, st);
    return 0;
}

static int share_configure(pa_module *m, const pa_options *opts)
{
    share_state *st = pa_module_priv(m);
    bool split;
    int rc = parse_idle(opts, &split);
    if (rc < 0)
        return rc;
    st->split = split;
    return 0;
}

static void share_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* Index in pkg[] of the package target i last ran on, or -1. */
static int task_package(const pa_frame_delta *d, size_t i, const int *pkg, int npkg)
{
    const int16_t *map;
    unsigned nmap = pa_delta_cpu_packages(d, &map);
    int cpu = pa_delta_last_cpu(d, i);
    if (cpu < 0 || (unsigned)cpu >= nmap)
        return -1;
    int sock = map[cpu];
    for (int k = 0; sock >= 0 && k < npkg; k++)
        if (pkg[k] == sock)
            return k;
    return -1;
}

/* Why the packages cannot be attributed one by one (NULL: they can). */
static const char *per_socket_refusal(const pa_frame_delta *d, const int *pkg, int npkg)
{
    const int16_t *map;
    if (pa_delta_cpu_packages(d, &map) == 0)
        return "the CPU -> package map is unknown";
    if (!pa_delta_all_watched(d))
        return "not every process is watched";
    for (size_t i = 0; i < pa_delta_count(d); i++) {
        pa_target_type type = pa_delta_type(d, i);
        if (type != PA_TARGET_PROCESS && type != PA_TARGET_THREAD)
            return "a process tree spans packages";
        if (task_package(d, i, pkg, npkg) < 0)
            return "a target's last CPU or its package is unknown";
    }
    return NULL;
}

#define RS_MAX_PKG 32 /* package domains: the rapl sensor's domain limit */

/* The window's RAPL energy by kind, and each package domain's power. */
typedef struct rapl_sums {
    double pkg_j, dram_j, psys_j;
    int pkg[RS_MAX_PKG]; /* socket of each package domain */
    double pkg_w[RS_MAX_PKG];
    int npkg;
} rapl_sums;

static bool rapl_sum(const pa_frame_delta *d, rapl_sums *r)
{
    bool have_pkg = false;
    double interval_s = pa_delta_interval_s(d);
    pa_rapl_window w;
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; pa_delta_rapl(d, i, &w) == 0; i++) {
        if (w.kind == PA_RAPL_PKG) {
            r->pkg_j += w.energy_j;
            have_pkg = true;
            if (r->npkg == RS_MAX_PKG)
                continue;
            r->pkg[r->npkg] = w.socket;
            r->pkg_w[r->npkg++] = w.energy_j / interval_s;
        } else if (w.kind == PA_RAPL_DRAM) {
            r->dram_j += w.energy_j;
        } else if (w.kind == PA_RAPL_PSYS) {
            r->psys_j += w.energy_j;
        }
    }
    return have_pkg;
}

/* Busy CPU seconds of package pkg's CPUs over the window (/proc/stat
 * cpuN lines), 0 when unknown. */
static double package_busy_s(const pa_frame_delta *d, int pkg)
{
    const int16_t *map;
    unsigned nmap = pa_delta_cpu_packages(d, &map), n = 0;
    for (unsigned c = 0; c < nmap; c++)
        n += map[c] == pkg;
    double u = pa_delta_package_busy(d, pkg);
    return u > 0 ? u * n * pa_delta_interval_s(d) : 0;
}

/* The active fraction of each package's power: 1 (idle=split), its
 * CPUs' busy fraction, or the system's frac (*sys_frac) when unknown. */
static void package_fracs(const share_state *st, const pa_frame_delta *d, const rapl_sums *r,
                          double frac, double *pfrac, bool *sys_frac)
{
    *sys_frac = false;
    for (int i = 0; i < r->npkg; i++) {
        double u = st->split ? 1 : pa_delta_package_busy(d, r->pkg[i]);
        if (u < 0) {
            u = frac;
            *sys_frac = true;
        }
        pfrac[i] = u > 1 ? 1 : u;
    }
}

/* Each package's power over the targets on it (by the package of their
 * last CPU), its active part by its CPUs' busy fraction, or frac. */
static void split_per_package(const share_state *st, const pa_frame_delta *d, const rapl_sums *r,
                              const pa_share_w *sw, double frac, double p, pa_power_table *t)
{
    const int *pkg = r->pkg;
    int npkg = r->npkg;
    size_t n = pa_delta_count(d);
    double pfrac[RS_MAX_PKG];
    bool sys_frac;
    package_fracs(st, d, r, frac, pfrac, &sys_frac);
    pa_table_assume(t, "%s",
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
    double w_pkg[RS_MAX_PKG] = {0};
    for (size_t i = 0; i < n; i++) {
        double w = pa_delta_share_w(d, i, sw);
        if (pa_delta_type(d, i) == PA_TARGET_PROCESS && w > 0)
            w_pkg[task_package(d, i, pkg, npkg)] += w;
    }
    /* by CPU time, a package's weight is at least its CPUs' busy time:
     * what no process explains is not spread over its survivors */
    double active_w = 0;
    for (int i = 0; i < npkg; i++) {
        double busy_s = sw->cycles ? 0 : package_busy_s(d, pkg[i]);
        if (busy_s > w_pkg[i])
            w_pkg[i] = busy_s;
        active_w += r->pkg_w[i] * pfrac[i];
    }
    for (size_t i = 0; i < n; i++) {
        int s = task_package(d, i, pkg, npkg);
        double w = pa_delta_share_w(d, i, sw);
        if (!(w > 0) || !(w_pkg[s] > 0))
            w = 0;
        else if (w > w_pkg[s])
            w = w_pkg[s]; /* a thread away from its process */
        pa_table_set_target_w(t, i, w > 0 ? r->pkg_w[s] * pfrac[s] * w / w_pkg[s] : 0);
    }
    double idle_w = p - active_w;
    pa_table_set_system_w(t, p, idle_w < 0 ? 0 : idle_w);
}

/* The active part of the window's power (1 with idle=split, else the busy
 * fraction of the CPUs). */
static double active_frac(const share_state *st, const pa_frame_delta *d, pa_power_table *t)
{
    if (st->split)
        return 1;
    double cap = pa_delta_capacity_s(d);
    if ((pa_delta_have(d) & PA_HAVE_CPU) && cap > 0) {
        double u = pa_delta_busy_s(d) / cap;
        return u < 0 ? 0 : u > 1 ? 1 : u;
    }
    pa_table_assume(t, "rapl-share: no CPU busy time, idle=split used");
    return 1;
}

static int share_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    share_state *st = pa_module_priv(m);
    double interval_s = pa_delta_interval_s(d);
    if (pa_delta_rapl_count(d) == 0)
        return pa_error_set(-ENODATA, "rapl-share: no RAPL reading in this "
                                      "window; enable the rapl sensor (pa_module_enable "
                                      "\"rapl\")");
    if (!(interval_s > 0))
        return pa_error_set(-EINVAL, "rapl-share: empty window");
    rapl_sums r;
    if (!rapl_sum(d, &r))
        return pa_error_set(-ENODATA, "rapl-share: RAPL gives no package "
                                      "domain on this machine");
    double p = r.pkg_j / interval_s;

    pa_share_w sw;
    pa_delta_share_weights(d, &sw);

    double frac = active_frac(st, d, t); /* active part of the package power */
    double active = p * frac;

    const char *why_sum = r.npkg > 1 ? per_socket_refusal(d, r.pkg, r.npkg) : "";
    if (r.npkg > 1 && !why_sum) {
        split_per_package(st, d, &r, &sw, frac, p, t);
    } else {
        if (r.npkg > 1)
            pa_table_assume(t, "rapl-share: packages summed (%s)", why_sum);
        pa_table_share_split(d, t, p, active);
    }
    pa_table_set_measured(t, r.dram_j / interval_s, r.psys_j / interval_s);
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

/* ---- host-share: the host's measurement, inside a VM ---- */

/* A window without the host's reading (the host sensor's first note of
 * the run says why): the default per-vCPU curve, as cpu-curve has it on a
 * VM, split the same way; never counted as measured. */
static int host_model(share_state *st, const pa_frame_delta *d, pa_power_table *t)
{
    double cap = pa_delta_capacity_s(d);
    double u = cap > 0 ? pa_delta_busy_s(d) / cap : 0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    unsigned n = pa_delta_ncpus(d);
    double p = n * (PA_CURVE_VCPU_MIN_W + (PA_CURVE_VCPU_MAX_W - PA_CURVE_VCPU_MIN_W) * u);
    pa_table_share_split(d, t, p, p * active_frac(st, d, t));
    pa_table_assume(t,
                    "host-share: modelled: no reading of the host in this window, the default "
                    "curve %.2f-%.2f W per vCPU x %u vCPUs (Cloud Carbon Footprint)",
                    PA_CURVE_VCPU_MIN_W, PA_CURVE_VCPU_MAX_W, n);
    return 0;
}

static int host_share_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    if (pa_delta_rapl_count(d) == 0) {
        if (!(pa_delta_interval_s(d) > 0))
            return pa_error_set(-EINVAL, "host-share: empty window");
        return host_model(pa_module_priv(m), d, t);
    }
    return share_compute(m, d, t);
}

static int host_share_probe(const pa_env *env, char *why, size_t wl)
{
    char tmp[1024];
    int rc = pa_env_probe(env, "host", tmp, sizeof(tmp));
    snprintf(why, wl, "%s%s", rc < 0 ? "" : "host-share: measured by ", tmp);
    return rc;
}

static int host_share_fits(const pa_env *env, char *why, size_t len)
{
    (void)env;
    snprintf(why, len, "the host exports this VM's energy: measured (host)");
    return 1;
}

/* the host's energy for this VM from host; the rest as rapl-share */
static const char *const host_share_requires[] = {"host", "procfs-cpu", NULL};

const pa_module_ops pa__mod_host_share = {
    .abi = PA_MODULE_ABI,
    .name = "host-share",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .description = "in a VM: the energy the host measured or modelled for it (host sensor), "
                   "split as rapl-share splits RAPL's",
    .options = share_options,
    .probe = host_share_probe,
    .start = share_start,
    .sample = NULL,
    .compute = host_share_compute,
    .configure = share_configure,
    .stop = share_stop,
    .requires = host_share_requires,
    .uses = share_uses,
    .component_name = "cpu",
    .auto_rank = 350, /* the host's reading of this VM: before RAPL and every model */
    .fits = host_share_fits,
};
