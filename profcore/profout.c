/*
 * profout.c - files, text and call-tree writers shared by jalen and
 * `powerapi profile` (see profout.h).
 */
#include "profout.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof.pb-c.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

int pc_out_open(pc_out *o, const char *dir, const char *name)
{
    snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.tmp", dir, name);
    snprintf(o->dst, sizeof(o->dst), "%s/%s", dir, name);
    o->f = fopen(o->tmp, "we");
    if (!o->f)
        return -errno;
    /* one thread writes each file: no stdio lock per character; a larger
     * buffer, fewer write(2)s (jalen rewrites the files every window) */
    __fsetlocking(o->f, FSETLOCKING_BYCALLER);
    setvbuf(o->f, NULL, _IOFBF, 65536);
    return 0;
}

/*
 * Put tmp in dst's place, atomically for readers.  A plain rename(2) over
 * an existing file makes ext4 (auto_da_alloc) start writing the new data
 * out at once, on the writer's thread, for every file every window.
 * Exchanging the two names instead (renameat2 RENAME_EXCHANGE) and
 * unlinking the old version does not, and a version replaced before the
 * next journal commit is never written to disk at all.  The price: after
 * a power cut (not a crash) a file may be found empty; jalen rewrites it
 * the next window.  rename(2) where the exchange is not possible (no dst
 * yet, a file system or kernel without it).
 */
