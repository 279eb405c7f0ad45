/*
 * nvml_standin.c - a stand-in for libnvidia-ml.so.1, built by the test
 * suite (issue 28): the same symbols, signatures and calling conventions as
 * NVIDIA's library (declared once, in sensors/nvml_api.h: each definition
 * below is checked against its type), answering from a scripted timeline,
 * so that the nvml sensor runs here without a GPU.
 *
 * $PA_NVML_SCRIPT names the timeline; $PA_NVML_STEP the step to answer
 * (from 0); without it, each nvmlDeviceGetCount_v2 call after the first
 * moves to the next step (the last one repeats), one a window.  A step:
 *
 *   step
 *   dev IDX uuid=GPU-.. bus=00000000:3B:00.0 name=NVIDIA_H100 energy=MJ|none power=MW mig=0|1
 *       denergy=MJ                      mJ more each step past the last one
 *   mig IDX uuid=MIG-..                 a MIG partition of device IDX
 *   util IDX pid=P ts=US sm=PCT mem=PCT  a utilisation sample
 *   proc IDX compute|graphics pid=P mem=BYTES
 *   fail CALL|* IDX|-1 CODE              CALL answers CODE (for device IDX)
 *
 * Samples stay in the "driver's buffer" for the step after theirs, and
 * nvmlDeviceGetProcessUtilization returns those newer than lastSeen, as
 * NVML does.  Past the last step, the last one repeats with its energy
 * grown by denergy and its samples 1 s later a step.  pid=self is the
 * process that loaded the library, pid=parent its parent, pid=guest:NAME
 * the QEMU process of `-name guest=NAME` when it is answered (found in
 * /proc at each call: a VM started after the library was loaded; 0 while
 * there is none).  '_' in a name
 * is a space.  Not thread-safe (tests).
 */
#include "../sensors/nvml_api.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SI_DEVS 16
#define SI_STEPS 64
#define SI_MIGS 8
#define SI_FAILS 32

typedef struct si_dev {
    char uuid[96], bus[32], name[96];
    long long energy;  /* mJ, < 0: not supported */
    long long denergy; /* mJ a step past the last */
    unsigned power;    /* mW */
    int mig, nmig;
    char mig_uuid[SI_MIGS][96];
} si_dev;

typedef struct si_step {
    int ndev;
    si_dev dev[SI_DEVS];
    nvmlProcessUtilizationSample_t *util;
    int *util_dev, nutil;
    nvmlProcessInfo_t *proc;
    int *proc_dev, *proc_graphics, nproc;
    struct {
        char call[64];
        int dev, code;
    } fail[SI_FAILS];
    int nfail;
} si_step;

static si_step steps[SI_STEPS];
static int nsteps = -1, auto_step, counted, beyond; /* beyond: steps past the last */

static const char *val(const char *line, const char *key)
{
    char k[32];
    snprintf(k, sizeof(k), " %s=", key);
    const char *p = strstr(line, k);
    return p ? p + strlen(k) : NULL;
}

static void word(const char *line, const char *key, char *out, size_t len)
{
    const char *v = val(line, key);
    size_t n = v ? strcspn(v, " \n") : 0;
    snprintf(out, len, "%.*s", (int)n, v ? v : "");
    for (char *c = out; *c; c++)
        if (*c == '_')
            *c = ' ';
}

#define SI_GUEST_PID 0xfffffff0u
static char guest_name[96]; /* pid=guest:NAME */

/* The QEMU process (its argv[0] named qemu*) whose command line has an
 * argument guest=NAME (-name guest=NAME,...), 0 when none. */
static unsigned guest_pid(void)
{
    char path[64], buf[8192], want[128];
    snprintf(want, sizeof(want), "guest=%s", guest_name);
    size_t wl = strlen(want);
    DIR *d = opendir("/proc");
    struct dirent *e;
    unsigned found = 0;
    while (d && !found && (e = readdir(d)) != NULL) {
        unsigned pid = (unsigned)strtoul(e->d_name, NULL, 10);
        snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
        FILE *f = pid ? fopen(path, "re") : NULL;
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *base = strrchr(buf, '/'); /* QEMU itself, not a `timeout qemu-...` */
        if (strncmp(base ? base + 1 : buf, "qemu", 4) != 0)
            continue;
        for (size_t i = 0; i < n && !found; i += strlen(buf + i) + 1)
            if (!strncmp(buf + i, want, wl) && (buf[i + wl] == ',' || !buf[i + wl]))
                found = pid;
    }
    if (d)
        closedir(d);
    return found;
}

