/*
 * gpu_share.c - the formulas of the component "gpu" (issue 28; DESIGN.md
 * section 16): "gpu-share", from the drm-gpu sensor (AMD, Intel), and
 * "nvml-share", from the nvml sensor (NVIDIA); one computation for both,
 * each reading the other sensor's devices too when it is enabled.
 *
 * Per device, each window: its energy (the difference of a cumulative
 * counter, energy1_input or NVML's total energy, or its power times the
 * window), split into an idle part, the device's lowest power over the
 * windows no process held it (else none was busy on it; never seen idle,
 * none: its whole power is split) times the window (or idle=W, a stated
 * constant), and an
 * active part, split between processes by their engine busy time (DRM
 * fdinfo) or their SM utilisation samples (NVML) in the window.  A process
 * alone on a device gets all of its active power; processes + idle +
 * unattributed = the device's energy, every window.  Where no process was
 * busy on a device, or its per-process figures are missing (MIG,
 * permissions), its active energy stays the system's (unattributed), and
 * `assumed` says why.
 *
 * "host-gpu-share", inside a VM (DESIGN.md section 18.2): the GPU energy
 * the host attributed to this VM (the host sensor's "host-gpu" reading),
 * split whole between the guest's processes by their busy time on the
 * GPUs the guest sees (drm-gpu, nvml, when enabled), else the system's,
 * unattributed, said; no idle part (the host kept its GPUs' idle).
 */
#include "../sensors/gpu.h"
#include "powerapi_module.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const drm_requires[] = {"drm-gpu", NULL};
static const char *const drm_uses[] = {"nvml", NULL};
static const char *const nvml_requires[] = {"nvml", NULL};
static const char *const nvml_uses[] = {"drm-gpu", NULL};
static const char *const host_gpu_uses[] = {"drm-gpu", "nvml", NULL};
static const char *const share_options[] = {"idle", NULL};
/* the sensors' frame keys */
static const char *const share_keys[] = {"drm-gpu", "nvml"};

#define SHARE_SLOTS (2 * PA_GPU_MAX_DEVS)

typedef struct share_slot {
    char pdev[32];   /* the device's PCI address, "" free */
    double empty_w;  /* lowest power with no process on it, < 0 none yet */
    double quiet_w;  /* lowest power with no process busy on it, < 0 none */
    double energy_j; /* cumulative, for the report's devices */
} share_slot;

typedef struct share_state {
    double idle_w; /* idle=, < 0 when not given */
    share_slot slot[SHARE_SLOTS];
    double host_j; /* host-gpu-share: the VM's GPU energy so far */
} share_state;

static int share_start(pa_module *m, const pa_options *o)
{
    share_state *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->idle_w = -1;
    if (pa_options_get(o, "idle") && pa_options_get_double(o, "idle", -1, &s->idle_w) < 0) {
        free(s);
        return -EINVAL;
    }
    pa_module_set_priv(m, s);
    return 0;
}

static void share_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* Device i's energy over the window of length sec (prev: the previous
 * reading, or NULL). */
static double device_energy(const pa_gpu_dev *d, const pa_gpu_reading *prev, double sec)
{
    if (d->source == PA_GPU_ENERGY && prev) {
        for (int k = 0; k < prev->ndev; k++)
            if (!strcmp(prev->dev[k].pdev, d->pdev) && prev->dev[k].source == PA_GPU_ENERGY &&
                d->energy_j >= prev->dev[k].energy_j)
                return d->energy_j - prev->dev[k].energy_j;
        return 0; /* the counter went back (a reset): no reading this window */
    }
    return d->source == PA_GPU_ENERGY ? 0 : d->power_w * sec;
}

/* A process's busy time on one device in the window. */
typedef struct busy_pid {
    pid_t pid;
    double s;
} busy_pid;

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const busy_pid *)a)->pid, y = ((const busy_pid *)b)->pid;
    return (x > y) - (x < y);
}

/* Every process's busy time on device pdev in the window, sorted by pid
 * (at most PA_GPU_MAX_PROCS, so that each target is then found by a
 * binary search, not a scan: a window has thousands of targets). */
