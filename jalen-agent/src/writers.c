/*
 * writers.c - the output files of DESIGN.md section 8.5.
 *
 * Every file is written to ".<name>.tmp" in the output folder and then
 * takes <name>'s place in one step (pc_out_close), so a reader never sees
 * half a file and a killed JVM leaves the last complete window.  The text,
 * the collapsed stacks, the flame graph and pprof are profcore/'s writers,
 * shared with `powerapi profile`.
 *
 * When the folder cannot be written (full file system, read-only, gone)
 * the JVM runs on: the agent says once what failed, the files of the
 * last complete window stay (a .tmp that could not be written whole is
 * removed, timeline.csv is cut back to its last whole row), and the next
 * windows try again; a removed folder is made again.  When writing works
 * again the agent says so once.
 */
#include "jalen.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sorted tables (profcore's pc_rank): by self energy, then name. */
static double jl_key_self(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.ms[i].self_j;
}

static double jl_key_fself(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.ms[i].fself_j;
}

static const char *jl_key_name(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.m[i].name;
}

static double jl_key_cself(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.cs[i].self_j;
}

static const char *jl_key_cname(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.c[i].name;
}

static int jl_method_used(const void *ctx, int i)
{
    (void)ctx;
    const pc_stat *m = &jl_prof.ms[i];
    return m->total_samples || m->total_j > 0 || m->net_bytes || m->fself_j > 0 || m->fself_samples;
}

/* filtered: every used method of the filter (energy, samples or bytes:
 * one that only moved bytes keeps its row, as in methods.csv), and the
 * pseudo-frames that hold filtered energy */
static int jl_method_filtered(const void *ctx, int i)
{
    const pc_stat *m = &jl_prof.ms[i];
    return jl_method_used(ctx, i) && (jl_prof.m[i].matches || m->fself_j > 0 || m->fself_samples);
}

static int jl_class_used(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.cs[i].total_j > 0 || jl_prof.cs[i].self_j > 0;
}

static int jl_method_spent(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.ms[i].total_j > 0;
}

static int jl_write_methods(const char *dir, int filtered)
{
    const jl_profile *p = &jl_prof;
    const pc_rank r = {.count = p->nm,
                       .keep = filtered ? jl_method_filtered : jl_method_used,
                       .key = filtered ? jl_key_fself : jl_key_self,
                       .name = jl_key_name};
    pc_out o;
    int *idx;
    size_t n;
    int rc = pc_table_open(&o, dir, filtered ? "methods-filtered.csv" : "methods.csv",
                           "method,self_energy_j,total_energy_j,cpu_energy_j,net_energy_j,"
                           "self_samples,total_samples,net_bytes\n",
                           &r, &idx, &n);
    if (rc < 0)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const pc_stat *m = &p->ms[idx[k]];
        pa__csv_write(o.f, p->m[idx[k]].name);
        const double e[] = {filtered ? m->fself_j : m->self_j, m->total_j, m->cpu_j, m->net_j};
        const uint64_t n3[] = {filtered ? m->fself_samples : m->self_samples, m->total_samples,
                               m->net_bytes};
        for (int i = 0; i < 4; i++) {
            fputc(',', o.f);
            pc_out_fix(o.f, e[i], 9);
        }
        for (int i = 0; i < 3; i++) {
            fputc(',', o.f);
            pc_out_u64(o.f, n3[i]);
        }
        fputc('\n', o.f);
    }
    free(idx);
    return pc_out_close(&o);
}

static int jl_write_classes(const char *dir)
{
    const jl_profile *p = &jl_prof;
    const pc_rank r = {
        .count = p->nc, .keep = jl_class_used, .key = jl_key_cself, .name = jl_key_cname};
    pc_out o;
    int *idx;
    size_t n;
    int rc = pc_table_open(&o, dir, "classes.csv",
                           "class,self_energy_j,total_energy_j,cpu_energy_j,net_energy_j\n", &r,
                           &idx, &n);
    if (rc < 0)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const pc_stat *c = &p->cs[idx[k]];
        pa__csv_write(o.f, p->c[idx[k]].name);
        const double e[] = {c->self_j, c->total_j, c->cpu_j, c->net_j};
        for (int i = 0; i < 4; i++) {
            fputc(',', o.f);
            pc_out_fix(o.f, e[i], 9);
        }
        fputc('\n', o.f);
    }
    free(idx);
    return pc_out_close(&o);
}

