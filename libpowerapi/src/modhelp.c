/*
 * modhelp.c - the module-helper header's calls (powerapi_module.h): what a
 * module reads of a window beyond powerapi.h (RAPL, NIC, CPU packages, a
 * task's last CPU and network bytes), the CPU split and the hardware
 * database.  Thin accessors over the frames, deltas and tables of
 * internal.h, so that the built-in modules need not include it; called on
 * the sampling thread, inside a tick (pa_error_set and pa_hwdb_nic_find
 * anywhere).
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pa_error_set(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pa__verr(err, fmt, ap);
    va_end(ap);
    return err;
}

int pa_env_probe(const pa_env *env, const char *name, char *why, size_t len)
{
    const pa_module_ops *ops = env && env->ctx ? pa__ops_find(env->ctx, name) : NULL;
    if (!ops) {
        snprintf(why, len, "no module named '%s'", name);
        return -ENOENT;
    }
    /* a sensor already running (with the options it was given: host's
     * path=) answers for itself */
    const pa_module *m = pa__mod_find(env->ctx, name);
    if (!ops->probe || (m && ops->kind == PA_SENSOR && m->fail_count == 0)) {
        if (len)
            snprintf(why, len, ops->probe ? "%s: enabled" : "", name);
        return 0;
    }
    return ops->probe(env, why, len);
}

uint64_t pa_frame_time_ns(const pa_frame *f)
{
    return f->time_ns;
}