static unsigned long long num(const char *line, const char *key)
{
    const char *v = val(line, key);
    if (v && !strncmp(v, "guest:", 6)) {
        snprintf(guest_name, sizeof(guest_name), "%.*s", (int)strcspn(v + 6, " \n"), v + 6);
        return SI_GUEST_PID;
    }
    if (v && !strncmp(v, "self", 4))
        return (unsigned long long)getpid();
    if (v && !strncmp(v, "parent", 6))
        return (unsigned long long)getppid();
    return v ? strtoull(v, NULL, 10) : 0;
}

static void *more(void *p, int n, size_t sz)
{
    void *q = realloc(p, (size_t)(n + 1) * sz);
    if (!q)
        abort();
    return q;
}

static void parse_line(si_step *s, const char *line)
{
    int idx = -1;
    char call[64];
    if (!strncmp(line, "dev ", 4) && sscanf(line + 4, "%d", &idx) == 1 && idx >= 0 &&
        idx < SI_DEVS) {
        si_dev *d = &s->dev[idx];
        word(line, "uuid", d->uuid, sizeof(d->uuid));
        word(line, "bus", d->bus, sizeof(d->bus));
        word(line, "name", d->name, sizeof(d->name));
        const char *e = val(line, "energy");
        d->energy = !e || !strncmp(e, "none", 4) ? -1 : (long long)strtoull(e, NULL, 10);
        d->power = (unsigned)num(line, "power");
        d->denergy = (long long)num(line, "denergy");
        d->mig = (int)num(line, "mig");
        if (idx >= s->ndev)
            s->ndev = idx + 1;
    } else if (!strncmp(line, "mig ", 4) && sscanf(line + 4, "%d", &idx) == 1 && idx >= 0 &&
               idx < SI_DEVS && s->dev[idx].nmig < SI_MIGS) {
        si_dev *d = &s->dev[idx];
        word(line, "uuid", d->mig_uuid[d->nmig++], sizeof(d->mig_uuid[0]));
    } else if (!strncmp(line, "util ", 5) && sscanf(line + 5, "%d", &idx) == 1) {
        s->util = more(s->util, s->nutil, sizeof(*s->util));
        s->util_dev = more(s->util_dev, s->nutil, sizeof(int));
        s->util[s->nutil] = (nvmlProcessUtilizationSample_t){
            .pid = (unsigned)num(line, "pid"),
            .timeStamp = num(line, "ts"),
            .smUtil = (unsigned)num(line, "sm"),
            .memUtil = (unsigned)num(line, "mem"),
        };
        s->util_dev[s->nutil++] = idx;
    } else if (!strncmp(line, "proc ", 5) && sscanf(line + 5, "%d %63s", &idx, call) == 2) {
        s->proc = more(s->proc, s->nproc, sizeof(*s->proc));
        s->proc_dev = more(s->proc_dev, s->nproc, sizeof(int));
        s->proc_graphics = more(s->proc_graphics, s->nproc, sizeof(int));
        s->proc[s->nproc] = (nvmlProcessInfo_t){.pid = (unsigned)num(line, "pid"),
                                                .usedGpuMemory = num(line, "mem"),
                                                .gpuInstanceId = 0xFFFFFFFFu,
                                                .computeInstanceId = 0xFFFFFFFFu};
        s->proc_graphics[s->nproc] = !strcmp(call, "graphics");
        s->proc_dev[s->nproc++] = idx;
    } else if (!strncmp(line, "fail ", 5) && s->nfail < SI_FAILS &&
               sscanf(line + 5, "%63s %d %d", s->fail[s->nfail].call, &s->fail[s->nfail].dev,
                      &s->fail[s->nfail].code) == 3) {
        s->nfail++;
    }
}

static void load(void)
{
    if (nsteps >= 0)
        return;
    nsteps = 0;
    const char *path = getenv("PA_NVML_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "step", 4)) {
            if (nsteps < SI_STEPS)
                nsteps++;
        } else if (nsteps > 0 && line[0] != '#') {
            parse_line(&steps[nsteps - 1], line);
        }
    }
    if (f)
        fclose(f);
}