static int jl_write_threads(const char *dir)
{
    pc_out o;
    int *none;
    size_t n;
    int rc = pc_table_open(&o, dir, "threads.csv",
                           "tid,name,cpu_time_s,energy_j,cpu_energy_j,net_energy_j,net_bytes\n",
                           NULL, &none, &n);
    if (rc < 0)
        return rc;
    double agg[JL_K_COUNT][4];
    uint64_t aggb[JL_K_COUNT];
    memset(agg, 0, sizeof(agg));
    memset(aggb, 0, sizeof(aggb));
    pthread_mutex_lock(&jl_thr.lock);
    for (size_t i = 0; i < jl_thr.n; i++) {
        const jl_thread *t = &jl_thr.v[i];
        if (t->kind == JL_K_JAVA) {
            if (t->cpu_s <= 0 && t->energy_j <= 0 && !t->net_bytes)
                continue;
            fprintf(o.f, "%d,", (int)t->tid);
            pa__csv_write(o.f, t->name);
            fprintf(o.f, ",%.6f,%.9f,%.9f,%.9f,%llu\n", t->cpu_s, t->energy_j, t->cpu_j, t->net_j,
                    (unsigned long long)t->net_bytes);
        } else {
            agg[t->kind][0] += t->cpu_s;
            agg[t->kind][1] += t->energy_j;
            agg[t->kind][2] += t->cpu_j;
            agg[t->kind][3] += t->net_j;
            aggb[t->kind] += t->net_bytes;
        }
    }
    pthread_mutex_unlock(&jl_thr.lock);
    for (int k = 1; k < JL_K_COUNT; k++)
        fprintf(o.f, "0,%s,%.6f,%.9f,%.9f,%.9f,%llu\n", jl_kind_names[k], agg[k][0], agg[k][1],
                agg[k][2], agg[k][3], (unsigned long long)aggb[k]);
    return pc_out_close(&o);
}

/* scopes.csv: by inclusive energy, [other scopes] last. */
static double jl_key_scope(const void *ctx, int i)
{
    const jl_scope_row *r = ctx;
    return r[i].s.flags & PA_SCOPE_FOLDED ? -1 : r[i].s.energy_j;
}

static const char *jl_key_sname(const void *ctx, int i)
{
    const jl_scope_row *r = ctx;
    return r[i].s.name;
}

static int jl_scope_used(const void *ctx, int i)
{
    const jl_scope_row *r = ctx;
    return r[i].s.calls || r[i].s.cpu_time_s > 0;
}

/* One side (inclusive or self) of a scope's row. */
static void jl_scope_side(FILE *f, double cpu_s, double e, double net_j, uint64_t bytes,
                          const double q[4])
{
    const double v[] = {cpu_s, e, e - net_j, net_j};
    for (int i = 0; i < 4; i++) {
        fputc(',', f);
        pc_out_fix(f, v[i], i ? 9 : 6);
    }
    fputc(',', f);
    pc_out_u64(f, bytes);
    for (int i = 0; i < 4; i++)
        fprintf(f, ",%.9g", q[i]);
}

