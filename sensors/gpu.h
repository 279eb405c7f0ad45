/*
 * gpu.h - what the GPU sensors read and hand their formulas (gpu-share,
 * nvml-share: formulas/gpu_share.c) under the frame keys "drm-gpu" and
 * "nvml" (issue 28; DESIGN.md section 16), and their parsers and readers
 * (fuzzed: tests/fuzz/fuzz_drm_fdinfo.c, fuzz_nvml.c).  Public module API
 * only.
 */
#ifndef PA_SENSORS_GPU_H
#define PA_SENSORS_GPU_H

#include <stdint.h>
#include <sys/types.h>

#include "powerapi.h"

#define PA_GPU_MAX_DEVS 8
#define PA_GPU_MAX_PROCS 256

/* What a device's hwmon gives. */
enum { PA_GPU_NONE = 0, PA_GPU_ENERGY, PA_GPU_POWER_AVG, PA_GPU_POWER };

typedef struct pa_gpu_dev {
    char card[16];   /* "card0" */
    char pdev[32];   /* PCI address, "0000:03:00.0" */
    char driver[16]; /* "amdgpu", "i915", "xe" */
    int source;      /* PA_GPU_ENERGY: energy_j is cumulative; else power_w */
    double energy_j, power_w;
    int index;         /* NVML's device index; DRM: the card number */
    char vendor[16];   /* "nvidia", "amd", "intel" ("" unknown) */
    char name[64];     /* the device's name (NVML), "" when unknown */
    char uuid[48];     /* NVML's "GPU-..." UUID, "" for DRM */
    char reading[64];  /* what gave the figure: "energy1_input (measured)" */
    char nosplit[160]; /* why its active power stays unattributed (MIG,
                          permissions); "" when it can be split */
} pa_gpu_dev;

/* A process's busy time on one device (its clients summed, once each). */
typedef struct pa_gpu_proc {
    pid_t pid;
    int dev;                      /* index in the reading's devices */
    double busy_s;                /* DRM: engine busy seconds; NVML: SM utilisation
                                     samples summed (percent / 100), cumulative */
    unsigned long long mem_bytes; /* NVML: device memory in use, 0 unknown */
} pa_gpu_proc;

typedef struct pa_gpu_reading {
    int ndev, nproc;
    pa_gpu_dev dev[PA_GPU_MAX_DEVS];
    pa_gpu_proc proc[PA_GPU_MAX_PROCS];
    char note[256]; /* what the sensor could not read this tick (a lost
                       device), for the formula's assumed list */
} pa_gpu_reading;

/* Inside a VM: the GPU energy its host attributed to it, as the host
 * sensor (sensors/host.c) reads it from the host's export
 * (gpu_energy_uj; DESIGN.md section 18.2) and hands it to the formula
 * host-gpu-share under the frame key "host-gpu", on each tick with a
 * reading of the host that has the key. */
typedef struct pa_host_gpu {
    double energy_j; /* cumulative since the sensor started: the counter's
                        steps, never a reset's or an appearance's jump */
    char vm[128];    /* the VM's name on its host */
    char host_id[80];
    char formula[64]; /* the host's formulas ("...+nvml-share"), "" unknown */
} pa_host_gpu;

/* Whether the host's export found at the usual mount points under env's
 * rootfs (as the host sensor's probe finds it) has a GPU zone: 1 (why
 * names the folder), or 0 with why.  Thread-safe. */
int pa_host_gpu_exported(const pa_env *env, char *why, size_t len);

/* One DRM client as an fdinfo file describes it. */
typedef struct pa_gpu_client {
    char driver[16], pdev[32];
    unsigned long long client_id;
    unsigned long long busy_ns; /* every drm-engine-<name>, summed */
} pa_gpu_client;

/* Parses an fdinfo text: 0, or -ENOENT when it has no drm-driver and
 * drm-client-id (not a DRM client).  Pure. */
int pa_gpu_fdinfo_parse(const char *text, pa_gpu_client *out);
/* The devices with a power reading under sysfs (at most max): their
 * count, or -errno. */
int pa_gpu_devices(const char *sysfs, pa_gpu_dev *out, int max);
/* Every process's busy time per device (at most max entries). */
int pa_gpu_processes(const char *procfs, const pa_gpu_dev *devs, int ndev, pa_gpu_proc *out,
                     int max);

/* The nvml sensor's reader (sensors/nvml.c): an NVML library, loaded or
 * given as a table of calls (the fuzz target's). */
typedef struct pa_nvml pa_nvml;
struct pa_nvml_fns;
/* Loads path (NULL: libnvidia-ml.so.1) and initialises NVML: 0, or -errno
 * with why naming the cause and the fix. */
int pa_nvml_open(const char *path, pa_nvml **out, char *why, size_t len);
/* The same on a table of calls (copied). */
int pa_nvml_open_fns(const struct pa_nvml_fns *fns, pa_nvml **out, char *why, size_t len);
/* One tick's devices and processes into r: 0 (r->note says what a device
 * lacked), or -errno with why (NVML unusable this tick: it is initialised
 * again at the next). */
int pa_nvml_read(pa_nvml *s, pa_gpu_reading *r, char *why, size_t len);
void pa_nvml_close(pa_nvml *s);
/* "NVML_ERROR_NO_PERMISSION (this user may not ...)" for an NVML code. */
const char *pa_nvml_cause(int code);

#endif
