/*
 * bench_diff.c - `powerapi diff` of two 100,000-node profiles (issue 44):
 * two synthetic result folders of `powerapi profile` (energy.collapsed
 * with one line per call-tree node, functions.csv with 30,011 functions,
 * summary.json), B with every value moved a little and 100 functions
 * renamed; timed: loading both (pc_side_load), comparing (pc_diff_new:
 * matching, tests, the union tree) and writing the four files, beside the
 * floor measured in the same run: reading both folders' files into memory
 * and splitting their lines.  Median of 5 rounds.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "pdiff.h"
#include "profcore.h"

#define NODES 100000
#define FUNCS 30011
#define ROUNDS 5

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *fname(int f, int side, char *buf, size_t len)
{
    snprintf(buf, len, side && f % 300 == 7 ? "fn_%d_v2" : "fn_%d", f);
    return buf;
}

/* node i: parent (i - 1) / 4, function i % FUNCS; self energy in uJ */
static void write_side(const char *dir, int side)
{
    char path[4200];
    if (pc_out_mkdirs(dir, 0755) < 0)
        exit(1);
    snprintf(path, sizeof(path), "%s/energy.collapsed", dir);
    FILE *c = fopen(path, "w");
    double *self = calloc(FUNCS, sizeof(double)), total = 0;
    int chain[64];
    srand(1 + (unsigned)side);
    for (int i = 0; i < NODES && c && self; i++) {
        int d = 0;
        for (int k = i; d < 64; k = (k - 1) / 4) {
            chain[d++] = k;
            if (k == 0)
                break;
        }
        for (int k = d - 1; k >= 0; k--) {
            char b[32];
            fprintf(c, "%s%s", fname(chain[k] % FUNCS, side, b, sizeof(b)), k ? ";" : "");
        }
        long uj = 1000 + i % 997 + (side ? rand() % 100 : 0);
        fprintf(c, " %ld\n", uj);
        self[i % FUNCS] += (double)uj * 1e-6;
        total += (double)uj * 1e-6;
    }
    fclose(c);
    snprintf(path, sizeof(path), "%s/functions.csv", dir);
    FILE *f = fopen(path, "w");
    fputs("function,module,source,self_energy_j,total_energy_j,self_samples,total_samples,"
          "cpu_time_s\n",
          f);
    for (int i = 0; i < FUNCS; i++) {
        char b[32];
        fprintf(f, "%s,bench,,%.6f,%.6f,1,1,0.001\n", fname(i, side, b, sizeof(b)), self[i],
                self[i]);
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    f = fopen(path, "w");
    fprintf(f, "{\"process_energy_j\": %.6f}\n", total);
    fclose(f);
    free(self);
}

/* the floor: both folders' files read and their lines split */
static double read_floor(const char *const *dirs)
{
    static const char *const files[] = {"energy.collapsed", "functions.csv", "summary.json"};
    double t0 = now_s();
    size_t lines = 0;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/%s", dirs[s], files[k]);
            FILE *f = fopen(path, "r");
            char *line = NULL;
            size_t cap = 0;
            while (f && getline(&line, &cap, f) > 0)
                lines++;
            free(line);
            if (f)
                fclose(f);
        }
    double t = now_s() - t0;
    return lines ? t : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    char tmpl[] = "/tmp/bench-diff-XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    char a[4200], b[4200], out[4200];
    snprintf(a, sizeof(a), "%s/a", tmpl);
    snprintf(b, sizeof(b), "%s/b", tmpl);
    snprintf(out, sizeof(out), "%s/out", tmpl);
    write_side(a, 0);
    write_side(b, 1);
    const char *dirs[] = {a, b};
    double fl[ROUNDS], ld[ROUNDS], cmp[ROUNDS], wr[ROUNDS], all[ROUNDS];
    size_t rows = 0;
    for (int r = 0; r < ROUNDS; r++) {
        char err[512];
        fl[r] = read_floor(dirs);
        double t0 = now_s();
        pc_side *sa, *sb;
        if (pc_side_load(a, &sa, err, sizeof(err)) < 0 ||
            pc_side_load(b, &sb, err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_diff: %s\n", err);
            return 1;
        }
        double t1 = now_s();
        pc_diff *d;
        if (pc_diff_new(sa, sb, 5, &d, err, sizeof(err)) < 0)
            return 1;
        double t2 = now_s();
        if (pc_diff_write(d, out, "a", "b") < 0)
            return 1;
        double t3 = now_s();
        pc_diff_rows(d, &rows);
        pc_diff_free(d);
        pc_side_free(sa);
        pc_side_free(sb);
        ld[r] = t1 - t0;
        cmp[r] = t2 - t1;
        wr[r] = t3 - t2;
        all[r] = t3 - t0;
    }
    printf("bench_diff: two profiles of %d call-tree nodes, %d functions (%zu rows compared), "
           "median of %d rounds\n",
           NODES, FUNCS, rows, ROUNDS);
    printf("  floor: reading both folders' files, lines split  %8.1f ms\n",
           1e3 * pa_bench_median(fl, ROUNDS));
    printf("  loading both sides (pc_side_load)               %8.1f ms\n",
           1e3 * pa_bench_median(ld, ROUNDS));
    printf("  comparing (match, Welch/Holm, union tree)        %8.1f ms\n",
           1e3 * pa_bench_median(cmp, ROUNDS));
    printf("  writing diff.csv, .json, .md, flamegraph.html    %8.1f ms\n",
           1e3 * pa_bench_median(wr, ROUNDS));
    printf("  powerapi diff in all                             %8.1f ms (goal: under 1000)\n",
           1e3 * pa_bench_median(all, ROUNDS));
    return nftw(tmpl, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : 1;
}