static int replace(const char *tmp, const char *dst)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_EXCHANGE) == 0) {
        unlink(tmp); /* now the previous version */
        return 0;
    }
    if (rename(tmp, dst) < 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

int pc_out_close(pc_out *o)
{
    /* the cause of a failed write (ENOSPC, EROFS...) is in errno */
    int err = ferror(o->f) ? (errno ? errno : EIO) : 0;
    if (fclose(o->f) != 0 && !err)
        err = errno ? errno : EIO;
    if (err) {
        unlink(o->tmp);
        return -err;
    }
    return replace(o->tmp, o->dst);
}

int pc_out_mkdirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Text                                                                */
/* ------------------------------------------------------------------ */

void pc_out_u64(FILE *f, uint64_t v)
{
    char b[24];
    char *e = b + sizeof(b), *c = e;
    do {
        *--c = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    fwrite(c, 1, (size_t)(e - c), f);
}

void pc_out_json_str(FILE *f, const char *s)
{
    pa__json_write(f, s);
}

void pc_out_csv_field(FILE *f, const char *s)
{
    pa__csv_write(f, s);
}

void pc_out_fix(FILE *f, double v, int dec)
{
    static const uint64_t scale[] = {1,      10,      100,      1000,      10000,
                                     100000, 1000000, 10000000, 100000000, 1000000000};
    if (dec < 0)
        dec = 0;
    if (dec > 9)
        dec = 9;
    double a = fabs(v);
    if (!(a < 1e15)) { /* NaN, infinite, or beyond the integer path */
        fprintf(f, "%.*f", dec, v);
        return;
    }
    /* the integer part is exact; the fraction, scaled, is rounded once */
    double ip = floor(a);
    uint64_t i = (uint64_t)ip, r = (uint64_t)llround((a - ip) * (double)scale[dec]);
    if (r >= scale[dec]) {
        i++;
        r -= scale[dec];
    }
    if (v < 0 && (i || r))
        fputc('-', f);
    pc_out_u64(f, i);
    if (!dec)
        return;
    char b[12];
    b[0] = '.';
    for (int k = dec; k >= 1; k--) {
        b[k] = (char)('0' + r % 10);
        r /= 10;
    }
    fwrite(b, 1, (size_t)dec + 1, f);
}

void pc_out_json_list(FILE *f, const char *list)
{
    int first = 1;
    for (const char *t = list ? list : ""; *t;) {
        while (*t == ' ')
            t++;
        size_t len = strcspn(t, ";");
        if (len) {
            char item[1024];
            int keep = (int)(len < sizeof(item) ? len : sizeof(item) - 1);
            snprintf(item, sizeof(item), "%.*s", keep, t);
            if (!first)
                fputs(", ", f);
            first = 0;
            pa__json_write(f, item);
        }
        t += len;
        if (*t == ';')
            t++;
    }
}

void pc_out_json_strings(FILE *f, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        pa__json_write(f, v[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Call tree                                                           */
/* ------------------------------------------------------------------ */

void pc_tree_totals(pc_tree_node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nodes[i].total_j = nodes[i].self_j;
    /* children are created after their parent: one reverse pass */
    for (size_t i = n; i-- > 0;) {
        int p = nodes[i].parent;
        if (p >= 0)
            nodes[p].total_j += nodes[i].total_j;
    }
}

/* the key of a folded node (and of a (function, line) location) */
static uint64_t fold_hash(int parent, int func, int inlined)
{
    return pa__hash_pair((uint64_t)(uint32_t)parent << 1 | (inlined != 0), (uint32_t)func);
}

int pc_tree_fold_lines(const pc_tree_node *in, size_t n, pc_tree_node **out, size_t *nout)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    pc_tree_node *v = malloc((n ? n : 1) * sizeof(*v));
    int *to = malloc((n ? n : 1) * sizeof(*to));
    int *h = calloc(cap, sizeof(*h)); /* folded index + 1 */
    if (!v || !to || !h) {
        free(v);
        free(to);
        free(h);
        return -ENOMEM;
    }
    size_t m = 0;
    /* parents come before their children: their folded node exists */
    for (size_t i = 0; i < n; i++) {
        const pc_tree_node *a = &in[i];
        int parent = a->parent >= 0 ? to[a->parent] : -1;
        size_t q = fold_hash(parent, a->func, a->inlined) & (cap - 1);
        while (h[q]) {
            const pc_tree_node *b = &v[h[q] - 1];
            if (b->parent == parent && b->func == a->func && b->inlined == a->inlined)
                break;
            q = (q + 1) & (cap - 1);
        }
        if (!h[q]) {
            pc_tree_node *b = &v[m];
            *b = (pc_tree_node){.func = a->func,
                                .parent = parent,
                                .first_child = -1,
                                .next_sibling = -1,
                                .inlined = a->inlined};
            if (parent >= 0) {
                b->next_sibling = v[parent].first_child;
                v[parent].first_child = (int)m;
            }
            h[q] = (int)++m;
        }
        pc_tree_node *b = &v[h[q] - 1];
        b->self_j += a->self_j;
        b->self_cpu_s += a->self_cpu_s;
        b->self_samples += a->self_samples;
        to[i] = h[q] - 1;
    }
    free(to);
    free(h);
    *out = v;
    *nout = m;
    return 0;
}

int pc_tree_subtree(const pc_tree_node *in, size_t n, int root_func, pc_tree_node **out,
                    size_t *nout)
{
    *out = NULL;
    *nout = 0;
    int *to = malloc((n ? n : 1) * sizeof(*to));
    pc_tree_node *v = malloc((n ? n : 1) * sizeof(*v));
    if (!to || !v) {
        free(to);
        free(v);
        return -ENOMEM;
    }
    size_t m = 0;
    /* parents come before their children: a kept parent is mapped */
    for (size_t i = 0; i < n; i++) {
        const pc_tree_node *a = &in[i];
        int parent = a->parent >= 0 ? to[a->parent] : -1;
        to[i] = -1;
        if (a->parent >= 0 ? parent < 0 : a->func != root_func)
            continue;
        pc_tree_node *b = &v[m];
        *b = *a;
        b->parent = parent;
        b->first_child = b->next_sibling = -1;
        if (parent >= 0) {
            b->next_sibling = v[parent].first_child;
            v[parent].first_child = (int)m;
        }
        to[i] = (int)m++;
    }
    free(to);
    if (!m) {
        free(v);
        return 0;
    }
    *out = v;
    *nout = m;
    return 0;
}

int pc_tree_write_collapsed(const pc_tree *t, const char *dir)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "energy.collapsed");
    if (rc < 0)
        return rc;
    int *path = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < t->n; i++) {
        long long uj = llround(t->nodes[i].self_j * 1e6);
        if (uj <= 0)
            continue;
        size_t depth = 0;
        for (int k = (int)i; k >= 0; k = t->nodes[k].parent) {
            if (PA__GROW(path, cap, depth + 1, 256) < 0) {
                free(path);
                fclose(o.f);
                unlink(o.tmp);
                return -ENOMEM;
            }
            path[depth++] = k;
        }
        for (size_t d = depth; d-- > 0;) {
            /* ';' separates frames: a name holding one would split */
            const char *s = t->name(t->ctx, t->nodes[path[d]].func);
            if (!strpbrk(s, ";\n")) {
                fputs(s, o.f);
            } else {
                for (; *s; s++)
                    fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, o.f);
            }
            if (d)
                fputc(';', o.f);
        }
        fputc(' ', o.f);
        pc_out_u64(o.f, (uint64_t)uj);
        fputc('\n', o.f);
    }
    free(path);
    return pc_out_close(&o);
}

