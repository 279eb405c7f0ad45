/*
 * calibrate.c - measuring this machine's load-power curve with RAPL, or
 * with the whole machine's meter where the context has one (the platform
 * formula with a wall sensor: the curve is then the machine's, issue 46)
 * (pa_calibrate_*, powerapi.h; the measuring of `powerapi calibrate`).
 *
 * Ladder (SPECpower-like): active idle, then 1/levels .. 100 % of all CPUs
 * by duty cycle (one worker thread per online CPU, pinned, busy for duty x
 * 10 ms of every 10 ms), each level step long after settle, reps times.
 * Each level is measured in windows of the context (procfs-cpu + rapl +
 * rapl-share): the machine's utilisation from /proc/stat and the RAPL
 * package (+ DRAM) power.  A point is the level's mean utilisation and
 * power (energy / time); its residual the RMS of its windows around the
 * fitted curve.  With cpufreq control (calib_cpufreq.c) the ladder runs
 * again at each frequency asked for, before the main one.
 *
 * Validation: a random walk of the duty cycle (a step of +-10..30 % every
 * second) the ladder never ran: per window, the curve's power at the
 * measured utilisation against RAPL; mean and 95th percentile of the
 * absolute error, and the error of the energy over the run.
 */
#include "calib_cpufreq.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DUTY_PERIOD_NS 10000000ull

typedef struct load {
    pthread_t *th;
    unsigned n;
    volatile int stop;
    volatile double duty; /* 0..1 */
} load;

typedef struct worker_arg {
    load *l;
    unsigned cpu;
} worker_arg;

/* One measured window: utilisation, RAPL watts, seconds. */
typedef struct win {
    double u, w, s;
} win;

struct pa_calibrate {
    pa_ctx *ctx;
    pa_calibrate_params p;
    load l;
    worker_arg *args;
    pa__fq_ctl fq;
    win *v; /* every window measured */
    size_t nv, cv;
};

