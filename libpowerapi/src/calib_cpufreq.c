/* calib_cpufreq.c - see calib_cpufreq.h */
#include "calib_cpufreq.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FQ_AVAIL 64
static struct {
    char path[PATH_MAX];
    char val[32];
    size_t len;
} fq_saved[PA__FQ_POLICIES];
static volatile sig_atomic_t fq_nsaved;

void pa__fq_restore(void)
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

void pa_calibrate_restore_cpufreq(void)
{
    pa__fq_restore();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

bool pa__fq_spec_ok(const char *spec)
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

int pa_calibrate_check_frequencies(const char *spec)
{
    if (spec && pa__fq_spec_ok(spec))
        return 0;
    return pa__err(-EINVAL,
                   "--frequencies %s: give none, or up to %d of min, mid, max "
                   "and MHz values joined by ',' (e.g. min,mid,max or "
                   "1200,2400)",
                   spec ? spec : "(null)", PA_CURVE_FREQS);
}

/* The frequencies a policy offers (scaling_available_frequencies), kHz. */
static size_t parse_avail(const char *p, uint64_t *avail)
{
    size_t navail = 0;
    while (navail < FQ_AVAIL) {
        while (*p == ' ' || *p == '\n')
            p++;
        char *end;
        if (*p < '0' || *p > '9')
            break;
        uint64_t k = strtoull(p, &end, 10);
        p = end;
        if (k)
            avail[navail++] = k;
    }
    return navail;
}

/* The policies under sysfs whose frequency can be set, into fq->ctl; the
 * first one's available frequencies into avail.  Their number. */
static size_t probe_policies(const char *sysfs, pa__fq_ctl *fq, uint64_t *avail)
{
    const char *dir_rel = "devices/system/cpu/cpufreq";
    char dpath[PATH_MAX];
    snprintf(dpath, sizeof(dpath), "%s/%s", sysfs, dir_rel);
    size_t navail = 0;
    DIR *d = opendir(dpath);
    struct dirent *e;
    while (d && (e = readdir(d)) && fq->npol < PA__FQ_POLICIES) {
        if (strncmp(e->d_name, "policy", 6))
            continue;
        char rel[512], buf[1024], gov[64] = "";
        snprintf(rel, sizeof(rel), "%s/%s/scaling_available_frequencies", dir_rel, e->d_name);
        if (pa__read_file(sysfs, rel, buf, sizeof(buf)) <= 0)
            continue;
        snprintf(rel, sizeof(rel), "%s/%s/scaling_governor", dir_rel, e->d_name);
        if (pa__read_file(sysfs, rel, gov, sizeof(gov)) > 0)
            gov[strcspn(gov, "\n")] = '\0';
        const char *file = !strcmp(gov, "userspace") ? "scaling_setspeed" : "scaling_max_freq";
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s/%s/%s", sysfs, dir_rel, e->d_name, file);
        if (access(path, W_OK) < 0)
            continue;
        snprintf(fq->ctl[fq->npol++], PATH_MAX, "%s", path);
        snprintf(fq->how, sizeof(fq->how), "%s", file);
        if (!navail)
            navail = parse_avail(buf, avail);
    }
    if (d)
        closedir(d);
    return navail;
}

void pa__fq_probe(const char *sysfs, const char *spec, pa__fq_ctl *fq)
{
    memset(fq, 0, sizeof(*fq));
    if (spec && !strcmp(spec, "none"))
        return;
    uint64_t avail[FQ_AVAIL];
    size_t navail = probe_policies(sysfs, fq, avail);
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

/* Saves what every controllable policy holds now (once). */
static int fq_save(const pa__fq_ctl *fq)
{
    for (size_t i = 0; i < fq->npol; i++) {
        char buf[32];
        int fd = open(fq->ctl[i], O_RDONLY | O_CLOEXEC);
        ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -errno;
        if (fd >= 0 && r < 0)
            r = -errno;
        if (fd >= 0)
            close(fd);
        if (r <= 0)
            return pa__err(r < 0 ? (int)r : -EIO, "calibrate: cannot read %s: %s", fq->ctl[i],
                           strerror(r < 0 ? (int)-r : EIO));
        snprintf(fq_saved[i].path, sizeof(fq_saved[i].path), "%s", fq->ctl[i]);
        memcpy(fq_saved[i].val, buf, (size_t)r);
        fq_saved[i].len = (size_t)r;
    }
    fq_nsaved = (sig_atomic_t)fq->npol;
    return 0;
}

int pa__fq_set(pa__fq_ctl *fq, uint64_t khz)
{
    int rc;
    if (!fq_nsaved && (rc = fq_save(fq)) < 0)
        return rc;
    char val[32];
    int len = snprintf(val, sizeof(val), "%llu\n", (unsigned long long)khz);
    for (size_t i = 0; i < fq->npol; i++) {
        int fd = open(fq->ctl[i], O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0 || write(fd, val, (size_t)len) != len) {
            int err = errno ? errno : EIO;
            if (fd >= 0)
                close(fd);
            return pa__err(-err,
                           "calibrate: cannot set %s to %llu kHz: %s; give "
                           "--frequencies none to calibrate at the current "
                           "frequency only",
                           fq->ctl[i], (unsigned long long)khz, strerror(err));
        }
        close(fd);
    }
    return 0;
}
