/*
 * demo_gpu.c - the "demo-gpu" sensor, a stand-in for a GPU sensor of
 * issue 28, built into a variant of the library by tests/build_with.sh
 * (-DPA_EXTRA_SOURCES) to prove that a new kind of sensor needs no change
 * to the core: it uses the public module API only.
 *
 * Reads <sysfs>/class/demo-gpu/energy_uj (cumulative µJ of the device,
 * as powercap files are) and hands it to its formulas under the frame key
 * "demo-gpu" (pa_frame_put).  Cannot run where the file is absent.
 */
#include "powerapi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int energy_path(const pa_env *env, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/class/demo-gpu/energy_uj", pa_env_sysfs(env));
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int read_energy_j(const pa_env *env, double *out)
{
    char path[4096];
    int rc = energy_path(env, path, sizeof(path));
    if (rc < 0)
        return rc;
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    unsigned long long uj = 0;
    rc = fscanf(f, "%llu", &uj) == 1 ? 0 : -EINVAL;
    fclose(f);
    if (rc == 0)
        *out = (double)uj / 1e6;
    return rc;
}

static int gpu_probe(const pa_env *env, char *why, size_t len)
{
    double j;
    int rc = read_energy_j(env, &j);
    if (rc < 0)
        snprintf(why, len,
                 "demo-gpu: %s/class/demo-gpu/energy_uj: %s (no "
                 "demo GPU here)",
                 pa_env_sysfs(env), strerror(-rc));
    return rc;
}

static int gpu_sample(pa_module *m, pa_frame *f)
{
    double j;
    int rc = read_energy_j(pa_module_env(m), &j);
    if (rc < 0) {
        pa_module_errorf(m, "demo-gpu: cannot read energy_uj: %s", strerror(-rc));
        return rc;
    }
    return pa_frame_put(f, "demo-gpu", &j, sizeof(j));
}

const pa_module_ops pa__mod_demo_gpu = {
    .abi = PA_MODULE_ABI,
    .name = "demo-gpu",
    .kind = PA_SENSOR,
    .description = "demo GPU energy counter (a test's stand-in)",
    .probe = gpu_probe,
    .sample = gpu_sample,
};