/* one calibration at a time: the cpufreq settings saved are process-wide */
static atomic_int calibrating;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void note(const pa_calibrate *cal, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(const pa_calibrate *cal, const char *fmt, ...)
{
    if (!cal->p.note)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cal->p.note(cal->p.note_arg, msg);
}

static void *worker(void *p)
{
    worker_arg *a = p;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(a->cpu, &set);
    sched_setaffinity(0, sizeof(set), &set); /* best effort */
    while (!a->l->stop) {
        uint64_t t0 = now_ns();
        double duty = a->l->duty;
        uint64_t busy = (uint64_t)(duty * DUTY_PERIOD_NS);
        while (now_ns() - t0 < busy)
            ;
        uint64_t spent = now_ns() - t0;
        if (spent < DUTY_PERIOD_NS)
            sleep_ns(DUTY_PERIOD_NS - spent);
    }
    return NULL;
}

/* The truth where the context measures the wall (the platform formula is
 * enabled, section 19 of DESIGN.md): the whole machine's watts into *w,
 * 1; -1 when the platform formula runs without a reading this window; 0
 * when the context has no platform component (RAPL is the truth). */
static int wall_w(const pa_report *r, double *w)
{
    for (size_t i = 0; i < r->ndevices; i++)
        if (!strcmp(r->devices[i].component, "wall")) {
            *w = r->devices[i].power_w;
            return 1;
        }
    for (size_t k = 0; r->component_names && k < r->ncomponents; k++)
        if (!strcmp(r->component_names[k], "platform"))
            return -1;
    return 0;
}

/* Ticks the context every window_ns for dur_ns; appends the windows. */
static int measure(pa_calibrate *cal, uint64_t window_ns, uint64_t dur_ns)
{
    int rc = pa_tick(cal->ctx); /* a new baseline: the settle time is left out */
    if (rc < 0)
        return rc;
    uint64_t end = now_ns() + dur_ns;
    while (now_ns() + window_ns / 2 < end) {
        sleep_ns(window_ns);
        if ((rc = pa_tick(cal->ctx)) < 0)
            return rc;
        pa_report *r = NULL;
        if ((rc = pa_report_get(cal->ctx, &r)) < 0)
            return rc;
        pa_machine mach;
        unsigned ncpus = pa_machine_get(cal->ctx, &mach) == 0 ? mach.ncpus : 1;
        double cap_s = r->interval_s * (ncpus ? ncpus : 1);
        win x = {cap_s > 0 ? r->system.cpu_time_s / cap_s : 0, r->system.cpu_w + r->dram_w,
                 r->interval_s};
        bool measured = r->system.flags & PA_POWER_MEASURED;
        int wall = wall_w(r, &x.w);
        pa_report_free(r);
        if (wall < 0)
            return pa__err(-ENODATA, "calibrate: a window without a wall reading (the meter "
                                     "failed; see `powerapi modules`)");
        if (!wall && !measured)
            return pa__err(-ENODATA, "calibrate: a window without RAPL "
                                     "(the rapl sensor failed; see "
                                     "`powerapi modules`)");
        /* not clamped: /proc/stat counts 10 ms ticks, so a window's
         * utilisation scatters around the true one, a little above 1 near
         * full load; cutting those would bias the mean (points are
         * clamped once averaged) */
        if (PA__GROW(cal->v, cal->cv, cal->nv + 1, 256) < 0)
            return pa__err(-ENOMEM, "calibrate: out of memory");
        cal->v[cal->nv++] = x;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The points of a ladder: each level's energy-weighted mean utilisation
 * and power (pu, pw summed over pt seconds), sorted by utilisation, a
 * level that reached the previous one's utilisation (a loaded machine)
 * merged into it. */
static void fit_points(const double *pu, const double *pw, const double *pt, size_t nlev,
                       pa_curve *c)
{
    c->n = 0;
    double order[64][2];
    size_t np = 0;
    for (size_t k = 0; k < nlev && np < 64; k++)
        if (pt[k] > 0) {
            order[np][0] = pu[k] / pt[k] > 1 ? 1 : pu[k] / pt[k];
            order[np++][1] = pw[k] / pt[k];
        }
    qsort(order, np, sizeof(order[0]), cmp_double);
    for (size_t k = 0; k < np && c->n < PA_CURVE_MAX; k++) {
        if (c->n && order[k][0] <= c->load[c->n - 1] + 0.005) {
            c->watts[c->n - 1] = (c->watts[c->n - 1] + order[k][1]) / 2;
            continue;
        }
        c->load[c->n] = order[k][0];
        c->watts[c->n++] = order[k][1];
    }
}

/* res[k]: the RMS of windows v[from..to) nearest to point k around c. */
static void residuals(const pa_curve *c, const win *v, size_t from, size_t to, double *res)
{
    for (size_t k = 0; k < PA_CURVE_MAX; k++)
        res[k] = 0;
    unsigned resn[PA_CURVE_MAX] = {0};
    for (size_t i = from; i < to; i++) {
        size_t best = 0;
        for (size_t k = 1; k < c->n; k++)
            if (fabs(c->load[k] - v[i].u) < fabs(c->load[best] - v[i].u))
                best = k;
        double e = v[i].w - pa_curve_power_w(c, v[i].u);
        res[best] += e * e;
        resn[best]++;
    }
    for (size_t k = 0; k < c->n; k++)
        res[k] = resn[k] ? sqrt(res[k] / resn[k]) : 0;
}

/* One ladder (reps x idle + levels) at the current settings, fitted into
 * c->load/watts (c->n) with res the RMS residuals.  0; 1 when fewer than 2
 * distinct load levels were reached (the caller says it); -errno. */
static int ladder(pa_calibrate *cal, pa_curve *c, double *res)
{
    const pa_calibrate_params *o = &cal->p;
    int rc = pa__err(-ENOMEM, "calibrate: out of memory");
    size_t nlev = o->levels + 1, v0 = cal->nv;
    double *pu = calloc(nlev, sizeof(double)), *pw = calloc(nlev, sizeof(double)),
           *pt = calloc(nlev, sizeof(double));
    size_t *first = calloc(nlev * o->reps + 1, sizeof(size_t));
    size_t *lev_of = calloc(nlev * o->reps + 1, sizeof(size_t));
    if (!pu || !pw || !pt || !first || !lev_of)
        goto out;
    size_t nseg = 0;
    for (unsigned rep = 0; rep < o->reps; rep++)
        for (size_t k = 0; k < nlev; k++) {
            cal->l.duty = (double)k / o->levels;
            sleep_ns(o->settle_ns);
            first[nseg] = cal->nv;
            lev_of[nseg++] = k;
            if ((rc = measure(cal, o->window_ns, o->step_ns - o->settle_ns)) < 0)
                goto out;
        }
    first[nseg] = cal->nv;
    /* points: energy-weighted means of each level over the repetitions */
    for (size_t sgi = 0; sgi < nseg; sgi++)
        for (size_t i = first[sgi]; i < first[sgi + 1]; i++) {
            size_t k = lev_of[sgi];
            pu[k] += cal->v[i].u * cal->v[i].s;
            pw[k] += cal->v[i].w * cal->v[i].s;
            pt[k] += cal->v[i].s;
        }
    fit_points(pu, pw, pt, nlev, c);
    if (pt[0] > 0 && pu[0] / pt[0] > 0.1)
        note(cal,
             "warning: the machine was %.0f %% busy at active idle "
             "(other work): the points cover only %.0f..%.0f %% load "
             "(below it, cpu-curve extrapolates along the lowest points "
             "and says so; a quieter machine gives the whole curve)",
             100 * pu[0] / pt[0], c->load[0] * 100, c->n ? c->load[c->n - 1] * 100 : 0.0);
    if (c->n < 2) {
        rc = 1;
        goto out;
    }
    residuals(c, cal->v, v0, cal->nv, res);
    rc = 0;
out:
    free(pu);
    free(pw);
    free(pt);
    free(first);
    free(lev_of);
    return rc;
}

static int check_params(const pa_calibrate_params *p)
{
    if (p->version != PA_CALIBRATE_VERSION)
        return pa__err(-EINVAL,
                       "pa_calibrate_new: parameters of version %u, this library "
                       "reads version %d (rebuild against its powerapi.h)",
                       p->version, PA_CALIBRATE_VERSION);
    if (p->reps < 1 || p->reps > 50 || p->levels < 1 || p->levels > 50)
        return pa__err(-EINVAL, "pa_calibrate_new: reps and levels are 1..50");
    if (p->window_ns == 0 || p->settle_ns >= p->step_ns ||
        p->window_ns * 2 > p->step_ns - p->settle_ns)
        return pa__err(-EINVAL, "pa_calibrate_new: step_ns must leave at least two window_ns "
                                "(> 0) after settle_ns (calibrate's --step, --window, --settle)");
    if (p->frequencies)
        return pa_calibrate_check_frequencies(p->frequencies);
    return 0;
}

/* Starts one pinned load thread per online CPU, idle. */
static int start_load(pa_calibrate *cal)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = ncpu > 0 ? (unsigned)ncpu : 1;
    cal->l.th = calloc(want, sizeof(*cal->l.th));
    cal->args = calloc(want, sizeof(*cal->args));
    if (!cal->l.th || !cal->args)
        return pa__err(-ENOMEM, "calibrate: out of memory");
    for (cal->l.n = 0; cal->l.n < want; cal->l.n++) {
        cal->args[cal->l.n].l = &cal->l;
        cal->args[cal->l.n].cpu = cal->l.n;
        if (pthread_create(&cal->l.th[cal->l.n], NULL, worker, &cal->args[cal->l.n]) != 0)
            return pa__err(-EAGAIN, "cannot start the load threads");
    }
    return 0;
}

int pa_calibrate_new(pa_ctx *ctx, const pa_calibrate_params *p, pa_calibrate **out)
{
    if (!ctx || !p || !out)
        return pa__err(-EINVAL, "pa_calibrate_new: ctx, p and out are required");
    int rc = check_params(p);
    if (rc < 0)
        return rc;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&calibrating, &idle, 1))
        return pa__err(-EBUSY, "calibrate: another calibration runs in this process");
    pa_calibrate *cal = calloc(1, sizeof(*cal));
    if (!cal) {
        atomic_store(&calibrating, 0);
        return pa__err(-ENOMEM, "calibrate: out of memory");
    }
    cal->ctx = ctx;
    cal->p = *p;
    pa__fq_probe(p->sysfs ? p->sysfs : "/sys", p->frequencies, &cal->fq);
    if ((rc = start_load(cal)) < 0 || (rc = pa_tick(ctx)) < 0) {
        pa_calibrate_free(cal);
        return rc;
    }
    size_t nlev = p->levels + 1;
    note(cal,
         "ladder of %zu levels x %u repetitions x %zu frequency settings, %.1f s each (%.0f s)",
         nlev, p->reps, 1 + cal->fq.n, p->step_ns / 1e9,
         (double)nlev * p->reps * p->step_ns / 1e9 * (1 + cal->fq.n) + p->validate_ns / 1e9);
    if (cal->fq.why[0])
        note(cal, "%s", cal->fq.why);
    *out = cal;
    return 0;
}

