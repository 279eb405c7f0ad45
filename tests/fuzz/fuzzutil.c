/* fuzzutil.c - fixture trees and sensor runs for the fuzz targets. */
#include "fuzz.h"

#include "internal.h"
#include "powerapi.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

size_t fz_split(const uint8_t *data, size_t size, fz_piece *out, size_t max)
{
    const size_t sl = sizeof(FZ_SEP) - 1;
    size_t n = 0, at = 0;
    while (n + 1 < max) {
        const uint8_t *hit = NULL;
        if (size - at >= sl)
            hit = memmem(data + at, size - at, FZ_SEP, sl);
        if (!hit)
            break;
        out[n].p = data + at;
        out[n].n = (size_t)(hit - (data + at));
        n++;
        at = (size_t)(hit - data) + sl;
    }
    out[n].p = data + at;
    out[n].n = size - at;
    return n + 1;
}

char *fz_strdup(const fz_piece *pc)
{
    char *s = malloc(pc->n + 1);
    if (!s)
        fz_fail("out of memory");
    memcpy(s, pc->p, pc->n);
    s[pc->n] = '\0';
    return s;
}

static void mkparents(char *path)
{
    for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
}

void fz_write(const char *root, const char *rel, const void *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
        mkparents(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0)
        fz_fail("cannot write %s: %s", path, strerror(errno));
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w <= 0)
            fz_fail("write %s: %s", path, strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    close(fd);
}

/* ---- the private tree ---- */

static char fz_root_path[4096];
static size_t fz_src_len;