void pa_frame_note(pa_frame *f, const char *fmt, ...)
{
    char buf[sizeof(f->sys->notes)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pa__assume(f->sys->notes, sizeof(f->sys->notes), buf);
}

uint64_t pa_frame_tick(const pa_frame *f)
{
    return f->tick;
}

size_t pa_frame_task_count(const pa_frame *f)
{
    return f->ctx->procs.n + f->ctx->threads.n;
}

/* Task i of the frame's context: its processes, then its threads. */
static pa_task *frame_task(const pa_frame *f, size_t i)
{
    const pa_ctx *ctx = f->ctx;
    if (i < ctx->procs.n)
        return ctx->procs.v[i];
    i -= ctx->procs.n;
    return i < ctx->threads.n ? ctx->threads.v[i] : NULL;
}

int pa_frame_task(const pa_frame *f, size_t i, pa_frame_task_info *out)
{
    const pa_task *t = frame_task(f, i);
    if (!t)
        return -ERANGE;
    if (t->seen_tick != f->tick || t->gone ||
        (t->type != PA_TARGET_PROCESS && t->type != PA_TARGET_THREAD))
        return -ENOENT;
    out->type = t->type;
    out->pid = t->pid;
    out->tid = t->type == PA_TARGET_THREAD ? t->tid : 0;
    out->start_ticks = t->start_ticks;
    out->cgroup = t->cgroup;
    return 0;
}

int pa_frame_task_net(pa_frame *f, size_t i, uint64_t rx, uint64_t tx, const uint64_t by_kind[3])
{
    pa_task *t = frame_task(f, i);
    if (!t)
        return -ERANGE;
    t->cur.net_rx = rx;
    t->cur.net_tx = tx;
    if (by_kind)
        memcpy(t->cur.net_kind, by_kind, sizeof(t->cur.net_kind));
    t->cur.have |= PA_RD_NET;
    return 0;
}

int pa_frame_task_counters(pa_frame *f, size_t i, const double *v, size_t n, double multiplex)
{
    pa_task *t = frame_task(f, i);
    if (!t || n > PA_MAX_COUNTERS)
        return -ERANGE;
    if (t->ctr_cur)
        memcpy(t->ctr_cur, v, n * sizeof(*v));
    t->cur.multiplex = multiplex;
    t->cur.have |= PA_RD_COUNTERS;
    return 0;
}

int pa_module_counters_declare(pa_module *m, const char *const *names, size_t n)
{
    return pa__counters_declare(m->ctx, names, n);
}

int pa_frame_cgroups_on(const pa_frame *f)
{
    return f->ctx->cgroups_on;
}

size_t pa_frame_cgroup_count(const pa_frame *f)
{
    return f->ctx->ncgroups;
}

const char *pa_frame_cgroup_path(const pa_frame *f, size_t g)
{
    return g < f->ctx->ncgroups ? f->ctx->cgroups[g] : NULL;
}

int pa_frame_cgroup_counters(pa_frame *f, size_t g, const double *v, size_t n, double multiplex,
                             bool fresh)
{
    if (g >= f->ctx->ncgroups || n > PA_MAX_COUNTERS)
        return -ERANGE;
    pa_cgroup_ctr *cc = pa__cgroup_ctr(f->ctx, g);
    if (!cc)
        return -ENOMEM;
    memcpy(cc->cur, v, n * sizeof(*v));
    cc->multiplex = multiplex;
    cc->cur_tick = f->tick;
    if (fresh)
        cc->prev_tick = 0; /* a new baseline */
    return 0;
}

void pa_frame_cycles_set(pa_frame *f, double cycles)
{
    f->sys->cycles_all = cycles;
    f->sys->have |= PA_HAVE_CYCLES;
}

int pa_frame_nic_set(pa_frame *f, const pa_nic_reading *r, size_t n)
{
    if (n > PA_MAX_IFACES)
        return -EINVAL;
    f->sys->nnic = (unsigned)n;
    memcpy(f->sys->nic, r, n * sizeof(*r));
    f->sys->have |= PA_HAVE_NIC;
    return 0;
}

void pa_frame_sock_bytes_set(pa_frame *f, const uint64_t bytes[3])
{
    memcpy(f->sys->sock_bytes, bytes, sizeof(f->sys->sock_bytes));
    f->sys->have |= PA_HAVE_SOCK;
}

int pa_path_join(char *buf, size_t len, const char *root, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = pa__vpath(buf, len, root, fmt, ap);
    va_end(ap);
    return rc;
}

ssize_t pa_file_read(const char *root, const char *rel, char *buf, size_t len)
{
    return pa__read_file(root, rel, buf, len);
}

ssize_t pa_fd_read(int fd, char *buf, size_t len)
{
    return pa__pread_all(fd, buf, len);
}

int pa_u64_parse(const char **p, uint64_t *out)
{
    return pa__parse_u64(p, out);
}

int pa_cpulist_parse(const char *s, int *cpus, int cap)
{
    return pa__parse_cpulist(s, cpus, cap);
}

unsigned pa_delta_have(const pa_frame_delta *d)
{
    return d->have;
}

/* ---- the CPUs' time ---- */

unsigned pa_delta_ncpus(const pa_frame_delta *d)
{
    return pa__delta_ncpus(d);
}

double pa_delta_cpu_busy_s(const pa_frame_delta *d, bool *summed)
{
    return pa__delta_busy_s(d, summed);
}

const char *pa_delta_cpu_model(const pa_frame_delta *d)
{
    return d->cur ? d->cur->cpu_model : "";
}

double pa_delta_nominal_mhz(const pa_frame_delta *d)
{
    return d->cur ? d->cur->nominal_mhz : 0;
}

size_t pa_delta_freq_count(const pa_frame_delta *d)
{
    return (d->have & PA_HAVE_FREQ) ? d->nfreq : 0;
}

int pa_delta_freq(const pa_frame_delta *d, size_t i, pa_freq_time *out)
{
    if (i >= pa_delta_freq_count(d))
        return -ERANGE;
    *out = d->freq[i];
    return 0;
}

/* ---- RAPL ---- */

size_t pa_delta_rapl_count(const pa_frame_delta *d)
{
    return (d->have & PA_HAVE_RAPL) ? d->nrapl : 0;
}

int pa_frame_rapl_set(pa_frame *f, const pa_rapl_reading *r, size_t n, const char *source)
{
    if (n > PA_MAX_RAPL || !source)
        return -EINVAL;
    pa_sysread *sys = f->sys;
    memcpy(sys->rapl, r, n * sizeof(*r));
    sys->nrapl = (unsigned)n;
    snprintf(sys->rapl_path, sizeof(sys->rapl_path), "%s", source);
    sys->have |= PA_HAVE_RAPL;
    return 0;
}

void pa_frame_rapl_reset(pa_frame *f)
{
    f->sys->rapl_resets++;
}

int pa_delta_rapl(const pa_frame_delta *d, size_t i, pa_rapl_window *out)
{
    if (i >= pa_delta_rapl_count(d))
        return -ERANGE;
    out->socket = d->rapl[i].socket;
    out->kind = d->rapl[i].kind;
    out->energy_j = d->rapl[i].energy_j;
    return 0;
}

/* ---- CPUs ---- */

unsigned pa_delta_cpu_packages(const pa_frame_delta *d, const int16_t **map)
{
    if (!d->cur || d->cur->ncpu_socket == 0)
        return 0;
    *map = d->cur->cpu_socket;
    return d->cur->ncpu_socket;
}

double pa_delta_package_busy(const pa_frame_delta *d, int pkg)
{
    if (!d->cur)
        return -1;
    return pa__package_busy(d, d->cur->cpu_socket, d->cur->ncpu_socket, pkg);
}

int pa_env_cpu_package(const pa_env *env, int cpu)
{
    return pa__cpu_package(env, cpu);
}

int pa_frame_cpu_packages_set(pa_frame *f, const int16_t *map, unsigned n)
{
    if (n > PA_MAX_CPUS)
        return -EINVAL;
    f->sys->ncpu_socket = n;
    memcpy(f->sys->cpu_socket, map, n * sizeof(*map));
    return 0;
}

unsigned pa_env_cpu_packages(const pa_env *env, int16_t *map, size_t cap)
{
    return env ? pa__cpu_packages(env, map, cap) : 0;
}

double pa_delta_cpus_busy(const pa_frame_delta *d, const int16_t *map, unsigned nmap, int pkg)
{
    return pa__package_busy(d, map, nmap, pkg);
}

int pa_delta_last_cpu(const pa_frame_delta *d, size_t i)
{
    return i < d->ntasks ? d->tasks[i]->last_cpu : -1;
}

int pa_delta_all_watched(const pa_frame_delta *d)
{
    return d->ctx && d->ctx->watch_all;
}

/* ---- the CPU split ---- */

void pa_delta_share_weights(const pa_frame_delta *d, pa_share_w *sw)
{
    pa__share_weights(d, sw);
}

double pa_delta_share_w(const pa_frame_delta *d, size_t i, const pa_share_w *sw)
{
    if (i >= d->ntasks)
        return 0;
    const pa_task *k = d->tasks[i];
    return sw->cycles ? (k->ctr_d ? k->ctr_d[sw->ci] : 0) : k->d_cpu_s;
}

void pa_table_share_split(const pa_frame_delta *d, pa_power_table *t, double p, double active)
{
    pa__share_split(d, t, p, active);
}

int pa_curve_match(const pa_env *env, char *why, size_t len)
{
    return pa__curve_match(env, why, len);
}

double pa_curve_power_freq_w(const pa_curve *c, double mhz, double u)
{
    return pa__curve_at_freq(c, mhz, u);
}

int pa_curve_points_parse(const char *s, pa_curve *c, char *why, size_t why_len)
{
    return pa__curve_parse_points(s, c, why, why_len);
}

int pa_calibration_find(const pa_env *env, const char *model, pa_curve *out, char *path,
                        size_t plen, char *bad, size_t badlen)
{
    return pa__calib_for_model(env, model, out, path, plen, bad, badlen);
}

void pa_table_set_model_error(pa_power_table *t, double err)
{
    t->model_error = err;
}

void pa_table_set_measured(pa_power_table *t, double dram_w, double psys_w)
{
    t->dram_w = dram_w;
    t->psys_w = psys_w;
    t->measured = true;
}

/* ---- network ---- */

size_t pa_delta_nic_count(const pa_frame_delta *d)
{
    return (d->have & PA_HAVE_NIC) ? d->nnic : 0;
}

int pa_delta_nic(const pa_frame_delta *d, size_t i, pa_nic_window *out)
{
    if (i >= pa_delta_nic_count(d))
        return -ERANGE;
    const pa_nic_reading *n = d->nic[i].nic;
    memcpy(out->name, n->name, sizeof(out->name));
    out->kind = n->kind;
    out->speed_mbps = n->speed_mbps;
    memcpy(out->driver, n->driver, sizeof(out->driver));
    out->rx_bytes = d->nic[i].rx_bytes;
    out->tx_bytes = d->nic[i].tx_bytes;
    return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

int pa_delta_sock_bytes(const pa_frame_delta *d, uint64_t bytes[3])
{
    if (!(d->have & PA_HAVE_SOCK) || !d->cur || !d->prev)
        return -ENODATA;
    for (int k = 0; k < 3; k++)
        bytes[k] = sub0(d->cur->sock_bytes[k], d->prev->sock_bytes[k]);
    return 0;
}

int pa_delta_net_bytes(const pa_frame_delta *d, size_t i, uint64_t by_kind[3], uint64_t *rxtx)
{
    if (i >= d->ntasks || !(d->tasks[i]->cur.have & PA_RD_NET))
        return -ENOENT;
    const pa_task *t = d->tasks[i];
    if (!(t->prev.have & PA_RD_NET))
        return -ENODATA;
    for (int k = 0; k < 3; k++)
        by_kind[k] = sub0(t->cur.net_kind[k], t->prev.net_kind[k]);
    *rxtx = t->d_rx + t->d_tx;
    return 0;
}

/* ---- the hardware database ---- */

int pa_hwdb_nic_find(const char *hwdb_path, const char *driver, pa_hwdb_nic *out)
{
    return pa__hwdb_nic(hwdb_path, driver, out);
}

const char *pa_module_hwdb(const pa_module *m)
{
    return pa__module_hwdb(m);
}

int pa_hwdb_cpu_find(const char *hwdb_path, const char *model, pa_hwdb_cpu *out)
{
    return pa__hwdb_cpu(hwdb_path, model, out);
}

int pa_hwdb_volt_parse(const char *s, pa_hwdb_cpu *cpu, char *why, size_t why_len)
{
    return pa__hwdb_parse_volt(s, cpu, why, why_len);
}

int pa_hwdb_curve_find(const char *hwdb_path, const char *model, pa_curve *out)
{
    return pa__hwdb_curve(hwdb_path, model, out);
}