static size_t busy_table(const pa_gpu_reading *cur, const pa_gpu_reading *prev, const char *pdev,
                         busy_pid *out)
{
    size_t n = 0;
    for (int i = 0; i < cur->nproc; i++) {
        const pa_gpu_proc *c = &cur->proc[i];
        if (strcmp(cur->dev[c->dev].pdev, pdev))
            continue;
        double before = 0;
        for (int k = 0; prev && k < prev->nproc; k++)
            if (prev->proc[k].pid == c->pid && !strcmp(prev->dev[prev->proc[k].dev].pdev, pdev))
                before += prev->proc[k].busy_s;
        if (c->busy_s > before)
            out[n++] = (busy_pid){c->pid, c->busy_s - before};
    }
    qsort(out, n, sizeof(*out), by_pid);
    return n;
}

static double busy_of(const busy_pid *v, size_t n, pid_t pid)
{
    busy_pid key = {pid, 0};
    const busy_pid *b = n ? bsearch(&key, v, n, sizeof(*v), by_pid) : NULL;
    return b ? b->s : 0;
}

/* Device d's slot (made, or the first one taken over, when new). */
static share_slot *slot_of(share_state *s, const pa_gpu_dev *d)
{
    share_slot *spare = NULL;
    for (int i = 0; i < SHARE_SLOTS; i++)
        if (!strcmp(s->slot[i].pdev, d->pdev))
            return &s->slot[i];
        else if (!s->slot[i].pdev[0] && !spare)
            spare = &s->slot[i];
    share_slot *n = spare ? spare : &s->slot[0];
    snprintf(n->pdev, sizeof(n->pdev), "%s", d->pdev);
    n->empty_w = n->quiet_w = -1;
    n->energy_j = 0;
    return n;
}

/* Whether a process holds device pdev (a context, an open DRM file) at
 * the end of the window or at its start. */
static int device_held(const pa_gpu_reading *cur, const pa_gpu_reading *prev, const char *pdev)
{
    for (int i = 0; i < cur->nproc; i++)
        if (!strcmp(cur->dev[cur->proc[i].dev].pdev, pdev))
            return 1;
    for (int i = 0; prev && i < prev->nproc; i++)
        if (!strcmp(prev->dev[prev->proc[i].dev].pdev, pdev))
            return 1;
    return 0;
}

/* The idle power of a device in a window of w watts where busy says
 * whether a process was busy on it and held whether one held it: idle=,
 * else its lowest power over the windows nobody held it, else over those
 * nobody was busy on it (a compositor holds every GPU it draws on), never
 * above w; -1 when it was busy in every window so far (a monitor started
 * under load: the lowest power then is the load's, not the idle). */
static double device_idle_w(const share_state *s, share_slot *sl, double w, int busy, int held)
{
    if (s->idle_w >= 0)
        return s->idle_w < w ? s->idle_w : w;
    if (!busy && (sl->quiet_w < 0 || w < sl->quiet_w))
        sl->quiet_w = w;
    if (!busy && !held && (sl->empty_w < 0 || w < sl->empty_w))
        sl->empty_w = w;
    double idle = sl->empty_w >= 0 ? sl->empty_w : sl->quiet_w;
    return idle < w ? idle : w;
}

/* The report's record of device g. */
static void put_device(pa_power_table *out, const pa_gpu_dev *g, const share_slot *sl, double w,
                       double idle, int split)
{
    pa_device_info di;
    memset(&di, 0, sizeof(di));
    snprintf(di.component, sizeof(di.component), "gpu");
    di.index = g->index;
    snprintf(di.vendor, sizeof(di.vendor), "%s", g->vendor);
    snprintf(di.name, sizeof(di.name), "%s", g->name);
    snprintf(di.uuid, sizeof(di.uuid), "%s", g->uuid);
    snprintf(di.bus, sizeof(di.bus), "%s", g->pdev);
    snprintf(di.source, sizeof(di.source), "%s",
             g->source == PA_GPU_ENERGY ? "measured" : "integrated");
    di.power_w = w;
    di.idle_w = idle;
    di.energy_j = sl->energy_j;
    di.split = split;
    pa_table_device(out, &di);
}