static int copy_one(const char *src, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    char dst[4096];
    snprintf(dst, sizeof(dst), "%s%s", fz_root_path, src + fz_src_len);
    if (flag == FTW_D)
        return mkdir(dst, 0755) < 0 && errno != EEXIST ? -1 : 0;
    if (flag == FTW_SL) {
        char target[4096];
        ssize_t n = readlink(src, target, sizeof(target) - 1);
        if (n < 0)
            return -1;
        target[n] = '\0';
        return symlink(target, dst) < 0 && errno != EEXIST ? -1 : 0;
    }
    if (flag != FTW_F)
        return 0;
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    size_t total = 0;
    char *all = NULL;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        all = realloc(all, total + (size_t)n);
        if (!all)
            fz_fail("out of memory");
        memcpy(all + total, buf, (size_t)n);
        total += (size_t)n;
    }
    close(in);
    fz_write(fz_root_path, dst + strlen(fz_root_path) + 1, all ? all : "", total);
    free(all);
    return 0;
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void remove_root(void)
{
    if (fz_root_path[0])
        nftw(fz_root_path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The hardware database the contexts of a fixture tree use: the records
 * of the source tree's database that the fixture's CPU matches (cpu and
 * curve), the one with a voltage table, and every NIC record.  The database is
 * not the input of the sensor targets (fuzz_hwdb has it), and scanning all
 * of it at each module start and lookup took two thirds of their time. */
static char fz_hwdb_path[4200];

/* The "model name" of the fixture's first processor: the one the sensors
 * report and the formulas look up ("" when none). */
static void fixture_model(const char *root, char *model, size_t len)
{
    char path[4200], line[512];
    snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
    FILE *f = fopen(path, "re");
    model[0] = '\0';
    while (f && fgets(line, sizeof(line), f)) {
        const char *v = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !v)
            continue;
        v += strspn(v + 1, " \t") + 1;
        snprintf(model, len, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    if (f)
        fclose(f);
}

static void make_hwdb(const char *root)
{
    char model[128];
    fixture_model(root, model, sizeof(model));
    char one[4200];
    snprintf(one, sizeof(one), "%s/hwdb-one.txt", root);
    snprintf(fz_hwdb_path, sizeof(fz_hwdb_path), "%s/hwdb.txt", root);
    FILE *in = fopen(PA_TEST_HWDB, "re");
    FILE *out = fopen(fz_hwdb_path, "we");
    if (!in || !out)
        fz_fail("cannot make %s from %s", fz_hwdb_path, PA_TEST_HWDB);
    char line[4096];
    size_t kept = 0;
    while (fgets(line, sizeof(line), in)) {
        int cpu = !strncmp(line, "cpu ", 4), curve = !strncmp(line, "curve ", 6);
        int keep = !strncmp(line, "nic ", 4) || (cpu && strstr(line, " volt="));
        if (!keep && (cpu || curve) && model[0]) {
            /* the library's own matching decides: the line alone */
            fz_write(root, "hwdb-one.txt", line, strlen(line));
            pa_hwdb_cpu rec;
            pa_curve c;
            keep = cpu ? pa__hwdb_cpu(one, model, &rec) == 0 : pa__hwdb_curve(one, model, &c) == 0;
        }
        if (keep) {
            fputs(line, out);
            kept++;
        }
    }
    fclose(in);
    if (fclose(out) != 0 || kept == 0)
        fz_fail("cannot write %s", fz_hwdb_path);
    unlink(one);
}

const char *fz_root(const char *fixture)
{
    if (fz_root_path[0])
        return fz_root_path;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
    if (!base)
        base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fz_root_path, sizeof(fz_root_path), "%s/pa-fuzz-XXXXXX", base);
    if (!mkdtemp(fz_root_path))
        fz_fail("mkdtemp %s: %s", fz_root_path, strerror(errno));
    atexit(remove_root);
    if (fixture) {
        char src[4096];
        snprintf(src, sizeof(src), "%s/%s", PA_FIXTURES, fixture);
        fz_src_len = strlen(src);
        if (nftw(src, copy_one, 16, FTW_PHYS) != 0)
            fz_fail("cannot copy fixture %s", src);
        make_hwdb(fz_root_path);
    }
    static const char *const dirs[] = {"proc", "sys", "dev"};
    for (size_t i = 0; i < 3; i++) {
        char d[4200];
        snprintf(d, sizeof(d), "%s/%s", fz_root_path, dirs[i]);
        mkdir(d, 0755);
    }
    return fz_root_path;
}

/* ---- sensor runs ---- */

typedef struct fz_orig {
    char *buf; /* NULL: the fixture has no such file */
    size_t len;
} fz_orig;

static fz_orig fz_origs[FZ_MAX_PIECES];
static int fz_have_origs;

static void load_origs(const char *root, const fz_sensor *s)
{
    for (size_t i = 0; i < FZ_MAX_PIECES && s->files[i].rel; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", root, s->files[i].rel);
        if (s->files[i].at > 0) {
            fz_origs[i].buf = calloc(1, 8);
            fz_origs[i].len = 8;
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (!fz_origs[i].buf || fd < 0)
                fz_fail("cannot read %s", path);
            if (pread(fd, fz_origs[i].buf, 8, (off_t)s->files[i].at) < 0)
                fz_fail("cannot read %s", path);
            close(fd);
            continue;
        }
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        char *buf = NULL;
        size_t cap = 0, len = 0, n;
        char chunk[8192];
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
            if (len + n > cap) {
                cap = (len + n) * 2;
                buf = realloc(buf, cap);
                if (!buf)
                    fz_fail("out of memory");
            }
            memcpy(buf + len, chunk, n);
            len += n;
        }
        fclose(f);
        fz_origs[i].buf = buf ? buf : strdup("");
        fz_origs[i].len = len;
    }
    fz_have_origs = 1;
}

static void put_file(const char *root, const fz_sensor *s, size_t i, const fz_piece *pc, size_t npc)
{
    if (s->files[i].at > 0) {
        char path[4096], v[8] = {0};
        snprintf(path, sizeof(path), "%s/%s", root, s->files[i].rel);
        if (i < npc)
            memcpy(v, pc[i].p, pc[i].n < 8 ? pc[i].n : 8);
        else
            memcpy(v, fz_origs[i].buf, 8);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || pwrite(fd, v, 8, (off_t)s->files[i].at) != 8)
            fz_fail("cannot write %s", path);
        close(fd);
        return;
    }
    if (i < npc) {
        fz_write(root, s->files[i].rel, pc[i].p, pc[i].n);
    } else if (fz_origs[i].buf) {
        fz_write(root, s->files[i].rel, fz_origs[i].buf, fz_origs[i].len);
    } else {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", root, s->files[i].rel);
        unlink(path);
    }
}

