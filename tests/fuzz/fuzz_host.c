/* fuzz_host.c - the file a host's `daemon --export-vms` writes for a guest
 * (powerapi-vm, version 1; DESIGN.md section 18.1), read by the guest's
 * host sensor and split by host-share (section 18.2).  Pieces: the file
 * before the sensor starts (its probe reads it), before tick 1 and before
 * tick 2; a missing piece removes the file (the share gone).  Checked: an
 * enable that fails says why; the windows' cpu watts are finite and never
 * negative, measured by the host or modelled; where the file has a GPU
 * zone (gpu_energy_uj: auto runs host-gpu-share), the gpu watts of the
 * system and of every target are finite and never negative. */
#include "fuzz.h"

#include "powerapi.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define REL "rootfs/run/powerapi-host/powerapi-vm"

static void put(const char *root, const fz_piece *pc, size_t n, size_t i)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/" REL, root);
    if (i < n)
        fz_write(root, REL, pc[i].p, pc[i].n);
    else
        unlink(path);
}

static void check_window(pa_ctx *ctx)
{
    pa_report *r = NULL;
    if (pa_report_get(ctx, &r) < 0)
        return; /* no window yet */
    double w = r->system.cpu_w;
    if (!isfinite(w) || w < 0)
        fz_fail("host: system cpu %g W", w);
    if (strcmp(r->cpu_source, "host") && strcmp(r->cpu_source, "model"))
        fz_fail("host: cpu_source '%s'", r->cpu_source);
    for (size_t k = 0; k < r->ncomponents; k++) {
        if (strcmp(r->component_names[k], "gpu"))
            continue;
        double g = r->system_component_w[k];
        if (!isfinite(g) || g < 0)
            fz_fail("host: system gpu %g W", g);
        for (size_t i = 0; i < r->ntargets; i++) {
            g = r->target_component_w[i * r->ncomponents + k];
            if (!isfinite(g) || g < 0)
                fz_fail("host: target %zu gpu %g W", i, g);
        }
    }
    pa_report_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[3];
    size_t n = fz_split(data, size, pc, 3);
    const char *root = fz_root("vm-nocpufreq");
    char proc[4200], sys[4200], rootfs[4200];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", root);
    put(root, pc, n, 0);
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .rootfs = rootfs, .hwdb = PA_TEST_HWDB};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0)
        fz_fail("host: pa_ctx_new: %s", pa_last_error());
    int rc = pa_module_enable(ctx, "host-share", NULL);
    if (rc < 0 && !pa_last_error()[0])
        fz_fail("host: enable failed (%d) without a message", rc);
    pa_module_disable(ctx, "nic-linear");
    pa_watch_all(ctx, 1);
    for (unsigned t = 1; t <= 3; t++) {
        if (t > 1)
            put(root, pc, n, t - 1);
        if (pa_tick_at(ctx, t * 1000000000ull) == 0)
            check_window(ctx);
    }
    pa_ctx_free(ctx);
    return 0;
}
