/* bench_util.h - what the benchmarks share: the median of a run's figures. */
#ifndef PA_BENCH_UTIL_H
#define PA_BENCH_UTIL_H

#include <stddef.h>
#include <stdlib.h>

static inline int pa_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v (ascending) and returns its median. */
static inline double pa_bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), pa_bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
