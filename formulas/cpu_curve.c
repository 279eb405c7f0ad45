/*
 * cpu_curve.c - the "cpu-curve" formula: CPU power from a load-power
 * curve P(u) of the utilisation u of the window.
 *
 * Where the curve comes from, first found:
 *   points=LOAD%:W+...   option (per= says of what: server, package, vcpu)
 *   calibration=FILE     a file of `powerapi calibrate` (or, when neither
 *                        option is given, $POWERAPI_CALIBRATION or the
 *                        standard place, if it was made on this CPU model)
 *   model=MATCH          a hwdb "curve" record forced by match string
 *   hwdb                 the "curve" record matching the model name
 *   default              DEFAULT_MIN_W..DEFAULT_MAX_W per vCPU (assumed)
 *
 * Scaled to this machine: a per-vCPU curve times the online CPUs; a
 * per-package curve summed over the packages, each at its own CPUs'
 * utilisation; a whole-server curve measured on T logical CPUs in K
 * packages is evaluated per package (each gets P/K at its own
 * utilisation) when this machine has the same K packages and per-CPU
 * times, scaled by n/T when only n < T CPUs are online (a VM's share of
 * the host) and by round(n/T) servers when n > T.
 *
 * Frequency (cpufreq present and a reference frequency known): the dynamic
 * part P(u) - P(0) is scaled by f/f_ref, f the time-weighted frequency of
 * the window, as cpu-tdp scales with f at constant voltage; a calibration
 * with curves at 2 or more frequencies (fpoint lines) is instead evaluated
 * at f, linearly between the curves of the two nearest frequencies.
 *
 * Attribution, as rapl-share splits measured power: the static part P(0)
 * is the system's idle power; the dynamic part is split between the
 * targets by CPU time (by cycles when the perf sensor counts them).  When
 * every process is watched the weights are the processes' sum and idle =
 * P - what the processes got, so tasks + idle = P every window.
 *
 * Self-calibration: when a RAPL package reading is in the window (the
 * rapl sensor is enabled), each window's measured package (+DRAM) power
 * refines a bounded table of 11 load bins (robust running means; a window
 * further than 4 mean absolute deviations from its bin is rejected), the
 * model's relative error before the update is averaged into model_error,
 * and the curve used is the learned one where a bin has enough windows.
 * With save=FILE the learned bins that have enough windows (at least 2 of
 * them) are written when the formula stops or is reconfigured, in the
 * calibration file format (pa_calibration_write) with the running error as the
 * validation mean, so that a later run without RAPL (a VM on the same
 * hardware) uses the learned curve with its error: calibration=FILE.
 */
#include "powerapi_module.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CC_PATH_MAX 4096

/* The default curve, per vCPU (see PA_CURVE_VCPU_MIN_W). */
#define DEFAULT_MIN_W PA_CURVE_VCPU_MIN_W
#define DEFAULT_MAX_W PA_CURVE_VCPU_MAX_W
#define DEFAULT_SOURCE                                                                             \
    "Cloud Carbon Footprint methodology, AWS average min/max watts per "                           \
    "vCPU (from SPECpower_ssj2008)"

#define NBINS 11
#define LEARN_MIN 5 /* windows before a bin's mean is used */

static const char *const curve_options[] = {"points", "per",   "calibration", "model",
                                            "fref",   "learn", "save",        NULL};

typedef enum src_kind {
    SRC_OPTION,
    SRC_CALIB,
    SRC_FORCED,
    SRC_HWDB,
    SRC_DEFAULT,
} src_kind;

typedef struct bin {
    unsigned n;
    double u, w, mad; /* running means: utilisation, watts, |deviation| */
} bin;

typedef struct cpu_curve {
    bool have_fixed; /* option, calibration or model= */
    src_kind fixed_kind;
    pa_curve fixed;
    bool calib_auto;     /* calibration found at the standard place */
    char calib_bad[300]; /* "$POWERAPI_CALIBRATION not used: why" */
    double opt_fref;     /* NAN when not given */
    bool learn;
    /* curve from the model name, looked up once per name */
    bool looked_up;
    char looked_model[96];
    bool have_rec;
    pa_curve rec;
    double rec_mhz; /* base MHz of the hwdb cpu record, 0 unknown */
    /* CPU -> package of this machine, read at start */
    unsigned npk;
    int pk_id[64];
    unsigned ncpu_map;
    int16_t cpu_pk[PA_MAX_CPUS]; /* physical package id, -1 unknown */
    /* self-calibration */
    bin bins[NBINS];
    unsigned long learned, rejected;
    double err_sum;
    unsigned long err_n;
    double f_sum; /* MHz summed over the learned windows with cpufreq */
    unsigned long f_n;
    unsigned learn_cpus;    /* CPUs online in the last learned window */
    char save[CC_PATH_MAX]; /* save=FILE, "" when not given */
} cpu_curve;