/* The ladder at each frequency cpufreq lets us set, into c's per-frequency
 * curves (a signal in the middle restores the settings, through the
 * caller's handler); the settings restored after. */
static int frequency_ladders(pa_calibrate *cal, pa_curve *c)
{
    pa__fq_ctl *fq = &cal->fq;
    int rc;
    for (size_t k = 0; k < fq->n; k++) {
        if ((rc = pa__fq_set(fq, fq->khz[k])) < 0) {
            pa__fq_restore();
            return rc;
        }
        note(cal, "ladder at %.0f MHz (%s)", fq->khz[k] / 1000.0, fq->how);
        pa_curve fc;
        memset(&fc, 0, sizeof(fc));
        rc = ladder(cal, &fc, c->fres[c->nfreq]);
        if (rc == 1) { /* the main curve is there: this one is left out */
            note(cal,
                 "warning: fewer than 2 distinct load levels "
                 "reached at %.0f MHz (other work on the machine): no "
                 "points for it",
                 fq->khz[k] / 1000.0);
            continue;
        }
        if (rc < 0) {
            pa__fq_restore();
            return rc;
        }
        c->fmhz[c->nfreq] = fq->khz[k] / 1000.0;
        c->fn[c->nfreq] = fc.n;
        memcpy(c->fload[c->nfreq], fc.load, sizeof(fc.load));
        memcpy(c->fwatts[c->nfreq], fc.watts, sizeof(fc.watts));
        c->nfreq++;
    }
    if (fq->n) {
        pa__fq_restore();
        note(cal, "cpufreq settings restored");
    }
    return 0;
}