/* The flame graph names only the functions of the nodes it draws,
 * numbered in the order they are met: map[func] = that number (-1: not
 * drawn). */
static void json_names(const pc_tree *t, FILE *f, int i, double min_j, int *map, int *n)
{
    const pc_tree_node *nd = &t->nodes[i];
    if (map[nd->func] < 0) {
        if (*n)
            fputc(',', f);
        map[nd->func] = (*n)++;
        pa__json_write(f, t->name(t->ctx, nd->func));
    }
    for (int c = nd->first_child; c >= 0; c = t->nodes[c].next_sibling)
        if (t->nodes[c].total_j >= min_j)
            json_names(t, f, c, min_j, map, n);
}

static void json_node(const pc_tree *t, FILE *f, int i, double min_j, const int *map)
{
    const pc_tree_node *nd = &t->nodes[i];
    fputs("{\"n\":", f);
    pc_out_u64(f, (uint64_t)map[nd->func]);
    fputs(",\"v\":", f);
    pc_out_fix(f, nd->total_j * 1e6, 0);
    if (t->diff_a_j) {
        fputs(",\"a\":", f);
        pc_out_fix(f, t->diff_a_j[i] * 1e6, 0);
        fputs(",\"b\":", f);
        pc_out_fix(f, t->diff_b_j[i] * 1e6, 0);
    }
    int first = 1;
    for (int c = nd->first_child; c >= 0; c = t->nodes[c].next_sibling) {
        if (t->nodes[c].total_j < min_j)
            continue;
        fputs(first ? ",\"c\":[" : ",", f);
        first = 0;
        json_node(t, f, c, min_j, map);
    }
    if (!first)
        fputc(']', f);
    fputc('}', f);
}

/* The module of each drawn name (a native profile: its maps), in the
 * names' order, with "kind": "native"; a tree without maps (jalen's) gets
 * "kind": "java" only.  The page colours and labels by it (issue 31). */
static void flamegraph_modules(const pc_tree *t, FILE *f, const int *map)
{
    if (!t->maps || !t->map_of) {
        fputs(",\"kind\":\"java\"", f);
        return;
    }
    int n = 0;
    for (size_t i = 0; i < t->nfuncs; i++)
        if (map[i] >= n)
            n = map[i] + 1;
    const char **mods = calloc(n ? (size_t)n : 1, sizeof(*mods));
    for (size_t i = 0; mods && i < t->nfuncs; i++) {
        if (map[i] < 0)
            continue;
        int mi = t->map_of(t->ctx, (int)i);
        const char *file = mi >= 0 && (size_t)mi < t->nmaps ? t->maps[mi].file : "";
        const char *slash = file ? strrchr(file, '/') : NULL;
        mods[map[i]] = slash ? slash + 1 : file ? file : "";
    }
    fputs(",\"kind\":\"native\",\"modules\":[", f);
    for (int i = 0; mods && i < n; i++) {
        if (i)
            fputc(',', f);
        pa__json_write(f, mods[i] ? mods[i] : "");
    }
    fputc(']', f);
    free(mods);
}

/* The note of each drawn name (pc_tree.note), in the names' order. */
static void flamegraph_notes(const pc_tree *t, FILE *f, const int *map)
{
    int n = 0;
    if (!t->note)
        return;
    for (size_t i = 0; i < t->nfuncs; i++)
        if (map[i] >= n)
            n = map[i] + 1;
    int *at = malloc((n ? (size_t)n : 1) * sizeof(*at));
    if (!at)
        return;
    for (size_t i = 0; i < t->nfuncs; i++)
        if (map[i] >= 0)
            at[map[i]] = (int)i;
    fputs(",\"notes\":[", f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        const char *s = t->note(t->ctx, at[i]);
        pa__json_write(f, s ? s : "");
    }
    fputc(']', f);
    free(at);
}

