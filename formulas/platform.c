/*
 * platform.c - the component "platform": the whole machine's power (a
 * wall or board meter: acpi-power, ipmi, redfish, http-meter; sensors/
 * wall.h) less what the other components account for (cpu, dram, gpu,
 * nic, whether measured or modelled, each named), the rest of the machine
 * (fans, disks, the board, the power supply's loss); issue 46, DESIGN.md
 * section 19.
 *
 * Each window: the meter's figure aligned to the window (a reading that
 * averages over A seconds and is age seconds old stands for
 * [t - age - A, t - age]; an instant holds until the next one; the
 * window's figure is the overlap-weighted mean of the readings it
 * overlaps), less the others (computed before it: PA_MOD_AFTER_FORMULAS),
 * never below 0.  Its idle part: idle=W, else its lowest power over the
 * windows the CPUs were under 5 % busy, else none.  Its active part, by
 * split=: cpu (the targets' CPU time over the system's busy time, as the
 * cpu component), components (the targets' watts of the other components
 * over the processes' sum), or none (unattributed).  Processes + idle +
 * unattributed = platform, every window.  It also compares the other
 * components' total (the models' figure of the machine) with the wall,
 * each window and as a running mean, in the report's assumed list.
 */
#include "../sensors/wall.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "powerapi_module.h"

static const char *const wall_sensors[] = {"acpi-power", "ipmi", "redfish", "http-meter", NULL};
static const char *const acpi_requires[] = {"acpi-power", NULL};
static const char *const platform_options[] = {"split", "idle", NULL};
static const char *const wall_keys[PA_WALL_NKEYS] = PA_WALL_KEYS;

enum { SPLIT_CPU, SPLIT_COMPONENTS, SPLIT_NONE };
static const char *const split_names[] = {"cpu", "components", "none"};

#define HIST 16

typedef struct wall_entry {
    double end_s, avg_s, power_w; /* end: the frame's clock, in s */
    uint64_t seq;
} wall_entry;

typedef struct platform_state {
    int split;
    double idle_opt;     /* idle=, < 0 none */
    double quiet_w;      /* lowest platform power with the CPUs quiet, < 0 */
    double wall_j;       /* cumulative, for the report's device */
    double platform_j;   /* idem */
    double abs_err, err; /* sums of |model - wall| / wall and the signed */
    unsigned nerr;
    char key[16]; /* the frame key of the history */
    wall_entry h[HIST];
    unsigned nh;
} platform_state;

static int platform_start(pa_module *m, const pa_options *o)
{
    platform_state *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->idle_opt = s->quiet_w = -1;
    const char *sp = pa_options_get(o, "split");
    s->split = -1;
    for (int i = 0; i < 3; i++)
        if (!sp || !strcmp(sp, split_names[i]))
            s->split = s->split < 0 ? i : s->split;
    if (s->split < 0 ||
        (pa_options_get(o, "idle") &&
         (pa_options_get_double(o, "idle", -1, &s->idle_opt) < 0 || s->idle_opt < 0))) {
        free(s);
        pa_module_errorf(m, "platform: split= is cpu, components or none; idle= is watts");
        return -EINVAL;
    }
    pa_module_set_priv(m, s);
    return 0;
}

static void platform_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* This window's wall reading (the first key present), added to the
 * history when new. */
static const pa_wall_reading *wall_take(platform_state *s, const pa_frame_delta *d,
                                        const char **key)
{
    for (int k = 0; k < PA_WALL_NKEYS; k++) {
        size_t n = 0;
        const pa_wall_reading *r = pa_delta_get(d, wall_keys[k], &n, NULL, NULL);
        if (!r || n != sizeof(*r) || !isfinite(r->power_w) || !isfinite(r->age_s))
            continue;
        *key = wall_keys[k];
        if (strcmp(s->key, wall_keys[k])) { /* another meter: a new history */
            snprintf(s->key, sizeof(s->key), "%s", wall_keys[k]);
            s->nh = 0;
        }
        if (!s->nh || s->h[s->nh - 1].seq != r->seq) {
            if (s->nh == HIST)
                memmove(s->h, s->h + 1, (HIST - 1) * sizeof(s->h[0]));
            else
                s->nh++;
            s->h[s->nh - 1] = (wall_entry){(double)r->frame_ns * 1e-9 - r->age_s,
                                           r->avg_s > 0 ? r->avg_s : 0, r->power_w, r->seq};
        }
        return r;
    }
    return NULL;
}