static int jl_write_scopes(const char *dir)
{
    jl_scope_row *rows;
    size_t total = jl_scopes_get(&rows);
    if (!total)
        return 0;
    const pc_rank r = {.count = total,
                       .keep = jl_scope_used,
                       .key = jl_key_scope,
                       .name = jl_key_sname,
                       .ctx = rows};
    pc_out o;
    int *idx;
    size_t n;
    /* carbon-intensity=G: the grams of each name's inclusive energy and
     * the intensity assumed, as the other outputs give them (DESIGN.md 17) */
    int carbon = jl_prof.source.carbon_g_per_kwh > 0;
    int rc = pc_table_open(&o, dir, "scopes.csv",
                           carbon ? "scope,calls,cpu_time_s,energy_j,cpu_energy_j,net_energy_j,"
                                    "net_bytes,mean_j,p50_j,p95_j,p99_j,self_cpu_time_s,"
                                    "self_energy_j,self_cpu_energy_j,self_net_energy_j,"
                                    "self_net_bytes,self_mean_j,self_p50_j,self_p95_j,self_p99_j,"
                                    "co2e_g,carbon_intensity_g_per_kwh\n"
                                  : "scope,calls,cpu_time_s,energy_j,cpu_energy_j,net_energy_j,"
                                    "net_bytes,mean_j,p50_j,p95_j,p99_j,self_cpu_time_s,"
                                    "self_energy_j,self_cpu_energy_j,self_net_energy_j,"
                                    "self_net_bytes,self_mean_j,self_p50_j,self_p95_j,self_p99_j\n",
                           &r, &idx, &n);
    if (rc < 0) {
        free(rows);
        return rc;
    }
    for (size_t k = 0; k < n; k++) {
        const jl_scope_row *w = &rows[idx[k]];
        const pa_scope_stats *s = &w->s;
        pa__csv_write(o.f, s->name);
        fputc(',', o.f);
        pc_out_u64(o.f, s->calls);
        const double qi[4] = {s->mean_j, s->p50_j, s->p95_j, s->p99_j};
        const double qs[4] = {s->self_mean_j, s->self_p50_j, s->self_p95_j, s->self_p99_j};
        jl_scope_side(o.f, s->cpu_time_s, s->energy_j, w->net.net_j, w->net.net_bytes, qi);
        jl_scope_side(o.f, s->self_cpu_time_s, s->self_energy_j, w->net.self_net_j,
                      w->net.self_net_bytes, qs);
        pc_source_carbon_csv_row(o.f, &jl_prof.source, s->energy_j);
        fputc('\n', o.f);
    }
    free(idx);
    free(rows);
    return pc_out_close(&o);
}

/* The call tree as the shared writers (profcore/) see it. */
static const char *jl_method_name(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.m[i].name;
}

static const char *jl_method_file(const void *ctx, int i)
{
    (void)ctx;
    return jl_prof.m[i].file ? jl_prof.m[i].file : "";
}

/* The tree is kept per method and line (pprof's lines); the collapsed
 * stacks and the flame graph are per method: the tree folded at each
 * write (NULL: out of memory, the tree as kept). */
static pc_tree_node *jl_fold;
static size_t jl_nfold;

/* scope=NAME: the folded tree's stacks under [scope NAME] */
static pc_tree_node *jl_sfold;
static size_t jl_nsfold;

/* The flame graph's tooltip line of a traced method (trace=), "" else. */
static const char *jl_method_note(const void *ctx, int i)
{
    (void)ctx;
    return jl_trace_note(jl_prof.m[i].name);
}

static pc_tree jl_tree(int lines)
{
    int kept = lines || !jl_fold;
    return (pc_tree){.nodes = kept ? jl_prof.tree.nodes : jl_fold,
                     .n = kept ? jl_prof.tree.n : jl_nfold,
                     .nfuncs = jl_prof.nm,
                     .name = jl_method_name,
                     /* pprof: the class's source file (package path) and
                      * the lines sampled; Java methods come from no binary
                      * of their own: one pseudo mapping, its functions
                      * named */
                     .file = jl_method_file,
                     .main_name = "[jvm]",
                     .note = jl_method_note};
}

int jl_write_pprof_delta(const char *dir, pc_delta *d, double since_s)
{
    pc_tree t = jl_tree(1);
    return pc_tree_write_pprof_delta(&t, d, dir, jl_run.o.interval_ns, since_s,
                                     "jalen: energy from libpowerapi per window, split over "
                                     "threads by CPU time and over their stack samples, since "
                                     "the previous push");
}

static int jl_write_html(const char *dir, const jl_opts *opt)
{
    char title[448], co2[160];
    pc_source_carbon_text(&jl_prof.source, jl_prof.process_j, co2, sizeof(co2));
    snprintf(title, sizeof(title), "jalen energy flame graph (pid %d, mode=%s)%s%s", (int)getpid(),
             opt->mode == JL_MODE_CPU ? "cpu" : "jvmti", co2[0] ? ", " : "", co2);
    pc_tree t = jl_tree(0);
    if (opt->scope) {
        snprintf(title, sizeof(title), "jalen energy flame graph of scope %.64s (pid %d, mode=%s)",
                 opt->scope, (int)getpid(), opt->mode == JL_MODE_CPU ? "cpu" : "jvmti");
        t.nodes = jl_sfold;
        t.n = jl_nsfold;
    }
    return pc_tree_write_flamegraph(&t, dir, title, jl_prof.process_j, jl_prof.duration_s);
}