int pc_tree_write_flamegraph(const pc_tree *t, const char *dir, const char *title, double process_j,
                             double duration_s)
{
    int *map = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(int));
    if (!map)
        return -ENOMEM;
    for (size_t i = 0; i < t->nfuncs; i++)
        map[i] = -1;
    pc_out o;
    int rc = pc_out_open(&o, dir, "flamegraph.html");
    if (rc < 0) {
        free(map);
        return rc;
    }
    double total = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].parent < 0)
            total += t->nodes[i].total_j;
    double min_j = total * 2e-5;
    fputs(pc_flamegraph_head, o.f);
    fputs("{\"title\":", o.f);
    pa__json_write(o.f, title);
    fputs(",\"process_j\":", o.f);
    pc_out_fix(o.f, process_j, 6);
    fputs(",\"duration_s\":", o.f);
    pc_out_fix(o.f, duration_s, 3);
    if (t->diff_a_j)
        fputs(",\"diff\":true", o.f);
    fputs(",\"names\":[", o.f);
    int named = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].parent < 0 && t->nodes[i].total_j >= min_j)
            json_names(t, o.f, (int)i, min_j, map, &named);
    fputs("]", o.f);
    flamegraph_modules(t, o.f, map);
    flamegraph_notes(t, o.f, map);
    fputs(",\"root\":{\"n\":-1,\"v\":", o.f);
    pc_out_fix(o.f, total * 1e6, 0);
    if (t->diff_a_j) {
        double sa = 0, sb = 0;
        for (size_t i = 0; i < t->n; i++)
            if (t->nodes[i].parent < 0) {
                sa += t->diff_a_j[i];
                sb += t->diff_b_j[i];
            }
        fputs(",\"a\":", o.f);
        pc_out_fix(o.f, sa * 1e6, 0);
        fputs(",\"b\":", o.f);
        pc_out_fix(o.f, sb * 1e6, 0);
    }
    fputs(",\"c\":[", o.f);
    int first = 1;
    for (size_t i = 0; i < t->n; i++) {
        if (t->nodes[i].parent >= 0 || t->nodes[i].total_j < min_j)
            continue;
        if (!first)
            fputc(',', o.f);
        first = 0;
        json_node(t, o.f, (int)i, min_j, map);
    }
    free(map);
    fputs("]}}", o.f);
    fputs(pc_flamegraph_tail, o.f);
    return pc_out_close(&o);
}

/* ------------------------------------------------------------------ */
/* pprof                                                               */
/* ------------------------------------------------------------------ */

typedef struct strtab {
    char **v; /* the table, in id order; v[i] owned */
    size_t n, cap;
    int *hash; /* id + 1, open addressing on the content */
    size_t hcap;
} strtab;

static uint64_t str_hash_at(const void *user, size_t i)
{
    return pa__hash_str(((const strtab *)user)->v[i]);
}

/* The id of s in the string table, added if new; -1 out of memory. */
static int64_t str_id(strtab *t, const char *s)
{
    if (!s)
        s = "";
    if (pa__index_reserve(&t->hash, &t->hcap, 1024, 0, t->n, str_hash_at, t) < 0)
        return -1;
    size_t q = pa__hash_str(s) & (t->hcap - 1);
    while (t->hash[q]) {
        if (!strcmp(t->v[t->hash[q] - 1], s))
            return t->hash[q] - 1;
        q = (q + 1) & (t->hcap - 1);
    }
    if (PA__GROW(t->v, t->cap, t->n + 1, 1024) < 0)
        return -1;
    char *d = strdup(s);
    if (!d)
        return -1;
    t->v[t->n] = d;
    t->hash[q] = (int)t->n + 1;
    return (int64_t)t->n++;
}

static void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    free(t->hash);
}