static void check_str(const char *what, const char *s)
{
    if (!s)
        fz_fail("report: %s is NULL", what);
    (void)strlen(s); /* ASan: readable up to its NUL */
}

static void check_power(const char *what, const pa_power *p)
{
    const double v[] = {p->cpu_w, p->nic_w,   p->total_w,    p->idle_w,    p->cpu_j,
                        p->nic_j, p->total_j, p->interval_s, p->cpu_time_s};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (isnan(v[i]) || v[i] < 0)
            fz_fail("report: %s has a %s figure (%zu: %g)", what, isnan(v[i]) ? "NaN" : "negative",
                    i, v[i]);
}

static void check_report(const pa_report *r)
{
    check_str("formula", r->formula);
    check_str("sensors", r->sensors);
    check_str("cpu_source", r->cpu_source);
    check_str("assumed", r->assumed);
    check_power("system", &r->system);
    for (size_t i = 0; i < r->ncounters; i++)
        check_str("counter name", r->counter_names[i]);
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (memchr(t->comm, '\0', sizeof(t->comm)) == NULL)
            fz_fail("report: comm of target %zu not terminated", i);
        check_str("cgroup", t->cgroup);
        check_power("target", &t->power);
        if (t->counters)
            for (size_t k = 0; k < r->ncounters; k++)
                (void)*(volatile const double *)&t->counters[k];
    }
}

static void check_err(const char *what, int rc)
{
    if (rc >= 0)
        return;
    const char *m = pa_last_error();
    if (!m || !*m)
        fz_fail("%s failed (%d) without a message", what, rc);
}

pa_ctx *fz_ctx(const char *root)
{
    char proc[4200], sys[4200], dev[4200];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    snprintf(dev, sizeof(dev), "%s/dev", root);
    pa_ctx_opts o = {.procfs = proc,
                     .sysfs = sys,
                     .devfs = dev,
                     .hwdb = fz_hwdb_path[0] ? fz_hwdb_path : PA_TEST_HWDB};
    pa_ctx *ctx = NULL;
    if (pa_ctx_new(&ctx, &o) < 0)
        fz_fail("pa_ctx_new: %s", pa_last_error());
    return ctx;
}

void fz_run_sensor(const fz_sensor *s, const uint8_t *data, size_t size)
{
    size_t nfiles = 0;
    while (nfiles < FZ_MAX_PIECES && s->files[nfiles].rel)
        nfiles++;
    fz_piece pc[FZ_MAX_PIECES];
    size_t npc = fz_split(data, size, pc, nfiles ? nfiles : 1);
    fz_run_pieces(s, pc, npc);
}

/* The module names of a spec, in order ("name" of "name:options"). */
static void module_name(const char *spec, char *name, size_t len)
{
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    snprintf(name, len, "%.*s", (int)nl, spec);
}

/* One context per process, kept from input to input (see fuzz.h): made,
 * watching as the spec says, on the first input. */
static pa_ctx *fz_kept;
static uint64_t fz_clock_s;

static void free_kept(void)
{
    pa_ctx_free(fz_kept);
    fz_kept = NULL;
}

static int fresh_each_input(void)
{
    static int fresh = -1;
    if (fresh < 0) {
        const char *e = getenv("PA_FUZZ_FRESH");
        fresh = e && *e && strcmp(e, "0") != 0;
    }
    return fresh;
}

