/*
 * calibrate.c - `powerapi calibrate`: measures this machine's load-power
 * curve with RAPL and writes the calibration file the cpu-curve formula
 * reads.
 *
 * Ladder (SPECpower-like): active idle, then 10 % .. 100 % of all CPUs by
 * duty cycle (one worker thread per online CPU, pinned, busy for duty x
 * 10 ms of every 10 ms), each level --step long after --settle, --reps
 * times.  Each level is measured in windows of --window by the library
 * (procfs-cpu + rapl + rapl-share): the machine's utilisation from
 * /proc/stat and the RAPL package (+ DRAM) power.  A point is the level's
 * mean utilisation and power (energy / time); its residual the RMS of its
 * windows around the fitted curve.
 *
 * Validation: a random walk of the duty cycle (a step of +-10..30 % every
 * second) the ladder never ran, --validate long: per window, the curve's
 * power at the measured utilisation against RAPL; mean and 95th percentile
 * of the absolute error, and the error of the energy over the run.
 */
#include "cli.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *CMD = "calibrate";

/* The message of the command's own last failure (the library's are read
 * with pa_cli_errmsg). */
static char cal_msg[512];

static int cal_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cal_err(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cal_msg, sizeof(cal_msg), fmt, ap);
    va_end(ap);
    return rc;
}

/* The message of failure rc: the command's own, else the library's. */
static const char *cal_errmsg(int rc)
{
    static char last[sizeof(cal_msg)];
    if (!cal_msg[0])
        return pa_cli_errmsg(rc);
    snprintf(last, sizeof(last), "%s", cal_msg);
    cal_msg[0] = '\0';
    return last;
}

/* Reads a small file root/rel (a sysfs attribute) into buf, NUL-terminated:
 * bytes or -errno. */
static ssize_t read_small(const char *root, const char *rel, char *buf, size_t len)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) >= sizeof(path))
        return -ENAMETOOLONG;
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    size_t n = fread(buf, 1, len - 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    buf[n] = '\0';
    return bad ? -EIO : (ssize_t)n;
}

#define DUTY_PERIOD_NS 10000000ull

static const char calibrate_about[] =
    "\n"
    "Measures this machine's load-power curve with RAPL (a ladder of "
    "duty-cycle\nloads: idle, 10 %% .. 100 %% of all CPUs), validates it on "
    "a random walk of\nload, and writes the calibration file that the "
    "cpu-curve formula reads\n(monitor/top/serve/daemon/profile/modules "
    "--calibration FILE,\n$POWERAPI_CALIBRATION).\n";

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

/* One measured window: utilisation and RAPL watts. */
typedef struct win {
    double u, w, s;
} win;

