/*
 * curve.c - load-power curves: interpolation and the calibration file of
 * `powerapi calibrate`, read by the cpu-curve formula.
 *
 * A calibration file is plain text, one item a line, '#' comments:
 *
 *   cpu "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"   model it was made on
 *   kernel "6.18.0-1-amd64"
 *   date "2026-11-23T16:40:00Z"
 *   cpus 2                  logical CPUs online during the calibration
 *   mhz 2100                mean cpufreq frequency, 0 when unknown
 *   point LOAD% WATTS RMS_RESIDUAL_W     one per ladder level, increasing
 *   fpoint MHZ LOAD% WATTS RMS_RESIDUAL_W   the ladder at a frequency
 *                           calibrate set (--frequencies); per MHz, loads
 *                           increasing, MHz in increasing order
 *   validation mean_pct=M p95_pct=P energy_pct=E
 *                           (mean_pct alone from cpu-curve's save=: its
 *                           running error against RAPL)
 *
 * The points are the package (+ DRAM when RAPL has it) power of the whole
 * machine at each measured utilisation.  The validation line's mean
 * absolute error becomes the curve's known error (model_error).
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Below the first point (a calibration made on a busy machine starts at
 * its background load), the straight line of the points within 25 points
 * of load of the first one (least squares, at least two points; never
 * falling), through the first point: a flat curve there would put the
 * power of that load on an idle machine.  Convex curves read a little low
 * there; cpu-curve says so in its assumed text. */
static double points_at(const double *load, const double *watts, size_t n, double u)
{
    if (!n)
        return 0;
    if (n == 1)
        return watts[0];
    u = u > 0 ? u : 0;
    if (u < load[0]) {
        size_t m = 2;
        while (m < n && load[m] <= load[0] + 0.25)
            m++;
        double mu = 0, mw = 0, sxy = 0, sxx = 0;
        for (size_t i = 0; i < m; i++) {
            mu += load[i] / (double)m;
            mw += watts[i] / (double)m;
        }
        for (size_t i = 0; i < m; i++) {
            sxy += (load[i] - mu) * (watts[i] - mw);
            sxx += (load[i] - mu) * (load[i] - mu);
        }
        double b = sxx > 0 && sxy > 0 ? sxy / sxx : 0;
        double w = watts[0] - b * (load[0] - u);
        return w > 0 ? w : 0;
    }
    if (u == load[0])
        return watts[0];
    if (u >= load[n - 1])
        return watts[n - 1];
    size_t i = 1;
    while (load[i] < u)
        i++;
    double u0 = load[i - 1], u1 = load[i];
    return watts[i - 1] + (watts[i] - watts[i - 1]) * (u - u0) / (u1 - u0);
}

double pa__curve_at(const pa_curve *c, double u)
{
    return points_at(c->load, c->watts, c->n, u);
}

double pa__curve_at_freq(const pa_curve *c, double mhz, double u)
{
    if (c->nfreq < 2)
        return pa__curve_at(c, u);
    size_t k = 0;
    while (k + 2 < c->nfreq && c->fmhz[k + 1] < mhz)
        k++;
    double p0 = points_at(c->fload[k], c->fwatts[k], c->fn[k], u);
    double p1 = points_at(c->fload[k + 1], c->fwatts[k + 1], c->fn[k + 1], u);
    double a = (mhz - c->fmhz[k]) / (c->fmhz[k + 1] - c->fmhz[k]);
    a = a < 0 ? 0 : a > 1 ? 1 : a;
    return p0 + a * (p1 - p0);
}

/* Reads a "quoted" value (\" and \\ escapes) at p into out. */
static int quoted(const char *p, char *out, size_t len)
{
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '"')
        return -EINVAL;
    size_t o = 0;
    for (; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\' && (p[1] == '"' || p[1] == '\\'))
            c = *++p;
        if (o + 1 < len)
            out[o++] = c;
    }
    out[o] = '\0';
    return *p == '"' ? 0 : -EINVAL;
}

/* An "fpoint MHZ LOAD% WATTS [RESIDUAL]" line into c: 0; 1 when it does
 * not parse; -EINVAL (message set) when it breaks the order or a limit. */
