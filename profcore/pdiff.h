/*
 * pdiff.h - comparing two profiles (`powerapi diff A B`, issue 44): the
 * result folders of `powerapi profile` or jalen, single runs or repeated
 * ones (`--repeat N`: run-1/ ... run-N/), and pprof files with an energy
 * or CPU sample type; functions (methods) matched by name across builds,
 * the change of each with Welch's t-test where both sides have repeats,
 * and the files of the comparison (diff.csv, diff.json, diff.md, the
 * differential flame graph).
 *
 * Part of profcore/ (so the agent's side could use it too); nothing here
 * prints on its own, aborts or exits; errors are negative errno values
 * with a one-line message in the caller's buffer.  Not thread-safe: one
 * comparison is built from one thread.
 */
#ifndef PA_PDIFF_H
#define PA_PDIFF_H

#include <stddef.h>
#include <stdio.h>

/* ---- statistics (pure functions, for the tests too) ---- */

/* Mean and sample standard deviation (n - 1; 0 when n < 2) of v[n]. */
void pc_stats_mean_sd(const double *v, size_t n, double *mean, double *sd);
/* The two-sided quantile of Student's t with df degrees of freedom at
 * confidence level conf (0.95: t such that P(|T| <= t) = 0.95). */
double pc_stats_t_quantile(double conf, double df);
/* Welch's t-test of mean(b) - mean(a): the two-sided p-value (1 when the
 * difference is 0 and both spreads are, 0 when only the spreads are),
 * the degrees of freedom and the half-width of the difference's 95 %
 * confidence interval.  Needs na, nb >= 2. */
double pc_stats_welch(const double *a, size_t na, const double *b, size_t nb, double *df,
                      double *ci95);

/* ---- one side: a profile, repeated or not ---- */

typedef struct pc_side pc_side;

/* Loads path: a folder of `powerapi profile` (functions.csv,
 * summary.json, energy.collapsed) or jalen (methods.csv ...), one with
 * run-1/ ... run-N/ folders of such (a repeated profile), or a pprof file
 * (gzipped or not) with an "energy" (microjoules) or "cpu" (nanoseconds)
 * sample type.  0, or -errno with one line in err (a missing file, an
 * empty profile, a pprof without such a sample type, an unknown
 * folder). */
int pc_side_load(const char *path, pc_side **out, char *err, size_t errlen);
void pc_side_free(pc_side *s);
/* "profile", "jalen" or "pprof"; its unit, "J" or "s" (a CPU pprof); its
 * runs. */
const char *pc_side_tool(const pc_side *s);
const char *pc_side_unit(const pc_side *s);
size_t pc_side_runs(const pc_side *s);

/* A repeated profile's figures into dir (the folder of its run-N/):
 * repeat.csv (per function the mean self and inclusive energy, spread and
 * 95 % interval; "[total]" first) and summary.json (the runs, the total's
 * mean, spread, interval and coefficient of variation).  *mean_j, *half_j
 * (the interval's half-width) and *cv for the caller's words.  0 or
 * -errno. */
int pc_side_write_repeat(const pc_side *s, const char *dir, unsigned long warmup, double *mean_j,
                         double *half_j, double *cv);

/* ---- the comparison ---- */

/* One compared value (a total, a function's self or inclusive energy). */
typedef struct pc_change {
    double a, b;       /* means */
    double a_sd, b_sd; /* spreads (0 with one run) */
    double change;     /* b - a */
    double pct;        /* 100 * change / a (0 when a is 0) */
    double ci95;       /* half-width of the change's 95 % interval (0: none) */
    double p;          /* Welch's two-sided p-value (-1: not tested) */
    int significant;   /* p < 0.05 (Holm-adjusted for functions); with no
                          test, -1 */
} pc_change;

/* How a function of A was matched with one of B. */
enum {
    PC_MATCH_NAME = 0, /* same name and module */
    PC_MATCH_MODULE,   /* same name, the module's file renamed */
    PC_MATCH_UNSURE,   /* "[unknown] mod+0x..." frames, by module only */
    PC_MATCH_ONLY_A,   /* gone in B (a rename is said in note) */
    PC_MATCH_ONLY_B,   /* new in B */
};

typedef struct pc_diff_row {
    const char *name, *module; /* B's when matched */
    const char *a_module;      /* A's (NULL: only in B) */
    int match;                 /* PC_MATCH_* */
    pc_change self, total;
    double share; /* percent of the total's change (self change) */
    char note[160];
} pc_diff_row;

typedef struct pc_diff pc_diff;

/* Compares a with b (same unit; the caller checks the tools): rows sorted
 * by the absolute self change, largest first.  A function's change under
 * min_pct percent of its energy in A is taken as noise even when the test
 * finds it (a real but negligible shift: the machine's state between the
 * two sets of runs).  0, -EINVAL with a line in err (different units),
 * -ENOMEM. */
int pc_diff_new(const pc_side *a, const pc_side *b, double min_pct, pc_diff **out, char *err,
                size_t errlen);
void pc_diff_free(pc_diff *d);
const pc_change *pc_diff_total(const pc_diff *d);
const pc_diff_row *pc_diff_rows(const pc_diff *d, size_t *n);
/* The method of the test, as the outputs name it. */
const char *pc_diff_method(const pc_diff *d);
/* The row of a function of that name (A's or B's), or NULL. */
const pc_diff_row *pc_diff_find(const pc_diff *d, const char *name);

/* The files in dir (created): diff.csv, diff.json, diff.md and
 * flamegraph.html (width: the mean of A and B; colour: the change).
 * labels name A and B.  0 or -errno. */
int pc_diff_write(const pc_diff *d, const char *dir, const char *label_a, const char *label_b);
/* The text summary (the total, then the first max_rows rows) to f. */
void pc_diff_print(const pc_diff *d, FILE *f, size_t max_rows);

#endif