/* Ticks the context every window_ns for dur_ns; appends the windows. */
static int measure(pa_ctx *ctx, uint64_t window_ns, uint64_t dur_ns, win **v, size_t *n,
                   size_t *cap)
{
    int rc = pa_tick(ctx); /* a new baseline: the settle time is left out */
    if (rc < 0)
        return rc;
    uint64_t end = now_ns() + dur_ns;
    while (now_ns() + window_ns / 2 < end) {
        sleep_ns(window_ns);
        if ((rc = pa_tick(ctx)) < 0)
            return rc;
        pa_report *r = NULL;
        if ((rc = pa_report_get(ctx, &r)) < 0)
            return rc;
        pa_machine mach;
        unsigned ncpus = pa_machine_get(ctx, &mach) == 0 ? mach.ncpus : 1;
        double cap_s = r->interval_s * (ncpus ? ncpus : 1);
        win x = {cap_s > 0 ? r->system.cpu_time_s / cap_s : 0, r->system.cpu_w + r->dram_w,
                 r->interval_s};
        bool measured = r->system.flags & PA_POWER_MEASURED;
        pa_report_free(r);
        if (!measured)
            return cal_err(-ENODATA, "calibrate: a window without RAPL "
                                     "(the rapl sensor failed; see "
                                     "`powerapi modules`)");
        /* not clamped: /proc/stat counts 10 ms ticks, so a window's
         * utilisation scatters around the true one, a little above 1 near
         * full load; cutting those would bias the mean (points are
         * clamped once averaged) */
        if (PA__GROW(*v, *cap, *n + 1, 256) < 0)
            return cal_err(-ENOMEM, "calibrate: out of memory");
        (*v)[(*n)++] = x;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct opts {
    const char *output, *windows, *frequencies;
    const char *sysfs; /* --sysfs, "/sys" */
    uint64_t step, settle, window, validate;
    unsigned long reps, levels;
} opts;

/* cpufreq control (--frequencies): the policies whose frequency can be
 * set, through scaling_setspeed under the userspace governor, else
 * scaling_max_freq.  What was written is restored at the end, and by the
 * handler of SIGINT/SIGTERM/SIGHUP (open/write/close only: async-signal-
 * safe), which then dies of the signal as it would have. */
#define FQ_POLICIES 64
#define FQ_AVAIL 64
static struct {
    char path[PATH_MAX];
    char val[32];
    size_t len;
} fq_saved[FQ_POLICIES];
static volatile sig_atomic_t fq_nsaved;

static void fq_restore(void)
{
    for (sig_atomic_t i = 0; i < fq_nsaved; i++) {
        int fd = open(fq_saved[i].path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t w = write(fd, fq_saved[i].val, fq_saved[i].len);
            (void)w;
            close(fd);
        }
    }
    fq_nsaved = 0;
}

static void fq_signal(int sig)
{
    fq_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct fq_ctl {
    size_t n; /* frequencies to calibrate at */
    uint64_t khz[PA_CURVE_FREQS];
    size_t npol; /* policies that can be set */
    char ctl[FQ_POLICIES][PATH_MAX];
    char how[64];
    char why[256]; /* stated once: why none */
} fq_ctl;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Checks a --frequencies list: none, or min/mid/max/MHz joined by ','. */
static bool fq_spec_ok(const char *spec)
{
    if (!strcmp(spec, "none"))
        return true;
    char buf[256];
    if (strlen(spec) >= sizeof(buf) || !*spec)
        return false;
    snprintf(buf, sizeof(buf), "%s", spec);
    unsigned n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double f = strtod(t, &end);
        if (strcmp(t, "min") && strcmp(t, "mid") && strcmp(t, "max") &&
            (end == t || *end || !(f > 0 && f < 100000)))
            return false;
        n++;
    }
    return n > 0 && n <= PA_CURVE_FREQS;
}

static void fq_probe(const char *sysfs, const char *spec, fq_ctl *fq)
{
    memset(fq, 0, sizeof(*fq));
    if (spec && !strcmp(spec, "none"))
        return;
    const char *dir_rel = "devices/system/cpu/cpufreq";
    char dpath[PATH_MAX];
    snprintf(dpath, sizeof(dpath), "%s/%s", sysfs, dir_rel);
    uint64_t avail[FQ_AVAIL];
    size_t navail = 0;
    DIR *d = opendir(dpath);
    struct dirent *e;
    while (d && (e = readdir(d)) && fq->npol < FQ_POLICIES) {
        if (strncmp(e->d_name, "policy", 6))
            continue;
        char rel[512], buf[1024], gov[64] = "";
        snprintf(rel, sizeof(rel), "%s/%s/scaling_available_frequencies", dir_rel, e->d_name);
        if (read_small(sysfs, rel, buf, sizeof(buf)) <= 0)
            continue;
        snprintf(rel, sizeof(rel), "%s/%s/scaling_governor", dir_rel, e->d_name);
        if (read_small(sysfs, rel, gov, sizeof(gov)) > 0)
            gov[strcspn(gov, "\n")] = '\0';
        const char *file = !strcmp(gov, "userspace") ? "scaling_setspeed" : "scaling_max_freq";
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s/%s/%s", sysfs, dir_rel, e->d_name, file);
        if (access(path, W_OK) < 0)
            continue;
        snprintf(fq->ctl[fq->npol++], PATH_MAX, "%s", path);
        snprintf(fq->how, sizeof(fq->how), "%s", file);
        if (navail)
            continue;
        const char *p = buf;
        uint64_t k;
        while (navail < FQ_AVAIL) {
            while (*p == ' ' || *p == '\n')
                p++;
            char *end;
            if (*p < '0' || *p > '9')
                break;
            k = strtoull(p, &end, 10);
            p = end;
            if (k)
                avail[navail++] = k;
        }
    }
    if (d)
        closedir(d);
    if (!fq->npol || !navail) {
        fq->npol = 0;
        snprintf(fq->why, sizeof(fq->why),
                 "cpufreq offers no frequency to set here (no policy with "
                 "scaling_available_frequencies and a writable "
                 "scaling_setspeed or scaling_max_freq): calibrating at the "
                 "current frequency only");
        return;
    }
    qsort(avail, navail, sizeof(avail[0]), cmp_u64);
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", spec ? spec : "min,mid,max");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t want;
        if (!strcmp(t, "min"))
            want = avail[0];
        else if (!strcmp(t, "mid"))
            want = avail[(navail - 1) / 2];
        else if (!strcmp(t, "max"))
            want = avail[navail - 1];
        else { /* the available frequency nearest to MHz */
            double f = strtod(t, NULL) * 1000;
            want = avail[0];
            for (size_t i = 1; i < navail; i++)
                if (fabs(avail[i] - f) < fabs(want - f))
                    want = avail[i];
        }
        bool dup = false;
        for (size_t i = 0; i < fq->n; i++)
            dup |= fq->khz[i] == want;
        if (!dup && fq->n < PA_CURVE_FREQS)
            fq->khz[fq->n++] = want;
    }
    qsort(fq->khz, fq->n, sizeof(fq->khz[0]), cmp_u64);
}

/* Sets every controllable policy to khz, saving the first values. */
static int fq_set(fq_ctl *fq, uint64_t khz)
{
    if (!fq_nsaved) {
        for (size_t i = 0; i < fq->npol; i++) {
            char buf[32];
            int fd = open(fq->ctl[i], O_RDONLY | O_CLOEXEC);
            ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -errno;
            if (fd >= 0 && r < 0)
                r = -errno;
            if (fd >= 0)
                close(fd);
            if (r <= 0)
                return cal_err(r < 0 ? (int)r : -EIO, "calibrate: cannot read %s: %s", fq->ctl[i],
                               strerror(r < 0 ? (int)-r : EIO));
            snprintf(fq_saved[i].path, sizeof(fq_saved[i].path), "%s", fq->ctl[i]);
            memcpy(fq_saved[i].val, buf, (size_t)r);
            fq_saved[i].len = (size_t)r;
        }
        fq_nsaved = (sig_atomic_t)fq->npol;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = fq_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
    }
    char val[32];
    int len = snprintf(val, sizeof(val), "%llu\n", (unsigned long long)khz);
    for (size_t i = 0; i < fq->npol; i++) {
        int fd = open(fq->ctl[i], O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0 || write(fd, val, (size_t)len) != len) {
            int err = errno ? errno : EIO;
            if (fd >= 0)
                close(fd);
            return cal_err(-err,
                           "calibrate: cannot set %s to %llu kHz: %s; give "
                           "--frequencies none to calibrate at the current "
                           "frequency only",
                           fq->ctl[i], (unsigned long long)khz, strerror(err));
        }
        close(fd);
    }
    return 0;
}

/* One ladder (--reps x idle + --levels) at the current settings, fitted
 * into c->load/watts (c->n) with res the RMS residuals; its windows are
 * appended to *v.  0; -2 when fewer than 2 distinct load levels were
 * reached; -1 after printing the error. */
static int ladder(pa_ctx *ctx, const opts *o, load *l, pa_curve *c, double *res, win **pv,
                  size_t *pnv, size_t *pcv)
{
    int ret = -1, rc;
    size_t nlev = o->levels + 1, v0 = *pnv;
    double *pu = calloc(nlev, sizeof(double)), *pw = calloc(nlev, sizeof(double)),
           *pt = calloc(nlev, sizeof(double));
    size_t *first = calloc(nlev * o->reps + 1, sizeof(size_t));
    size_t *lev_of = calloc(nlev * o->reps + 1, sizeof(size_t));
    if (!pu || !pw || !pt || !first || !lev_of) {
        pa_cli_error(CMD, "out of memory");
        goto out;
    }
    size_t nseg = 0;
    for (unsigned long rep = 0; rep < o->reps; rep++)
        for (size_t k = 0; k < nlev; k++) {
            l->duty = (double)k / o->levels;
            sleep_ns(o->settle);
            first[nseg] = *pnv;
            lev_of[nseg++] = k;
            rc = measure(ctx, o->window, o->step - o->settle, pv, pnv, pcv);
            if (rc < 0) {
                pa_cli_error(CMD, "%s", cal_errmsg(rc));
                goto out;
            }
        }
    first[nseg] = *pnv;
    win *v = *pv;
    size_t nv = *pnv;
    /* points: energy-weighted means of each level over the repetitions */
    for (size_t sgi = 0; sgi < nseg; sgi++)
        for (size_t i = first[sgi]; i < first[sgi + 1]; i++) {
            size_t k = lev_of[sgi];
            pu[k] += v[i].u * v[i].s;
            pw[k] += v[i].w * v[i].s;
            pt[k] += v[i].s;
        }
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
        /* a level that reached the same utilisation as the previous one
         * (a loaded machine) is merged into it */
        if (c->n && order[k][0] <= c->load[c->n - 1] + 0.005) {
            c->watts[c->n - 1] = (c->watts[c->n - 1] + order[k][1]) / 2;
            continue;
        }
        c->load[c->n] = order[k][0];
        c->watts[c->n++] = order[k][1];
    }
    if (pt[0] > 0 && pu[0] / pt[0] > 0.1)
        fprintf(stderr,
                "%s %s: warning: the machine was %.0f %% busy at active idle "
                "(other work): the points cover only %.0f..%.0f %% load "
                "(below it, cpu-curve extrapolates along the lowest points "
                "and says so; a quieter machine gives the whole curve)\n",
                pa_cli_prog, CMD, 100 * pu[0] / pt[0], c->load[0] * 100,
                c->n ? c->load[c->n - 1] * 100 : 0.0);
    if (c->n < 2) {
        ret = -2; /* the caller says it */
        goto out;
    }
    /* residuals: RMS of each point's windows around the curve */
    for (size_t k = 0; k < PA_CURVE_MAX; k++)
        res[k] = 0;
    unsigned resn[PA_CURVE_MAX] = {0};
    for (size_t i = v0; i < nv; i++) {
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
    ret = 0;
out:
    free(pu);
    free(pw);
    free(pt);
    free(first);
    free(lev_of);
    return ret;
}

/* Validation on a random walk of load (--validate): the curve's power
 * at each 1 s window's utilisation against RAPL; the mean and 95th
 * percentile of the absolute error and the energy error (%) in *vmean,
 * *vp95, *venergy (left < 0 without windows).  0, or -1 after printing
 * the error. */
static int validate(pa_ctx *ctx, const opts *o, load *l, const pa_curve *c, win **pv, size_t *pnv,
                    size_t *pcv, double *vmean, double *vp95, double *venergy)
{
    *vmean = *vp95 = *venergy = -1;
    if (!o->validate)
        return 0;
    int rc;
    size_t v0 = *pnv;
    FILE *wf = NULL;
    if (o->windows && !(wf = fopen(o->windows, "w"))) {
        pa_cli_error(CMD, "cannot write %s: %s", o->windows, strerror(errno));
        return -1;
    }
    unsigned seed = (unsigned)now_ns();
    double duty = 0.5;
    uint64_t end = now_ns() + o->validate;
    if ((rc = pa_tick(ctx)) < 0) {
        pa_cli_error(CMD, "%s", cal_errmsg(rc));
        if (wf)
            fclose(wf);
        return -1;
    }
    while (now_ns() + 1000000000ull / 2 < end) {
        double step = 0.1 + 0.2 * (rand_r(&seed) / (double)RAND_MAX);
        duty += rand_r(&seed) & 1 ? step : -step;
        duty = duty < 0 ? -duty : duty > 1 ? 2 - duty : duty;
        l->duty = duty;
        rc = measure(ctx, 1000000000ull, 1000000000ull, pv, pnv, pcv);
        if (rc < 0) {
            pa_cli_error(CMD, "%s", cal_errmsg(rc));
            if (wf)
                fclose(wf);
            return -1;
        }
    }
    size_t n = *pnv - v0;
    double *abs_pct = calloc(n ? n : 1, sizeof(double));
    double e_model = 0, e_meas = 0, sum = 0;
    if (!abs_pct) {
        pa_cli_error(CMD, "out of memory");
        if (wf)
            fclose(wf);
        return -1;
    }
    if (wf)
        fprintf(wf, "u,model_w,measured_w,interval_s\n");
    for (size_t i = 0; i < n; i++) {
        const win *x = &(*pv)[v0 + i];
        double m = pa_curve_power_w(c, x->u);
        abs_pct[i] = x->w > 0 ? 100 * fabs(m - x->w) / x->w : 0;
        sum += abs_pct[i];
        e_model += m * x->s;
        e_meas += x->w * x->s;
        if (wf)
            fprintf(wf, "%.6f,%.6f,%.6f,%.6f\n", x->u, m, x->w, x->s);
    }
    if (wf)
        fclose(wf);
    qsort(abs_pct, n, sizeof(double), cmp_double);
    if (n) {
        *vmean = sum / n;
        size_t i95 = (size_t)ceil(0.95 * n) - 1;
        *vp95 = abs_pct[i95 < n ? i95 : n - 1];
        *venergy = e_meas > 0 ? 100 * (e_model - e_meas) / e_meas : 0;
        printf("\nvalidation (random walk of load, %zu windows of 1 s): "
               "absolute error mean %.2f %%, p95 %.2f %%; energy %+.2f "
               "%% (model %.1f J, RAPL %.1f J)\n",
               n, *vmean, *vp95, *venergy, e_model, e_meas);
    }
    free(abs_pct);
    return 0;
}

/* Writes the calibration file (--output, else the standard place, its
 * folders made) and says where.  0, or -1 after printing the error. */
static int write_file(const opts *o, const pa_curve *c, const double *res, unsigned ncpus,
                      double vmean, double vp95, double venergy)
{
    int rc;
    char path[PATH_MAX];
    if (o->output) {
        snprintf(path, sizeof(path), "%s", o->output);
    } else {
        if ((rc = pa_calibration_standard_path(path, sizeof(path))) < 0) {
            pa_cli_error(CMD, "%s", cal_errmsg(rc));
            return -1;
        }
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            for (char *p = dir + 1; *p; p++)
                if (*p == '/') {
                    *p = '\0';
                    mkdir(dir, 0755);
                    *p = '/';
                }
            mkdir(dir, 0755);
        }
    }
    rc = pa_calibration_write(path, c, res, ncpus, vmean, vp95, venergy);
    if (rc < 0) {
        pa_cli_error(CMD, "%s", cal_errmsg(rc));
        return -1;
    }
    printf("\nwritten: %s (use it with --calibration %s or "
           "POWERAPI_CALIBRATION=%s)\n",
           path, path, path);
    return 0;
}