static int calib_fpoint(pa_curve *c, const char *p, const char *path, unsigned ln)
{
    char *e1, *e2, *e3;
    double mhz = strtod(p, &e1);
    double u = e1 == p ? NAN : strtod(e1, &e2);
    double w = e1 == p || e2 == e1 ? NAN : strtod(e2, &e3);
    if (e1 == p || e2 == e1 || e3 == e2 || !(mhz > 0 && mhz < 100000) || !(u >= 0 && u <= 100) ||
        !(w >= 0 && w < 100000))
        return 1;
    char *e4;
    double r = strtod(e3, &e4);
    size_t k = c->nfreq;
    if (k && mhz == c->fmhz[k - 1]) {
        k--;
    } else if (k && mhz < c->fmhz[k - 1]) {
        return pa__err(-EINVAL,
                       "calibration: %s:%u: frequency %g MHz is not above "
                       "the previous fpoint's",
                       path, ln, mhz);
    } else if (k == PA_CURVE_FREQS) {
        return pa__err(-EINVAL, "calibration: %s:%u: more than %d frequencies", path, ln,
                       PA_CURVE_FREQS);
    } else {
        c->fmhz[k] = mhz;
        c->fn[k] = 0;
        c->nfreq++;
    }
    size_t j = c->fn[k];
    if (j == PA_CURVE_MAX || (j && u / 100 <= c->fload[k][j - 1]))
        return pa__err(-EINVAL,
                       "calibration: %s:%u: load %g%% at %g MHz is not above "
                       "the previous point's (or more than %d points)",
                       path, ln, u, mhz, PA_CURVE_MAX);
    c->fload[k][j] = u / 100;
    c->fwatts[k][j] = w;
    c->fres[k][j] = e4 == e3 ? 0 : r;
    c->fn[k]++;
    return 0;
}

/* A "point LOAD% WATTS" line's rest p: 0, 1 when it does not parse, or a
 * negative error with its message (as calib_fpoint). */
static int calib_point(pa_curve *c, const char *p, const char *path, unsigned ln)
{
    char *end, *e2;
    double u = strtod(p, &end);
    double w = end == p ? NAN : strtod(end, &e2);
    if (end == p || e2 == end || !(u >= 0 && u <= 100) || !(w >= 0 && w < 100000))
        return 1;
    if (c->n == PA_CURVE_MAX)
        return pa__err(-EINVAL, "calibration: %s:%u: more than %d points", path, ln, PA_CURVE_MAX);
    if (c->n && u / 100 <= c->load[c->n - 1])
        return pa__err(-EINVAL,
                       "calibration: %s:%u: load %g%% is not above "
                       "the previous point's",
                       path, ln, u);
    c->load[c->n] = u / 100;
    c->watts[c->n++] = w;
    return 0;
}

/* One line of a calibration file, its first word in word and the rest in
 * p: 0, 1 when it does not parse, or a negative error with its message. */
static int calib_line(pa_curve *c, const char *word, const char *p, const char *path, unsigned ln,
                      bool *have_cpu)
{
    char *end;
    if (!strcmp(word, "cpu")) {
        if (quoted(p, c->match, sizeof(c->match)) < 0)
            return 1;
        *have_cpu = true;
    } else if (!strcmp(word, "kernel") || !strcmp(word, "date")) {
        char tmp[128];
        if (quoted(p, tmp, sizeof(tmp)) < 0)
            return 1;
    } else if (!strcmp(word, "cpus")) {
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v > 65536)
            return 1;
        c->threads = (unsigned)v;
    } else if (!strcmp(word, "mhz")) {
        double v = strtod(p, &end);
        if (end == p || !(v >= 0) || v > 100000)
            return 1;
        c->mhz = v;
    } else if (!strcmp(word, "point")) {
        return calib_point(c, p, path, ln);
    } else if (!strcmp(word, "fpoint")) {
        return calib_fpoint(c, p, path, ln);
    } else if (!strcmp(word, "validation")) {
        const char *m = strstr(p, "mean_pct=");
        if (m) {
            double v = strtod(m + 9, &end);
            if (end == m + 9 || !(v >= 0))
                return 1;
            c->error = v / 100;
        }
    } else {
        return 1;
    }
    return 0;
}

