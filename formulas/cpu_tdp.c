/*
 * cpu_tdp.c - the "cpu-tdp" formula: the E-Surgeon CPU power model
 * (DESIGN.md section 6.1).
 *
 * CMOS dynamic power is P = C.f.V^2.  C is unknown, so it is tied to the
 * thermal design power: at the TDP operating point (f_tdp, V_tdp) the CPU
 * draws about 0.7 x TDP.  At frequency f with voltage V_f:
 *
 *     P_cpu(f) = 0.7 . TDP . (f . V_f^2) / (f_tdp . V_tdp^2)
 *
 * and over a window, with t_f the time the CPUs spent at f (cpufreq
 * time_in_state deltas):
 *
 *     P_cpu = sum_f P_cpu(f) . t_f / sum_f t_f
 *
 * A target gets P_cpu . U, U = its CPU time / the window's CPU capacity
 * (interval x online CPUs, as top counts: share=capacity, the default) or
 * / the CPUs' busy time (share=active: the busy tasks split the whole CPU
 * power).  The system's idle power is the part no task caused: P_cpu .
 * (1 - busy/capacity) with share=capacity; 0 with share=active (all of
 * P_cpu when nothing at all ran).
 *
 * Constants come from the hardware database record matching the model
 * name, or from the options tdp=, ftdp= (MHz), vtdp= (V), volt=
 * (MHZ:V+MHZ:V...), model= (force a record); everything not read from
 * the machine is listed in the table's "assumed" text.
 */
#include "powerapi_module.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At the TDP operating point a CPU draws about 0.7 x TDP (E-Surgeon). */
#define TDP_FACTOR 0.7

/* TDP of an unknown CPU, per online logical CPU.  The median TDP per
 * hardware thread of the records of data/hwdb.txt is 5.4 W (interquartile
 * range 3.8 to 7.8 W): current server parts, where VMs run, sit at 1.4 to
 * 5 W per thread, desktops at 4 to 12 W.  5 W is a round figure in the
 * middle; per CPU, so a 2-vCPU VM gets 10 W and a 64-CPU host 320 W.  The
 * full reasoning is at the top of data/hwdb.txt.  Always labelled assumed. */
#define DEFAULT_W_PER_CPU 5.0

static const char *const cpu_tdp_options[] = {"tdp",  "ftdp",  "vtdp", "share",
                                              "volt", "model", NULL};

typedef struct cpu_tdp {
    /* options; NAN when not given */
    double opt_tdp, opt_ftdp, opt_vtdp;
    bool active;          /* share=active */
    pa_hwdb_cpu opt_volt; /* volt=: only nvolt/volt used */
    bool have_forced;     /* model= */
    pa_hwdb_cpu forced;
    /* the record matched for the model name, looked up once per name */
    bool looked_up;
    char looked_model[96]; /* as long as the frame's model names */
    bool have_rec;
    pa_hwdb_cpu rec;
    char hwdb_note[160]; /* why no record was used, for "assumed" */
} cpu_tdp;

static int opt_positive(const pa_options *o, const char *key, double max, const char *unit,
                        const char *example, double *out)
{
    const char *v = pa_options_get(o, key);
    double d;
    *out = NAN;
    if (!v)
        return 0;
    if (pa_options_get_double(o, key, NAN, &d) < 0 || !(d > 0) || d > max)
        return pa_error_set(-EINVAL,
                            "cpu-tdp: %s=%s is not a %s (> 0, at most %g); write "
                            "e.g. %s",
                            key, v, unit, max, example);
    *out = d;
    return 0;
}