typedef struct share_sum {
    double sys_w, idle_w; /* idle_w: idle and unattributed parts */
    int unsplit;          /* devices active with nobody busy */
} share_sum;

/* Device i of cur: its power, its idle part, its active part split
 * between the targets (tw). */
static void share_device(share_state *s, const pa_frame_delta *d, const pa_gpu_reading *cur,
                         const pa_gpu_reading *prev, int i, double *tw, share_sum *sum,
                         pa_power_table *out)
{
    const pa_gpu_dev *g = &cur->dev[i];
    double sec = pa_delta_interval_s(d);
    double e = device_energy(g, prev, sec), w = e / sec;
    share_slot *sl = slot_of(s, g);
    sl->energy_j += e;
    busy_pid table[PA_GPU_MAX_PROCS]; /* 4 KiB */
    size_t nb = g->nosplit[0] ? 0 : busy_table(cur, prev, g->pdev, table);
    double busy = 0;
    for (size_t t = 0; t < pa_delta_count(d) && nb; t++)
        if (pa_delta_type(d, t) == PA_TARGET_PROCESS)
            busy += busy_of(table, nb, pa_delta_pid(d, t));
    /* without per-process figures (MIG, a permission) busy is not known:
     * the lowest power so far */
    double idle = g->nosplit[0] ? device_idle_w(s, sl, w, 0, 0)
                                : device_idle_w(s, sl, w, nb > 0, device_held(cur, prev, g->pdev));
    if (idle < 0) { /* never seen idle: the whole power is the processes' */
        pa_table_assume(out,
                        "gpu %s: idle not seen yet (a process busy on it in every window): "
                        "its whole power split, idle included",
                        g->pdev);
        idle = 0;
    }
    for (size_t t = 0; t < pa_delta_count(d) && busy > 0; t++)
        if (pa_delta_type(d, t) == PA_TARGET_PROCESS)
            tw[t] += (w - idle) * busy_of(table, nb, pa_delta_pid(d, t)) / busy;
    /* a tree (monitor -- COMMAND, --pid): its processes' sum */
    for (size_t t = 0; t < pa_delta_count(d) && busy > 0; t++)
        for (size_t j = 0; pa_delta_type(d, t) == PA_TARGET_TREE && j < pa_delta_count(d); j++)
            if (pa_delta_in_tree(d, j, pa_delta_pid(d, t)))
                tw[t] += (w - idle) * busy_of(table, nb, pa_delta_pid(d, j)) / busy;
    sum->sys_w += w;
    sum->idle_w += busy > 0 ? idle : w; /* nobody busy: all of it unattributed */
    sum->unsplit += busy <= 0 && w > idle && !g->nosplit[0];
    put_device(out, g, sl, w, idle, busy > 0);
    /* short entries (the figures are in the device records): eight GPUs
     * and the CPU's constants fit the report's assumed list */
    pa_table_assume(out, "gpu %s (%s): %s", g->pdev, g->driver, g->reading);
    if (g->nosplit[0])
        pa_table_assume(out, "gpu %s: active power unattributed: %s", g->pdev, g->nosplit);
    if (s->idle_w >= 0)
        pa_table_assume(out, "gpu: idle %.2f W a device (idle= option)", s->idle_w);
    else
        pa_table_assume(out, "gpu: idle is each device's lowest power with no process on it "
                             "(else with none busy on it)");
}

static int share_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    share_state *s = pa_module_priv(m);
    if (pa_delta_interval_s(d) <= 0 || !s)
        return 0;
    double *tw = calloc(pa_delta_count(d) + 1, sizeof(double));
    if (!tw)
        return -ENOMEM;
    share_sum sum = {0, 0, 0};
    for (size_t k = 0; k < sizeof(share_keys) / sizeof(share_keys[0]); k++) {
        size_t n = 0, pn = 0;
        const void *prevp = NULL;
        const pa_gpu_reading *cur = pa_delta_get(d, share_keys[k], &n, &prevp, &pn);
        const pa_gpu_reading *prev = prevp && pn == sizeof(*prev) ? prevp : NULL;
        if (!cur || n != sizeof(*cur))
            continue;
        for (int i = 0; i < cur->ndev && i < PA_GPU_MAX_DEVS; i++)
            share_device(s, d, cur, prev, i, tw, &sum, out);
        if (cur->note[0])
            pa_table_assume(out, "%s: %.*s", share_keys[k], (int)sizeof(cur->note), cur->note);
    }
    for (size_t t = 0; t < pa_delta_count(d); t++)
        pa_table_set_target_w(out, t, tw[t]);
    pa_table_set_system_w(out, sum.sys_w, sum.idle_w);
    if (sum.unsplit)
        pa_table_assume(out,
                        "gpu: %d device(s) active with no process busy in the window: "
                        "their active power stays unattributed",
                        sum.unsplit);
    free(tw);
    return 0;
}