/* A whole file's curve: 2 fpoint lines at each frequency, a cpu line and
 * 2 points at least. */
static int calib_complete(const pa_curve *c, const char *path, bool have_cpu)
{
    for (size_t k = 0; k < c->nfreq; k++)
        if (c->fn[k] < 2)
            return pa__err(-EINVAL,
                           "calibration: %s: fewer than 2 fpoint lines at %g "
                           "MHz; run `powerapi calibrate` again",
                           path, c->fmhz[k]);
    if (!have_cpu || c->n < 2)
        return pa__err(-EINVAL,
                       "calibration: %s has no cpu line or fewer than 2 "
                       "points; run `powerapi calibrate` again",
                       path);
    return 0;
}

int pa__calib_read(const char *path, pa_curve *out)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return pa__err(-errno,
                       "calibration: cannot open %s: %s; write one with "
                       "`powerapi calibrate --output %s` on a machine with "
                       "RAPL",
                       path, strerror(errno), path);
    pa_curve c;
    memset(&c, 0, sizeof(c));
    c.per = PA_CURVE_SERVER;
    c.packages = 1;
    c.error = -1;
    char line[1024];
    unsigned ln = 0;
    int rc = 0;
    bool have_cpu = false;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char word[16];
        size_t wl = 0;
        while (isalpha((unsigned char)*p) && wl + 1 < sizeof(word))
            word[wl++] = *p++;
        word[wl] = '\0';
        rc = calib_line(&c, word, p, path, ln, &have_cpu);
        if (rc > 0)
            goto bad;
        if (rc < 0)
            goto out;
    }
    if (ferror(f)) {
        rc = pa__err(-EIO, "calibration: error reading %s", path);
        goto out;
    }
    if ((rc = calib_complete(&c, path, have_cpu)) < 0)
        goto out;
    snprintf(c.source, sizeof(c.source), "calibration %s", path);
    *out = c;
    goto out;
bad:
    line[strcspn(line, "\r\n")] = '\0';
    rc = pa__err(-EINVAL,
                 "calibration: %s:%u: cannot parse '%.40s' (the format is "
                 "in DESIGN.md section 6.6, or run `powerapi calibrate` "
                 "again)",
                 path, ln, line);
out:
    fclose(f);
    return rc;
}

static void put_quoted(FILE *f, const char *key, const char *v)
{
    fprintf(f, "%s \"", key);
    for (; v && *v; v++) {
        if (*v == '"' || *v == '\\')
            fputc('\\', f);
        if (*v != '\n')
            fputc(*v, f);
    }
    fputs("\"\n", f);
}