static int run(pa_ctx *ctx, const opts *o)
{
    int status = PA_EXIT_FAIL, rc;
    load l = {0};
    worker_arg *args = NULL;
    win *v = NULL;
    size_t nv = 0, cv = 0;
    size_t nlev = o->levels + 1;
    fq_ctl fq;
    fq_probe(o->sysfs, o->frequencies, &fq);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    l.n = ncpu > 0 ? (unsigned)ncpu : 1;
    l.th = calloc(l.n, sizeof(*l.th));
    args = calloc(l.n, sizeof(*args));
    if (!l.th || !args) {
        pa_cli_error(CMD, "out of memory");
        goto out;
    }
    unsigned started = 0;
    for (; started < l.n; started++) {
        args[started].l = &l;
        args[started].cpu = started;
        if (pthread_create(&l.th[started], NULL, worker, &args[started]) != 0)
            break;
    }
    if (started < l.n) {
        pa_cli_error(CMD, "cannot start the load threads");
        l.n = started;
        goto stop;
    }
    if ((rc = pa_tick(ctx)) < 0) {
        pa_cli_error(CMD, "%s", cal_errmsg(rc));
        goto stop;
    }
    fprintf(stderr,
            "%s %s: ladder of %zu levels x %lu repetitions x %zu frequency settings, %.1f s each "
            "(%.0f s)\n",
            pa_cli_prog, CMD, nlev, o->reps, 1 + fq.n, o->step / 1e9,
            (double)nlev * o->reps * o->step / 1e9 * (1 + fq.n) + o->validate / 1e9);
    if (fq.why[0])
        fprintf(stderr, "%s %s: %s\n", pa_cli_prog, CMD, fq.why);
    pa_curve c;
    memset(&c, 0, sizeof(c));
    c.error = -1;
    c.packages = 1;
    pa_machine mach;
    if ((rc = pa_machine_get(ctx, &mach)) < 0) {
        pa_cli_error(CMD, "%s", cal_errmsg(rc));
        goto stop;
    }
    snprintf(c.match, sizeof(c.match), "%s", mach.cpu_model);
    /* the reference frequency of the points where the machine names one
     * (intel_pstate's base frequency, or cpuinfo's without cpufreq) */
    c.mhz = mach.nominal_mhz;
    /* the ladder at each frequency cpufreq lets us set, first (a signal
     * in the middle restores the settings), then at the settings found */
    for (size_t k = 0; k < fq.n; k++) {
        if ((rc = fq_set(&fq, fq.khz[k])) < 0) {
            fq_restore();
            pa_cli_error(CMD, "%s", cal_errmsg(rc));
            goto stop;
        }
        fprintf(stderr, "%s %s: ladder at %.0f MHz (%s)\n", pa_cli_prog, CMD, fq.khz[k] / 1000.0,
                fq.how);
        pa_curve fc;
        memset(&fc, 0, sizeof(fc));
        rc = ladder(ctx, o, &l, &fc, c.fres[c.nfreq], &v, &nv, &cv);
        if (rc == -2) { /* the main curve is there: this one is left out */
            fprintf(stderr,
                    "%s %s: warning: fewer than 2 distinct load levels "
                    "reached at %.0f MHz (other work on the machine): no "
                    "points for it\n",
                    pa_cli_prog, CMD, fq.khz[k] / 1000.0);
            continue;
        }
        if (rc < 0) {
            fq_restore();
            goto stop;
        }
        c.fmhz[c.nfreq] = fq.khz[k] / 1000.0;
        c.fn[c.nfreq] = fc.n;
        memcpy(c.fload[c.nfreq], fc.load, sizeof(fc.load));
        memcpy(c.fwatts[c.nfreq], fc.watts, sizeof(fc.watts));
        c.nfreq++;
    }
    if (fq.n) {
        fq_restore();
        fprintf(stderr, "%s %s: cpufreq settings restored\n", pa_cli_prog, CMD);
    }

    double res[PA_CURVE_MAX];
    rc = ladder(ctx, o, &l, &c, res, &v, &nv, &cv);
    if (rc == -2)
        pa_cli_error(CMD, "fewer than 2 distinct load levels were reached; "
                          "is the machine busy with something else?");
    if (rc < 0)
        goto stop;
    /* table and plot */
    double wmax = c.watts[c.n - 1];
    for (size_t k = 0; k < c.n; k++)
        wmax = c.watts[k] > wmax ? c.watts[k] : wmax;
    printf("calibration of '%s' (%u CPUs), RAPL package%s power\n\n", c.match, mach.ncpus, "+DRAM");
    printf("%7s %9s %9s  %s\n", "LOAD %", "WATTS", "RESID W", "PLOT");
    for (size_t k = 0; k < c.n; k++) {
        int bar = wmax > 0 ? (int)(40 * c.watts[k] / wmax + 0.5) : 0;
        printf("%7.1f %9.3f %9.3f  ", c.load[k] * 100, c.watts[k], res[k]);
        for (int b = 0; b < bar; b++)
            putchar('#');
        putchar('\n');
    }

    for (size_t k = 0; k < c.nfreq; k++) {
        printf("\nat %.0f MHz (%s):\n%7s %9s %9s\n", c.fmhz[k], fq.how, "LOAD %", "WATTS",
               "RESID W");
        for (size_t i = 0; i < c.fn[k]; i++)
            printf("%7.1f %9.3f %9.3f\n", c.fload[k][i] * 100, c.fwatts[k][i], c.fres[k][i]);
    }

    double vmean, vp95, venergy;
    if (validate(ctx, o, &l, &c, &v, &nv, &cv, &vmean, &vp95, &venergy) < 0 ||
        write_file(o, &c, res, mach.ncpus, vmean, vp95, venergy) < 0)
        goto stop;
    status = PA_EXIT_OK;
stop:
    l.stop = 1;
    for (unsigned i = 0; i < l.n; i++)
        pthread_join(l.th[i], NULL);
out:
    free(l.th);
    free(args);
    free(v);
    return status;
}