/* timeline.csv grows by a few rows a window for as long as the JVM runs:
 * it is created once (atomically, with the rows so far) and then appended
 * to, each window's rows in one write(2), so that neither the file's
 * rewriting nor the rows kept in memory grow with the run's length.  Rows
 * whose write failed stay in memory for the next window. */
static int jl_timeline_created;

static void jl_timeline_rows(FILE *f)
{
    for (size_t i = 0; i < jl_prof.ntl; i++) {
        const jl_timeline_row *r = &jl_prof.tl[i];
        pc_out_fix(f, r->start_s, 3);
        fputc(',', f);
        pa__csv_write(f, jl_prof.m[r->method].name);
        fputc(',', f);
        pc_out_fix(f, r->power_w, 6);
        fputc('\n', f);
    }
}

static int jl_write_timeline(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/timeline.csv", dir);
    int fd = jl_timeline_created ? open(path, O_WRONLY | O_APPEND | O_CLOEXEC) : -1;
    if (fd < 0) { /* first window, or the file was removed: start it again */
        pc_out o;
        int *none;
        size_t n;
        int rc = pc_table_open(&o, dir, "timeline.csv", "window_start_s,method,power_w\n", NULL,
                               &none, &n);
        if (rc < 0)
            return rc;
        jl_timeline_rows(o.f);
        rc = pc_out_close(&o);
        if (rc == 0) {
            jl_timeline_created = 1;
            jl_prof.ntl = 0;
        }
        return rc;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        close(fd);
        return -ENOMEM;
    }
    jl_timeline_rows(m);
    int rc = fclose(m) == 0 ? 0 : -ENOMEM;
    off_t whole = lseek(fd, 0, SEEK_END); /* the file ends with a whole row */
    /* a short write is continued: rows half on disk must not be written
     * again next window */
    size_t done = 0;
    while (rc == 0 && done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w > 0)
            done += (size_t)w;
        else if (w < 0 && errno != EINTR)
            rc = -errno;
        else if (w == 0)
            rc = -EIO;
    }
    /* a failed append (a full file system) is cut back to the last whole
     * row and its rows are kept for the next window */
    if (rc < 0 && done && whole >= 0 && ftruncate(fd, whole) == 0)
        done = 0;
    if (rc == 0 || done)
        jl_prof.ntl = 0; /* written, or in part: not written twice */
    free(buf);
    close(fd);
    return rc;
}

/* What the agent holds: the sample ring, the tables, the net records (the
 * heap allocator's own overhead and libpowerapi's context not counted). */
static size_t jl_agent_memory(void)
{
    const jl_profile *p = &jl_prof;
    size_t b = sizeof(jl_slot) * JL_RING_SLOTS;
    b += p->capm * sizeof(jl_method) + p->capc * sizeof(jl_class);
    b += (p->capms + p->capcs) * sizeof(pc_stat) + p->capmch;
    for (size_t i = 0; i < p->nm; i++)
        b += strlen(p->m[i].name) + 1 + (p->m[i].file ? strlen(p->m[i].file) + 1 : 0);
    for (size_t i = 0; i < p->nc; i++)
        b += strlen(p->c[i].name) + 1;
    b += pc_tree_build_memory(&p->tree);
    b += (jl_nfold + jl_nsfold) * sizeof(jl_node); /* the tree folded per method */
    b += p->mhcap * (sizeof(int) + sizeof(jmethodID) + sizeof(jl_lines)) + p->chcap * sizeof(int);
    for (size_t i = 0; i < p->mhcap; i++)
        b += (size_t)p->mhlines[i].n * sizeof(jvmtiLineNumberEntry);
    b += p->captl * sizeof(jl_timeline_row);
    b += jl_thr.cap * sizeof(jl_thread) + jl_thr.hcap * sizeof(int);
    return b + jl_net_memory() + jl_unwind_memory() + jl_scopes_memory();
}

#ifdef JL_TIME_HANDLER
/* A timing build's figures of the handler (bench_jalen_cost.sh): its
 * samples and time, quartiles, median and p99 of its time per sample, the
 * mean, and the share of its time in samples of 50 us or more (its tail). */