/* gzip of buf into "<dir>/profile.pb.gz". */
static int write_gz(const char *dir, const uint8_t *buf, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    uLong cap = deflateBound(&z, (uLong)len) + 64;
    uint8_t *gz = malloc(cap);
    if (!gz) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)buf;
    z.avail_in = (uInt)len;
    z.next_out = gz;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    size_t glen = z.total_out;
    deflateEnd(&z);
    int rc = -EIO;
    if (zr == Z_STREAM_END) {
        pc_out o;
        if ((rc = pc_out_open(&o, dir, "profile.pb.gz")) == 0) {
            fwrite(gz, 1, glen, o.f);
            rc = pc_out_close(&o);
        }
    }
    free(gz);
    return rc;
}

/* The outermost node of the inlined chain that starts at node k: the
 * node of the function the chain's code was compiled into. */
static int outer_of(const pc_tree *t, int k, size_t *len)
{
    size_t n = 1;
    while (t->nodes[k].inlined && t->nodes[k].parent >= 0) {
        k = t->nodes[k].parent;
        n++;
    }
    if (len)
        *len = n;
    return k;
}

static int is_group(const pc_tree *t, int k)
{
    return t->nodes[k].inlined && t->nodes[k].parent >= 0;
}

/* (function, line) -> its location's id (0: none yet) */
typedef struct line_loc {
    int func, line;
    uint64_t id;
} line_loc;

static line_loc *line_slot(line_loc *h, size_t cap, int func, int line)
{
    size_t q = fold_hash(line, func, 0) & (cap - 1);
    while (h[q].id && (h[q].func != func || h[q].line != line))
        q = (q + 1) & (cap - 1);
    if (!h[q].id) {
        h[q].func = func;
        h[q].line = line;
    }
    return &h[q];
}

/* A profile.pb.gz being built: the tree, the strings, and the messages
 * (each array with its array of pointers, as protobuf-c wants them). */
typedef struct pprof_build {
    const pc_tree *t;
    strtab st;
    size_t nf, nn, nloc, nglines, nlids, nmaps;
    uint64_t *node_loc; /* each node's location id, 0: its function's */
    line_loc *lh;       /* (function, line) -> location */
    size_t lcap;
    Perftools__Profiles__Function *fn, **fnp;
    Perftools__Profiles__Location *loc, **locp;
    Perftools__Profiles__Line *ln, **lnp;
    Perftools__Profiles__Mapping *mp, **mpp;
    Perftools__Profiles__Sample *sm, **smp;
    Perftools__Profiles__Label *lab, **labp; /* a sample's scope, one each */
    int64_t *vals;
    uint64_t *lids;
    Perftools__Profiles__Profile prof;
    Perftools__Profiles__ValueType vt[3], per, *vtp[3];
    int64_t comment;
} pprof_build;

/* Locations after the functions': one per inlined chain a sample goes
 * through (at the node that starts it), one per (function, line) of the
 * other nodes with a line.  Counts them, their lines and the samples'
 * location ids. */
static void pprof_plan(pprof_build *b)
{
    const pc_tree *t = b->t;
    b->nloc = b->nf;
    for (size_t i = 0; i < b->nn; i++) {
        if (!t->nodes[i].self_samples && !(t->nodes[i].self_j > 0))
            continue;
        for (int k = (int)i; k >= 0; k = t->nodes[k].parent) {
            b->nlids++;
            if (b->node_loc[k]) {
                if (is_group(t, k))
                    k = outer_of(t, k, NULL);
                continue;
            }
            if (!is_group(t, k)) {
                if (t->nodes[k].line > 0) {
                    line_loc *s = line_slot(b->lh, b->lcap, t->nodes[k].func, t->nodes[k].line);
                    if (!s->id) {
                        s->id = ++b->nloc;
                        b->nglines++;
                    }
                    b->node_loc[k] = s->id;
                }
                continue;
            }
            size_t len;
            int o = outer_of(t, k, &len);
            b->node_loc[k] = ++b->nloc;
            b->nglines += len;
            k = o;
        }
    }
}

