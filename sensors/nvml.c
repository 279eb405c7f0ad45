/*
 * nvml.c - the "nvml" sensor: NVIDIA GPUs through NVML (issue 28; DESIGN.md
 * section 16), loaded at run time (dlopen of libnvidia-ml.so.1, or the
 * option library=PATH; the probe reads $POWERAPI_NVML_LIBRARY) with the
 * project's own declarations of its calls (nvml_api.h).
 *
 * Per device: name, UUID, PCI bus id; energy from
 * nvmlDeviceGetTotalEnergyConsumption (mJ, cumulative: measured) where the
 * device has the counter (Volta and later), else nvmlDeviceGetPowerUsage
 * (mW, a one-second average) integrated over the window.  Per process: the
 * SM utilisation samples of nvmlDeviceGetProcessUtilization newer than the
 * last one seen on the device (so each window gets its own samples),
 * summed per process, and the running compute and graphics processes with
 * their memory.  A device in MIG mode lists its partitions; its power is
 * known for the whole board only, so its active part stays unattributed
 * (the reading's nosplit says why).  Every NVML code is named with its
 * cause (pa_nvml_cause).  A lost device is left out and said until it
 * returns; NVML uninitialised or its driver gone is initialised again at
 * the next tick.  The readings go under the frame key "nvml" in the shape
 * of gpu.h, for gpu_share.c.
 */
#include "gpu.h"
#include "nvml_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV_DEFAULT_LIB "libnvidia-ml.so.1"
#define NV_MAX_SAMPLES 65536u /* a list beyond this is cut (garbage counts) */

typedef struct nv_acc {
    char uuid[48];
    pid_t pid;
    double busy; /* SM samples summed, percent / 100 */
    unsigned long long mem;
    int seen; /* in this tick's samples or process lists */
} nv_acc;

typedef struct nv_last {
    char uuid[48];
    unsigned long long ts; /* the newest sample seen, µs */
} nv_last;

struct pa_nvml {
    pa_nvml_fns f;
    void *dl;
    int inited;
    nv_last last[PA_GPU_MAX_DEVS * 2];
    nv_acc acc[PA_GPU_MAX_PROCS];
    int nacc;
    nvmlProcessUtilizationSample_t *samples;
    unsigned scap;
    nvmlProcessInfo_t *infos;
    unsigned icap;
};

