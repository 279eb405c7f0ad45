/*
 * prepeat.c - a repeated profile's figures (`powerapi profile --repeat
 * N`, issue 44): per function the mean self and inclusive energy over the
 * runs, their spread and 95 % confidence intervals (Student's t with
 * N - 1 degrees of freedom), the same for the whole run, and the total's
 * coefficient of variation: how noisy the machine was.
 */
#include "pdiff_int.h"
#include "profcore.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct rep_stat {
    double mean, sd, half; /* half: the 95 % interval's half-width */
} rep_stat;

static rep_stat stat_of(const double *v, size_t n)
{
    rep_stat s;
    pc_stats_mean_sd(v, n, &s.mean, &s.sd);
    s.half = n > 1 ? pc_stats_t_quantile(0.95, (double)(n - 1)) * s.sd / sqrt((double)n) : 0;
    return s;
}

static void csv_stat(FILE *f, rep_stat s)
{
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f", s.mean, s.sd, s.mean - s.half, s.mean + s.half);
}

static const pc_side *cmp_side;
static int cmp_fn(const void *x, const void *y)
{
    const pside_fn *a = &cmp_side->fns[*(const int *)x], *b = &cmp_side->fns[*(const int *)y];
    double sa = 0, sb = 0;
    for (size_t r = 0; r < cmp_side->runs; r++) {
        sa += a->self[r];
        sb += b->self[r];
    }
    return sa != sb ? (sa > sb ? -1 : 1) : strcmp(a->name, b->name);
}

static int write_csv(const pc_side *s, const char *dir)
{
    int *order = malloc((s->nfns ? s->nfns : 1) * sizeof(int));
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < s->nfns; i++)
        order[i] = (int)i;
    cmp_side = s;
    qsort(order, s->nfns, sizeof(int), cmp_fn);
    pc_out o;
    int rc = pc_out_open(&o, dir, "repeat.csv");
    if (rc < 0) {
        free(order);
        return rc;
    }
    fputs("function,module,runs,self_mean_j,self_sd_j,self_ci95_low_j,self_ci95_high_j,"
          "total_mean_j,total_sd_j,total_ci95_low_j,total_ci95_high_j\n",
          o.f);
    rep_stat t = stat_of(s->total, s->runs);
    fprintf(o.f, "[total],,%zu", s->runs);
    csv_stat(o.f, t);
    csv_stat(o.f, t);
    fputc('\n', o.f);
    for (size_t k = 0; k < s->nfns; k++) {
        const pside_fn *f = &s->fns[order[k]];
        pa__csv_write(o.f, f->name);
        fputc(',', o.f);
        pa__csv_write(o.f, f->module);
        fprintf(o.f, ",%zu", s->runs);
        csv_stat(o.f, stat_of(f->self, s->runs));
        csv_stat(o.f, stat_of(f->total, s->runs));
        fputc('\n', o.f);
    }
    free(order);
    return pc_out_close(&o);
}

int pc_side_write_repeat(const pc_side *s, const char *dir, unsigned long warmup, double *mean_j,
                         double *half_j, double *cv)
{
    int rc = write_csv(s, dir);
    if (rc < 0)
        return rc;
    rep_stat t = stat_of(s->total, s->runs);
    *mean_j = t.mean;
    *half_j = t.half;
    *cv = t.mean > 0 ? t.sd / t.mean : 0;
    pc_out o;
    rc = pc_out_open(&o, dir, "summary.json");
    if (rc < 0)
        return rc;
    fprintf(o.f, "{\"tool\": \"%s\", \"repeat\": %zu, \"warmup\": %lu, \"runs\": [", s->tool,
            s->runs, warmup);
    for (size_t r = 0; r < s->runs; r++)
        fprintf(o.f, "%s\"run-%zu\"", r ? ", " : "", r + 1);
    fputs("],\n \"process_energy_j_runs\": [", o.f);
    for (size_t r = 0; r < s->runs; r++)
        fprintf(o.f, "%s%.6f", r ? ", " : "", s->total[r]);
    fprintf(o.f,
            "],\n \"process_energy_j\": %.6f, \"process_energy_sd_j\": %.6f, "
            "\"process_energy_ci95_j\": [%.6f, %.6f], \"process_energy_cv\": %.6f,\n "
            "\"functions\": %zu, \"interval_method\": \"Student's t, 95 %%, %zu - 1 degrees of "
            "freedom\", \"complete\": true}\n",
            t.mean, t.sd, t.mean - t.half, t.mean + t.half, *cv, s->nfns, s->runs);
    return pc_out_close(&o);
}
