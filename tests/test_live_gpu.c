/*
 * test_live_gpu.c - the GPU component on this machine's own GPU (issue
 * 28): runs where NVML finds a device (the nvml sensor's probe on the real
 * libnvidia-ml.so.1) or a DRM device with a power reading exists (drm-gpu's
 * probe on /sys), and says why it skipped otherwise (both reasons, from
 * the probes: no GPU costs two probes, a few milliseconds).
 *
 * With a GPU: a load runs under `powerapi monitor --format json -- LOAD`
 * for 4 s: a CUDA program built with nvcc where nvcc is present (NVIDIA),
 * else glmark2 or vkcube, whichever the machine has.  The command's tree
 * must get GPU energy, and most of the devices' active energy (above
 * their idle parts) over the run: more than half.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Why no GPU here ("" when there is one): the two probes' reasons. */
static void gpu_here(char *why, size_t len)
{
    pa_ctx *ctx = NULL;
    pa_ctx_opts o = {.hwdb = PA_TEST_HWDB};
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    pa_module_info nv, drm;
    ck_assert_int_eq(pa_module_get(ctx, "nvml", &nv), 0);
    ck_assert_int_eq(pa_module_get(ctx, "drm-gpu", &drm), 0);
    if (nv.available || drm.available)
        why[0] = '\0';
    else
        snprintf(why, len, "%s; %s", nv.why, drm.why);
    pa_ctx_free(ctx);
}

/* A GPU load the machine can run, as a shell command, or NULL. */
static const char *gpu_load(const char *dir, char *buf, size_t len)
{
    if (system("command -v nvcc >/dev/null 2>&1") == 0) {
        char cmd[8192];
        snprintf(cmd, sizeof(cmd),
                 "printf '%%s\\n' '__global__ void k(float *x){float v=threadIdx.x;"
                 "for(int i=0;i<(1<<22);i++)v=v*1.0000001f+1e-7f;x[threadIdx.x]=v;}' "
                 "'int main(){float *x;cudaMalloc(&x,4096);for(int r=0;r<400;r++)"
                 "{k<<<1024,1024>>>(x);cudaDeviceSynchronize();}return 0;}' > %s/load.cu && "
                 "nvcc -o %s/load %s/load.cu",
                 dir, dir, dir);
        if (system(cmd) == 0) {
            snprintf(buf, len, "timeout 4 %s/load", dir);
            return buf;
        }
    }
    if (system("command -v glmark2 >/dev/null 2>&1") == 0)
        return "timeout 4 glmark2 --off-screen";
    if (system("command -v vkcube >/dev/null 2>&1") == 0)
        return "timeout 4 vkcube";
    return NULL;
}

START_TEST(load_gets_the_active_power)
{
    char why[600];
    gpu_here(why, sizeof(why));
    if (why[0]) {
        fprintf(stderr, "test_live_gpu: SKIPPED: no GPU here: %s\n", why);
        return;
    }
    char *dir = pa_test_tmpdir(), buf[4400];
    const char *load = gpu_load(dir, buf, sizeof(buf));
    if (!load) {
        fprintf(stderr, "test_live_gpu: SKIPPED: a GPU, but no load to run (no nvcc, glmark2 "
                        "or vkcube)\n");
        pa_test_rmtree(dir);
        return;
    }
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "%s monitor --format json --interval 500ms -- sh -c '%s' 2>/dev/null | "
             "python3 -c 'import json,sys\n"
             "recs=[json.loads(l) for l in sys.stdin if l.startswith(\"{\")]\n"
             "dev=sum(max(0,d[\"power_w\"]-d[\"idle_w\"])*r[\"interval_s\"] for r in recs "
             "if r[\"type\"]==\"system\" for d in r.get(\"devices\",[]))\n"
             "tree=[r for r in recs if r[\"type\"]!=\"system\"]\n"
             "mine=max([r[\"energy_j\"].get(\"gpu\",0) for r in tree] or [0])\n"
             "print(\"%%.3f %%.3f\" %% (mine, dev))'",
             CLI_PATH, load);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    double mine = 0, active = 0;
    ck_assert_msg(out && sscanf(out, "%lf %lf", &mine, &active) == 2, "%s", out ? out : "");
    fprintf(stderr, "test_live_gpu: %s: %.3f J of the devices' %.3f J active\n", load, mine,
            active);
    ck_assert_msg(mine > 0 && mine > 0.5 * active, "the load got %.3f J of %.3f J active", mine,
                  active);
    free(out);
    pa_test_rmtree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, load_gets_the_active_power);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