static const struct {
    int code;
    const char *text;
} causes[] = {
    {NVML_ERROR_UNINITIALIZED,
     "NVML_ERROR_UNINITIALIZED (NVML is not initialised: initialised again next window)"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT (a stale device handle)"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED (this device or driver has no such "
                               "reading)"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION (this user may not read it: run as root "
                               "or in a container given the GPU's management rights)"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND (no sample since the last window)"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE (the list outgrew its buffer)"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER (the board's power cables are "
                                    "not properly attached)"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED (the NVIDIA kernel driver is not "
                                   "loaded: modprobe nvidia)"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT (the driver did not answer in time)"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE (the driver saw an interrupt problem)"},
    {NVML_ERROR_LIBRARY_NOT_FOUND,
     "NVML_ERROR_LIBRARY_NOT_FOUND (" NV_DEFAULT_LIB " not found: no NVIDIA driver here)"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND (this NVML is older than the "
                                    "call: update the driver)"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM (the board's infoROM is "
                                   "corrupted)"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST (the GPU fell off the bus: left out until it "
                             "returns)"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED (the GPU needs a reset: nvidia-smi "
                                "-r)"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM (the system or a cgroup blocks the "
                                  "GPU's device files)"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH (NVML and the kernel "
                                         "driver differ in version: reload the driver or "
                                         "reboot)"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY (out of memory)"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA (no data)"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES (the driver ran out "
                                        "of resources)"},
    {NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY (the system is not ready yet)"},
    {NVML_ERROR_GPU_NOT_FOUND, "NVML_ERROR_GPU_NOT_FOUND (no NVIDIA GPU)"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN (an internal driver error)"},
};

const char *pa_nvml_cause(int code)
{
    for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
        if (causes[i].code == code)
            return causes[i].text;
    return "an NVML error this powerapi does not know";
}

/* Codes after which NVML must be initialised again. */
static int nv_gone(int rc)
{
    return rc == NVML_ERROR_UNINITIALIZED || rc == NVML_ERROR_DRIVER_NOT_LOADED ||
           rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
}

static int nv_errno(int rc)
{
    return rc == NVML_ERROR_NO_PERMISSION ? -EACCES
           : rc == NVML_ERROR_MEMORY      ? -ENOMEM
           : nv_gone(rc)                  ? -EAGAIN
                                          : -ENODEV;
}

static int nv_fail(int rc, char *why, size_t len, const char *call)
{
    snprintf(why, len, "nvml: %s: %s", call, pa_nvml_cause(rc));
    return nv_errno(rc);
}

static int nv_init(pa_nvml *s, char *why, size_t len)
{
    if (s->inited)
        return 0;
    int rc = s->f.init();
    if (rc != NVML_SUCCESS)
        return nv_fail(rc, why, len, "nvmlInit_v2");
    s->inited = 1;
    return 0;
}

int pa_nvml_open_fns(const pa_nvml_fns *fns, pa_nvml **out, char *why, size_t len)
{
    *out = NULL;
    if (!fns->init || !fns->shutdown || !fns->count || !fns->handle || !fns->name || !fns->uuid ||
        !fns->pci || !fns->power)
        return nv_fail(NVML_ERROR_FUNCTION_NOT_FOUND, why, len, "a required call");
    pa_nvml *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->f = *fns;
    int rc = nv_init(s, why, len);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* The calls of the library dl, into f (NULL where absent). */
static void nv_resolve(void *dl, pa_nvml_fns *f)
{
#define NV_SYM(field, type, name) f->field = (type *)dlsym(dl, name)
    NV_SYM(init, nvmlInit_v2_fn, "nvmlInit_v2");
    NV_SYM(shutdown, nvmlShutdown_fn, "nvmlShutdown");
    NV_SYM(error_string, nvmlErrorString_fn, "nvmlErrorString");
    NV_SYM(count, nvmlDeviceGetCount_v2_fn, "nvmlDeviceGetCount_v2");
    NV_SYM(handle, nvmlDeviceGetHandleByIndex_v2_fn, "nvmlDeviceGetHandleByIndex_v2");
    NV_SYM(name, nvmlDeviceGetName_fn, "nvmlDeviceGetName");
    NV_SYM(uuid, nvmlDeviceGetUUID_fn, "nvmlDeviceGetUUID");
    NV_SYM(pci, nvmlDeviceGetPciInfo_v3_fn, "nvmlDeviceGetPciInfo_v3");
    NV_SYM(energy, nvmlDeviceGetTotalEnergyConsumption_fn, "nvmlDeviceGetTotalEnergyConsumption");
    NV_SYM(power, nvmlDeviceGetPowerUsage_fn, "nvmlDeviceGetPowerUsage");
    NV_SYM(utilization, nvmlDeviceGetProcessUtilization_fn, "nvmlDeviceGetProcessUtilization");
    NV_SYM(compute_procs, nvmlDeviceGetRunningProcesses_fn,
           "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!f->compute_procs) /* drivers before 510: _v2, the same layout */
        NV_SYM(compute_procs, nvmlDeviceGetRunningProcesses_fn,
               "nvmlDeviceGetComputeRunningProcesses_v2");
    NV_SYM(graphics_procs, nvmlDeviceGetRunningProcesses_fn,
           "nvmlDeviceGetGraphicsRunningProcesses_v3");
    if (!f->graphics_procs)
        NV_SYM(graphics_procs, nvmlDeviceGetRunningProcesses_fn,
               "nvmlDeviceGetGraphicsRunningProcesses_v2");
    NV_SYM(mig_mode, nvmlDeviceGetMigMode_fn, "nvmlDeviceGetMigMode");
    NV_SYM(mig_count, nvmlDeviceGetMaxMigDeviceCount_fn, "nvmlDeviceGetMaxMigDeviceCount");
    NV_SYM(mig_handle, nvmlDeviceGetMigDeviceHandleByIndex_fn,
           "nvmlDeviceGetMigDeviceHandleByIndex");
#undef NV_SYM
}

int pa_nvml_open(const char *path, pa_nvml **out, char *why, size_t len)
{
    *out = NULL;
    const char *p = path && *path ? path : NV_DEFAULT_LIB;
    void *dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(why, len, "nvml: %s not loaded (%s): %s", p, dlerror(),
                 path && *path ? "check library=" : "no NVIDIA driver here");
        return -ENODEV;
    }
    pa_nvml_fns f;
    memset(&f, 0, sizeof(f));
    nv_resolve(dl, &f);
    int rc = pa_nvml_open_fns(&f, out, why, len);
    if (rc < 0) {
        dlclose(dl);
        return rc;
    }
    (*out)->dl = dl;
    return 0;
}

void pa_nvml_close(pa_nvml *s)
{
    if (!s)
        return;
    if (s->inited)
        s->f.shutdown();
    if (s->dl)
        dlclose(s->dl);
    free(s->samples);
    free(s->infos);
    free(s);
}

/* Appends to the reading's note ("; "-separated, cut when full). */
static void note(pa_gpu_reading *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(pa_gpu_reading *r, const char *fmt, ...)
{
    size_t n = strlen(r->note);
    if (n + 3 >= sizeof(r->note))
        return;
    if (n)
        n += (size_t)snprintf(r->note + n, sizeof(r->note) - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + n, sizeof(r->note) - n, fmt, ap);
    va_end(ap);
}

/* The accumulator of (uuid, pid), made when absent (NULL when full). */
static nv_acc *acc_of(pa_nvml *s, const char *uuid, pid_t pid)
{
    for (int i = 0; i < s->nacc; i++)
        if (s->acc[i].pid == pid && !strcmp(s->acc[i].uuid, uuid))
            return &s->acc[i];
    if (s->nacc == PA_GPU_MAX_PROCS)
        return NULL;
    nv_acc *a = &s->acc[s->nacc++];
    memset(a, 0, sizeof(*a));
    snprintf(a->uuid, sizeof(a->uuid), "%s", uuid);
    a->pid = pid;
    return a;
}

/* The last-seen timestamp slot of a device. */
static unsigned long long *last_of(pa_nvml *s, const char *uuid)
{
    size_t n = sizeof(s->last) / sizeof(s->last[0]), free_slot = n - 1;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(s->last[i].uuid, uuid))
            return &s->last[i].ts;
        if (!s->last[i].uuid[0] && free_slot == n - 1)
            free_slot = i;
    }
    snprintf(s->last[free_slot].uuid, sizeof(s->last[0].uuid), "%s", uuid);
    s->last[free_slot].ts = 0;
    return &s->last[free_slot].ts;
}

/* Grows *buf to hold want elements of size sz (at most NV_MAX_SAMPLES). */
static int grow(void **buf, unsigned *cap, unsigned want, size_t sz)
{
    if (want > NV_MAX_SAMPLES)
        want = NV_MAX_SAMPLES;
    if (want <= *cap && *buf)
        return 0;
    void *p = realloc(*buf, (size_t)want * sz);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = want;
    return 0;
}

/* Calls a list call (utilisation or processes) with a buffer grown once
 * on NVML_ERROR_INSUFFICIENT_SIZE; *n: the elements written. */
static int list_call(pa_nvml *s, nvmlDevice_t h, int util, nvmlDeviceGetRunningProcesses_fn *fn,
                     unsigned long long since, unsigned *n)
{
    int rc = NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned want = 64;
    for (int attempt = 0; attempt < 2 && rc == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
        int g = util ? grow((void **)&s->samples, &s->scap, want, sizeof(*s->samples))
                     : grow((void **)&s->infos, &s->icap, want, sizeof(*s->infos));
        if (g < 0)
            return NVML_ERROR_MEMORY;
        unsigned cap = util ? s->scap : s->icap;
        *n = cap;
        rc = util ? s->f.utilization(h, s->samples, n, since) : fn(h, n, s->infos);
        want = *n > cap ? *n : cap * 2;
    }
    if (rc != NVML_SUCCESS || *n > (util ? s->scap : s->icap))
        *n = 0; /* a count beyond the buffer is garbage */
    return rc;
}

/* The SM samples of device h newer than its last-seen timestamp, summed
 * per process.  NVML_SUCCESS, NOT_FOUND (none new), or the error. */
static int read_samples(pa_nvml *s, nvmlDevice_t h, const char *uuid)
{
    if (!s->f.utilization)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned long long *last = last_of(s, uuid);
    unsigned n = 0;
    int rc = list_call(s, h, 1, NULL, *last, &n);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long newest = *last, latest = 0;
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessUtilizationSample_t *u = &s->samples[i];
        if (u->timeStamp > latest)
            latest = u->timeStamp;
        if (u->timeStamp <= *last || u->pid == 0 || u->pid > 0x7fffffffu)
            continue; /* already counted, or no process */
        nv_acc *a = acc_of(s, uuid, (pid_t)u->pid);
        if (a) {
            a->busy += (u->smUtil > 100 ? 100 : u->smUtil) / 100.0;
            a->seen = 1;
        }
        if (u->timeStamp > newest)
            newest = u->timeStamp;
    }
    /* every sample older than the last seen: the clock went back (a
     * driver reload); start again from these */
    *last = newest == *last && n && latest < *last ? latest : newest;
    return NVML_SUCCESS;
}

/* The running processes (compute, then graphics) of device h: marks them
 * seen, with their memory. */
static int read_running(pa_nvml *s, nvmlDevice_t h, const char *uuid)
{
    nvmlDeviceGetRunningProcesses_fn *fns[2] = {s->f.compute_procs, s->f.graphics_procs};
    int worst = NVML_SUCCESS;
    for (int k = 0; k < 2; k++) {
        unsigned n = 0;
        int rc = fns[k] ? list_call(s, h, 0, fns[k], 0, &n) : NVML_ERROR_FUNCTION_NOT_FOUND;
        if (rc != NVML_SUCCESS) {
            worst = rc;
            continue;
        }
        for (unsigned i = 0; i < n; i++) {
            if (s->infos[i].pid == 0 || s->infos[i].pid > 0x7fffffffu)
                continue;
            nv_acc *a = acc_of(s, uuid, (pid_t)s->infos[i].pid);
            if (a) {
                a->seen = 1;
                if (s->infos[i].usedGpuMemory != ~0ull) /* NVML_VALUE_NOT_AVAILABLE */
                    a->mem = s->infos[i].usedGpuMemory;
            }
        }
    }
    return worst;
}

/* MIG mode: the partitions listed into d->nosplit. */
static void read_mig(pa_nvml *s, nvmlDevice_t h, pa_gpu_dev *d)
{
    unsigned cur = 0, pending = 0, max = 0;
    if (!s->f.mig_mode || s->f.mig_mode(h, &cur, &pending) != NVML_SUCCESS ||
        cur != NVML_DEVICE_MIG_ENABLE)
        return;
    char list[128] = "";
    int parts = 0;
    if (s->f.mig_count && s->f.mig_handle && s->f.mig_count(h, &max) == NVML_SUCCESS) {
        for (unsigned i = 0; i < max && i < 64; i++) {
            nvmlDevice_t mh;
            char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
            if (s->f.mig_handle(h, i, &mh) != NVML_SUCCESS ||
                s->f.uuid(mh, uuid, sizeof(uuid)) != NVML_SUCCESS)
                continue; /* no partition at this index */
            uuid[sizeof(uuid) - 1] = '\0';
            size_t l = strlen(list);
            if (l + 2 < sizeof(list))
                snprintf(list + l, sizeof(list) - l, "%s%s", parts ? " " : "", uuid);
            parts++;
        }
    }
    snprintf(d->nosplit, sizeof(d->nosplit),
             "MIG mode, %d partition(s) %.80s: power is known for the whole board only", parts,
             list);
}

/* Device identity and power; NVML_SUCCESS or the code that failed. */
static int read_identity(pa_nvml *s, nvmlDevice_t h, pa_gpu_dev *d, pa_gpu_reading *r)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof(pci));
    int rc = s->f.uuid(h, uuid, sizeof(uuid));
    if (rc == NVML_SUCCESS)
        rc = s->f.pci(h, &pci);
    if (rc != NVML_SUCCESS)
        return rc;
    if (s->f.name(h, name, sizeof(name)) != NVML_SUCCESS)
        snprintf(name, sizeof(name), "NVIDIA GPU");
    name[sizeof(name) - 1] = uuid[sizeof(uuid) - 1] = pci.busId[sizeof(pci.busId) - 1] = '\0';
    snprintf(d->name, sizeof(d->name), "%.63s", name);
    snprintf(d->uuid, sizeof(d->uuid), "%.47s", uuid);
    snprintf(d->pdev, sizeof(d->pdev), "%.31s", pci.busId[0] ? pci.busId : uuid);
    snprintf(d->driver, sizeof(d->driver), "nvidia");
    snprintf(d->vendor, sizeof(d->vendor), "nvidia");
    snprintf(d->card, sizeof(d->card), "nvidia%d", d->index);
    unsigned long long mj = 0;
    rc = s->f.energy ? s->f.energy(h, &mj) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (rc == NVML_SUCCESS) {
        d->source = PA_GPU_ENERGY;
        d->energy_j = (double)mj / 1e3;
        snprintf(d->reading, sizeof(d->reading), "nvmlDeviceGetTotalEnergyConsumption (measured)");
        return NVML_SUCCESS;
    }
    if (rc == NVML_ERROR_GPU_IS_LOST || nv_gone(rc))
        return rc;
    if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_FUNCTION_NOT_FOUND)
        note(r, "gpu %d: no energy counter: %s", d->index, pa_nvml_cause(rc));
    unsigned mw = 0;
    rc = s->f.power(h, &mw);
    if (rc != NVML_SUCCESS)
        return rc;
    d->source = PA_GPU_POWER_AVG;
    d->power_w = mw / 1e3;
    snprintf(d->reading, sizeof(d->reading), "nvmlDeviceGetPowerUsage (1 s average, integrated)");
    return NVML_SUCCESS;
}

/* Device i into d: NVML_SUCCESS, or the code that left it out. */
static int read_device(pa_nvml *s, unsigned i, pa_gpu_dev *d, pa_gpu_reading *r)
{
    memset(d, 0, sizeof(*d));
    d->index = (int)i;
    nvmlDevice_t h;
    int rc = s->f.handle(i, &h);
    if (rc == NVML_SUCCESS)
        rc = read_identity(s, h, d, r);
    if (rc != NVML_SUCCESS)
        return rc;
    read_mig(s, h, d);
    if (!d->nosplit[0]) {
        rc = read_samples(s, h, d->uuid);
        if (rc == NVML_ERROR_GPU_IS_LOST || nv_gone(rc))
            return rc;
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND)
            snprintf(d->nosplit, sizeof(d->nosplit),
                     "no per-process utilisation (nvmlDeviceGetProcessUtilization: %s)",
                     pa_nvml_cause(rc));
    }
    rc = read_running(s, h, d->uuid);
    if (rc == NVML_ERROR_GPU_IS_LOST || nv_gone(rc))
        return rc;
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED)
        note(r, "gpu %d: running processes not listed: %s", d->index, pa_nvml_cause(rc));
    return NVML_SUCCESS;
}

/* The processes seen this tick into the reading; the others forgotten (a
 * pid that comes back starts again from nothing). */
static void put_processes(pa_nvml *s, pa_gpu_reading *r)
{
    int keep = 0;
    r->nproc = 0;
    for (int i = 0; i < s->nacc; i++) {
        nv_acc *a = &s->acc[i];
        int dev = -1;
        for (int k = 0; k < r->ndev && dev < 0; k++)
            if (!strcmp(r->dev[k].uuid, a->uuid))
                dev = k;
        if (!a->seen || dev < 0)
            continue;
        a->seen = 0;
        s->acc[keep++] = *a;
        r->proc[r->nproc++] =
            (pa_gpu_proc){.pid = a->pid, .dev = dev, .busy_s = a->busy, .mem_bytes = a->mem};
    }
    s->nacc = keep;
}

int pa_nvml_read(pa_nvml *s, pa_gpu_reading *r, char *why, size_t len)
{
    r->ndev = r->nproc = 0;
    r->note[0] = '\0';
    int rc = nv_init(s, why, len);
    if (rc < 0)
        return rc;
    unsigned n = 0;
    int nrc = s->f.count(&n);
    if (nrc != NVML_SUCCESS) {
        if (nv_gone(nrc)) {
            s->f.shutdown();
            s->inited = 0;
        }
        return nv_fail(nrc, why, len, "nvmlDeviceGetCount_v2");
    }
    for (unsigned i = 0; i < n && i < 64; i++) {
        if (r->ndev == PA_GPU_MAX_DEVS) {
            note(r, "more than %d GPUs: the others left out", PA_GPU_MAX_DEVS);
            break;
        }
        int drc = read_device(s, i, &r->dev[r->ndev], r);
        if (drc == NVML_SUCCESS) {
            r->ndev++;
            continue;
        }
        if (nv_gone(drc)) {
            s->f.shutdown();
            s->inited = 0;
            return nv_fail(drc, why, len, "a device call");
        }
        note(r, "gpu %u left out: %s", i, pa_nvml_cause(drc));
    }
    put_processes(s, r);
    if (n > 0 && r->ndev == 0) {
        snprintf(why, len, "nvml: every one of %u GPU(s) left out: %s", n, r->note);
        return -ENODEV;
    }
    return 0;
}

/* ---- the module ---- */

static const char *const nvml_options[] = {"library", NULL};

typedef struct nvml_mod {
    pa_nvml *nv;
    pa_gpu_reading r;
} nvml_mod;

static const char *probe_library(void)
{
    const char *p = getenv("POWERAPI_NVML_LIBRARY");
    return p && *p ? p : NULL;
}

static int nvml_probe(const pa_env *env, char *why, size_t len)
{
    /* NVML answers for this machine: a context on other roots (a fixture
     * tree, a replay) uses it only when named */
    if (!probe_library() && strcmp(pa_env_sysfs(env), "/sys")) {
        snprintf(why, len,
                 "nvml: this context reads %s, not this machine's /sys: NVML is used only "
                 "there, or with POWERAPI_NVML_LIBRARY=PATH",
                 pa_env_sysfs(env));
        return -ENODEV;
    }
    pa_nvml *s;
    int rc = pa_nvml_open(probe_library(), &s, why, len);
    if (rc < 0)
        return rc;
    unsigned n = 0;
    int crc = s->f.count(&n);
    pa_nvml_close(s);
    if (crc != NVML_SUCCESS)
        return nv_fail(crc, why, len, "nvmlDeviceGetCount_v2");
    if (n == 0) {
        snprintf(why, len, "nvml: NVML found no NVIDIA GPU");
        return -ENODEV;
    }
    return 0;
}

static int nvml_start(pa_module *m, const pa_options *o)
{
    nvml_mod *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    const char *lib = pa_options_get(o, "library");
    char why[512];
    int rc = pa_nvml_open(lib ? lib : probe_library(), &st->nv, why, sizeof(why));
    if (rc < 0) {
        free(st);
        pa_module_errorf(m, "%s", why);
        return rc;
    }
    pa_module_set_priv(m, st);
    return 0;
}

static int nvml_sample(pa_module *m, pa_frame *f)
{
    nvml_mod *st = pa_module_priv(m);
    char why[512];
    int rc = pa_nvml_read(st->nv, &st->r, why, sizeof(why));
    if (rc < 0) {
        pa_module_errorf(m, "%s", why);
        return rc;
    }
    return pa_frame_put(f, "nvml", &st->r, sizeof(st->r));
}

static void nvml_stop(pa_module *m)
{
    nvml_mod *st = pa_module_priv(m);
    if (st)
        pa_nvml_close(st->nv);
    free(st);
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_nvml = {
    .abi = PA_MODULE_ABI,
    .name = "nvml",
    .kind = PA_SENSOR,
    .description = "NVIDIA GPUs through NVML: device energy or power, per-process SM "
                   "utilisation",
    .options = nvml_options,
    .probe = nvml_probe,
    .start = nvml_start,
    .sample = nvml_sample,
    .stop = nvml_stop,
};
