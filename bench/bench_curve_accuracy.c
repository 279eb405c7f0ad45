/*
 * bench_curve_accuracy.c - how wrong is each CPU model on published
 * measurements?  For every "curve" record of the hardware database (the
 * SPECpower_ssj2008 results it cites), each published level (active idle,
 * 10 % .. 100 %) is predicted twice and compared with the published watts:
 *
 *   curve    leave-one-level-out: the curve without that level (linear
 *            between its neighbours, or extrapolated from the two nearest
 *            at the ends), as cpu-curve interpolates;
 *   cpu-tdp  the TDP model on the same machine: 0.7 x TDP x packages at
 *            the nominal frequency (no cpufreq), the hwdb cpu record's TDP.
 *
 * Prints, per CPU, the mean and largest absolute error in percent.
 * Usage: bench_curve_accuracy [HWDB]  (default: the source tree's).
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prediction at level i of a curve without it. */
static double leave_one_out(const pa_curve *c, size_t i)
{
    size_t a, b;
    if (i == 0) {
        a = 1;
        b = 2;
    } else if (i == c->n - 1) {
        a = c->n - 3;
        b = c->n - 2;
    } else {
        a = i - 1;
        b = i + 1;
    }
    double slope = (c->watts[b] - c->watts[a]) / (c->load[b] - c->load[a]);
    return c->watts[a] + slope * (c->load[i] - c->load[a]);
}

int main(int argc, char **argv)
{
    const char *path = pa__hwdb_path(argc > 1 ? argv[1] : NULL);
    if (!path) {
        fprintf(stderr, "bench_curve_accuracy: no hardware database\n");
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    printf("# published SPECpower_ssj2008 levels of %s: |model - published| "
           "/ published\n",
           path);
    printf("%-18s %6s %6s | %-22s | %-22s\n", "CPU (hwdb match)", "idle W", "max W",
           "curve LOO mean / max %", "cpu-tdp mean / max %");
    char line[1100];
    double all_c = 0, all_t = 0;
    unsigned n_all = 0, ncpu = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "curve \"", 7) != 0)
            continue;
        char match[96];
        size_t k = 0;
        for (const char *p = line + 7; *p && *p != '"' && k + 1 < sizeof(match); p++)
            match[k++] = *p;
        match[k] = '\0';
        pa_curve c;
        pa_hwdb_cpu cpu;
        if (pa__hwdb_curve(path, match, &c) < 0 || c.n < 3) {
            fprintf(stderr, "%s: %s\n", match, pa_last_error());
            return 1;
        }
        bool have_tdp = pa__hwdb_cpu(path, match, &cpu) == 0;
        double tdp_w = have_tdp ? 0.7 * cpu.tdp_w * c.packages : NAN;
        double sc = 0, mc = 0, st = 0, mt = 0;
        for (size_t i = 0; i < c.n; i++) {
            double e = fabs(leave_one_out(&c, i) - c.watts[i]) / c.watts[i];
            double t = fabs(tdp_w - c.watts[i]) / c.watts[i];
            sc += e;
            mc = e > mc ? e : mc;
            st += t;
            mt = t > mt ? t : mt;
            all_c += e;
            all_t += t;
            n_all++;
        }
        ncpu++;
        printf("%-18s %6.1f %6.1f | %9.1f / %-10.1f | ", match, c.watts[0], c.watts[c.n - 1],
               100 * sc / c.n, 100 * mc);
        if (have_tdp)
            printf("%9.1f / %-10.1f (0.7 x %g W x %u)\n", 100 * st / c.n, 100 * mt, cpu.tdp_w,
                   c.packages);
        else
            printf("%22s\n", "no cpu record");
    }
    fclose(f);
    if (n_all)
        printf("%-18s %6s %6s | %9.1f %12s | %9.1f\n", "all levels", "", "", 100 * all_c / n_all,
               "", 100 * all_t / n_all);
    return ncpu ? 0 : 1;
}
