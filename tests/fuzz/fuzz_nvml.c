/* fuzz_nvml.c - the nvml sensor's reader (sensors/nvml.c, issue 28) on an
 * NVML whose every answer comes from the input: return codes (each code
 * the reader tells apart), garbage device and list counts (beyond the
 * buffer it was given, or huge after NVML_ERROR_INSUFFICIENT_SIZE),
 * strings without their NUL, sample timestamps and energy counters that go
 * backwards.  Three windows on one reader; after each, the reading must
 * hold: devices and processes within bounds, each process on a device of
 * the reading, finite non-negative figures, terminated strings.
 *
 * The input is a stream read call by call: one byte a return code (below
 * 0xa0: NVML_SUCCESS, else one of the codes), then the call's values. */
#include "fuzz.h"

#include "../../sensors/gpu.h"
#include "../../sensors/nvml_api.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t *in;
static size_t in_n, in_at;

static uint8_t b8(void)
{
    return in_at < in_n ? in[in_at++] : 0;
}

static unsigned long long bytes(int n)
{
    unsigned long long v = 0;
    for (int i = 0; i < n; i++)
        v |= (unsigned long long)b8() << (8 * i);
    return v;
}

static int code(void)
{
    static const int codes[] = {1,  2,  3,  4,  6,  7,  8,  9,  10, 11,
                                12, 13, 14, 15, 16, 17, 18, 21, 999};
    uint8_t b = b8();
    return b < 0xa0 ? NVML_SUCCESS : codes[b % (sizeof(codes) / sizeof(codes[0]))];
}

/* A string of the input's length, NUL not guaranteed. */
static void text(char *out, unsigned len)
{
    unsigned n = b8();
    for (unsigned i = 0; i < n && i < len; i++)
        out[i] = (char)b8();
}

static nvmlReturn_t f_init(void)
{
    return code();
}

static nvmlReturn_t f_shutdown(void)
{
    return NVML_SUCCESS;
}

static nvmlReturn_t f_count(unsigned *n)
{
    int rc = code();
    *n = (unsigned)bytes(b8() & 1 ? 4 : 1);
    return rc;
}

static nvmlReturn_t f_handle(unsigned i, nvmlDevice_t *h)
{
    *h = (nvmlDevice_t)(uintptr_t)(i + 1);
    return code();
}

static nvmlReturn_t f_name(nvmlDevice_t h, char *s, unsigned len)
{
    int rc = code();
    text(s, len);
    return rc;
}

static nvmlReturn_t f_pci(nvmlDevice_t h, nvmlPciInfo_t *p)
{
    int rc = code();
    text(p->busId, sizeof(p->busId));
    return rc;
}

static nvmlReturn_t f_energy(nvmlDevice_t h, unsigned long long *e)
{
    int rc = code();
    *e = bytes(8);
    return rc;
}

static nvmlReturn_t f_power(nvmlDevice_t h, unsigned *p)
{
    int rc = code();
    *p = (unsigned)bytes(4);
    return rc;
}

/* Writes at most the caller's *count entries, answers any count. */
static nvmlReturn_t f_util(nvmlDevice_t h, nvmlProcessUtilizationSample_t *u, unsigned *count,
                           unsigned long long since)
{
    int rc = code();
    unsigned n = (unsigned)bytes(b8() & 1 ? 4 : 1);
    for (unsigned i = 0; i < n && i < *count && in_at < in_n; i++)
        u[i] = (nvmlProcessUtilizationSample_t){.pid = (unsigned)bytes(2),
                                                .timeStamp = since + bytes(1) - 8,
                                                .smUtil = b8(),
                                                .memUtil = b8()};
    *count = n;
    return rc;
}

static nvmlReturn_t f_procs(nvmlDevice_t h, unsigned *count, nvmlProcessInfo_t *p)
{
    int rc = code();
    unsigned n = (unsigned)bytes(b8() & 1 ? 4 : 1);
    for (unsigned i = 0; i < n && i < *count && in_at < in_n; i++)
        p[i] = (nvmlProcessInfo_t){.pid = (unsigned)bytes(2), .usedGpuMemory = bytes(8)};
    *count = n;
    return rc;
}

static nvmlReturn_t f_mig_mode(nvmlDevice_t h, unsigned *cur, unsigned *pending)
{
    int rc = code();
    *cur = *pending = b8() & 1;
    return rc;
}

static nvmlReturn_t f_mig_count(nvmlDevice_t h, unsigned *n)
{
    int rc = code();
    *n = (unsigned)bytes(4);
    return rc;
}

static nvmlReturn_t f_mig_handle(nvmlDevice_t h, unsigned i, nvmlDevice_t *m)
{
    *m = (nvmlDevice_t)(uintptr_t)(0x1000 + i);
    return code();
}

static void check(const pa_gpu_reading *r)
{
    if (r->ndev < 0 || r->ndev > PA_GPU_MAX_DEVS || r->nproc < 0 || r->nproc > PA_GPU_MAX_PROCS ||
        !memchr(r->note, '\0', sizeof(r->note)))
        fz_fail("nvml: %d devices, %d processes", r->ndev, r->nproc);
    for (int i = 0; i < r->ndev; i++) {
        const pa_gpu_dev *d = &r->dev[i];
        if (!memchr(d->uuid, '\0', sizeof(d->uuid)) || !memchr(d->name, '\0', sizeof(d->name)) ||
            !memchr(d->pdev, '\0', sizeof(d->pdev)) ||
            !memchr(d->nosplit, '\0', sizeof(d->nosplit)) || !(d->energy_j >= 0) ||
            !(d->power_w >= 0) || !isfinite(d->energy_j) || !isfinite(d->power_w))
            fz_fail("nvml: device %d out of bounds", i);
    }
    for (int i = 0; i < r->nproc; i++)
        if (r->proc[i].dev < 0 || r->proc[i].dev >= r->ndev || r->proc[i].pid <= 0 ||
            !(r->proc[i].busy_s >= 0) || !isfinite(r->proc[i].busy_s))
            fz_fail("nvml: process %d out of bounds", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    in = data;
    in_n = size;
    in_at = 0;
    pa_nvml_fns f = {
        .init = f_init,
        .shutdown = f_shutdown,
        .count = f_count,
        .handle = f_handle,
        .name = f_name,
        .uuid = f_name,
        .pci = f_pci,
        .energy = f_energy,
        .power = f_power,
        .utilization = f_util,
        .compute_procs = f_procs,
        .graphics_procs = f_procs,
        .mig_mode = f_mig_mode,
        .mig_count = f_mig_count,
        .mig_handle = f_mig_handle,
    };
    pa_nvml *s = NULL;
    char why[512];
    if (pa_nvml_open_fns(&f, &s, why, sizeof(why)) < 0)
        return 0;
    pa_gpu_reading *r = calloc(1, sizeof(*r));
    for (int w = 0; w < 3 && r; w++)
        if (pa_nvml_read(s, r, why, sizeof(why)) == 0)
            check(r);
    free(r);
    pa_nvml_close(s);
    return 0;
}