static int set_frequencies(void *v, const char *cmd, const char *arg)
{
    if (!fq_spec_ok(arg))
        return pa_cli_usage_error(cmd,
                                  "--frequencies %s: give none, or up to %d of min, mid, max "
                                  "and MHz values joined by ',' (e.g. min,mid,max or "
                                  "1200,2400)",
                                  arg, PA_CURVE_FREQS);
    *(const char **)v = arg;
    return 0;
}

static int set_validate(void *v, const char *cmd, const char *arg)
{
    static const pa_cli_opt any = {.long_name = "validate"};
    if (!strcmp(arg, "0")) {
        *(uint64_t *)v = 0;
        return 0;
    }
    return pa_cli_opt_duration(cmd, &any, arg, v);
}

int pa_cli_calibrate(int argc, char **argv)
{
    opts o = {.step = 5000000000ull,
              .settle = 500000000ull,
              .window = 500000000ull,
              .validate = 30000000000ull,
              .reps = 3,
              .levels = 10};
    pa_cli_ctx co;
    pa_cli_ctx_init(&co);
    const pa_cli_opt table[] = {
        PA_OPT_GROUP("Options:"),
        {.type = PA_CLI_OPT_STRING,
         .short_name = 'o',
         .long_name = "output",
         .value = &o.output,
         .argh = "FILE",
         .help = "where to write (default: /var/lib/powerapi/\n"
                 "calibration.txt as root, else\n"
                 "$XDG_DATA_HOME/powerapi/calibration.txt)"},
        {.type = PA_CLI_OPT_DURATION,
         .long_name = "step",
         .value = &o.step,
         .argh = "DURATION",
         .help = "time at each load level (default 5s)",
         .alias = "duration"},
        PA_OPT_DURATION(0, "settle", &o.settle,
                        "time left out at the start of each level\n"
                        "(default 500ms)",
                        0, 0),
        PA_OPT_UINT(0, "reps", &o.reps, "N", "repetitions of the ladder (default 3)", 1, 50),
        PA_OPT_UINT(0, "levels", &o.levels, "N", "load levels above idle (default 10: 10 %% steps)",
                    1, 50),
        PA_OPT_DURATION(0, "window", &o.window, "measurement window (default 500ms)", 0, 0),
        PA_OPT_CALLBACK(0, "validate", &o.validate, "DURATION",
                        "random-walk validation (default 30s, 0: none)", set_validate),
        PA_OPT_STRING(0, "windows", &o.windows, "FILE", "also write the validation windows as CSV"),
        PA_OPT_CALLBACK(0, "frequencies", &o.frequencies, "LIST",
                        "where cpufreq lets it set one (userspace\n"
                        "governor's scaling_setspeed, else\n"
                        "scaling_max_freq), the ladder again at each: min,\n"
                        "mid, max or MHz joined by ',' (default\n"
                        "min,mid,max; none: current frequency only);\n"
                        "restored after",
                        set_frequencies),
        PA_OPT_CONTEXT(&co, PA_CTXOPT_ROOTS),
        PA_OPT_END,
    };
    const pa_cli_cmd c = {
        .name = CMD, .usage = "%s calibrate [OPTIONS]\n", .about = calibrate_about, .opts = table};
    int first;
    int st = pa_cli_parse(&c, argc, argv, &first);
    if (st)
        return st < 0 ? PA_EXIT_OK : st;
    o.sysfs = co.copts.sysfs ? co.copts.sysfs : "/sys";
    if (o.settle >= o.step || o.window * 2 > o.step - o.settle)
        return pa_cli_usage_error(CMD, "--step must leave at least two "
                                       "--window after --settle");

    pa_ctx *ctx = NULL;
    int rc = pa_cli_ctx_create(&co, CMD, &ctx);
    if (rc != 0)
        return rc;
    if ((rc = pa_module_enable(ctx, "procfs-cpu", NULL)) < 0 ||
        (rc = pa_module_enable(ctx, "rapl", NULL)) < 0 ||
        (rc = pa_module_enable(ctx, "rapl-share", NULL)) < 0) {
        pa_cli_error(CMD, "needs RAPL to measure the curve: %s", cal_errmsg(rc));
        pa_ctx_free(ctx);
        return PA_EXIT_FAIL;
    }
    int status = run(ctx, &o);
    pa_ctx_free(ctx);
    return status;
}