static int share_fits(const pa_env *env, char *why, size_t len)
{
    pa_gpu_dev devs[PA_GPU_MAX_DEVS];
    int n = pa_gpu_devices(pa_env_sysfs(env), devs, PA_GPU_MAX_DEVS);
    if (n > 0)
        snprintf(why, len, "%d DRM GPU(s) with a hwmon reading (%s)", n, devs[0].driver);
    else
        snprintf(why, len, "no DRM GPU with a hwmon reading under %s/class/drm", pa_env_sysfs(env));
    return n > 0;
}

const pa_module_ops pa__mod_gpu_share = {
    .abi = PA_MODULE_ABI,
    .name = "gpu-share",
    .kind = PA_FORMULA,
    .description = "GPU power per device (hwmon), its active part split by DRM engine time",
    .options = share_options,
    .start = share_start,
    .stop = share_stop,
    .compute = share_compute,
    .requires = drm_requires,
    .uses = drm_uses,
    .component_name = "gpu",
    .auto_rank = 100,
    .fits = share_fits,
};

/* NVIDIA: the nvml sensor's probe says whether NVML finds a device. */
const pa_module_ops pa__mod_nvml_share = {
    .abi = PA_MODULE_ABI,
    .name = "nvml-share",
    .kind = PA_FORMULA,
    .description = "NVIDIA GPU energy per device (NVML), its active part split by SM utilisation",
    .options = share_options,
    .start = share_start,
    .stop = share_stop,
    .compute = share_compute,
    .requires = nvml_requires,
    .uses = nvml_uses,
    .component_name = "gpu",
    .auto_rank = 200,
};

/* ---- host-gpu-share: inside a VM, the GPU energy its host gave it ---- */

/* The guest's GPU busy time of each process target (its devices summed,
 * the drm-gpu and nvml readings both) into tb, a tree's its processes';
 * the process targets' sum, and the devices that gave it in *ndev. */
static double guest_busy(const pa_frame_delta *d, double *tb, int *ndev)
{
    double busy = 0;
    busy_pid table[PA_GPU_MAX_PROCS];
    *ndev = 0;
    for (size_t k = 0; k < sizeof(share_keys) / sizeof(share_keys[0]); k++) {
        size_t n = 0, pn = 0;
        const void *prevp = NULL;
        const pa_gpu_reading *cur = pa_delta_get(d, share_keys[k], &n, &prevp, &pn);
        const pa_gpu_reading *prev = prevp && pn == sizeof(*prev) ? prevp : NULL;
        for (int i = 0; cur && n == sizeof(*cur) && i < cur->ndev && i < PA_GPU_MAX_DEVS; i++) {
            if (cur->dev[i].nosplit[0])
                continue;
            size_t nb = busy_table(cur, prev, cur->dev[i].pdev, table);
            (*ndev)++;
            for (size_t t = 0; t < pa_delta_count(d) && nb; t++)
                if (pa_delta_type(d, t) == PA_TARGET_PROCESS) {
                    double b = busy_of(table, nb, pa_delta_pid(d, t));
                    tb[t] += b;
                    busy += b;
                }
        }
    }
    for (size_t t = 0; t < pa_delta_count(d) && busy > 0; t++)
        for (size_t j = 0; pa_delta_type(d, t) == PA_TARGET_TREE && j < pa_delta_count(d); j++)
            if (pa_delta_type(d, j) == PA_TARGET_PROCESS &&
                pa_delta_in_tree(d, j, pa_delta_pid(d, t)))
                tb[t] += tb[j];
    return busy;
}