int pa_calibrate_curve(pa_calibrate *cal, pa_calibrate_curve_result *out)
{
    if (!cal || !out)
        return pa__err(-EINVAL, "pa_calibrate_curve: cal and out are required");
    pa_calibrate_curve_result r;
    memset(&r, 0, sizeof(r));
    pa_curve *c = &r.curve;
    c->error = -1;
    c->packages = 1;
    pa_machine mach;
    int rc = pa_machine_get(cal->ctx, &mach);
    if (rc < 0)
        return rc;
    snprintf(c->match, sizeof(c->match), "%s", mach.cpu_model);
    /* the reference frequency of the points where the machine names one
     * (intel_pstate's base frequency, or cpuinfo's without cpufreq) */
    c->mhz = mach.nominal_mhz;
    r.ncpus = mach.ncpus;
    snprintf(r.cpufreq_file, sizeof(r.cpufreq_file), "%s", cal->fq.how);
    if ((rc = frequency_ladders(cal, c)) < 0 || (rc = ladder(cal, c, r.residual_w)) < 0)
        return rc;
    if (rc == 1)
        return pa__err(-ENODATA, "fewer than 2 distinct load levels were reached; "
                                 "is the machine busy with something else?");
    *out = r;
    return 0;
}

/* Writes the validation windows from v0 to wf as CSV, and closes it. */
static int write_windows(const pa_calibrate *cal, const pa_curve *c, size_t v0, FILE *wf,
                         const char *path)
{
    fprintf(wf, "u,model_w,measured_w,interval_s\n");
    for (size_t i = v0; i < cal->nv; i++) {
        const win *x = &cal->v[i];
        fprintf(wf, "%.6f,%.6f,%.6f,%.6f\n", x->u, pa_curve_power_w(c, x->u), x->w, x->s);
    }
    if (fclose(wf) != 0)
        return pa__err(-EIO, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* The figures of the validation windows from v0 into out. */
static int score(const pa_calibrate *cal, const pa_curve *c, size_t v0,
                 pa_calibrate_validation *out)
{
    size_t n = cal->nv - v0;
    double *abs_pct = calloc(n ? n : 1, sizeof(double));
    if (!abs_pct)
        return pa__err(-ENOMEM, "calibrate: out of memory");
    double e_model = 0, e_meas = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        const win *x = &cal->v[v0 + i];
        double m = pa_curve_power_w(c, x->u);
        abs_pct[i] = x->w > 0 ? 100 * fabs(m - x->w) / x->w : 0;
        sum += abs_pct[i];
        e_model += m * x->s;
        e_meas += x->w * x->s;
    }
    qsort(abs_pct, n, sizeof(double), cmp_double);
    out->windows = n;
    out->model_j = e_model;
    out->measured_j = e_meas;
    if (n) {
        out->mean_pct = sum / n;
        size_t i95 = (size_t)ceil(0.95 * n) - 1;
        out->p95_pct = abs_pct[i95 < n ? i95 : n - 1];
        out->energy_pct = e_meas > 0 ? 100 * (e_model - e_meas) / e_meas : 0;
    }
    free(abs_pct);
    return 0;
}

/* The random walk of load of the validation, measured in 1 s windows. */
static int walk(pa_calibrate *cal)
{
    unsigned seed = (unsigned)now_ns();
    double duty = 0.5;
    uint64_t end = now_ns() + cal->p.validate_ns;
    int rc = pa_tick(cal->ctx);
    if (rc < 0)
        return rc;
    while (now_ns() + 1000000000ull / 2 < end) {
        double step = 0.1 + 0.2 * (rand_r(&seed) / (double)RAND_MAX);
        duty += rand_r(&seed) & 1 ? step : -step;
        duty = duty < 0 ? -duty : duty > 1 ? 2 - duty : duty;
        cal->l.duty = duty;
        if ((rc = measure(cal, 1000000000ull, 1000000000ull)) < 0)
            return rc;
    }
    return 0;
}

int pa_calibrate_validate(pa_calibrate *cal, const pa_curve *c, pa_calibrate_validation *out)
{
    if (!cal || !c || !out)
        return pa__err(-EINVAL, "pa_calibrate_validate: cal, c and out are required");
    pa_calibrate_validation r = {.mean_pct = -1, .p95_pct = -1, .energy_pct = -1};
    if (!cal->p.validate_ns) {
        *out = r;
        return 0;
    }
    const char *path = cal->p.windows_csv;
    FILE *wf = NULL;
    if (path && !(wf = fopen(path, "w")))
        return pa__err(-errno, "cannot write %s: %s", path, strerror(errno));
    size_t v0 = cal->nv;
    int rc = walk(cal);
    if (rc < 0) {
        if (wf)
            fclose(wf);
        return rc;
    }
    if (wf && (rc = write_windows(cal, c, v0, wf, path)) < 0)
        return rc;
    if ((rc = score(cal, c, v0, &r)) < 0)
        return rc;
    *out = r;
    return 0;
}

void pa_calibrate_free(pa_calibrate *cal)
{
    if (!cal)
        return;
    cal->l.stop = 1;
    for (unsigned i = 0; i < cal->l.n; i++)
        pthread_join(cal->l.th[i], NULL);
    pa__fq_restore();
    free(cal->l.th);
    free(cal->args);
    free(cal->v);
    free(cal);
    atomic_store(&calibrating, 0);
}
