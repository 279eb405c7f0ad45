/*
 * pdiff_load.c - one side of a comparison: the folder of `powerapi
 * profile` (functions.csv, summary.json, energy.collapsed) or jalen
 * (methods.csv ...), a repeated one (run-1/ ... run-N/), or a pprof file.
 */
#include "pdiff_int.h"
#include "profcore.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof.pb-c.h"
#include "util.h"

#define MAX_RUNS 1000

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return rc;
}

/* "[unknown] libx.so+0x1234" -> "[unknown] libx.so" into buf (the
 * addresses differ between builds: such frames match by module only). */
static const char *unknown_key(const char *name, char *buf, size_t len, int *unsure)
{
    *unsure = 0;
    if (strncmp(name, "[unknown] ", 10))
        return name;
    const char *plus = strstr(name, "+0x");
    if (!plus)
        return name;
    *unsure = 1;
    snprintf(buf, len, "%.*s", (int)(plus - name), name);
    return buf;
}

static uint64_t fn_key(const char *name, const char *module)
{
    return pa__hash_pair((uint64_t)(uintptr_t)name, (uint64_t)(uintptr_t)module);
}

static uint64_t fn_key_at(const void *user, size_t i)
{
    const pc_side *s = user;
    return fn_key(s->fns[i].name, s->fns[i].module);
}

int pc__side_find(const pc_side *s, const char *name, const char *module)
{
    if (!s->fhcap)
        return -1;
    for (size_t q = fn_key(name, module) & (s->fhcap - 1); s->fhash[q];
         q = (q + 1) & (s->fhcap - 1)) {
        const pside_fn *f = &s->fns[s->fhash[q] - 1];
        if (f->name == name && f->module == module)
            return s->fhash[q] - 1;
    }
    return -1;
}

int pc__side_fn(pc_side *s, const char *name, const char *module)
{
    char buf[512];
    int unsure;
    name = pc_intern(unknown_key(name, buf, sizeof(buf), &unsure));
    module = pc_intern(module);
    if (pa__index_reserve(&s->fhash, &s->fhcap, 1024, 0, s->nfns, fn_key_at, s) < 0)
        return -ENOMEM;
    size_t q = fn_key(name, module) & (s->fhcap - 1);
    for (; s->fhash[q]; q = (q + 1) & (s->fhcap - 1)) {
        pside_fn *f = &s->fns[s->fhash[q] - 1];
        if (f->name == name && f->module == module)
            return s->fhash[q] - 1;
    }
    if (PA__GROW(s->fns, s->fcap, s->nfns + 1, 256) < 0)
        return -ENOMEM;
    pside_fn *f = &s->fns[s->nfns];
    memset(f, 0, sizeof(*f));
    f->self = calloc(2 * s->runs, sizeof(double));
    if (!f->self)
        return -ENOMEM;
    f->total = f->self + s->runs;
    f->name = name;
    f->module = module;
    f->unsure = unsure;
    f->peer = -1;
    s->fhash[q] = (int)++s->nfns;
    return (int)s->nfns - 1;
}

static uint64_t node_key(int parent, const char *name)
{
    return pa__hash_pair((uint64_t)(uint32_t)parent, (uintptr_t)name);
}

static uint64_t node_key_at(const void *user, size_t i)
{
    const pside_node *n = &((const pc_side *)user)->nodes[i];
    return node_key(n->parent, n->name);
}

/* the child name (a frame as read) of parent, created when new */
static int side_child(pc_side *s, int parent, const char *frame, size_t len)
{
    char buf[1024], key[1024];
    int unsure;
    snprintf(buf, sizeof(buf), "%.*s", (int)len, frame);
    const char *name = pc_intern(unknown_key(buf, key, sizeof(key), &unsure));
    if (pa__index_reserve(&s->nhash, &s->nhcap, 4096, 0, s->nnodes, node_key_at, s) < 0)
        return -ENOMEM;
    size_t q = node_key(parent, name) & (s->nhcap - 1);
    for (; s->nhash[q]; q = (q + 1) & (s->nhcap - 1)) {
        const pside_node *n = &s->nodes[s->nhash[q] - 1];
        if (n->parent == parent && n->name == name)
            return s->nhash[q] - 1;
    }
    if (PA__GROW(s->nodes, s->ncap, s->nnodes + 1, 1024) < 0)
        return -ENOMEM;
    s->nodes[s->nnodes] = (pside_node){.name = name, .parent = parent};
    s->nhash[q] = (int)++s->nnodes;
    return (int)s->nnodes - 1;
}