static void jl_write_handler_times(FILE *f)
{
    fprintf(f, "  \"handler_timed_samples\": %lu,\n  \"handler_ns_total\": %lu,\n",
            atomic_load(&jl_smp.t_n), atomic_load(&jl_smp.t_total_ns));
    /* quartiles, then the median and p99 alone (bench_jalen_cost.sh) */
    unsigned long n = atomic_load(&jl_smp.t_n), c = 0;
    const unsigned long per100[4] = {25, 50, 75, 99};
    int q[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 512; i++) {
        c += atomic_load(&jl_smp.t_hist[i]);
        for (int k = 0; k < 4; k++)
            if (q[k] < 0 && c * 100 >= n * per100[k])
                q[k] = i;
    }
    fprintf(f, "  \"handler_us_quartiles\": [%.1f, %.1f, %.1f],\n", q[0] * 0.5 + 0.25,
            q[1] * 0.5 + 0.25, q[2] * 0.5 + 0.25);
    fprintf(f, "  \"handler_us_median\": %.1f,\n  \"handler_us_p99\": %.1f,\n", q[1] * 0.5 + 0.25,
            q[3] * 0.5 + 0.25);
    /* the share of the handler's time in samples of 50 us or more:
     * its tail (bench_jalen_cost.sh) */
    double slow = 0, all = 0;
    for (int i = 0; i < 512; i++) {
        double t = (double)atomic_load(&jl_smp.t_hist[i]) * (i * 0.5 + 0.25);
        all += t;
        slow += i >= 100 ? t : 0;
    }
    fprintf(f, "  \"handler_us_mean\": %.1f,\n  \"handler_slow_share\": %.3f,\n",
            n ? (double)atomic_load(&jl_smp.t_total_ns) / (double)n / 1000.0 : 0.0,
            all > 0 ? slow / all : 0.0);
}
#endif

static int jl_write_summary(const char *dir, const jl_opts *opt, int final)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "summary.json");
    if (rc < 0)
        return rc;
    const jl_profile *p = &jl_prof;
    double unattr = p->ms[JL_M_UNATTRIBUTED].self_j;
    double threads_j = 0;
    pthread_mutex_lock(&jl_thr.lock);
    for (size_t i = 0; i < jl_thr.n; i++)
        threads_j += jl_thr.v[i].energy_j;
    size_t nthreads = jl_thr.n;
    size_t mem = jl_agent_memory();
    pthread_mutex_unlock(&jl_thr.lock);
    FILE *f = o.f;
    fprintf(f, "{\n  \"pid\": %d,\n", (int)getpid());
    fprintf(f, "  \"process_energy_j\": %.9f,\n", p->process_j);
    pc_source_carbon_json(f, &p->source, "process_co2e_g", p->process_j);
    fprintf(f, "  \"process_cpu_energy_j\": %.9f,\n", p->process_cpu_j);
    fprintf(f, "  \"process_net_energy_j\": %.9f,\n", p->process_nic_j);
    fprintf(f, "  \"attributed_energy_j\": %.9f,\n", p->process_j - unattr);
    fprintf(f, "  \"unattributed_energy_j\": %.9f,\n", unattr);
    fprintf(f, "  \"threads_energy_j\": %.9f,\n", threads_j);
    fprintf(f, "  \"threads\": %zu,\n", nthreads);
    fprintf(f, "  \"duration_s\": %.3f,\n", p->duration_s);
    fprintf(f, "  \"windows\": %llu,\n", (unsigned long long)p->windows);
    fprintf(f, "  \"samples\": %llu,\n", (unsigned long long)p->samples);
    fprintf(f, "  \"samples_dropped\": %llu,\n", (unsigned long long)p->samples_dropped);
    char note[256];
    jl_samples_note(opt, note, sizeof(note));
    fprintf(f, "  \"windows_without_samples\": %llu,\n", (unsigned long long)p->windows_empty);
    fputs("  \"samples_note\": ", f);
    pa__json_write(f, note);
    fputs(",\n", f);
    fprintf(f, "  \"net_bytes\": %llu,\n", (unsigned long long)p->net_bytes);
    jl_scopes_json(f);
    jl_trace_json(f);
    fprintf(f, "  \"agent_memory_bytes\": %zu,\n", mem);
    fprintf(f, "  \"net_stack_walks\": %llu,\n", (unsigned long long)jl_net_walk_count());
    if (opt->mode == JL_MODE_CPU) {
        char why[160];
        const char *clk = jl_sampler_clock(why, sizeof(why));
        fprintf(f, "  \"clock\": \"%s\",\n  \"clock_note\": ", clk);
        pa__json_write(f, why);
        fprintf(f, ",\n");
        const char *sig = jl_sampler_signal(why, sizeof(why));
        fprintf(f, "  \"signal\": \"%s\",\n  \"signal_note\": ", sig);
        pa__json_write(f, why);
        fprintf(f, ",\n");
    }
    /* mode=cpu: walks AsyncGetCallTrace gave up on, and those recovered */
    fprintf(f,
            "  \"walks_failed\": %llu,\n  \"walks_recovered\": %llu,\n  \"walks_partial\": "
            "%llu,\n",
            (unsigned long long)atomic_load(&jl_smp.walks_failed),
            (unsigned long long)atomic_load(&jl_smp.walks_recovered),
            (unsigned long long)atomic_load(&jl_smp.walks_partial));
    /* the failed walks recovery gave up on, by cause (unwind.c) */
    fputs("  \"walks_unrecovered\": ", f);
    jl_why_write(f, 1);
    fputs(",\n", f);