static int pprof_alloc(pprof_build *b)
{
    size_t nf = b->nf, nn = b->nn, nl = b->nf + b->nglines + 1;
    b->nmaps = b->t->nmaps ? b->t->nmaps : 1;
    b->fn = calloc(nf + 1, sizeof(*b->fn));
    b->fnp = calloc(nf + 1, sizeof(*b->fnp));
    b->loc = calloc(b->nloc + 1, sizeof(*b->loc));
    b->locp = calloc(b->nloc + 1, sizeof(*b->locp));
    b->ln = calloc(nl, sizeof(*b->ln));
    b->lnp = calloc(nl, sizeof(*b->lnp));
    b->mp = calloc(b->nmaps, sizeof(*b->mp));
    b->mpp = calloc(b->nmaps, sizeof(*b->mpp));
    b->sm = calloc(nn + 1, sizeof(*b->sm));
    b->smp = calloc(nn + 1, sizeof(*b->smp));
    b->vals = calloc(3 * (nn + 1), sizeof(*b->vals));
    b->lids = calloc(b->nlids + 1, sizeof(*b->lids));
    if (!b->fn || !b->fnp || !b->loc || !b->locp || !b->ln || !b->lnp || !b->mp || !b->mpp ||
        !b->sm || !b->smp || !b->vals || !b->lids || str_id(&b->st, "") < 0)
        return -ENOMEM;
    return 0;
}

static void pprof_free(pprof_build *b)
{
    free(b->node_loc);
    free(b->lh);
    free(b->fn);
    free(b->fnp);
    free(b->loc);
    free(b->locp);
    free(b->ln);
    free(b->lnp);
    free(b->mp);
    free(b->mpp);
    free(b->sm);
    free(b->smp);
    free(b->vals);
    free(b->lids);
    free(b->lab);
    free(b->labp);
    strtab_free(&b->st);
}

/* Sample types, the period, the duration and the time. */
static void pprof_header(pprof_build *b, uint64_t period_ns, double duration_s)
{
    static const char *const types[3][2] = {
        {"samples", "count"}, {"cpu", "nanoseconds"}, {"energy", "microjoules"}};
    perftools__profiles__profile__init(&b->prof);
    perftools__profiles__value_type__init(&b->per);
    for (int i = 0; i < 3; i++) {
        perftools__profiles__value_type__init(&b->vt[i]);
        b->vt[i].type = str_id(&b->st, types[i][0]);
        b->vt[i].unit = str_id(&b->st, types[i][1]);
        b->vtp[i] = &b->vt[i];
    }
    b->per.type = str_id(&b->st, "cpu");
    b->per.unit = str_id(&b->st, "nanoseconds");
    b->prof.n_sample_type = 3;
    b->prof.sample_type = b->vtp;
    b->prof.period_type = &b->per;
    b->prof.period = (int64_t)period_ns;
    /* an index into the string table (pprof.proto), not into sample_type */
    b->prof.default_sample_type = str_id(&b->st, "energy");
    b->prof.duration_nanos = (int64_t)(duration_s * 1e9);
    b->prof.time_nanos = (int64_t)time(NULL) * 1000000000ll;
}

/* Mappings: every function is named here, so has_functions (pprof then
 * never looks for the binaries to symbolise them again). */
static int pprof_mappings(pprof_build *b)
{
    const pc_tree *t = b->t;
    for (size_t i = 0; i < b->nmaps; i++) {
        Perftools__Profiles__Mapping *mp = &b->mp[i];
        perftools__profiles__mapping__init(mp);
        mp->id = i + 1;
        mp->has_functions = 1;
        if (t->nmaps) {
            const pc_map *m = &t->maps[i];
            mp->memory_start = m->start;
            mp->memory_limit = m->limit;
            mp->file_offset = m->offset;
            mp->filename = str_id(&b->st, m->file);
            mp->build_id = str_id(&b->st, m->build_id);
            mp->has_filenames = mp->has_line_numbers = m->has_lines != 0;
            mp->has_inline_frames = m->has_inlines != 0;
        } else {
            mp->filename = str_id(&b->st, t->main_name);
            mp->has_filenames = mp->has_line_numbers = t->file != NULL;
        }
        if (mp->filename < 0 || mp->build_id < 0)
            return -ENOMEM;
        b->mpp[i] = mp;
    }
    b->prof.n_mapping = b->nmaps;
    b->prof.mapping = b->mpp;
    return 0;
}