/* The report's record of the VM's GPU energy (one device: the host's
 * GPUs as the host split them to this VM). */
static void put_host_device(pa_power_table *out, const pa_host_gpu *g, double w, double energy_j,
                            int split)
{
    pa_device_info di;
    memset(&di, 0, sizeof(di));
    snprintf(di.component, sizeof(di.component), "gpu");
    snprintf(di.name, sizeof(di.name), "host GPU share of VM %.40s", g->vm);
    snprintf(di.bus, sizeof(di.bus), "host");
    snprintf(di.source, sizeof(di.source), "measured (host)");
    di.power_w = w;
    di.energy_j = energy_j;
    di.split = split;
    pa_table_device(out, &di);
}

static int host_gpu_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    share_state *s = pa_module_priv(m);
    double sec = pa_delta_interval_s(d);
    if (sec <= 0 || !s)
        return 0;
    size_t n = 0, pn = 0;
    const void *prevp = NULL;
    const pa_host_gpu *g = pa_delta_get(d, "host-gpu", &n, &prevp, &pn);
    const pa_host_gpu *prev = prevp && pn == sizeof(*prev) ? prevp : NULL;
    if (!g || n != sizeof(*g)) {
        pa_table_set_system_w(out, 0, 0);
        pa_table_assume(out, "host-gpu-share: no GPU reading of the host in this window (the "
                             "host sensor says why): 0 W");
        return 0;
    }
    double e = prev ? g->energy_j - prev->energy_j : 0, w = (e > 0 ? e : 0) / sec;
    double *tb = calloc(pa_delta_count(d) + 1, sizeof(double));
    if (!tb)
        return -ENOMEM;
    int ndev = 0;
    double busy = guest_busy(d, tb, &ndev);
    for (size_t t = 0; t < pa_delta_count(d) && busy > 0; t++)
        pa_table_set_target_w(out, t, w * tb[t] / busy);
    free(tb);
    pa_table_set_system_w(out, w, busy > 0 ? 0 : w); /* nobody busy: unattributed */
    s->host_j += w * sec;
    put_host_device(out, g, w, s->host_j, busy > 0);
    pa_table_assume(out,
                    "gpu: measured (host): VM '%.60s' GPU energy as host %.40s attributed it "
                    "(host formulas %s)%s",
                    g->vm, g->host_id, g->formula, prev ? "" : ", counted from the next window");
    if (busy > 0)
        pa_table_assume(out, "gpu: split by this VM's processes' busy time on its %d GPU(s)", ndev);
    else
        pa_table_assume(out, "gpu: unattributed: no process of this VM seen busy on a GPU (%s)",
                        ndev ? "none busy in the window"
                             : "no drm-gpu or nvml sensor with per-process use here");
    return 0;
}

static int host_gpu_probe(const pa_env *env, char *why, size_t wl)
{
    char tmp[1024];
    int rc = pa_env_probe(env, "host", tmp, sizeof(tmp));
    snprintf(why, wl, "%s%s", rc < 0 ? "" : "host-gpu-share: measured by ", tmp);
    return rc;
}

static int host_gpu_fits(const pa_env *env, char *why, size_t len)
{
    return pa_host_gpu_exported(env, why, len);
}

static const char *const host_gpu_requires[] = {"host", NULL};

/* Inside a VM whose host exports its GPU energy (DESIGN.md section 18.2). */
const pa_module_ops pa__mod_host_gpu_share = {
    .abi = PA_MODULE_ABI,
    .name = "host-gpu-share",
    .kind = PA_FORMULA,
    .description = "in a VM: the GPU energy the host attributed to it (host sensor), split by "
                   "the guest's per-process GPU busy time where a GPU sensor sees it",
    .probe = host_gpu_probe,
    .start = share_start,
    .stop = share_stop,
    .compute = host_gpu_compute,
    .requires = host_gpu_requires,
    .uses = host_gpu_uses,
    .component_name = "gpu",
    .auto_rank = 300, /* the host's reading of this VM: before the guest's own GPUs */
    .fits = host_gpu_fits,
};