/* The mean over [lo, hi] of the line through (a, pa) and (b, pb). */
static double line_mean(double a, double pa, double b, double pb, double lo, double hi)
{
    double k = b > a ? (pb - pa) / (b - a) : 0;
    return pa + k * ((lo + hi) / 2 - a);
}

/* The wall's power over [t0, t1] from the history: averages stand for
 * their own windows (the overlap-weighted mean of those the window
 * overlaps), instants for points joined by lines (held before the first
 * and after the last); *lag_s > 0 when no averaged reading reaches into
 * the window (the latest is then used). */
static double wall_align(const platform_state *s, double t0, double t1, double *lag_s)
{
    const wall_entry *h = s->h, *last = &s->h[s->nh - 1];
    double wsum = 0, esum = 0;
    *lag_s = 0;
    for (unsigned i = 0; i < s->nh && last->avg_s > 0; i++) {
        double lo = h[i].end_s - h[i].avg_s > t0 ? h[i].end_s - h[i].avg_s : t0;
        double hi = h[i].end_s < t1 ? h[i].end_s : t1;
        if (hi > lo && h[i].avg_s > 0) {
            wsum += hi - lo;
            esum += (hi - lo) * h[i].power_w;
        }
    }
    if (last->avg_s > 0) {
        *lag_s = wsum > 0 ? 0 : t0 - last->end_s;
        return wsum > 0 ? esum / wsum : last->power_w;
    }
    /* instants: before the first and after the last, held */
    double a = h[0].end_s, b = last->end_s;
    if (t0 < a) {
        double hi = t1 < a ? t1 : a;
        wsum += hi - t0, esum += (hi - t0) * h[0].power_w;
    }
    if (t1 > b) {
        double lo = t0 > b ? t0 : b;
        wsum += t1 - lo, esum += (t1 - lo) * last->power_w;
    }
    for (unsigned i = 0; i + 1 < s->nh; i++) {
        double lo = h[i].end_s > t0 ? h[i].end_s : t0,
               hi = h[i + 1].end_s < t1 ? h[i + 1].end_s : t1;
        if (hi > lo) {
            wsum += hi - lo;
            esum += (hi - lo) *
                    line_mean(h[i].end_s, h[i].power_w, h[i + 1].end_s, h[i + 1].power_w, lo, hi);
        }
    }
    *lag_s = t0 > b ? t0 - b : 0;
    return wsum > 0 ? esum / wsum : last->power_w;
}

/* Target i's weight under the split rule (own: this formula's id). */
static double target_weight(const platform_state *s, const pa_frame_delta *d,
                            const pa_power_table *t, size_t i, pa_component own)
{
    if (s->split == SPLIT_CPU)
        return pa_delta_cpu_s(d, i);
    double w = 0;
    for (pa_component c = 1; pa_delta_component_name(d, c); c++)
        if (c != own)
            w += pa_table_target_comp_w(t, i, c);
    return w;
}

/* The active watts split between the targets by the rule: processes by
 * their weight over the denominator, trees their processes' sum, threads
 * their own weight. */