/* This machine's packages: the CPU -> package map and the distinct ids. */
static void topo_read(const pa_env *env, cpu_curve *st)
{
    st->npk = 0;
    st->ncpu_map = pa_env_cpu_packages(env, st->cpu_pk, PA_MAX_CPUS);
    for (unsigned i = 0; i < st->ncpu_map; i++) {
        unsigned k = 0;
        while (k < st->npk && st->pk_id[k] != st->cpu_pk[i])
            k++;
        if (st->cpu_pk[i] >= 0 && k == st->npk && st->npk < 64)
            st->pk_id[st->npk++] = st->cpu_pk[i];
    }
}

/* save=FILE: a name whose folder is writable now. */
static int parse_save(const char *save, cpu_curve *st)
{
    if (!st->learn)
        return pa_error_set(-EINVAL, "cpu-curve: save= keeps what learning "
                                     "finds; it does not go with learn=off");
    if (!*save || strlen(save) + 5 >= sizeof(st->save))
        return pa_error_set(-EINVAL, "cpu-curve: save=%s: give a file name", save);
    char dir[CC_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", save);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    if (access(dir, W_OK) < 0)
        return pa_error_set(-errno,
                            "cpu-curve: save=%s: directory %s is not "
                            "writable: %s; create it or choose another file",
                            save, dir, strerror(errno));
    snprintf(st->save, sizeof(st->save), "%s", save);
    return 0;
}

/* points=LOAD%:WATTS+... with per=: the fixed curve. */
static int parse_points(const char *points, const char *per, cpu_curve *st)
{
    char why[160] = "";
    pa_curve *c = &st->fixed;
    c->packages = 1;
    c->error = -1;
    if (pa_curve_points_parse(points, c, why, sizeof(why)) == 0 && c->n < 2)
        snprintf(why, sizeof(why), "at least 2 points");
    if (c->n < 2 || why[0])
        return pa_error_set(-EINVAL,
                            "cpu-curve: points=%s: %s; write LOAD%%:WATTS "
                            "pairs joined by '+', e.g. points=0:40+50:70+100:95",
                            points, why);
    c->per = PA_CURVE_SERVER;
    if (per && !strcmp(per, "package"))
        c->per = PA_CURVE_PACKAGE;
    else if (per && !strcmp(per, "vcpu"))
        c->per = PA_CURVE_VCPU;
    else if (per && strcmp(per, "server") && strcmp(per, "machine"))
        return pa_error_set(-EINVAL,
                            "cpu-curve: per=%s: use machine (the points are "
                            "the whole machine's, the default), package or "
                            "vcpu",
                            per);
    snprintf(c->source, sizeof(c->source), "option points=");
    snprintf(c->match, sizeof(c->match), "points");
    st->have_fixed = true;
    st->fixed_kind = SRC_OPTION;
    return 0;
}

/* The curve the options fix (points=, calibration=, model=), or else the
 * hardware database checked now, not at the first tick. */
static int parse_curve(pa_module *m, const pa_options *o, cpu_curve *st)
{
    const char *points = pa_options_get(o, "points");
    const char *calib = pa_options_get(o, "calibration");
    const char *model = pa_options_get(o, "model");
    int rc;
    if (points)
        return parse_points(points, pa_options_get(o, "per"), st);
    if (calib) {
        if ((rc = pa_calibration_read(calib, &st->fixed)) < 0)
            return rc;
        st->have_fixed = true;
        st->fixed_kind = SRC_CALIB;
        return 0;
    }
    const char *path = pa_module_hwdb(m);
    if (model) {
        rc = path ? pa_hwdb_curve_find(path, model, &st->fixed) : -ENOENT;
        if (rc == -ENOENT)
            return pa_error_set(-EINVAL,
                                "cpu-curve: model=%s matches no curve record of "
                                "%s; use a match string of a 'curve' line of that "
                                "file or give points=",
                                model, path ? path : "the hardware database");
        if (rc < 0)
            return rc;
        st->have_fixed = true;
        st->fixed_kind = SRC_FORCED;
        return 0;
    }
    if (path) {
        pa_curve tmp;
        rc = pa_hwdb_curve_find(path, "", &tmp);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    return 0;
}

static int parse_options(pa_module *m, const pa_options *o, cpu_curve *st)
{
    memset(st, 0, sizeof(*st));
    st->opt_fref = NAN;
    st->learn = true;
    const char *points = pa_options_get(o, "points");
    const char *per = pa_options_get(o, "per");
    const char *calib = pa_options_get(o, "calibration");
    const char *model = pa_options_get(o, "model");
    const char *learn = pa_options_get(o, "learn");
    const char *save = pa_options_get(o, "save");
    int rc;
    if ((points != NULL) + (calib != NULL) + (model != NULL) > 1)
        return pa_error_set(-EINVAL, "cpu-curve: give only one of points=, calibration= "
                                     "and model=");
    if (per && !points)
        return pa_error_set(-EINVAL, "cpu-curve: per= goes with points=");
    if (learn && strcmp(learn, "on") && strcmp(learn, "off"))
        return pa_error_set(-EINVAL, "cpu-curve: learn=%s: use on or off", learn);
    st->learn = !learn || !strcmp(learn, "on");
    if (save && (rc = parse_save(save, st)) < 0)
        return rc;
    if (pa_options_get(o, "fref")) {
        double f;
        if (pa_options_get_double(o, "fref", NAN, &f) < 0 || !(f > 0) || f > 100000)
            return pa_error_set(-EINVAL,
                                "cpu-curve: fref=%s is not a frequency in MHz; "
                                "write e.g. fref=2400",
                                pa_options_get(o, "fref"));
        st->opt_fref = f;
    }
    if ((rc = parse_curve(m, o, st)) < 0)
        return rc;
    topo_read(pa_module_env(m), st);
    return 0;
}

static int curve_probe(const pa_env *env, char *why, size_t len)
{
    pa_curve_match(env, why, len);
    return 0; /* a model: runs anywhere procfs-cpu does */
}

static int curve_start(pa_module *m, const pa_options *opts)
{
    cpu_curve *st = malloc(sizeof(*st));
    if (!st)
        return pa_error_set(-ENOMEM, "cpu-curve: out of memory");
    int rc = parse_options(m, opts, st);
    if (rc < 0) {
        free(st);
        return rc;
    }
    pa_module_set_priv(m, st);
    return 0;
}

static int learned_bins(const cpu_curve *st)
{
    int have = 0;
    for (int b = 0; b < NBINS; b++)
        have += st->bins[b].n >= LEARN_MIN;
    return have;
}

/* save=FILE: the learned bins with enough windows, as a calibration file
 * of this CPU model and CPU count, model_error as the validation mean.
 * Nothing is written before 2 bins are learned (from RAPL windows only:
 * learn() runs only on windows with a RAPL package reading). */
static int save_learned(const cpu_curve *st)
{
    if (!st->save[0] || learned_bins(st) < 2)
        return 0;
    pa_curve c;
    double res[NBINS];
    memset(&c, 0, sizeof(c));
    snprintf(c.match, sizeof(c.match), "%s", st->looked_model);
    c.mhz = st->f_n ? st->f_sum / st->f_n : 0;
    for (int b = 0; b < NBINS; b++) {
        const bin *x = &st->bins[b];
        if (x->n < LEARN_MIN)
            continue;
        double u = x->u;
        if (c.n && u <= c.load[c.n - 1])
            u = c.load[c.n - 1] + 1e-4;
        c.load[c.n] = u;
        c.watts[c.n] = x->w;
        res[c.n++] = x->mad;
    }
    double err = st->err_n ? st->err_sum / st->err_n * 100 : -1;
    return pa_calibration_write(st->save, &c, res, st->learn_cpus ? st->learn_cpus : 1, err, -1,
                                -1);
}

static int curve_configure(pa_module *m, const pa_options *opts)
{
    cpu_curve *fresh = malloc(sizeof(*fresh));
    if (!fresh)
        return pa_error_set(-ENOMEM, "cpu-curve: out of memory");
    int rc = parse_options(m, opts, fresh);
    if (rc < 0) {
        free(fresh);
        return rc;
    }
    cpu_curve *old = pa_module_priv(m);
    if (old)
        save_learned(old);
    free(old);
    pa_module_set_priv(m, fresh);
    return 0;
}

static void curve_stop(pa_module *m)
{
    cpu_curve *st = pa_module_priv(m);
    if (st)
        save_learned(st); /* stop cannot fail: see the assumed line */
    free(st);
    pa_module_set_priv(m, NULL);
}

static int lookup(pa_module *m, cpu_curve *st, const char *model)
{
    if (st->looked_up && !strcmp(st->looked_model, model))
        return 0;
    st->have_rec = false;
    st->calib_auto = false;
    st->rec_mhz = 0;
    const char *path = pa_module_hwdb(m);
    if (!st->have_fixed && *model) {
        char cpath[CC_PATH_MAX];
        if (pa_calibration_find(pa_module_env(m), model, &st->rec, cpath, sizeof(cpath),
                                st->calib_bad, sizeof(st->calib_bad))) {
            st->have_rec = true;
            st->calib_auto = true;
        } else if (path) {
            int rc = pa_hwdb_curve_find(path, model, &st->rec);
            if (rc == 0)
                st->have_rec = true;
            else if (rc != -ENOENT)
                return rc;
        }
    }
    if (path && *model) {
        pa_hwdb_cpu cpu;
        if (pa_hwdb_cpu_find(path, model, &cpu) == 0)
            st->rec_mhz = cpu.base_mhz;
    }
    snprintf(st->looked_model, sizeof(st->looked_model), "%s", model);
    st->looked_up = true;
    return 0;
}

/* The curve with the learned bins in place of the points they cover. */
static void learned_curve(const cpu_curve *st, const pa_curve *base, double scale, pa_curve *out)
{
    *out = *base;
    out->n = 0;
    for (int b = 0; b < NBINS; b++) {
        double u, w;
        if (st->bins[b].n >= LEARN_MIN) {
            u = st->bins[b].u;
            w = st->bins[b].w / scale;
        } else {
            u = b / 10.0;
            w = pa_curve_power_w(base, u);
        }
        if (out->n && u <= out->load[out->n - 1])
            u = out->load[out->n - 1] + 1e-6;
        out->load[out->n] = u;
        out->watts[out->n++] = w;
    }
}

static void learn(cpu_curve *st, double u, double model_w, double meas_w)
{
    if (!(meas_w > 0))
        return;
    st->err_sum += fabs(model_w - meas_w) / meas_w;
    st->err_n++;
    int b = (int)floor(u * 10 + 0.5);
    b = b < 0 ? 0 : b >= NBINS ? NBINS - 1 : b;
    bin *x = &st->bins[b];
    double dev = fabs(meas_w - x->w);
    if (x->n >= LEARN_MIN && dev > 4 * x->mad + 0.02 * x->w) {
        st->rejected++;
        return;
    }
    /* running mean, turning into an exponential one after 64 windows so
     * the table follows slow drifts (temperature, firmware) */
    double a = x->n < 64 ? 1.0 / (x->n + 1) : 1.0 / 64;
    if (x->n)
        x->mad += a * (dev - x->mad);
    x->u += a * (u - x->u);
    x->w += a * (meas_w - x->w);
    x->n++;
    st->learned++;
}

/* One window's computation, phase to phase. */
typedef struct window {
    const char *model;   /* the frame's CPU model, "" when unknown */
    unsigned ncpus;      /* CPUs of the frame */
    pa_curve dflt;       /* the default curve, when c points to it */
    const pa_curve *c;   /* the curve and its source */
    src_kind kind;       /* where c came from */
    double u;            /* utilisation of the window, 0..1 */
    double scale;        /* of the curve to this machine */
    bool per_pk;         /* each package at its own utilisation */
    unsigned pk_div;     /* the curve's packages over which it is split */
    pa_curve learned;    /* the learned curve, when use points to it */
    const pa_curve *use; /* c, or the learned curve */
    double t_all, f_win; /* time with a known frequency (ns), its mean MHz */
    bool by_freq;        /* the calibration's per-frequency curves */
    double p_static, p_dyn;
} window;

/* The curve and its source: the fixed one (option or forced model), the
 * one found for this CPU, else the default per-vCPU line. */
static void window_curve(const cpu_curve *st, window *w)
{
    if (st->have_fixed) {
        w->c = &st->fixed;
        w->kind = st->fixed_kind;
    } else if (st->have_rec) {
        w->c = &st->rec;
        w->kind = st->calib_auto ? SRC_CALIB : SRC_HWDB;
    } else {
        pa_curve *dflt = &w->dflt;
        memset(dflt, 0, sizeof(*dflt));
        dflt->n = 2;
        dflt->load[1] = 1;
        dflt->watts[0] = DEFAULT_MIN_W;
        dflt->watts[1] = DEFAULT_MAX_W;
        dflt->per = PA_CURVE_VCPU;
        dflt->packages = 1;
        dflt->error = -1;
        snprintf(dflt->source, sizeof(dflt->source), "%s", DEFAULT_SOURCE);
        w->c = dflt;
        w->kind = SRC_DEFAULT;
    }
}

static void assume_source(const cpu_curve *st, const window *w, pa_power_table *out)
{
    const pa_curve *c = w->c;
    if (st->calib_bad[0])
        pa_table_assume(out, "cpu-curve: %s", st->calib_bad);
    switch (w->kind) {
    case SRC_OPTION:
        pa_table_assume(out, "cpu-curve: curve from option points=");
        break;
    case SRC_CALIB:
        if (strcmp(c->match, w->model))
            pa_table_assume(out, "cpu-curve: %s was made on '%s', not this CPU ('%s')", c->source,
                            c->match, w->model);
        else
            pa_table_assume(out, "cpu-curve: %s", c->source);
        break;
    case SRC_FORCED:
    case SRC_HWDB:
        pa_table_assume(out, "cpu-curve: hwdb curve \"%s\"%s: %s", c->match,
                        w->kind == SRC_FORCED ? " (model=)" : "", c->source);
        if (c->per == PA_CURVE_SERVER)
            pa_table_assume(out, "cpu-curve: the curve is the wall power of the "
                                 "whole measured server (memory, disks, fans, "
                                 "power-supply loss included)");
        break;
    case SRC_DEFAULT:
        pa_table_assume(out,
                        "cpu-curve: default %g W idle to %g W at full load per vCPU x "
                        "%u CPUs for unknown CPU '%s' (%s)",
                        DEFAULT_MIN_W, DEFAULT_MAX_W, w->ncpus, *w->model ? w->model : "(no name)",
                        DEFAULT_SOURCE);
        break;
    }
}

/* The window's utilisation, 0..1. */
static double window_load(const pa_frame_delta *d, pa_power_table *out)
{
    bool summed;
    double busy = pa_delta_cpu_busy_s(d, &summed);
    if (summed) {
        pa_table_assume(out, "busy time = sum of the processes seen (no system CPU "
                             "time)");
    }
    double cap = pa_delta_capacity_s(d);
    double u = cap > 0 ? busy / cap : 0;
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

/* The scale of the curve to this machine, and whether each package is
 * priced at its own utilisation. */
static void window_scale(const cpu_curve *st, window *w, pa_power_table *out)
{
    const pa_curve *c = w->c;
    unsigned ncpus = w->ncpus;
    w->scale = 1;
    w->per_pk = false;
    w->pk_div = 1;
    if (c->per == PA_CURVE_VCPU) {
        w->scale = ncpus;
    } else if (c->per == PA_CURVE_PACKAGE) {
        w->scale = st->npk ? st->npk : 1;
        w->per_pk = st->npk > 1;
        w->pk_div = 1;
        if (!st->npk)
            pa_table_assume(out, "cpu-curve: package count unknown: 1 package");
    } else if (c->threads && ncpus < c->threads) {
        w->scale = (double)ncpus / c->threads;
        pa_table_assume(out,
                        "cpu-curve: %u of the curve's %u CPUs online (a VM's share "
                        "of the host, or CPUs offline): x %.4g",
                        ncpus, c->threads, w->scale);
    } else if (c->threads && ncpus > c->threads) {
        w->scale = floor((double)ncpus / c->threads + 0.5);
        pa_table_assume(out, "cpu-curve: %u CPUs = %g machines of the curve's %u", ncpus, w->scale,
                        c->threads);
    } else if (c->packages > 1 && st->npk == c->packages) {
        w->per_pk = true;
        w->pk_div = c->packages;
    }
}

/* The curve used: the learned one once two bins have enough windows. */
static void window_learned(const cpu_curve *st, window *w, pa_power_table *out)
{
    w->use = w->c;
    if (st->save[0])
        pa_table_assume(out,
                        "cpu-curve: learned curve saved to %s when the formula stops "
                        "(%d of 11 load bins have %d RAPL windows; 2 needed)",
                        st->save, learned_bins(st), LEARN_MIN);
    if (st->learn && !w->per_pk) {
        int have = learned_bins(st);
        if (have >= 2) {
            learned_curve(st, w->c, w->scale, &w->learned);
            w->use = &w->learned;
            pa_table_assume(out,
                            "cpu-curve: self-calibrated from %lu RAPL windows (%d of "
                            "11 load bins, %lu outliers rejected)",
                            st->learned, have, st->rejected);
        }
    }
}

/* The window's mean frequency, and whether the calibration's
 * per-frequency curves apply. */
static void window_freq(const pa_frame_delta *d, window *w)
{
    double f_sum = 0;
    w->t_all = 0;
    w->f_win = 0;
    pa_freq_time ft;
    for (size_t i = 0; pa_delta_freq(d, i, &ft) == 0; i++) {
        w->t_all += (double)ft.time_ns;
        f_sum += ft.khz / 1000.0 * (double)ft.time_ns;
    }
    if (w->t_all > 0)
        w->f_win = f_sum / w->t_all;
    /* per-frequency curves of a calibration (calibrate --frequencies):
     * P(u) at the window's frequency, interpolated between them; no
     * f/f_ref scaling then */
    w->by_freq = w->c->nfreq >= 2 && w->f_win > 0 && w->use == w->c && !w->per_pk;
}

/* The static and dynamic parts from the curve, before cpufreq scaling. */
static void window_power(const cpu_curve *st, const pa_frame_delta *d, window *w,
                         pa_power_table *out)
{
    const pa_curve *c = w->c, *use = w->use;
    /* P(0): the curve's first point, or the line below it when the
     * curve starts above idle (a calibration on a busy machine) */
    double p0 = pa_curve_power_w(use, 0);
    if (use->n && use->load[0] > 0.05)
        pa_table_assume(out,
                        "cpu-curve: the curve starts at %.0f %% load: below it, "
                        "extrapolated along its lowest points (the curve's %.3g W "
                        "at idle, %.3g W at its first point)",
                        use->load[0] * 100, p0, use->watts[0]);
    if (w->by_freq) {
        w->p_static = pa_curve_power_freq_w(c, w->f_win, 0) * w->scale;
        w->p_dyn = pa_curve_power_freq_w(c, w->f_win, w->u) * w->scale - w->p_static;
        pa_table_assume(out,
                        "cpu-curve: the calibration's curves at %g..%g MHz, "
                        "interpolated at the window's %.0f MHz",
                        c->fmhz[0], c->fmhz[c->nfreq - 1], w->f_win);
    } else if (w->per_pk) {
        w->p_static = 0;
        w->p_dyn = 0;
        bool sys_u = false;
        for (unsigned k = 0; k < st->npk; k++) {
            double uk = pa_delta_cpus_busy(d, st->cpu_pk, st->ncpu_map, st->pk_id[k]);
            if (uk < 0) {
                uk = w->u;
                sys_u = true;
            }
            w->p_static += p0 * (c->per == PA_CURVE_PACKAGE ? 1 : 1.0 / w->pk_div);
            w->p_dyn +=
                (pa_curve_power_w(use, uk) - p0) / (c->per == PA_CURVE_PACKAGE ? 1 : w->pk_div);
        }
        pa_table_assume(out, sys_u ? "cpu-curve: per package (system utilisation for "
                                     "packages without per-CPU times)"
                                   : "cpu-curve: per package, each at its CPUs' "
                                     "utilisation");
    } else {
        w->p_static = p0 * w->scale;
        w->p_dyn = (pa_curve_power_w(use, w->u) - p0) * w->scale;
    }
}

/* The dynamic part x f/f_ref, unless the per-frequency curves apply. */
static void window_cpufreq(const cpu_curve *st, const pa_frame_delta *d, window *w,
                           pa_power_table *out)
{
    if (!(w->t_all > 0 && !w->by_freq))
        return;
    const pa_curve *c = w->c;
    double fref = !isnan(st->opt_fref)          ? st->opt_fref
                  : c->mhz > 0                  ? c->mhz
                  : st->rec_mhz > 0             ? st->rec_mhz
                  : pa_delta_nominal_mhz(d) > 0 ? pa_delta_nominal_mhz(d)
                                                : 0;
    if (fref > 0) {
        double f = w->f_win;
        w->p_dyn *= f / fref;
        pa_table_assume(out,
                        "cpu-curve: dynamic part x f/f_ref (f_ref=%gMHz, V "
                        "constant)",
                        fref);
    } else {
        pa_table_assume(out, "cpu-curve: no reference frequency: not scaled by "
                             "cpufreq");
    }
}

/* Self-calibration against RAPL: the window's package and DRAM power
 * learned at its utilisation. */
static void window_learn(cpu_curve *st, const pa_frame_delta *d, const window *w, double p)
{
    double pkg = 0, dram = 0, interval_s = pa_delta_interval_s(d);
    bool have_pkg = false;
    pa_rapl_window r;
    for (size_t i = 0; pa_delta_rapl(d, i, &r) == 0; i++) {
        if (r.kind == PA_RAPL_PKG) {
            pkg += r.energy_j;
            have_pkg = true;
        } else if (r.kind == PA_RAPL_DRAM) {
            dram += r.energy_j;
        }
    }
    if (have_pkg && interval_s > 0 && st->learn) {
        learn(st, w->u, p, (pkg + dram) / interval_s);
        st->learn_cpus = w->ncpus;
        if (w->f_win > 0) {
            st->f_sum += w->f_win;
            st->f_n++;
        }
    }
}

static int curve_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *out)
{
    cpu_curve *st = pa_module_priv(m);
    if (!st)
        return pa_error_set(-EINVAL, "cpu-curve: compute before start");
    window w;
    w.model = pa_delta_cpu_model(d);
    int rc = lookup(m, st, w.model);
    if (rc < 0)
        return rc;
    w.ncpus = pa_delta_ncpus(d);
    window_curve(st, &w);
    assume_source(st, &w, out);
    w.u = window_load(d, out);
    window_scale(st, &w, out);
    window_learned(st, &w, out);
    window_freq(d, &w);
    window_power(st, d, &w, out);
    window_cpufreq(st, d, &w, out);
    double p = w.p_static + w.p_dyn;
    window_learn(st, d, &w, p);
    const pa_curve *c = w.c;
    pa_table_set_model_error(out, st->err_n       ? st->err_sum / st->err_n
                                  : c->error >= 0 ? c->error
                                                  : -1);

    /* attribution: the dynamic part by CPU time or cycles, as rapl-share */
    pa_table_share_split(d, out, p, w.p_dyn);
    return 0;
}

static const char *const curve_requires[] = {"procfs-cpu", NULL};
/* rapl: self-calibration when present; perf: cycles for the split */
static const char *const curve_uses[] = {"rapl", "perf", NULL};

/* Auto's choice after rapl-share: where a load-power curve or a
 * calibration matches this CPU, or on a virtual machine (its default
 * per-vCPU curve follows the load, a TDP guess does not). */
static int curve_fits(const pa_env *env, char *why, size_t len)
{
    char curve[200];
    int match = pa_curve_match(env, curve, sizeof(curve));
    snprintf(why, len, "no RAPL; %s", curve);
    return match > 0;
}

const pa_module_ops pa__mod_cpu_curve = {
    .abi = PA_MODULE_ABI,
    .name = "cpu-curve",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .description = "CPU power from a load-power curve P(utilisation) "
                   "(SPECpower, calibration or per-vCPU default), dynamic "
                   "part split by CPU time",
    .options = curve_options,
    .probe = curve_probe,
    .start = curve_start,
    .compute = curve_compute,
    .configure = curve_configure,
    .stop = curve_stop,
    .requires = curve_requires,
    .uses = curve_uses,
    .component_name = "cpu",
    .auto_rank = 200,
    .fits = curve_fits,
};