/* Validates opts into st (fresh): nothing changes on error. */
static int parse_options(pa_module *m, const pa_options *opts, cpu_tdp *st)
{
    int rc;
    memset(st, 0, sizeof(*st));
    if ((rc = opt_positive(opts, "tdp", 100000, "power in watts", "tdp=95", &st->opt_tdp)) < 0 ||
        (rc = opt_positive(opts, "ftdp", 100000, "frequency in MHz", "ftdp=2400", &st->opt_ftdp)) <
            0 ||
        (rc = opt_positive(opts, "vtdp", 5, "voltage in volts", "vtdp=1.2", &st->opt_vtdp)) < 0)
        return rc;
    const char *share = pa_options_get(opts, "share");
    if (share && strcmp(share, "capacity") && strcmp(share, "active"))
        return pa_error_set(-EINVAL,
                            "cpu-tdp: share=%s is not known; use share=capacity "
                            "(default: a task's CPU time over the whole CPU "
                            "capacity, like top) or share=active (busy tasks split "
                            "the whole CPU power)",
                            share);
    st->active = share && !strcmp(share, "active");
    const char *volt = pa_options_get(opts, "volt");
    if (volt) {
        char why[160];
        if (pa_hwdb_volt_parse(volt, &st->opt_volt, why, sizeof(why)) < 0)
            return pa_error_set(-EINVAL,
                                "cpu-tdp: volt=%s: %s; write MHZ:VOLTS pairs in "
                                "increasing frequency joined by '+', e.g. "
                                "volt=800:0.75+3200:1.1",
                                volt, why);
    }
    const char *path = pa_module_hwdb(m);
    if (path && access(path, R_OK) < 0)
        return pa_error_set(-errno,
                            "cpu-tdp: cannot read the hardware database %s: %s; "
                            "fix --hwdb / $POWERAPI_HWDB, or set tdp= and ftdp=",
                            path, strerror(errno));
    const char *model = pa_options_get(opts, "model");
    if (model) {
        if (!path)
            return pa_error_set(-ENOENT,
                                "cpu-tdp: model=%s needs the hardware database, "
                                "which is not installed; give it with --hwdb FILE "
                                "or set tdp= and ftdp=",
                                model);
        rc = pa_hwdb_cpu_find(path, model, &st->forced);
        if (rc == -ENOENT)
            return pa_error_set(-EINVAL,
                                "cpu-tdp: model=%s matches no cpu record of %s; use "
                                "a match string of that file (e.g. model=Q6600) or "
                                "set tdp= and ftdp=",
                                model, path);
        if (rc < 0)
            return rc;
        st->have_forced = true;
    } else if (path) {
        /* validate the whole file now: a broken line fails the enable
         * with its file:line rather than the first tick */
        pa_hwdb_cpu tmp;
        rc = pa_hwdb_cpu_find(path, "", &tmp);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    return 0;
}

static int cpu_tdp_probe(const pa_env *env, char *why, size_t why_len)
{
    (void)env;
    if (why_len)
        why[0] = '\0';
    return 0; /* a model: runs anywhere procfs-cpu does */
}

static int cpu_tdp_start(pa_module *m, const pa_options *opts)
{
    cpu_tdp *st = malloc(sizeof(*st));
    if (!st)
        return pa_error_set(-ENOMEM, "cpu-tdp: out of memory");
    int rc = parse_options(m, opts, st);
    if (rc < 0) {
        free(st);
        return rc;
    }
    pa_module_set_priv(m, st);
    return 0;
}

static int cpu_tdp_configure(pa_module *m, const pa_options *opts)
{
    cpu_tdp fresh;
    int rc = parse_options(m, opts, &fresh);
    if (rc < 0)
        return rc;
    cpu_tdp *st = pa_module_priv(m);
    if (!st)
        return pa_error_set(-EINVAL, "cpu-tdp: configure before start");
    *st = fresh; /* looked_up is false: the record is matched again */
    return 0;
}

static void cpu_tdp_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* Matches the model name against the database, once per name. */
static int lookup(pa_module *m, cpu_tdp *st, const char *model)
{
    if (st->looked_up && !strcmp(st->looked_model, model))
        return 0;
    st->have_rec = false;
    st->hwdb_note[0] = '\0';
    const char *path = pa_module_hwdb(m);
    if (!path) {
        snprintf(st->hwdb_note, sizeof(st->hwdb_note), "no hardware database installed");
    } else if (*model) {
        int rc = pa_hwdb_cpu_find(path, model, &st->rec);
        if (rc == 0)
            st->have_rec = true;
        else if (rc != -ENOENT)
            return rc; /* broken or vanished file: the module fails */
    }
    snprintf(st->looked_model, sizeof(st->looked_model), "%s", model);
    st->looked_up = true;
    return 0;
}

/* Voltage at mhz from a table sorted by frequency: linear between the
 * neighbours, the end value outside.  *how: 0 exact, 1 interpolated,
 * 2 clamped. */
static double volt_at(const pa_hwdb_cpu *t, double mhz, int *how)
{
    size_t n = t->nvolt;
    if (mhz <= t->volt[0].mhz || n == 1) {
        *how = mhz == t->volt[0].mhz ? 0 : 2;
        return t->volt[0].volt;
    }
    if (mhz >= t->volt[n - 1].mhz) {
        *how = mhz == t->volt[n - 1].mhz ? 0 : 2;
        return t->volt[n - 1].volt;
    }
    size_t i = 1;
    while (t->volt[i].mhz < mhz)
        i++;
    if (t->volt[i].mhz == mhz) {
        *how = 0;
        return t->volt[i].volt;
    }
    double f0 = t->volt[i - 1].mhz, f1 = t->volt[i].mhz;
    double v0 = t->volt[i - 1].volt, v1 = t->volt[i].volt;
    *how = 1;
    return v0 + (v1 - v0) * (mhz - f0) / (f1 - f0);
}

/* "@ 2.80GHz" at the end of Intel model names. */
static double mhz_from_model(const char *model)
{
    const char *at = strrchr(model, '@');
    if (!at)
        return 0;
    char *end;
    double v = strtod(at + 1, &end);
    if (end == at + 1 || !(v > 0))
        return 0;
    while (*end == ' ')
        end++;
    if (!strncmp(end, "GHz", 3))
        return v * 1000;
    if (!strncmp(end, "MHz", 3))
        return v;
    return 0;
}

static void assume(pa_power_table *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void assume(pa_power_table *out, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    pa_table_assume(out, "%s", text);
}

/* The TDP of the whole machine, in W. */
static double window_tdp(const cpu_tdp *st, const pa_hwdb_cpu *rec, const char *model,
                         unsigned ncpus, pa_power_table *out)
{
    double tdp;
    if (!isnan(st->opt_tdp)) {
        tdp = st->opt_tdp;
        assume(out, "tdp=%gW (option)", tdp);
    } else if (rec && rec->threads && ncpus > rec->threads) {
        double pk = floor((double)ncpus / rec->threads + 0.5);
        tdp = rec->tdp_w * pk;
        assume(out, "tdp=%gW (hwdb \"%s\": %gW x %g packages of %u threads)", tdp, rec->match,
               rec->tdp_w, pk, rec->threads);
    } else if (rec && rec->threads && ncpus < rec->threads) {
        tdp = rec->tdp_w * ncpus / rec->threads;
        assume(out,
               "tdp=%gW (hwdb \"%s\": %gW x %u/%u threads online: VM or CPUs "
               "offline)",
               tdp, rec->match, rec->tdp_w, ncpus, rec->threads);
    } else if (rec) {
        tdp = rec->tdp_w;
        assume(out, "tdp=%gW (hwdb \"%s\")", tdp, rec->match);
    } else {
        tdp = DEFAULT_W_PER_CPU * ncpus;
        assume(out, "tdp=%gW (default %gW x %u CPUs for unknown CPU '%s'%s%s)", tdp,
               DEFAULT_W_PER_CPU, ncpus, *model ? model : "(no name)", st->hwdb_note[0] ? ": " : "",
               st->hwdb_note);
    }
    return tdp;
}

/* f_tdp in MHz (0: unknown); f_max: the window's highest cpufreq
 * frequency, have_freq: whether it has any. */
static double window_ftdp(const cpu_tdp *st, const pa_hwdb_cpu *rec, const pa_frame_delta *d,
                          const char *model, bool have_freq, double f_max, pa_power_table *out)
{
    double ftdp = 0;
    if (!isnan(st->opt_ftdp)) {
        ftdp = st->opt_ftdp;
        assume(out, "ftdp=%gMHz (option)", ftdp);
    } else if (rec) {
        ftdp = rec->base_mhz;
        assume(out, "ftdp=%gMHz (hwdb \"%s\")", ftdp, rec->match);
    } else if ((ftdp = mhz_from_model(model)) > 0) {
        assume(out, "ftdp=%gMHz (from the model name)", ftdp);
    } else if (pa_delta_nominal_mhz(d) > 0) {
        ftdp = pa_delta_nominal_mhz(d);
        assume(out, "ftdp=%gMHz (cpuinfo frequency)", ftdp);
    } else if (have_freq) {
        ftdp = f_max;
        assume(out, "ftdp=%gMHz (highest cpufreq frequency)", ftdp);
    }
    return ftdp;
}

/* The voltage table (NULL: none) and V_tdp in *vtdp. */
static const pa_hwdb_cpu *window_volt(const cpu_tdp *st, const pa_hwdb_cpu *rec, double ftdp,
                                      double *vtdp, pa_power_table *out)
{
    const pa_hwdb_cpu *vt = st->opt_volt.nvolt ? &st->opt_volt : rec && rec->nvolt ? rec : NULL;
    if (vt == &st->opt_volt)
        assume(out, "V per frequency from option volt=");
    else if (vt)
        assume(out, "V per frequency from hwdb \"%s\"", rec->match);
    *vtdp = 1;
    int how = 0;
    if (!isnan(st->opt_vtdp)) {
        *vtdp = st->opt_vtdp;
        assume(out, "vtdp=%gV (option)", *vtdp);
    } else if (vt && ftdp > 0) {
        *vtdp = volt_at(vt, ftdp, &how);
        if (how)
            assume(out, "vtdp=%.4gV (%s at %gMHz)", *vtdp,
                   how == 1 ? "interpolated" : "nearest table value", ftdp);
    }
    if (!vt)
        assume(out, "V constant (no voltage table): P proportional to f");
    return vt;
}

/* P_cpu over the window: each frequency's time at TDP x f V^2 / (f_tdp
 * V_tdp^2), or the nominal frequency without cpufreq (t_all 0). */
static double window_pcpu(const pa_frame_delta *d, const pa_hwdb_cpu *vt, double tdp, double ftdp,
                          double vtdp, double t_all, pa_power_table *out)
{
    if (!(t_all > 0 && ftdp > 0)) {
        /* no cpufreq (VMs): the CPUs run at the nominal frequency, f =
         * f_tdp, so P = 0.7 x TDP */
        if (ftdp > 0)
            assume(out, "f=%gMHz (no cpufreq: nominal)", ftdp);
        else
            assume(out, "f=f_tdp (no cpufreq, nominal frequency unknown)");
        return TDP_FACTOR * tdp;
    }
    double sum = 0;
    unsigned interp = 0, clamped = 0;
    pa_freq_time ft;
    for (size_t i = 0; pa_delta_freq(d, i, &ft) == 0; i++) {
        if (!ft.time_ns)
            continue;
        double f = ft.khz / 1000.0;
        double v = vtdp;
        if (vt) {
            int how = 0;
            v = volt_at(vt, f, &how);
            interp += how == 1;
            clamped += how == 2;
        }
        double p = TDP_FACTOR * tdp * (f * v * v) / (ftdp * vtdp * vtdp);
        sum += p * (double)ft.time_ns;
    }
    if (interp)
        assume(out, "V interpolated linearly for %u frequencies", interp);
    if (clamped)
        assume(out, "V of the nearest table end for %u frequencies", clamped);
    return sum / t_all;
}

/* The window's CPU power split over the tasks by CPU time, and its idle
 * part. */
static void window_attribute(const cpu_tdp *st, const pa_frame_delta *d, double p_cpu,
                             pa_power_table *out)
{
    bool summed;
    double busy = pa_delta_cpu_busy_s(d, &summed);
    if (summed) {
        assume(out, "busy time = sum of the processes seen (no system CPU "
                    "time)");
    }
    double cap = pa_delta_capacity_s(d);
    double denom = st->active ? busy : cap;
    for (size_t i = 0; i < pa_delta_count(d); i++)
        pa_table_set_target_w(out, i, denom > 0 ? p_cpu * pa_delta_cpu_s(d, i) / denom : 0);
    double idle_w;
    if (st->active) {
        idle_w = busy > 0 ? 0 : p_cpu;
    } else {
        double used = cap > 0 ? busy / cap : 0;
        if (used > 1)
            used = 1;
        idle_w = p_cpu * (1 - used);
    }
    pa_table_set_system_w(out, p_cpu, idle_w);
}

static int cpu_tdp_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    cpu_tdp *st = pa_module_priv(m);
    if (!st)
        return pa_error_set(-EINVAL, "cpu-tdp: compute before start");
    const char *model = pa_delta_cpu_model(d);
    int rc = lookup(m, st, model);
    if (rc < 0)
        return rc;
    const pa_hwdb_cpu *rec = st->have_forced ? &st->forced : st->have_rec ? &st->rec : NULL;
    unsigned ncpus = pa_delta_ncpus(d);
    double tdp = window_tdp(st, rec, model, ncpus, out);

    /* highest cpufreq frequency of the window, and its total time */
    double t_all = 0, f_max = 0;
    pa_freq_time ft;
    for (size_t i = 0; pa_delta_freq(d, i, &ft) == 0; i++) {
        t_all += (double)ft.time_ns;
        if (ft.khz / 1000.0 > f_max)
            f_max = ft.khz / 1000.0;
    }
    bool have_freq = t_all > 0;

    double ftdp = window_ftdp(st, rec, d, model, have_freq, f_max, out);
    double vtdp;
    const pa_hwdb_cpu *vt = window_volt(st, rec, ftdp, &vtdp, out);
    double p_cpu = window_pcpu(d, vt, tdp, ftdp, vtdp, have_freq ? t_all : 0, out);
    window_attribute(st, d, p_cpu, out);
    return 0;
}

/* busy/idle time, time per frequency, the CPU model and every target's CPU
 * time all come from procfs-cpu */
static const char *const cpu_tdp_requires[] = {"procfs-cpu", NULL};

/* Auto's last choice for the CPU: it runs anywhere; why says what the
 * formulas ranked above it lacked. */
static int cpu_tdp_fits(const pa_env *env, char *why, size_t len)
{
    char curve[200];
    pa_curve_match(env, curve, sizeof(curve));
    snprintf(why, len, "no RAPL; %s: TDP model", curve);
    return 1;
}

const pa_module_ops pa__mod_cpu_tdp = {
    .abi = PA_MODULE_ABI,
    .name = "cpu-tdp",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .description = "CPU power model 0.7 x TDP x f.V^2/(f_tdp.V_tdp^2), "
                   "split by CPU time (E-Surgeon)",
    .options = cpu_tdp_options,
    .probe = cpu_tdp_probe,
    .start = cpu_tdp_start,
    .compute = cpu_tdp_compute,
    .configure = cpu_tdp_configure,
    .stop = cpu_tdp_stop,
    .requires = cpu_tdp_requires,
    .component_name = "cpu",
    .auto_rank = 100,
    .fits = cpu_tdp_fits,
};