static void split_active(const platform_state *s, const pa_frame_delta *d, pa_power_table *t,
                         double active, pa_component own, double sys_weight)
{
    size_t n = pa_delta_count(d);
    double psum = 0;
    for (size_t i = 0; i < n; i++)
        if (pa_delta_type(d, i) == PA_TARGET_PROCESS)
            psum += target_weight(s, d, t, i, own);
    /* what no watched process explains is not spread over the others
     * unless every process is watched (then it is all theirs: components) */
    double den = s->split == SPLIT_CPU     ? (sys_weight > psum ? sys_weight : psum)
                 : pa_delta_all_watched(d) ? psum
                                           : (sys_weight > psum ? sys_weight : psum);
    double *w = calloc(n + 1, sizeof(double));
    if (!w)
        return;
    for (size_t i = 0; i < n && den > 0 && s->split != SPLIT_NONE; i++) {
        pa_target_type ty = pa_delta_type(d, i);
        if (ty == PA_TARGET_PROCESS || ty == PA_TARGET_THREAD)
            w[i] = active * target_weight(s, d, t, i, own) / den;
        for (size_t j = 0; ty == PA_TARGET_TREE && j < n; j++)
            if (pa_delta_type(d, j) == PA_TARGET_PROCESS &&
                pa_delta_in_tree(d, j, pa_delta_pid(d, i)))
                w[i] += active * target_weight(s, d, t, j, own) / den;
    }
    for (size_t i = 0; i < n; i++)
        if (pa_delta_type(d, i) != 0)
            pa_table_set_target_w(t, i, w[i]);
    free(w);
}

/* What the other components account for: their watts, and in desc each
 * with how it was got. */
static double others_w(const pa_frame_delta *d, const pa_power_table *t, pa_component own,
                       double *sys_weight, int split, char *desc, size_t len)
{
    double dram = 0, sum = 0;
    bool measured = pa_table_measured_get(t, &dram);
    desc[0] = '\0';
    for (pa_component c = 1; pa_delta_component_name(d, c); c++) {
        if (c == own)
            continue;
        double w = pa_table_system_comp_w(t, c);
        sum += w;
        size_t l = strlen(desc);
        snprintf(desc + l, len - l, "%s%s %.2f W%s", l ? ", " : "", pa_delta_component_name(d, c),
                 w, c == PA_COMP_CPU ? (measured ? " measured" : " modelled") : "");
    }
    if (measured && dram > 0) {
        size_t l = strlen(desc);
        snprintf(desc + l, len - l, ", dram %.2f W measured", dram);
        sum += dram;
    }
    *sys_weight = split == SPLIT_CPU ? pa_delta_busy_s(d) : sum - dram;
    return sum;
}

/* The report's records: the meter's, and the platform's with its idle. */
static void put_devices(platform_state *s, pa_power_table *t, const pa_wall_reading *r,
                        const char *key, double wall, double plat, double idle, double sec)
{
    pa_device_info di;
    memset(&di, 0, sizeof(di));
    s->wall_j += wall * sec;
    s->platform_j += plat * sec;
    snprintf(di.component, sizeof(di.component), "wall");
    snprintf(di.vendor, sizeof(di.vendor), "%s", key);
    snprintf(di.name, sizeof(di.name), "%.63s", r->meter);
    snprintf(di.source, sizeof(di.source), "measured");
    di.power_w = wall;
    di.energy_j = s->wall_j;
    di.split = 1;
    pa_table_device(t, &di);
    snprintf(di.component, sizeof(di.component), "platform");
    snprintf(di.name, sizeof(di.name), "wall less the components");
    snprintf(di.source, sizeof(di.source), "measured");
    di.power_w = plat;
    di.idle_w = idle;
    di.energy_j = s->platform_j;
    di.split = s->split != SPLIT_NONE;
    pa_table_device(t, &di);
}

/* The platform's idle part in a window of plat watts. */
static double platform_idle(platform_state *s, const pa_frame_delta *d, double plat)
{
    double cap = pa_delta_capacity_s(d);
    if (s->idle_opt >= 0)
        return s->idle_opt < plat ? s->idle_opt : plat;
    if (cap > 0 && pa_delta_busy_s(d) < 0.05 * cap && (s->quiet_w < 0 || plat < s->quiet_w))
        s->quiet_w = plat;
    return s->quiet_w < 0 ? 0 : s->quiet_w < plat ? s->quiet_w : plat;
}

