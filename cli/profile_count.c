/*
 * profile_count.c - `powerapi profile --count`: the counters started on
 * the targets, and calls.csv (DESIGN.md 13.7).
 */
#include "profile_count.h"
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file a command runs: cmd itself when it has a '/', else the first
 * executable of that name on $PATH. */
static int command_file(const char *cmd, char *out, size_t len)
{
    if (strchr(cmd, '/'))
        return realpath(cmd, out) ? 0 : -errno;
    const char *path = getenv("PATH");
    char *dup = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
    if (!dup)
        return -ENOMEM;
    int rc = -ENOENT;
    for (char *d = strtok_r(dup, ":", &save); d && rc; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX + 256];
        snprintf(p, sizeof(p), "%s/%s", d, cmd);
        if (access(p, X_OK) == 0 && realpath(p, out))
            rc = 0;
    }
    free(dup);
    (void)len;
    return rc;
}

int cli_count_start(const char *spec, int timed, const char *sysfs, const char *procfs, pid_t pid,
                    char *const *cmd, pf_count **out)
{
    char exe[PATH_MAX], err[1024] = "";
    int rc;
    if (cmd)
        rc = command_file(cmd[0], exe, sizeof(exe));
    else {
        char link[PATH_MAX];
        snprintf(link, sizeof(link), "%s/%d/exe", procfs, (int)pid);
        ssize_t n = readlink(link, exe, sizeof(exe) - 1);
        rc = n > 0 ? 0 : -errno;
        if (n > 0)
            exe[n] = '\0';
    }
    pf_count *c = NULL;
    rc = pf_count_new(&c, sysfs, spec, rc == 0 ? exe : NULL, err, sizeof(err));
    if (rc == 0) {
        pf_count_time(c, timed);
        rc = pf_count_open(c, pid, err, sizeof(err));
    }
    if (rc < 0) {
        pf_count_free(c);
        cli_error("profile", "%s", err[0] ? err : strerror(-rc));
        return CLI_EXIT_FAIL;
    }
    *out = c;
    return 0;
}

/* calls.csv's last column: the mean time per call, empty when not timed
 * (or a call had not returned). */
static void mean_ms(FILE *f, double ns)
{
    if (ns >= 0)
        fprintf(f, "%.6f", ns * 1e-6);
    fputc('\n', f);
}

int cli_count_write(const pf_count *c, pc_prof *prof, const char *dir, char **json)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/calls.csv", dir);
    FILE *f = fopen(p, "we");
    size_t jlen = 0;
    FILE *j = open_memstream(json, &jlen);
    if (!f || !j) {
        int e = errno;
        if (f)
            fclose(f);
        if (j)
            fclose(j);
        return -e;
    }
    pf_count_poll((pf_count *)c);
    fputs("function,file,pid,tid,calls,energy_j,self_energy_j,energy_per_call_j,"
          "self_energy_per_call_j,cpu_time_s,wall_mean_ms\n",
          f);
    fputs("  \"count_energy_model\": \"calls: every call, from the kernel's uprobe PMU; "
          "energy: the function's sampled energy (functions.csv's total and self), over its "
          "calls\",\n  \"counted\": [",
          j);
    for (size_t i = 0; i < pf_count_n(c); i++) {
        const char *name, *path;
        uint64_t n = pf_count_read(c, i, &name, &path);
        pc_stat s;
        pc_prof_function(prof, name, &s);
        double per = n ? 1.0 / (double)n : 0;
        /* the function over every thread (pid and tid 0), then by thread:
         * calls alone, the samples are not kept by thread and function */
        double mean = pf_count_mean_ns(c, i);
        fprintf(f, "%s,%s,0,0,%llu,%.9f,%.9f,%.12f,%.12f,%.6f,", name, path, (unsigned long long)n,
                s.total_j, s.self_j, s.total_j * per, s.self_j * per, s.cpu_s);
        mean_ms(f, mean);
        const pf_cthread *t;
        size_t nt = pf_count_threads(c, i, &t);
        for (size_t k = 0; k < nt; k++) {
            fprintf(f, "%s,%s,%d,%d,%llu,,,,,,", name, path, (int)t[k].pid, (int)t[k].tid,
                    (unsigned long long)t[k].calls);
            mean_ms(f, t[k].calls && t[k].returns == t[k].calls
                           ? (double)(t[k].sum_return_ns - t[k].sum_entry_ns) / (double)t[k].calls
                           : -1);
        }
        fprintf(j,
                "%s\n    {\"function\": \"%s\", \"calls\": %llu, \"energy_j\": %.9f, "
                "\"energy_per_call_j\": %.12f, \"self_energy_per_call_j\": %.12f",
                i ? "," : "", name, (unsigned long long)n, s.total_j, s.total_j * per,
                s.self_j * per);
        if (mean >= 0)
            fprintf(j, ", \"wall_mean_ms\": %.6f", mean * 1e-6);
        fputc('}', j);
    }
    fputs(pf_count_n(c) ? "\n  ],\n" : "],\n", j);
    fprintf(j, "  \"count_records_lost\": %llu,\n", (unsigned long long)pf_count_lost(c));
    fclose(j);
    return fclose(f) == 0 ? 0 : -errno;
}