static int cur_step(void)
{
    load();
    const char *e = getenv("PA_NVML_STEP");
    int k = e ? atoi(e) : auto_step;
    if (nsteps <= 0)
        return -1;
    beyond = k >= nsteps ? k - (nsteps - 1) : 0;
    return k < 0 ? 0 : k >= nsteps ? nsteps - 1 : k;
}

/* The code a scripted failure gives CALL on device dev, or NVML_SUCCESS. */
static int failure(const char *call, int dev)
{
    int k = cur_step();
    if (k < 0)
        return NVML_ERROR_UNKNOWN;
    for (int i = 0; i < steps[k].nfail; i++)
        if ((!strcmp(steps[k].fail[i].call, call) || !strcmp(steps[k].fail[i].call, "*")) &&
            (steps[k].fail[i].dev < 0 || steps[k].fail[i].dev == dev))
            return steps[k].fail[i].code;
    return NVML_SUCCESS;
}

/* Handles: 1 + device index; MIG partitions 0x1000 + 64 x device + index. */
static si_dev *dev_of(nvmlDevice_t h, int *idx)
{
    uintptr_t v = (uintptr_t)h;
    int k = cur_step();
    *idx = v >= 0x1000 ? (int)((v - 0x1000) / 64) : (int)v - 1;
    if (k < 0 || *idx < 0 || *idx >= steps[k].ndev || !steps[k].dev[*idx].uuid[0])
        return NULL;
    return &steps[k].dev[*idx];
}

#define SI_CHECK(call, h, d, idx)                                                                  \
    int idx;                                                                                       \
    si_dev *d = dev_of(h, &idx);                                                                   \
    if (!d)                                                                                        \
        return NVML_ERROR_INVALID_ARGUMENT;                                                        \
    int rc_ = failure(call, idx);                                                                  \
    if (rc_ != NVML_SUCCESS)                                                                       \
    return rc_

nvmlInit_v2_fn nvmlInit_v2;
nvmlShutdown_fn nvmlShutdown;
nvmlErrorString_fn nvmlErrorString;
nvmlDeviceGetCount_v2_fn nvmlDeviceGetCount_v2;
nvmlDeviceGetHandleByIndex_v2_fn nvmlDeviceGetHandleByIndex_v2;
nvmlDeviceGetName_fn nvmlDeviceGetName;
nvmlDeviceGetUUID_fn nvmlDeviceGetUUID;
nvmlDeviceGetPciInfo_v3_fn nvmlDeviceGetPciInfo_v3;
nvmlDeviceGetTotalEnergyConsumption_fn nvmlDeviceGetTotalEnergyConsumption;
nvmlDeviceGetPowerUsage_fn nvmlDeviceGetPowerUsage;
nvmlDeviceGetProcessUtilization_fn nvmlDeviceGetProcessUtilization;
nvmlDeviceGetRunningProcesses_fn nvmlDeviceGetComputeRunningProcesses_v3;
nvmlDeviceGetRunningProcesses_fn nvmlDeviceGetGraphicsRunningProcesses_v3;
nvmlDeviceGetMigMode_fn nvmlDeviceGetMigMode;
nvmlDeviceGetMaxMigDeviceCount_fn nvmlDeviceGetMaxMigDeviceCount;
nvmlDeviceGetMigDeviceHandleByIndex_fn nvmlDeviceGetMigDeviceHandleByIndex;

nvmlReturn_t nvmlInit_v2(void)
{
    return failure("nvmlInit_v2", -1);
}

/* Forgets the timeline (read again at the next call): nothing leaks when
 * the library is unloaded. */
nvmlReturn_t nvmlShutdown(void)
{
    for (int k = 0; k < nsteps; k++) {
        free(steps[k].util);
        free(steps[k].util_dev);
        free(steps[k].proc);
        free(steps[k].proc_dev);
        free(steps[k].proc_graphics);
    }
    memset(steps, 0, sizeof(steps));
    nsteps = -1;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    return result == NVML_SUCCESS ? "Success" : "stand-in error";
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (counted++ && auto_step < 1 << 30)
        auto_step++;
    int rc = failure("nvmlDeviceGetCount_v2", -1);
    int k = cur_step();
    if (rc == NVML_SUCCESS)
        *deviceCount = k < 0 ? 0 : (unsigned)steps[k].ndev;
    return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    int rc = failure("nvmlDeviceGetHandleByIndex_v2", (int)index);
    if (rc == NVML_SUCCESS)
        *device = (nvmlDevice_t)(uintptr_t)(index + 1);
    return rc;
}

