/*
 * pstats.c - the statistics of `powerapi diff` and of repeated profiles:
 * mean and spread, Student's t distribution (its two-sided tail through
 * the regularized incomplete beta function, its quantile by bisection)
 * and Welch's t-test of two means with unequal variances.
 */
#include "pdiff.h"

#include <math.h>

void pc_stats_mean_sd(const double *v, size_t n, double *mean, double *sd)
{
    double m = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        m += v[i];
    m = n ? m / (double)n : 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

/* The continued fraction of the incomplete beta function (modified
 * Lentz), converging for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-14)
            break;
    }
    return h;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double beta_inc(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    double bt = exp(lbt);
    if (x < (a + 1) / (a + b + 2))
        return bt * beta_cf(a, b, x) / a;
    return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

/* P(|T| > t) for Student's t with df degrees of freedom. */
static double t_two_tail(double t, double df)
{
    return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double pc_stats_t_quantile(double conf, double df)
{
    double lo = 0, hi = 1e4, want = 1 - conf;
    for (int i = 0; i < 200 && hi - lo > 1e-10; i++) {
        double mid = (lo + hi) / 2;
        if (t_two_tail(mid, df) > want)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

double pc_stats_welch(const double *a, size_t na, const double *b, size_t nb, double *df,
                      double *ci95)
{
    double ma, sa, mb, sb;
    pc_stats_mean_sd(a, na, &ma, &sa);
    pc_stats_mean_sd(b, nb, &mb, &sb);
    double va = sa * sa / (double)na, vb = sb * sb / (double)nb, se2 = va + vb;
    if (se2 <= 0) {
        *df = (double)(na + nb - 2);
        *ci95 = 0;
        return mb == ma ? 1 : 0;
    }
    double d = se2 * se2 / (va * va / (double)(na - 1) + vb * vb / (double)(nb - 1));
    double t = (mb - ma) / sqrt(se2);
    *df = d;
    *ci95 = pc_stats_t_quantile(0.95, d) * sqrt(se2);
    return t_two_tail(fabs(t), d);
}
