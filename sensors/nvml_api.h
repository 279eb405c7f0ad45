/*
 * nvml_api.h - the few NVML calls the nvml sensor makes, declared by the
 * project (issue 28; DESIGN.md section 16): Debian has no NVML development
 * package, and the project builds and passes its tests without a GPU or a
 * driver.  Names, signatures, return codes and struct layouts are those of
 * NVIDIA's nvml.h (the NVML API reference; the header is public, e.g. in
 * NVIDIA/go-nvml); the library is loaded at run time (dlopen of
 * libnvidia-ml.so.1).  The test suite's stand-in library
 * (tests/nvml_standin.c) defines the same symbols with these types, so a
 * signature that drifts is a compile error there.
 */
#ifndef PA_SENSORS_NVML_API_H
#define PA_SENSORS_NVML_API_H

/* nvmlReturn_t: the codes the sensor tells apart (nvml.h's values). */
typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3) */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32]; /* "00000000:3B:00.0" */
} nvmlPciInfo_t;

/* nvmlProcessInfo_t = nvmlProcessInfo_v2_t (the _v2 and _v3 process
 * lists; v1 had pid and usedGpuMemory only) */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes */
    unsigned int gpuInstanceId;       /* MIG; 0xFFFFFFFF otherwise */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlProcessUtilizationSample_t */
typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time, µs */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_MIG_ENABLE 1

/* The calls, as function types: X_fn is the type of the symbol "X". */
typedef nvmlReturn_t nvmlInit_v2_fn(void);
typedef nvmlReturn_t nvmlShutdown_fn(void);
typedef const char *nvmlErrorString_fn(nvmlReturn_t result);
typedef nvmlReturn_t nvmlDeviceGetCount_v2_fn(unsigned int *deviceCount);
typedef nvmlReturn_t nvmlDeviceGetHandleByIndex_v2_fn(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t nvmlDeviceGetName_fn(nvmlDevice_t device, char *name, unsigned int length);
typedef nvmlReturn_t nvmlDeviceGetUUID_fn(nvmlDevice_t device, char *uuid, unsigned int length);
typedef nvmlReturn_t nvmlDeviceGetPciInfo_v3_fn(nvmlDevice_t device, nvmlPciInfo_t *pci);
/* mJ since the driver was last reloaded (Volta and later) */
typedef nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption_fn(nvmlDevice_t device,
                                                            unsigned long long *energy);
/* mW, averaged over about one second */
typedef nvmlReturn_t nvmlDeviceGetPowerUsage_fn(nvmlDevice_t device, unsigned int *power);
typedef nvmlReturn_t nvmlDeviceGetProcessUtilization_fn(nvmlDevice_t device,
                                                        nvmlProcessUtilizationSample_t *utilization,
                                                        unsigned int *processSamplesCount,
                                                        unsigned long long lastSeenTimeStamp);
/* nvmlDeviceGetComputeRunningProcesses_v3, ..._v2 (same layout), and the
 * graphics ones */
typedef nvmlReturn_t nvmlDeviceGetRunningProcesses_fn(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos);
typedef nvmlReturn_t nvmlDeviceGetMigMode_fn(nvmlDevice_t device, unsigned int *currentMode,
                                             unsigned int *pendingMode);
typedef nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount_fn(nvmlDevice_t device, unsigned int *count);
typedef nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex_fn(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t *migDevice);

/* The library as the sensor uses it: the calls it found (the optional ones
 * may be NULL: an older driver). */
typedef struct pa_nvml_fns {
    nvmlInit_v2_fn *init;
    nvmlShutdown_fn *shutdown;
    nvmlErrorString_fn *error_string; /* optional */
    nvmlDeviceGetCount_v2_fn *count;
    nvmlDeviceGetHandleByIndex_v2_fn *handle;
    nvmlDeviceGetName_fn *name;
    nvmlDeviceGetUUID_fn *uuid;
    nvmlDeviceGetPciInfo_v3_fn *pci;
    nvmlDeviceGetTotalEnergyConsumption_fn *energy; /* optional */
    nvmlDeviceGetPowerUsage_fn *power;
    nvmlDeviceGetProcessUtilization_fn *utilization;    /* optional */
    nvmlDeviceGetRunningProcesses_fn *compute_procs;    /* optional */
    nvmlDeviceGetRunningProcesses_fn *graphics_procs;   /* optional */
    nvmlDeviceGetMigMode_fn *mig_mode;                  /* optional */
    nvmlDeviceGetMaxMigDeviceCount_fn *mig_count;       /* optional */
    nvmlDeviceGetMigDeviceHandleByIndex_fn *mig_handle; /* optional */
} pa_nvml_fns;

#endif