/* One function per function, and its location (the declaration line). */
static int pprof_functions(pprof_build *b)
{
    const pc_tree *t = b->t;
    for (size_t i = 0; i < b->nf; i++) {
        const char *file = t->file ? t->file(t->ctx, (int)i) : "";
        int line = t->line ? t->line(t->ctx, (int)i) : 0;
        Perftools__Profiles__Function *fn = &b->fn[i];
        perftools__profiles__function__init(fn);
        fn->id = i + 1;
        fn->name = str_id(&b->st, t->name(t->ctx, (int)i));
        fn->system_name = fn->name;
        fn->filename = str_id(&b->st, file);
        fn->start_line = line;
        if (fn->name < 0 || fn->filename < 0)
            return -ENOMEM;
        b->fnp[i] = fn;
        perftools__profiles__line__init(&b->ln[i]);
        b->ln[i].function_id = i + 1;
        b->ln[i].line = line;
        b->lnp[i] = &b->ln[i];
        Perftools__Profiles__Location *loc = &b->loc[i];
        perftools__profiles__location__init(loc);
        loc->id = i + 1;
        if (!t->nmaps) {
            loc->mapping_id = 1;
        } else if (t->map_of) {
            int m = t->map_of(t->ctx, (int)i);
            loc->mapping_id = m >= 0 && (size_t)m < t->nmaps ? (uint64_t)m + 1 : 0;
        }
        loc->n_line = 1;
        loc->line = &b->lnp[i];
        b->locp[i] = loc;
    }
    b->prof.n_function = b->nf;
    b->prof.function = b->fnp;
    return 0;
}

/* Inlined chains (lines innermost first) and functions' lines: in the
 * mapping of the function they were compiled into. */
static void pprof_lines(pprof_build *b)
{
    const pc_tree *t = b->t;
    size_t gl = b->nf;
    for (size_t i = 0; i < b->nn; i++) {
        if (!b->node_loc[i])
            continue;
        Perftools__Profiles__Location *l = &b->loc[b->node_loc[i] - 1];
        if (l->id)
            continue; /* a (function, line) met before */
        perftools__profiles__location__init(l);
        l->id = b->node_loc[i];
        l->line = &b->lnp[gl];
        int k = (int)i;
        for (;;) {
            int f = t->nodes[k].func;
            perftools__profiles__line__init(&b->ln[gl]);
            b->ln[gl].function_id = (uint64_t)f + 1;
            b->ln[gl].line = t->nodes[k].line > 0 ? t->nodes[k].line : b->fn[f].start_line;
            b->lnp[gl] = &b->ln[gl];
            gl++;
            l->n_line++;
            if (!is_group(t, k))
                break;
            k = t->nodes[k].parent;
        }
        l->mapping_id = b->loc[t->nodes[k].func].mapping_id;
        b->locp[b->node_loc[i] - 1] = l;
    }
    b->prof.n_location = b->nloc;
    b->prof.location = b->locp;
}

/* A sample under a root frame "[scope NAME]" (the scopes of jalen and of
 * powerapi profile, DESIGN.md section 15) gets the label scope=NAME, so
 * that a receiver that splits by label (Pyroscope) keeps each scope's
 * series.  Out of memory: no label. */
static void pprof_scope_label(pprof_build *b, Perftools__Profiles__Sample *s, size_t ns, int node)
{
    const pc_tree *t = b->t;
    while (t->nodes[node].parent >= 0)
        node = t->nodes[node].parent;
    const char *name = t->name(t->ctx, t->nodes[node].func);
    size_t n = strlen(name);
    if (strncmp(name, "[scope ", 7) || n < 9 || name[n - 1] != ']')
        return;
    if (!b->lab) {
        b->lab = calloc(b->nn + 1, sizeof(*b->lab));
        b->labp = calloc(b->nn + 1, sizeof(*b->labp));
        if (!b->lab || !b->labp)
            return;
    }
    char value[256];
    snprintf(value, sizeof(value), "%.*s", (int)(n - 8), name + 7);
    int64_t key = str_id(&b->st, "scope"), str = str_id(&b->st, value);
    if (key < 0 || str < 0)
        return;
    perftools__profiles__label__init(&b->lab[ns]);
    b->lab[ns].key = key;
    b->lab[ns].str = str;
    b->labp[ns] = &b->lab[ns];
    s->label = &b->labp[ns];
    s->n_label = 1;
}

