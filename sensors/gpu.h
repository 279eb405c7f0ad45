/*
 * gpu.h - what the drm-gpu sensor reads and hands its formula (gpu-share)
 * under the frame key "drm-gpu" (issue 28; DESIGN.md section 16), and its
 * parsers (fuzzed: tests/fuzz/fuzz_drm_fdinfo.c).  Public module API only.
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
} pa_gpu_dev;

/* A process's busy time on one device (its clients summed, once each). */
typedef struct pa_gpu_proc {
    pid_t pid;
    int dev; /* index in the reading's devices */
    double busy_s;
} pa_gpu_proc;

typedef struct pa_gpu_reading {
    int ndev, nproc;
    pa_gpu_dev dev[PA_GPU_MAX_DEVS];
    pa_gpu_proc proc[PA_GPU_MAX_PROCS];
} pa_gpu_reading;

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

#endif