int pa__calib_write(const char *path, const pa_curve *c, const double *residual_w,
                    const char *kernel, const char *date, unsigned ncpus, double valid_mean_pct,
                    double valid_p95_pct, double valid_energy_pct)
{
    struct utsname un;
    char kbuf[128] = "unknown", dbuf[32] = "unknown";
    if (!kernel) {
        if (uname(&un) == 0)
            snprintf(kbuf, sizeof(kbuf), "%s", un.release);
        kernel = kbuf;
    }
    if (!date) {
        time_t t = time(NULL);
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(dbuf, sizeof(dbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
        date = dbuf;
    }
    char tmp[PA_PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return pa__err(-ENAMETOOLONG, "calibration: path too long: %s", path);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return pa__err(-errno, "calibration: cannot write %s: %s", tmp, strerror(errno));
    fputs("# powerapi calibration (written by `powerapi calibrate`, read by "
          "the cpu-curve formula)\n",
          f);
    put_quoted(f, "cpu", c->match);
    put_quoted(f, "kernel", kernel);
    put_quoted(f, "date", date);
    fprintf(f, "cpus %u\n", ncpus);
    fprintf(f, "mhz %.0f\n", c->mhz);
    fputs("# point LOAD% WATTS RMS_RESIDUAL_W (RAPL package+DRAM power of "
          "the machine)\n",
          f);
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "point %.2f %.4f %.4f\n", c->load[i] * 100, c->watts[i],
                residual_w ? residual_w[i] : 0.0);
    if (c->nfreq)
        fputs("# fpoint MHZ LOAD% WATTS RMS_RESIDUAL_W (the ladder at each "
              "frequency calibrate set)\n",
              f);
    for (size_t k = 0; k < c->nfreq; k++)
        for (size_t i = 0; i < c->fn[k]; i++)
            fprintf(f, "fpoint %.0f %.2f %.4f %.4f\n", c->fmhz[k], c->fload[k][i] * 100,
                    c->fwatts[k][i], c->fres[k][i]);
    if (valid_mean_pct >= 0 && valid_p95_pct >= 0)
        fprintf(f, "validation mean_pct=%.3f p95_pct=%.3f energy_pct=%.3f\n", valid_mean_pct,
                valid_p95_pct, valid_energy_pct);
    else if (valid_mean_pct >= 0) /* self-calibration: a running mean */
        fprintf(f, "validation mean_pct=%.3f\n", valid_mean_pct);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        int e = errno ? errno : EIO;
        unlink(tmp);
        return pa__err(-e, "calibration: error writing %s: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return pa__err(-e, "calibration: cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return 0;
}

static int data_dir(char *buf, size_t len)
{
    const char *x = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    if (x && *x)
        n = snprintf(buf, len, "%s/powerapi", x);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.local/share/powerapi", home);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The calibration file the user gave (the context's, else the
 * environment's), and the label that names where it came from. */
static const char *calib_given(const pa_env *env, const char **label)
{
    if (env && env->calibration && *env->calibration) {
        *label = "calibration";
        return env->calibration;
    }
    *label = "$POWERAPI_CALIBRATION";
    const char *e = getenv("POWERAPI_CALIBRATION");
    return e && *e ? e : NULL;
}

const char *pa__calib_default(const pa_env *env, char *buf, size_t len)
{
    const char *label;
    const char *given = calib_given(env, &label);
    if (given) {
        snprintf(buf, len, "%s", given);
        return buf;
    }
    char dir[PA_PATH_MAX];
    if (data_dir(dir, sizeof(dir)) == 0) {
        int n = snprintf(buf, len, "%s/calibration.txt", dir);
        if (n > 0 && (size_t)n < len && access(buf, R_OK) == 0)
            return buf;
    }
    snprintf(buf, len, "/var/lib/powerapi/calibration.txt");
    if (access(buf, R_OK) == 0)
        return buf;
    return NULL;
}

int pa__calib_standard_path(char *buf, size_t len)
{
    char dir[PA_PATH_MAX];
    if (geteuid() == 0)
        snprintf(dir, sizeof(dir), "/var/lib/powerapi");
    else if (data_dir(dir, sizeof(dir)) < 0)
        return pa__err(-ENOENT, "calibrate: neither $XDG_DATA_HOME nor $HOME "
                                "is set; give --output FILE");
    int n = snprintf(buf, len, "%s/calibration.txt", dir);
    if (n < 0 || (size_t)n >= len)
        return pa__err(-ENAMETOOLONG, "calibrate: path too long: %s", dir);
    return 0;
}

/* "model name" of cpuinfo and whether the "hypervisor" flag is set. */
void pa__cpuinfo_read(const char *procfs, char *model, size_t mlen, bool *vm)
{
    char *buf = malloc(1 << 16);
    model[0] = '\0';
    *vm = false;
    if (!buf)
        return;
    if (pa__read_file(procfs, "cpuinfo", buf, 1 << 16) > 0) {
        char *l = strstr(buf, "model name");
        if (l && (l = strchr(l, ':'))) {
            l++;
            while (*l == ' ' || *l == '\t')
                l++;
            size_t n = strcspn(l, "\n");
            if (n >= mlen)
                n = mlen - 1;
            memcpy(model, l, n);
            model[n] = '\0';
        }
        char *f = strstr(buf, "\nflags");
        if (f) {
            size_t n = strcspn(f + 1, "\n");
            f[1 + n] = '\0';
            *vm = strstr(f, " hypervisor") != NULL;
        }
    }
    free(buf);
}

/* The calibration given by the user, or one at the standard place made
 * on this CPU model.  When the file given cannot be used, bad (when not
 * NULL) gets the reason, so that the fallback is stated, not silent. */
bool pa__calib_for_model(const pa_env *env, const char *model, pa_curve *out, char *path,
                         size_t plen, char *bad, size_t badlen)
{
    const char *p = pa__calib_default(env, path, plen);
    pa_curve c;
    const char *label;
    const char *given = calib_given(env, &label);
    if (bad && badlen)
        bad[0] = '\0';
    if (!p)
        return false;
    if (pa__calib_read(p, &c) < 0) {
        if (bad && given) {
            /* one item of the ";"-separated assumed list */
            snprintf(bad, badlen, "%s not used: %s", label, pa_last_error());
            for (char *q = bad; (q = strchr(q, ';'));)
                *q = ',';
        }
        return false;
    }
    /* a file the user named (--calibration, $POWERAPI_CALIBRATION) is the
     * user's choice (a model mismatch is stated in assumed); one found at
     * the standard place is used only on the CPU it was made on */
    if (!(given && !strcmp(given, p)) && strcmp(c.match, model) != 0)
        return false;
    *out = c;
    return true;
}

/* 1 a curve or calibration matches this CPU, 2 a VM (the default curve),
 * 0 neither. */
static int curve_match(const pa_env *env, char *why, size_t len, char *bad, size_t badlen)
{
    char model[96], path[PA_PATH_MAX];
    bool vm;
    pa_curve c;
    pa__cpuinfo_read(env->procfs, model, sizeof(model), &vm);
    if (model[0] && pa__calib_for_model(env, model, &c, path, sizeof(path), bad, badlen)) {
        snprintf(why, len, "calibration %s (%s)", path,
                 strcmp(c.match, model) ? "given" : "made on this CPU");
        return 1;
    }
    if (model[0] && pa__hwdb_curve(env->hwdb, model, &c) == 0) {
        snprintf(why, len, "hwdb curve \"%s\" matches this CPU (%.80s)", c.match, c.source);
        return 1;
    }
    if (vm) {
        snprintf(why, len,
                 "virtual machine (cpuinfo flag hypervisor), no curve for "
                 "'%s': default curve %g-%g W per vCPU (assumed)",
                 model[0] ? model : "(no name)", PA_CURVE_VCPU_MIN_W, PA_CURVE_VCPU_MAX_W);
        return 2;
    }
    snprintf(why, len, "no load-power curve or calibration for '%s'",
             model[0] ? model : "(no name)");
    return 0;
}

int pa__curve_match(const pa_env *env, char *why, size_t len)
{
    char bad[300] = "";
    int rc = curve_match(env, why, len, bad, sizeof(bad));
    size_t n = strlen(why);
    if (bad[0] && n < len)
        snprintf(why + n, len - n, "; %s", bad);
    return rc;
}

/* ---- the public calibration API (powerapi.h) ---- */

double pa_curve_power_w(const pa_curve *c, double load)
{
    return pa__curve_at(c, load);
}

int pa_calibration_read(const char *path, pa_curve *out)
{
    if (!path || !out)
        return pa__err(-EINVAL, "pa_calibration_read: path and out are "
                                "required");
    return pa__calib_read(path, out);
}

int pa_calibration_write(const char *path, const pa_curve *c, const double *residual_w,
                         unsigned ncpus, double valid_mean_pct, double valid_p95_pct,
                         double valid_energy_pct)
{
    if (!path || !c)
        return pa__err(-EINVAL, "pa_calibration_write: path and c are "
                                "required");
    return pa__calib_write(path, c, residual_w, NULL, NULL, ncpus, valid_mean_pct, valid_p95_pct,
                           valid_energy_pct);
}

int pa_calibration_standard_path(char *buf, size_t len)
{
    if (!buf || !len)
        return pa__err(-EINVAL, "pa_calibration_standard_path: no buffer");
    return pa__calib_standard_path(buf, len);
}