/* One sample per node with self samples or energy, leaf first. */
static void pprof_samples(pprof_build *b)
{
    const pc_tree *t = b->t;
    size_t ns = 0, used = 0;
    for (size_t i = 0; i < b->nn; i++) {
        const pc_tree_node *nd = &t->nodes[i];
        if (!nd->self_samples && !(nd->self_j > 0))
            continue;
        Perftools__Profiles__Sample *s = &b->sm[ns];
        perftools__profiles__sample__init(s);
        s->location_id = &b->lids[used];
        for (int k = (int)i; k >= 0; k = t->nodes[k].parent) {
            if (is_group(t, k)) {
                b->lids[used + s->n_location_id++] = b->node_loc[k];
                k = outer_of(t, k, NULL);
            } else {
                b->lids[used + s->n_location_id++] =
                    b->node_loc[k] ? b->node_loc[k] : (uint64_t)t->nodes[k].func + 1;
            }
        }
        used += s->n_location_id;
        s->value = &b->vals[3 * ns];
        s->n_value = 3;
        s->value[0] = (int64_t)nd->self_samples;
        s->value[1] = llround(nd->self_cpu_s * 1e9);
        s->value[2] = llround(nd->self_j * 1e6);
        pprof_scope_label(b, s, ns, (int)i);
        b->smp[ns++] = s;
    }
    b->prof.n_sample = ns;
    b->prof.sample = b->smp;
}

static int pprof_pack(pprof_build *b, const char *dir)
{
    size_t len = perftools__profiles__profile__get_packed_size(&b->prof);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    perftools__profiles__profile__pack(&b->prof, buf);
    int rc = write_gz(dir, buf, len);
    free(buf);
    return rc;
}

int pc_tree_write_pprof(const pc_tree *t, const char *dir, uint64_t period_ns, double duration_s,
                        const char *comment)
{
    pprof_build b = {.t = t, .nf = t->nfuncs, .nn = t->n, .lcap = 16};
    while (b.lcap < 2 * b.nn)
        b.lcap *= 2;
    b.node_loc = calloc(b.nn + 1, sizeof(*b.node_loc));
    b.lh = calloc(b.lcap, sizeof(*b.lh));
    int rc = -ENOMEM;
    if (!b.node_loc || !b.lh)
        goto out;
    pprof_plan(&b);
    if ((rc = pprof_alloc(&b)) < 0)
        goto out;
    pprof_header(&b, period_ns, duration_s);
    if ((rc = pprof_mappings(&b)) < 0 || (rc = pprof_functions(&b)) < 0)
        goto out;
    pprof_lines(&b);
    pprof_samples(&b);
    rc = -ENOMEM;
    if ((b.comment = str_id(&b.st, comment)) < 0)
        goto out;
    b.prof.n_comment = 1;
    b.prof.comment = &b.comment;
    b.prof.n_string_table = b.st.n;
    b.prof.string_table = b.st.v;
    rc = pprof_pack(&b, dir);
out:
    pprof_free(&b);
    return rc;
}

int pc_tree_write_pprof_delta(const pc_tree *t, pc_delta *d, const char *dir, uint64_t period_ns,
                              double duration_s, const char *comment)
{
    size_t n = t->n;
    pc_tree_node *nodes = malloc((n ? n : 1) * sizeof(*nodes));
    if (!nodes)
        return -ENOMEM;
    if (n > d->cap) {
        pc_tree_node *v = realloc(d->last, n * sizeof(*v));
        if (!v) {
            free(nodes);
            return -ENOMEM;
        }
        memset(v + d->cap, 0, (n - d->cap) * sizeof(*v));
        d->last = v;
        d->cap = n;
    }
    double energy_j = 0;
    for (size_t i = 0; i < n; i++) {
        nodes[i] = t->nodes[i];
        nodes[i].self_j -= d->last[i].self_j;
        nodes[i].self_cpu_s -= d->last[i].self_cpu_s;
        nodes[i].self_samples -= d->last[i].self_samples;
        energy_j += nodes[i].self_j;
        d->last[i] = t->nodes[i];
    }
    d->energy_j = energy_j;
    pc_tree delta = *t;
    delta.nodes = nodes;
    int rc = pc_tree_write_pprof(&delta, dir, period_ns, duration_s, comment);
    free(nodes);
    return rc;
}