void fz_run_pieces(const fz_sensor *s, const fz_piece *pc, size_t npc)
{
    const char *root = fz_root(s->fixture);
    if (!fz_have_origs)
        load_origs(root, s);
    size_t nfiles = 0;
    while (nfiles < FZ_MAX_PIECES && s->files[nfiles].rel)
        nfiles++;
    size_t nmod = 0;
    while (nmod < 4 && s->modules[nmod])
        nmod++;

    pa_ctx *ctx = fz_kept;
    /* the modules a kept context leaves running this input: the spec's
     * first `keep`, but every 64th input restarts them too, so that their
     * stop and start still run after hostile input */
    static unsigned long ninputs;
    size_t keep = ctx && ++ninputs % 64 ? s->keep : 0;
    if (ctx) {
        /* the modules stopped before their start-time files change:
         * every input starts them again (the lifecycle API users call) */
        for (size_t i = nmod; i-- > keep;) {
            char name[64];
            module_name(s->modules[i], name, sizeof(name));
            check_err("pa_module_disable", pa_module_disable(ctx, name));
        }
    }
    for (size_t i = 0; i < nfiles; i++)
        if (s->files[i].tick == 0)
            put_file(root, s, i, pc, npc);
    /* a file replaced only at tick 1 starts as the fixture has it */
    for (size_t i = 0; i < nfiles; i++) {
        if (s->files[i].tick == 0)
            continue;
        int also0 = 0;
        for (size_t j = 0; j < nfiles; j++)
            also0 |= s->files[j].tick == 0 && strcmp(s->files[j].rel, s->files[i].rel) == 0 &&
                     s->files[j].at == s->files[i].at;
        if (!also0)
            put_file(root, s, i, pc, 0);
    }

    if (!ctx) {
        ctx = fz_ctx(root);
        if (s->watch_pid)
            check_err("pa_watch_pid", pa_watch_pid(ctx, s->watch_pid, s->watch_flags));
        if (s->watch_all)
            check_err("pa_watch_all", pa_watch_all(ctx, s->watch_all));
        if (s->cgroups)
            check_err("pa_report_cgroups", pa_report_cgroups(ctx, 1));
        if (!fresh_each_input() && !s->fresh) {
            fz_kept = ctx;
            atexit(free_kept);
        }
    }
    for (size_t i = keep; i < nmod; i++) {
        char name[64];
        module_name(s->modules[i], name, sizeof(name));
        const char *colon = strchr(s->modules[i], ':');
        check_err("pa_module_enable", pa_module_enable(ctx, name, colon ? colon + 1 : NULL));
    }
    /* the ticks of one input are a second apart; inputs follow each other
     * on one clock, as the windows of a long-running monitor do */
    fz_clock_s += 10;
    check_err("pa_tick_at", pa_tick_at(ctx, fz_clock_s * 1000000000ull));
    for (size_t i = 0; i < nfiles; i++)
        if (s->files[i].tick == 1)
            put_file(root, s, i, pc, npc);
    for (int k = 1; k <= 2; k++) {
        int rc = pa_tick_at(ctx, (fz_clock_s + (uint64_t)k) * 1000000000ull);
        check_err("pa_tick_at", rc);
        pa_report *r = NULL;
        int rr = pa_report_get(ctx, &r);
        if (getenv("PA_FUZZ_VERBOSE"))
            fprintf(stderr,
                    "fuzz: tick %d: %d %s, report %d: %zu targets, %s, %s, "
                    "cpu %.3f W, nic %.3f W\n",
                    k, rc, rc < 0 ? pa_last_error() : "", rr, rr == 0 ? r->ntargets : 0,
                    rr == 0 ? r->formula : "-", rr == 0 ? r->sensors : "-",
                    rr == 0 ? r->system.cpu_w : 0.0, rr == 0 ? r->system.nic_w : 0.0);
        if (rr == 0) {
            check_report(r);
            pa_report_free(r);
        }
    }
    if (ctx != fz_kept)
        pa_ctx_free(ctx);
}