/* how many frames of path (ends in end[]) are the last stack's */
static size_t common_frames(const pc_side *s, const char *path)
{
    size_t k = 0, from = 0;
    for (; k < s->last_n; k++) {
        size_t to = (size_t)s->last_end[k];
        if (strncmp(path + from, s->last + from, to - from) ||
            (path[to] != ';' && path[to] != '\0'))
            break;
        from = to + 1;
    }
    return k;
}

int pc__side_stack(pc_side *s, const char *path, double self_j)
{
    size_t len = strlen(path);
    if (!len)
        return 0;
    size_t k = common_frames(s, path);
    if (PA__GROW(s->last, s->last_cap, len + 1, 256) < 0)
        return -ENOMEM;
    size_t from = k ? (size_t)s->last_end[k - 1] + 1 : 0;
    int node = k ? s->last_node[k - 1] : -1;
    memcpy(s->last, path, len + 1);
    s->last_n = k;
    while (from < len) {
        const char *semi = strchr(path + from, ';');
        size_t to = semi ? (size_t)(semi - path) : len;
        node = side_child(s, node, path + from, to - from);
        if (node < 0 || PA__GROW(s->last_node, s->last_ncap, s->last_n + 1, 64) < 0 ||
            PA__GROW(s->last_end, s->last_ecap, s->last_n + 1, 64) < 0)
            return -ENOMEM;
        s->last_node[s->last_n] = node;
        s->last_end[s->last_n++] = (int)to;
        from = to + 1;
        if (!semi)
            break;
    }
    if (node >= 0)
        s->nodes[node].self += self_j / (double)s->runs;
    return 0;
}

/* ---- CSV ---- */

/* Splits one RFC 4180 line in place into at most max fields; quoted
 * fields unquoted.  The count. */
static int csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *o = p;
        f[n++] = o;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '"' && p[1] == '"') {
                    *o++ = '"';
                    p += 2;
                } else if (*p == '"' || !*p) {
                    p += *p ? 1 : 0;
                    break;
                } else {
                    *o++ = *p++;
                }
            }
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',' && *p != '\n' && *p != '\r')
                p++;
            o = p;
        }
        int more = *p == ',';
        *o = '\0';
        if (!more)
            break;
        p++;
    }
    return n;
}

static int col_of(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i], name))
            return i;
    return -1;
}

typedef struct csv_cols {
    int name, module, self, total;
} csv_cols;

static int read_csv(pc_side *s, const char *dir, const char *file, char *err, size_t len)
{
    char path[4200], line[8192], *f[32];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *in = fopen(path, "r");
    if (!in)
        return fail(err, len, -errno, "%s: %s", path, strerror(errno));
    int n = fgets(line, sizeof(line), in) ? csv_split(line, f, 32) : 0;
    csv_cols c = {col_of(f, n, s->tool[0] == 'j' ? "method" : "function"), col_of(f, n, "module"),
                  col_of(f, n, "self_energy_j"), col_of(f, n, "total_energy_j")};
    int rc = 0, rows = 0;
    if (c.name < 0 || c.self < 0 || c.total < 0)
        rc = fail(err, len, -EINVAL,
                  "%s: not a %s table (no function, self_energy_j or "
                  "total_energy_j column)",
                  path, file);
    while (rc == 0 && fgets(line, sizeof(line), in)) {
        n = csv_split(line, f, 32);
        if (n <= c.total || n <= c.self || (c.module >= 0 && n <= c.module))
            continue;
        double self = strtod(f[c.self], NULL), total = strtod(f[c.total], NULL);
        if (!isfinite(self) || !isfinite(total))
            continue; /* "nan", "inf": no energy of a function */
        int i = pc__side_fn(s, f[c.name], c.module >= 0 ? f[c.module] : "");
        if (i < 0) {
            rc = fail(err, len, i, "out of memory");
            break;
        }
        s->fns[i].self[s->run] += self;
        s->fns[i].total[s->run] += total;
        rows++;
    }
    fclose(in);
    if (rc == 0 && rows == 0)
        rc = fail(err, len, -ENODATA,
                  "%s: empty profile (no function: was the workload too "
                  "short, or not on a CPU?)",
                  path);
    return rc;
}