#ifdef JL_TIME_HANDLER
    jl_write_handler_times(f);
#endif
    fprintf(f, "  \"mode\": \"%s\",\n", opt->mode == JL_MODE_CPU ? "cpu" : "jvmti");
    fprintf(f, "  \"interval_s\": %.6f,\n", (double)opt->interval_ns * 1e-9);
    fprintf(f, "  \"window_s\": %.6f,\n", (double)opt->window_ns * 1e-9);
    fprintf(f, "  \"net\": %s,\n", opt->net ? "true" : "false");
    pc_source_json(f, &p->source, (const char *const *)opt->filters, opt->nfilters);
    fprintf(f, ",\n  \"complete\": %s\n}\n", final ? "true" : "false");
    return pc_out_close(&o);
}

/* 0 while writing works, else the errno of the failure last said */
static int jl_write_failing;

void jl_write_reset(void)
{
    jl_timeline_created = 0;
    jl_write_failing = 0;
}

int jl_write_all(const jl_opts *o, int final)
{
    int rc = 0, r;
    free(jl_fold);
    jl_fold = NULL;
    jl_nfold = 0;
    if (pc_tree_fold_lines(jl_prof.tree.nodes, jl_prof.tree.n, &jl_fold, &jl_nfold) == 0)
        pc_tree_totals(jl_fold, jl_nfold);
    else
        pc_tree_totals(jl_prof.tree.nodes, jl_prof.tree.n);
    free(jl_sfold);
    jl_sfold = NULL;
    jl_nsfold = 0;
    if (o->scope) {
        pc_tree t = jl_tree(0);
        int root = jl_scope_frame_of(o->scope);
        if (root >= 0 && pc_tree_subtree(t.nodes, t.n, root, &jl_sfold, &jl_nsfold) == 0)
            pc_tree_totals(jl_sfold, jl_nsfold);
    }
    struct stat st;
    if (stat(o->out, &st) < 0 && errno == ENOENT) {
        /* the folder was removed while the JVM runs: make it again */
        r = pc_out_mkdirs(o->out, 0755);
        if (!o->quiet)
            fprintf(stderr, "jalen: the output folder '%s' was removed; %s\n", o->out,
                    r == 0 ? "made it again" : strerror(-r));
        if (r < 0 && !jl_write_failing)
            jl_write_failing = -r;
        if (r < 0)
            return r;
    }
    if (o->formats & JL_FMT_CSV) {
        if ((r = jl_write_methods(o->out, 0)) < 0)
            rc = r;
        if ((r = jl_write_methods(o->out, 1)) < 0)
            rc = r;
        if ((r = jl_write_classes(o->out)) < 0)
            rc = r;
        if ((r = jl_write_threads(o->out)) < 0)
            rc = r;
        if ((r = jl_write_timeline(o->out)) < 0)
            rc = r;
        if ((r = jl_write_scopes(o->out)) < 0)
            rc = r;
        if ((r = jl_trace_write_csv(o->out)) < 0)
            rc = r;
    } else {
        jl_prof.ntl = 0; /* no timeline.csv: keep no rows */
    }
    pc_tree t = jl_tree(0);
    if (o->scope) {
        t.nodes = jl_sfold;
        t.n = jl_nsfold;
    }
    if ((o->formats & JL_FMT_COLLAPSED) && (r = pc_tree_write_collapsed(&t, o->out)) < 0)
        rc = r;
    t = jl_tree(1);
    /* pprof once, at the end: packing and compressing the whole tree every
     * window would cost the agent thread for a file read after the run */
    if ((o->formats & JL_FMT_COLLAPSED) && final &&
        (r = pc_tree_write_pprof(&t, o->out, o->interval_ns, jl_prof.duration_s,
                                 "jalen: energy from libpowerapi per window, split over "
                                 "threads by CPU time and over their stack samples")) < 0)
        rc = r;
    if ((o->formats & JL_FMT_HTML) && (r = jl_write_html(o->out, o)) < 0)
        rc = r;
    if ((o->formats & JL_FMT_JSON) && (r = jl_write_summary(o->out, o, final)) < 0)
        rc = r;
    if (rc < 0 && !jl_write_failing) {
        if (!o->quiet)
            fprintf(stderr,
                    "jalen: cannot write the output files in '%s': %s; the last complete "
                    "ones are kept, writing resumes when it can\n",
                    o->out, strerror(-rc));
        jl_write_failing = -rc;
    } else if (rc == 0 && jl_write_failing) {
        if (!o->quiet)
            fprintf(stderr, "jalen: writing the output files in '%s' again\n", o->out);
        jl_write_failing = 0;
    }
    return rc;
}