static nvmlReturn_t copy_str(char *out, unsigned int length, const char *s)
{
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    SI_CHECK("nvmlDeviceGetName", device, d, idx);
    return copy_str(name, length, d->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    SI_CHECK("nvmlDeviceGetUUID", device, d, idx);
    uintptr_t v = (uintptr_t)device;
    if (v < 0x1000)
        return copy_str(uuid, length, d->uuid);
    int m = (int)((v - 0x1000) % 64);
    return m < d->nmig ? copy_str(uuid, length, d->mig_uuid[m]) : NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    SI_CHECK("nvmlDeviceGetPciInfo_v3", device, d, idx);
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busId, sizeof(pci->busId), "%s", d->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    SI_CHECK("nvmlDeviceGetTotalEnergyConsumption", device, d, idx);
    if (d->energy < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *energy = (unsigned long long)(d->energy + beyond * d->denergy);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    SI_CHECK("nvmlDeviceGetPowerUsage", device, d, idx);
    *power = d->power;
    return NVML_SUCCESS;
}

/* The samples of steps k - 1 and k on device idx newer than since. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    SI_CHECK("nvmlDeviceGetProcessUtilization", device, d, idx);
    if (d->mig)
        return NVML_ERROR_NOT_SUPPORTED; /* "not supported on MIG-enabled GPUs" */
    int k = cur_step();
    unsigned long long later = (unsigned long long)beyond * 1000000ull, since = lastSeenTimeStamp;
    since = since > later ? since - later : 0; /* compared with the script's own times */
    unsigned n = 0;
    for (int s = k > 0 ? k - 1 : 0; s <= k; s++)
        for (int i = 0; i < steps[s].nutil; i++)
            n += steps[s].util_dev[i] == idx && steps[s].util[i].timeStamp > since;
    if (!n)
        return NVML_ERROR_NOT_FOUND;
    if (!utilization || *processSamplesCount < n) {
        *processSamplesCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    n = 0;
    for (int s = k > 0 ? k - 1 : 0; s <= k; s++)
        for (int i = 0; i < steps[s].nutil; i++)
            if (steps[s].util_dev[i] == idx && steps[s].util[i].timeStamp > since) {
                utilization[n] = steps[s].util[i];
                if (utilization[n].pid == SI_GUEST_PID)
                    utilization[n].pid = guest_pid();
                utilization[n++].timeStamp += later;
            }
    *processSamplesCount = n;
    return NVML_SUCCESS;
}

static nvmlReturn_t running(const char *call, nvmlDevice_t device, unsigned int *infoCount,
                            nvmlProcessInfo_t *infos, int graphics)
{
    SI_CHECK(call, device, d, idx);
    (void)d;
    si_step *s = &steps[cur_step()];
    unsigned n = 0;
    for (int i = 0; i < s->nproc; i++)
        n += s->proc_dev[i] == idx && s->proc_graphics[i] == graphics;
    if (*infoCount < n) {
        *infoCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    n = 0;
    for (int i = 0; i < s->nproc; i++)
        if (s->proc_dev[i] == idx && s->proc_graphics[i] == graphics) {
            infos[n] = s->proc[i];
            if (infos[n].pid == SI_GUEST_PID)
                infos[n].pid = guest_pid();
            n++;
        }
    *infoCount = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    return running("nvmlDeviceGetComputeRunningProcesses_v3", device, infoCount, infos, 0);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
    return running("nvmlDeviceGetGraphicsRunningProcesses_v3", device, infoCount, infos, 1);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    SI_CHECK("nvmlDeviceGetMigMode", device, d, idx);
    *currentMode = *pendingMode = (unsigned)d->mig;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    SI_CHECK("nvmlDeviceGetMaxMigDeviceCount", device, d, idx);
    *count = d->mig ? 7 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
    SI_CHECK("nvmlDeviceGetMigDeviceHandleByIndex", device, d, idx);
    if (!d->mig || (int)index >= d->nmig)
        return NVML_ERROR_NOT_FOUND;
    *migDevice = (nvmlDevice_t)(uintptr_t)(0x1000 + 64 * idx + (int)index);
    return NVML_SUCCESS;
}