static int read_total(pc_side *s, const char *dir, char *err, size_t len)
{
    char path[4200], buf[65536];
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return fail(err, len, -errno, "%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof(buf) - 1, in);
    fclose(in);
    buf[n] = '\0';
    const char *k = strstr(buf, "\"process_energy_j\":");
    if (!k)
        return fail(err, len, -EINVAL, "%s: no process_energy_j", path);
    s->total[s->run] = strtod(k + 19, NULL);
    if (!isfinite(s->total[s->run]))
        return fail(err, len, -EINVAL, "%s: process_energy_j is no number", path);
    if (s->total[s->run] <= 0)
        return fail(err, len, -ENODATA, "%s: empty profile (process_energy_j is 0)", path);
    return 0;
}

static int read_collapsed(pc_side *s, const char *dir, char *err, size_t len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/energy.collapsed", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return fail(err, len, -errno, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, in) > 0) {
        char *sp = strrchr(line, ' ');
        if (!sp)
            continue;
        *sp = '\0';
        double uj = strtod(sp + 1, NULL);
        if (isfinite(uj))
            rc = pc__side_stack(s, line, uj * 1e-6);
    }
    free(line);
    fclose(in);
    return rc < 0 ? fail(err, len, rc, "out of memory") : 0;
}

static int exists(const char *dir, const char *file)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

static int load_folder(pc_side *s, const char *dir, char *err, size_t len)
{
    const char *tool = exists(dir, "functions.csv") ? "profile"
                       : exists(dir, "methods.csv") ? "jalen"
                                                    : NULL;
    if (!tool)
        return fail(err, len, -ENOENT,
                    "%s: no functions.csv (powerapi profile) nor methods.csv "
                    "(jalen): not a result folder",
                    dir);
    if (s->tool[0] && strcmp(s->tool, tool))
        return fail(err, len, -EINVAL, "%s: a %s folder among %s runs", dir, tool, s->tool);
    snprintf(s->tool, sizeof(s->tool), "%s", tool);
    int rc = read_csv(s, dir, tool[0] == 'p' ? "functions.csv" : "methods.csv", err, len);
    if (rc == 0)
        rc = read_total(s, dir, err, len);
    if (rc == 0)
        rc = read_collapsed(s, dir, err, len);
    return rc;
}

/* ---- pprof ---- */