static int platform_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    platform_state *s = pa_module_priv(m);
    double sec = pa_delta_interval_s(d);
    const char *key = NULL;
    const pa_wall_reading *r = s && sec > 0 ? wall_take(s, d, &key) : NULL;
    if (!r) {
        pa_table_assume(t, "platform: no wall reading in this window (enable acpi-power, ipmi, "
                           "redfish or http-meter)");
        return 0;
    }
    double t1 = (double)r->frame_ns * 1e-9, lag = 0;
    double wall = wall_align(s, t1 - sec, t1, &lag);
    pa_component own = 0;
    for (pa_component c = 1; pa_delta_component_name(d, c); c++)
        if (!strcmp(pa_delta_component_name(d, c), "platform"))
            own = c;
    char desc[256];
    double sys_weight = 0;
    double others = others_w(d, t, own, &sys_weight, s->split, desc, sizeof(desc));
    double plat = wall > others ? wall - others : 0;
    double idle = platform_idle(s, d, plat);
    split_active(s, d, t, plat - idle, own, sys_weight);
    pa_table_set_system_w(t, plat, idle);
    put_devices(s, t, r, key, wall, plat, idle, sec);
    pa_table_assume(t, "platform = wall %.2f W (%s: %s, %s, %.2f s old%s) less %s", wall, key,
                    r->meter, r->how, r->age_s, lag > 0 ? ", behind the window" : "", desc);
    if (!pa_table_measured_get(t, NULL))
        pa_table_assume(t, "platform: cpu modelled (no RAPL): the wall is the measured total, "
                           "the models only split it");
    if (others > wall)
        pa_table_assume(t,
                        "platform: the components account for %.2f W above the wall: "
                        "platform 0 W",
                        others - wall);
    pa_table_assume(t, "platform: idle %.2f W (%s), active split %s", idle,
                    s->idle_opt >= 0  ? "idle= option"
                    : s->quiet_w >= 0 ? "its lowest with the CPUs under 5 % busy"
                                      : "not seen quiet yet: none",
                    s->split == SPLIT_CPU ? "by CPU time (split=cpu)"
                    : s->split == SPLIT_COMPONENTS
                        ? "by the targets' other components (split=components)"
                        : "to no process (split=none): unattributed");
    if (wall > 0) {
        double e = (others - wall) / wall;
        s->err += e;
        s->abs_err += fabs(e);
        s->nerr++;
        pa_table_assume(t,
                        "model vs wall: components %.2f W, wall %.2f W, error %+.1f %% "
                        "(mean %+.1f %%, mean |error| %.1f %% over %u windows)",
                        others, wall, 100 * e, 100 * s->err / s->nerr, 100 * s->abs_err / s->nerr,
                        s->nerr);
    }
    return 0;
}

static int acpi_fits(const pa_env *env, char *why, size_t len)
{
    int rc = pa_env_probe(env, "acpi-power", why, len);
    if (rc == 0)
        snprintf(why, len, "an ACPI power meter measures the whole machine");
    return rc == 0;
}

const pa_module_ops pa__mod_platform = {
    .abi = PA_MODULE_ABI,
    .name = "platform",
    .kind = PA_FORMULA,
    .description = "the rest of the machine: a wall meter (enable one) less the other "
                   "components, split=cpu|components|none",
    .options = platform_options,
    .start = platform_start,
    .stop = platform_stop,
    .compute = platform_compute,
    .uses = wall_sensors,
    .flags = PA_MOD_AFTER_FORMULAS,
    .component_name = "platform",
};

/* What auto chooses where an ACPI power meter exists. */
const pa_module_ops pa__mod_platform_acpi = {
    .abi = PA_MODULE_ABI,
    .name = "platform-acpi",
    .kind = PA_FORMULA,
    .description = "the rest of the machine from the ACPI power meter less the other components",
    .options = platform_options,
    .start = platform_start,
    .stop = platform_stop,
    .compute = platform_compute,
    .requires = acpi_requires,
    .uses = wall_sensors,
    .flags = PA_MOD_AFTER_FORMULAS,
    .component_name = "platform",
    .auto_rank = 100,
    .fits = acpi_fits,
};
