/*
 * demo_gpu_power.c - the "demo-gpu-power" formula, a stand-in for a GPU
 * formula of issue 28 (see tests/extra/sensors/demo_gpu.c): the component
 * "gpu", chosen by auto where its sensor runs.  The device's power over
 * the window, split between the targets by their CPU time.  Public module
 * API only.
 */
#include "powerapi.h"

#include <stdio.h>

static const char *const demo_requires[] = {"demo-gpu", NULL};

static int demo_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    (void)m;
    size_t n = 0, pn = 0;
    const void *prev = NULL;
    const double *cur = pa_delta_get(d, "demo-gpu", &n, &prev, &pn);
    const double *old = prev;
    double s = pa_delta_interval_s(d);
    if (!cur || !old || n != sizeof(double) || pn != sizeof(double) || s <= 0)
        return 0;
    double w = *cur > *old ? (*cur - *old) / s : 0;
    double busy = 0;
    for (size_t i = 0; i < pa_delta_count(d); i++)
        if (pa_delta_type(d, i) == PA_TARGET_PROCESS)
            busy += pa_delta_cpu_s(d, i);
    for (size_t i = 0; i < pa_delta_count(d); i++)
        pa_table_set_target_w(out, i, busy > 0 ? w * pa_delta_cpu_s(d, i) / busy : 0);
    pa_table_set_system_w(out, w, 0);
    return 0;
}

static int demo_fits(const pa_env *env, char *why, size_t len)
{
    (void)env;
    snprintf(why, len, "a demo GPU is present");
    return 1;
}

const pa_module_ops pa__mod_demo_gpu_power = {
    .abi = PA_MODULE_ABI,
    .name = "demo-gpu-power",
    .kind = PA_FORMULA,
    .description = "demo GPU power split by CPU time (a test's stand-in)",
    .compute = demo_compute,
    .requires = demo_requires,
    .component_name = "gpu",
    .auto_rank = 100,
    .fits = demo_fits,
};