static void *read_gz(const char *path, size_t *n)
{
    gzFile g = gzopen(path, "rb"); /* reads plain files as they are */
    if (!g)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    int r;
    while (buf && (r = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)r;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    gzclose(g);
    *n = len;
    return buf;
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t i)
{
    return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

/* The entry of an id among n messages whose uint64_t id is at offset off
 * (Location, Function, Mapping): writers number them 1..n (profcore's
 * too), so entry id - 1 is tried first, then every entry. */
static const void *by_id(void *const *v, size_t n, size_t off, uint64_t id)
{
#define ID_AT(i) (*(const uint64_t *)(const void *)((const char *)v[i] + off))
    if (id >= 1 && id <= n && ID_AT(id - 1) == id)
        return v[id - 1];
    for (size_t i = 0; i < n; i++)
        if (ID_AT(i) == id)
            return v[i];
    return NULL;
#undef ID_AT
}

#define BY_ID(p, what, T, want)                                                                    \
    ((const T *)by_id((void *const *)(p)->what, (p)->n_##what, offsetof(T, id), (want)))

/* The value index of the "energy" sample type (else "cpu"), its scale to
 * J or s and the side's unit; -1 when there is neither. */
static int pprof_type(const Perftools__Profiles__Profile *p, double *scale, const char **unit)
{
    static const struct {
        const char *type, *unit, *side_unit;
        double scale;
    } want[] = {{"energy", "microjoules", "J", 1e-6},
                {"energy", "joules", "J", 1},
                {"cpu", "nanoseconds", "s", 1e-9},
                {"cpu", "seconds", "s", 1}};
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
        for (size_t i = 0; i < p->n_sample_type; i++)
            if (!strcmp(pstr(p, p->sample_type[i]->type), want[w].type) &&
                !strcmp(pstr(p, p->sample_type[i]->unit), want[w].unit)) {
                *scale = want[w].scale;
                *unit = want[w].side_unit;
                return (int)i;
            }
    return -1;
}

/* A location's frames, innermost first, as functions of s (module: the
 * mapping's file name). */
static int pprof_frames(pc_side *s, const Perftools__Profiles__Profile *p,
                        const Perftools__Profiles__Location *l, int *ids, int max)
{
    const char *mod = "";
    const Perftools__Profiles__Mapping *m =
        BY_ID(p, mapping, Perftools__Profiles__Mapping, l->mapping_id);
    if (m) {
        const char *f = pstr(p, m->filename), *sl = strrchr(f, '/');
        mod = sl ? sl + 1 : f;
    }
    int n = 0;
    for (size_t k = 0; k < l->n_line && n < max; k++) {
        const Perftools__Profiles__Function *f =
            BY_ID(p, function, Perftools__Profiles__Function, l->line[k]->function_id);
        if (!f)
            continue;
        int i = pc__side_fn(s, pstr(p, f->name), mod);
        if (i < 0)
            return i;
        ids[n++] = i;
    }
    return n;
}

static int pprof_sample(pc_side *s, const Perftools__Profiles__Profile *p,
                        const Perftools__Profiles__Sample *sm, double v, char **path, size_t *cap)
{
    int ids[PC_MAX_DEPTH * 2], n = 0;
    for (size_t k = 0; k < sm->n_location_id && n < PC_MAX_DEPTH; k++) {
        const Perftools__Profiles__Location *l =
            BY_ID(p, location, Perftools__Profiles__Location, sm->location_id[k]);
        int r = l ? pprof_frames(s, p, l, ids + n, PC_MAX_DEPTH * 2 - n) : 0;
        if (r < 0)
            return r;
        n += r;
    }
    if (n == 0)
        return 0;
    s->fns[ids[0]].self[0] += v;
    size_t len = 0;
    for (int i = n - 1; i >= 0; i--) {
        int seen = 0;
        for (int j = i + 1; j < n; j++)
            seen |= ids[j] == ids[i];
        if (!seen)
            s->fns[ids[i]].total[0] += v;
        const char *nm = s->fns[ids[i]].name;
        if (PA__GROW(*path, *cap, len + strlen(nm) + 2, 256) < 0)
            return -ENOMEM;
        len += (size_t)sprintf(*path + len, "%s%s", len ? ";" : "", nm);
    }
    return pc__side_stack(s, *path, v);
}

static int load_pprof(pc_side *s, const char *file, char *err, size_t len)
{
    size_t n = 0;
    void *buf = read_gz(file, &n);
    if (!buf)
        return fail(err, len, -errno ? -errno : -EIO, "%s: %s", file,
                    strerror(errno ? errno : EIO));
    Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, n, buf);
    free(buf);
    if (!p)
        return fail(err, len, -EINVAL, "%s: not a pprof profile (profile.proto, gzipped or not)",
                    file);
    double scale = 1;
    int vi = pprof_type(p, &scale, &s->unit), rc = 0;
    if (vi < 0)
        rc = fail(err, len, -EINVAL,
                  "%s: a pprof without an energy (microjoules) or cpu "
                  "(nanoseconds) sample type: nothing to compare",
                  file);
    snprintf(s->tool, sizeof(s->tool), "pprof");
    char *path = NULL;
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *sm = p->sample[i];
        double v = (size_t)vi < sm->n_value ? (double)sm->value[vi] * scale : 0;
        s->total[0] += v;
        if (v > 0)
            rc = pprof_sample(s, p, sm, v, &path, &cap);
    }
    free(path);
    perftools__profiles__profile__free_unpacked(p, NULL);
    if (rc == -ENOMEM)
        return fail(err, len, rc, "out of memory");
    if (rc == 0 && s->total[0] <= 0)
        rc = fail(err, len, -ENODATA, "%s: empty profile (no sample has a value)", file);
    return rc;
}

/* ---- a side ---- */

static size_t count_runs(const char *dir)
{
    size_t k = 0;
    char path[4200];
    struct stat st;
    for (;;) {
        snprintf(path, sizeof(path), "%s/run-%zu", dir, k + 1);
        if (k >= MAX_RUNS || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
            return k;
        k++;
    }
}

int pc_side_load(const char *path, pc_side **out, char *err, size_t len)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return fail(err, len, -errno, "%s: %s", path, strerror(errno));
    size_t runs = S_ISDIR(st.st_mode) ? count_runs(path) : 0;
    pc_side *s = calloc(1, sizeof(*s));
    if (!s || !(s->total = calloc(runs ? runs : 1, sizeof(double)))) {
        free(s);
        return fail(err, len, -ENOMEM, "out of memory");
    }
    s->runs = runs ? runs : 1;
    s->unit = "J";
    int rc = 0;
    if (!S_ISDIR(st.st_mode))
        rc = load_pprof(s, path, err, len);
    else if (!runs)
        rc = load_folder(s, path, err, len);
    for (size_t r = 0; rc == 0 && r < runs; r++) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/run-%zu", path, r + 1);
        s->run = r;
        rc = load_folder(s, dir, err, len);
    }
    if (rc < 0) {
        pc_side_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void pc_side_free(pc_side *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nfns; i++)
        free(s->fns[i].self);
    free(s->fns);
    free(s->fhash);
    free(s->nodes);
    free(s->nhash);
    free(s->last);
    free(s->last_node);
    free(s->last_end);
    free(s->total);
    free(s);
}

const char *pc_side_tool(const pc_side *s)
{
    return s->tool;
}

const char *pc_side_unit(const pc_side *s)
{
    return s->unit;
}

size_t pc_side_runs(const pc_side *s)
{
    return s->runs;
}