void jl_samples_note(const jl_opts *o, char *out, size_t len)
{
    const jl_profile *p = &jl_prof;
    out[0] = '\0';
    if (!p->samples && p->process_cpu_j > 0)
        snprintf(out, len,
                 "no stack sample in %.1f s: the Java threads used less CPU time than one "
                 "interval (%g ms) or were never sampled; their energy is under "
                 "[unattributed] (a shorter interval=, or a longer run)",
                 p->duration_s, (double)o->interval_ns * 1e-6);
    else if (p->windows_empty)
        snprintf(out, len,
                 "%llu of %llu windows had no stack sample: their Java threads' energy is "
                 "under [unattributed] (idle threads, or windows shorter than a few intervals)",
                 (unsigned long long)p->windows_empty, (unsigned long long)p->windows);
}

void jl_print_summary(const jl_opts *o, FILE *f)
{
    const jl_profile *p = &jl_prof;
    const pc_rank r = {
        .count = p->nm, .keep = jl_method_spent, .key = jl_key_self, .name = jl_key_name};
    size_t n;
    int *idx = pc_rank_select(&r, &n);
    if (!idx)
        return;
    fprintf(f,
            "jalen: process energy %.3f J (cpu %.3f J, net %.3f J) over %.1f s, %llu samples "
            "(%llu dropped), formula %s\n",
            p->process_j, p->process_cpu_j, p->process_nic_j, p->duration_s,
            (unsigned long long)p->samples, (unsigned long long)p->samples_dropped,
            p->source.formula[0] ? p->source.formula : "?");
    char note[256];
    pc_source_carbon_text(&p->source, p->process_j, note, sizeof(note));
    if (note[0])
        fprintf(f, "jalen: %s (carbon-intensity: given, not measured)\n", note);
    jl_samples_note(o, note, sizeof(note));
    if (note[0])
        fprintf(f, "jalen: %s\n", note);
    fprintf(f, "jalen: top methods by self energy:\n");
    for (size_t k = 0; k < n && k < 10; k++) {
        const pc_stat *m = &p->ms[idx[k]];
        fprintf(f, "jalen: %10.3f J %5.1f%%  %s\n", m->self_j,
                p->process_j > 0 ? 100.0 * m->self_j / p->process_j : 0.0, p->m[idx[k]].name);
    }
    jl_scope_row *rows;
    size_t ns = jl_scopes_get(&rows);
    if (ns) {
        double sc, un;
        jl_scopes_totals(&sc, &un);
        fprintf(f, "jalen: %zu scope name%s: %.3f J in scopes, %.3f J outside (scopes.csv)\n", ns,
                ns > 1 ? "s" : "", sc, un);
    }
    free(rows);
    if (o->mode == JL_MODE_CPU)
        jl_why_write(f, 0);
    fprintf(f, "jalen: files in %s/ (flame graph: %s/flamegraph.html)\n", o->out, o->out);
    free(idx);
}
