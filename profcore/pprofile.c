/*
 * pprofile.c - the profile of `powerapi profile` (functions, call tree,
 * threads, processes, timeline) and its files, written with the writers
 * jalen uses too (profout.h: the same CSV text, collapsed stacks, flame
 * graph page and pprof profile; the same call tree, function statistics
 * and sorted tables: profcore.h).  Formats as jalen's (DESIGN.md section
 * 8.5), with functions.csv in place of methods.csv (module and source
 * columns).
 */
#include "profcore.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A function: its frame (name and module, the key), its statistics in
 * the parallel array st, and how the filtered view charges it. */
typedef struct pf_func {
    pc_frame f;
} pf_func;

typedef pc_tree_node pf_node;

typedef struct pf_thread {
    pid_t pid, tid;
    const char *pcomm, *comm;
    double cpu_s, energy_j;
    double sampled_cpu_s; /* samples x period: for threads libpowerapi
                             never saw (short-lived) */
    uint64_t samples;
    int root; /* its process's root frame in ptree (-1: none yet) */
} pf_thread;

typedef struct pf_tl {
    double start_s, power_w;
    int func;
} pf_tl;

struct pc_prof {
    pf_func *f;
    pc_stat *st;           /* per function */
    unsigned char *charge; /* per function: PC_CHARGE_* */
    size_t nf, capf, capst, capch;
    int *fhash;
    size_t fhcap;
    pc_tree_build tree;  /* per function and line */
    pc_tree_build ptree; /* the same under a root frame per process: the
                             flame graph's (issue 31 item 8) */
    pf_thread *t;
    size_t nt, capt;
    pf_tl *tl;
    size_t ntl, captl;
    uint64_t stamp;
    const char *const *filters;
    size_t nfilters;
    int outside; /* "[outside filter]" */
    int *fmap;   /* pprof: each function's mapping (build_maps) */
    pc_map *maps;
    /* the nodes are per function and line (pprof's lines); the collapsed
     * stacks and the flame graph are per function: these nodes merged
     * (pc_prof_write) */
    pf_node *fold;
    size_t nfold;
    pf_node *pfold; /* ptree folded per function */
    size_t npfold;
};

static int matches(const pc_prof *p, const pc_frame *f)
{
    if (!p->nfilters)
        return 1;
    for (size_t i = 0; i < p->nfilters; i++) {
        size_t l = strlen(p->filters[i]);
        if (!strncmp(f->name, p->filters[i], l) || !strncmp(f->module, p->filters[i], l))
            return 1;
    }
    return 0;
}

/* The filtered view: a function of the filter, or a pseudo-frame on the
 * way; an "[unknown]" frame outside the filter only as the leaf. */
static unsigned char charge_of(const pc_prof *p, const pc_frame *f)
{
    if (f->name[0] != '[')
        return matches(p, f) ? PC_CHARGE_ANY : PC_CHARGE_NONE;
    return strncmp(f->name, "[unknown]", 9) ? PC_CHARGE_ANY : PC_CHARGE_LEAF;
}

/* names and modules are interned, so the pointers are the key */
static uint64_t func_hash(const pc_frame *fr)
{
    return pa__hash_pair((uintptr_t)fr->name, (uintptr_t)fr->module);
}

static uint64_t func_hash_at(const void *user, size_t i)
{
    return func_hash(&((const pc_prof *)user)->f[i].f);
}

/* Function index of a frame: one per (name, module). */
static int func_of(pc_prof *p, const pc_frame *fr)
{
    if (pa__index_reserve(&p->fhash, &p->fhcap, 1024, 0, p->nf, func_hash_at, p) < 0)
        return -ENOMEM;
    size_t q = func_hash(fr) & (p->fhcap - 1);
    while (p->fhash[q]) {
        pf_func *f = &p->f[p->fhash[q] - 1];
        if (f->f.name == fr->name && f->f.module == fr->module)
            return p->fhash[q] - 1;
        q = (q + 1) & (p->fhcap - 1);
    }
    if (PA__GROW(p->f, p->capf, p->nf + 1, 256) < 0 ||
        PA__GROW(p->st, p->capst, p->nf + 1, 256) < 0 ||
        PA__GROW(p->charge, p->capch, p->nf + 1, 256) < 0)
        return -ENOMEM;
    p->f[p->nf].f = *fr;
    memset(&p->st[p->nf], 0, sizeof(p->st[p->nf]));
    p->charge[p->nf] = charge_of(p, fr);
    p->fhash[q] = (int)p->nf + 1;
    return (int)p->nf++;
}

int pc_prof_new(pc_prof **out, const char *const *filters, size_t nfilters)
{
    pc_prof *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->filters = filters;
    p->nfilters = nfilters;
    p->tree.hint = 4096;
    p->tree.node_hint = 256;
    p->ptree.hint = 4096;
    p->ptree.node_hint = 256;
    pc_frame o = pc_frame_pseudo("[outside filter]");
    p->outside = func_of(p, &o);
    if (p->outside < 0) {
        pc_prof_free(p);
        return -ENOMEM;
    }
    *out = p;
    return 0;
}

void pc_prof_free(pc_prof *p)
{
    if (!p)
        return;
    free(p->f);
    free(p->st);
    free(p->charge);
    free(p->fhash);
    pc_tree_build_free(&p->tree);
    pc_tree_build_free(&p->ptree);
    free(p->pfold);
    free(p->t);
    free(p->tl);
    free(p->fmap);
    free(p->maps);
    free(p->fold);
    free(p);
}

static pf_thread *thread_of(pc_prof *p, pid_t pid, pid_t tid, const char *pcomm, const char *tcomm)
{
    for (size_t i = p->nt; i-- > 0;)
        if (p->t[i].tid == tid && p->t[i].pid == pid) {
            if (tcomm && *tcomm)
                p->t[i].comm = pc_intern(tcomm);
            if (pcomm && *pcomm)
                p->t[i].pcomm = pc_intern(pcomm);
            return &p->t[i];
        }
    if (PA__GROW(p->t, p->capt, p->nt + 1, 256) < 0)
        return NULL;
    pf_thread *t = &p->t[p->nt++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    t->tid = tid;
    t->pcomm = pc_intern(pcomm);
    t->comm = pc_intern(tcomm);
    t->root = -1;
    return t;
}

int pc_prof_thread_cpu(pc_prof *p, pid_t pid, pid_t tid, const char *pcomm, const char *tcomm,
                       double cpu_s)
{
    pf_thread *t = thread_of(p, pid, tid, pcomm, tcomm);
    if (!t)
        return -ENOMEM;
    t->cpu_s += cpu_s;
    return 0;
}

/* The root frame of t's process in the flame graph's tree: one per pid,
 * whatever names the process had (a shell's child is "sh" until it execs
 * "sort"); named at writing (name_roots), as processes.csv names it.  The
 * root is a function of its own that no table lists (it has no
 * statistics). */
static int process_root(pc_prof *p, pf_thread *t)
{
    if (t->root >= 0)
        return t->root;
    for (size_t i = 0; i < p->nt; i++)
        if (p->t[i].pid == t->pid && p->t[i].root >= 0)
            return t->root = p->t[i].root;
    char name[32];
    snprintf(name, sizeof(name), "(pid %d)", (int)t->pid);
    pc_frame pf = pc_frame_pseudo(name);
    int root = func_of(p, &pf);
    if (root >= 0)
        t->root = root;
    return root;
}

/* The stack again under its process's root frame, in the flame graph's
 * tree. */
static int process_stack(pc_prof *p, pf_thread *t, int *ids, int *inl, int *lines, int n,
                         double energy_j, double cpu_s, uint64_t samples)
{
    int root = process_root(p, t);
    if (root < 0)
        return -ENOMEM;
    if (n == PC_MAX_DEPTH)
        n--; /* the outermost frame gives way to the process */
    ids[n] = root;
    inl[n] = 0;
    lines[n] = 0;
    int node = pc_tree_stack(&p->ptree, ids, inl, lines, n + 1);
    if (node < 0)
        return node;
    p->ptree.nodes[node].self_j += energy_j;
    p->ptree.nodes[node].self_cpu_s += cpu_s;
    p->ptree.nodes[node].self_samples += samples;
    return 0;
}

int pc_prof_add(pc_prof *p, const pc_frame *frames, int n, double energy_j, double cpu_s,
                uint64_t samples, pid_t pid, pid_t tid, const char *pcomm, const char *tcomm)
{
    if (n <= 0)
        return 0;
    pf_thread *t = thread_of(p, pid, tid, pcomm, tcomm);
    if (!t)
        return -ENOMEM;
    t->energy_j += energy_j;
    t->samples += samples;
    t->sampled_cpu_s += cpu_s;
    int ids[PC_MAX_DEPTH + 1], inl[PC_MAX_DEPTH + 1], lines[PC_MAX_DEPTH + 1];
    if (n > PC_MAX_DEPTH)
        n = PC_MAX_DEPTH;
    for (int i = 0; i < n; i++) {
        if ((ids[i] = func_of(p, &frames[i])) < 0)
            return -ENOMEM;
        inl[i] = frames[i].inlined;
        lines[i] = frames[i].at_line;
    }
    pc_sample s = {.energy_j = energy_j, .cpu_j = energy_j, .cpu_s = cpu_s, .samples = samples};
    pc_stat_add(p->st, ids, n, p->charge, p->outside, ++p->stamp, &s);
    int node = pc_tree_stack(&p->tree, ids, inl, lines, n);
    if (node < 0)
        return node;
    p->tree.nodes[node].self_j += energy_j;
    p->tree.nodes[node].self_cpu_s += cpu_s;
    p->tree.nodes[node].self_samples += samples;
    return process_stack(p, t, ids, inl, lines, n, energy_j, cpu_s, samples);
}

/* Function from's tree nodes, statistics and timeline rows become to's. */
static void merge_func(pc_prof *p, int from, int to)
{
    pc_tree_build *trees[2] = {&p->tree, &p->ptree};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < trees[k]->n; i++)
            if (trees[k]->nodes[i].func == from)
                trees[k]->nodes[i].func = to;
    pc_stat *a = &p->st[to], *b = &p->st[from];
    a->self_j += b->self_j;
    a->total_j += b->total_j;
    a->fself_j += b->fself_j;
    a->cpu_s += b->cpu_s;
    a->cpu_j += b->cpu_j;
    a->net_j += b->net_j;
    a->self_samples += b->self_samples;
    a->total_samples += b->total_samples;
    a->fself_samples += b->fself_samples;
    a->net_bytes += b->net_bytes;
    memset(b, 0, sizeof(*b));
    for (size_t i = 0; i < p->ntl; i++)
        if (p->tl[i].func == from)
            p->tl[i].func = to;
}

int pc_prof_rename(pc_prof *p, const char *name, const char *module, const pc_frame *to)
{
    int from = -1;
    for (size_t i = 0; i < p->nf && from < 0; i++)
        if (p->f[i].f.name == name && p->f[i].f.module == module)
            from = (int)i;
    if (from < 0)
        return 0;
    int t = func_of(p, to);
    if (t < 0)
        return t;
    if (t != from)
        merge_func(p, from, t);
    return 1;
}

int pc_prof_add_pseudo(pc_prof *p, const char *name, double energy_j, pid_t pid, pid_t tid,
                       const char *pcomm, const char *tcomm)
{
    pc_frame f = pc_frame_pseudo(name);
    return pc_prof_add(p, &f, 1, energy_j, 0, 0, pid, tid, pcomm, tcomm);
}

void pc_prof_window_end(pc_prof *p, double start_s, double len_s)
{
    int idx[10];
    double j[10];
    int n = pc_stat_window_top(p->st, p->nf, len_s > 0 ? 10 : 0, idx, j);
    for (int k = 0; k < n; k++)
        if (PA__GROW(p->tl, p->captl, p->ntl + 1, 256) == 0)
            p->tl[p->ntl++] = (pf_tl){start_s, j[k] / len_s, idx[k]};
}

void pc_prof_sums(pc_prof *p, double *functions_j, double *threads_j)
{
    double a = 0, b = 0;
    for (size_t i = 0; i < p->nf; i++)
        a += p->st[i].self_j;
    for (size_t i = 0; i < p->nt; i++)
        b += p->t[i].energy_j;
    *functions_j = a;
    *threads_j = b;
}

size_t pc_prof_memory(pc_prof *p)
{
    return sizeof(*p) + p->capf * sizeof(pf_func) + p->capst * sizeof(pc_stat) + p->capch +
           p->fhcap * sizeof(int) + pc_tree_build_memory(&p->tree) +
           pc_tree_build_memory(&p->ptree) + p->capt * sizeof(pf_thread) + p->captl * sizeof(pf_tl);
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

int pc_prof_function(const pc_prof *p, const char *name, pc_stat *out)
{
    pc_stat s;
    memset(&s, 0, sizeof(s));
    int found = 0;
    for (size_t i = 0; i < p->nf; i++) {
        if (strcmp(p->f[i].f.name, name))
            continue;
        found = 1;
        s.self_j += p->st[i].self_j;
        s.total_j += p->st[i].total_j;
        s.cpu_s += p->st[i].cpu_s;
        s.self_samples += p->st[i].self_samples;
        s.total_samples += p->st[i].total_samples;
    }
    *out = s;
    return found ? 0 : -ENOENT;
}

double pc_prof_unnamed(pc_prof *p, const char **path)
{
    enum { MAXF = 64 };
    const char *files[MAXF];
    double j[MAXF], all = 0, best = 0;
    size_t n = 0;
    *path = "";
    for (size_t i = 0; i < p->nf; i++) {
        const pc_frame *f = &p->f[i].f;
        double e = p->st[i].self_j;
        all += e;
        /* a file's frames only: not the kernel's, JIT code or pseudo-frames */
        if (strncmp(f->name, "[unknown] ", 10) || !f->path || f->path[0] != '/')
            continue;
        size_t k = 0;
        while (k < n && strcmp(files[k], f->path))
            k++;
        if (k == n && n < MAXF) {
            files[n] = f->path;
            j[n++] = 0;
        }
        if (k < n)
            j[k] += e;
    }
    for (size_t k = 0; k < n; k++)
        if (j[k] > best) {
            best = j[k];
            *path = files[k];
        }
    return all > 0 ? best / all : 0;
}

static double key_self(const void *ctx, int i)
{
    return ((const pc_prof *)ctx)->st[i].self_j;
}

static double key_fself(const void *ctx, int i)
{
    return ((const pc_prof *)ctx)->st[i].fself_j;
}

static int keep_func(const void *ctx, int i)
{
    const pc_stat *f = &((const pc_prof *)ctx)->st[i];
    return f->total_samples || f->total_j > 0 || f->fself_j > 0;
}

static int keep_filtered(const void *ctx, int i)
{
    const pc_stat *f = &((const pc_prof *)ctx)->st[i];
    return keep_func(ctx, i) && (f->fself_j > 0 || f->fself_samples);
}

static int keep_self(const void *ctx, int i)
{
    const pc_stat *f = &((const pc_prof *)ctx)->st[i];
    return f->self_j > 0 || f->self_samples;
}

static int write_functions(pc_prof *p, const char *dir, int filtered)
{
    const pc_rank r = {.count = p->nf,
                       .keep = filtered ? keep_filtered : keep_func,
                       .key = filtered ? key_fself : key_self,
                       .ctx = p};
    pc_out o;
    int *idx;
    size_t n;
    int rc = pc_table_open(&o, dir, filtered ? "functions-filtered.csv" : "functions.csv",
                           "function,module,source,self_energy_j,total_energy_j,"
                           "self_samples,total_samples,cpu_time_s\n",
                           &r, &idx, &n);
    if (rc < 0)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const pc_frame *fr = &p->f[idx[k]].f;
        const pc_stat *f = &p->st[idx[k]];
        pa__csv_write(o.f, fr->name);
        fputc(',', o.f);
        pa__csv_write(o.f, fr->module);
        fputc(',', o.f);
        pa__csv_write(o.f, fr->source);
        fprintf(o.f, ",%.9f,%.9f,%llu,%llu,%.6f\n", filtered ? f->fself_j : f->self_j, f->total_j,
                (unsigned long long)(filtered ? f->fself_samples : f->self_samples),
                (unsigned long long)f->total_samples, f->cpu_s);
    }
    free(idx);
    return pc_out_close(&o);
}

static int write_threads(pc_prof *p, const char *dir)
{
    pc_out o;
    int *none;
    size_t n;
    int rc = pc_table_open(&o, dir, "threads.csv", "pid,tid,name,cpu_time_s,energy_j,samples\n",
                           NULL, &none, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < p->nt; i++) {
        const pf_thread *t = &p->t[i];
        fprintf(o.f, "%d,%d,", (int)t->pid, (int)t->tid);
        pa__csv_write(o.f, t->comm);
        fprintf(o.f, ",%.6f,%.9f,%llu\n", t->cpu_s > 0 ? t->cpu_s : t->sampled_cpu_s, t->energy_j,
                (unsigned long long)t->samples);
    }
    return pc_out_close(&o);
}

typedef struct proc_row {
    pid_t pid;
    const char *comm;
    double cpu_s, energy_j;
    uint64_t samples, threads;
} proc_row;

static size_t process_rows(pc_prof *p, proc_row **out_rows)
{
    proc_row *r = calloc(p->nt + 1, sizeof(*r));
    size_t n = 0;
    for (size_t i = 0; r && i < p->nt; i++) {
        const pf_thread *t = &p->t[i];
        size_t k = 0;
        while (k < n && r[k].pid != t->pid)
            k++;
        if (k == n)
            r[n++] = (proc_row){.pid = t->pid, .comm = t->pcomm};
        if (t->pcomm && *t->pcomm)
            r[k].comm = t->pcomm;
        r[k].cpu_s += t->cpu_s > 0 ? t->cpu_s : t->sampled_cpu_s;
        r[k].energy_j += t->energy_j;
        r[k].samples += t->samples;
        r[k].threads++;
    }
    *out_rows = r;
    return n;
}

/* Each process's root frame named as processes.csv names the process:
 * "sort (pid 1234)". */
static int name_roots(pc_prof *p)
{
    proc_row *r;
    size_t n = process_rows(p, &r);
    if (!r)
        return -ENOMEM;
    for (size_t i = 0; i < p->nt; i++) {
        const pf_thread *t = &p->t[i];
        if (t->root < 0)
            continue;
        const char *comm = NULL;
        for (size_t k = 0; k < n && !comm; k++)
            if (r[k].pid == t->pid)
                comm = r[k].comm;
        char name[96];
        snprintf(name, sizeof(name), "%s (pid %d)", comm && *comm ? comm : "?", (int)t->pid);
        p->f[t->root].f.name = pc_intern(name);
    }
    free(r);
    return 0;
}

static int write_processes(pc_prof *p, const char *dir)
{
    proc_row *r;
    size_t n = process_rows(p, &r);
    if (!r)
        return -ENOMEM;
    int rc = 0;
    if (n > 1) {
        pc_out o;
        int *none;
        size_t nn;
        if ((rc = pc_table_open(&o, dir, "processes.csv",
                                "pid,name,threads,cpu_time_s,energy_j,samples\n", NULL, &none,
                                &nn)) == 0) {
            for (size_t i = 0; i < n; i++) {
                fprintf(o.f, "%d,", (int)r[i].pid);
                pa__csv_write(o.f, r[i].comm ? r[i].comm : "");
                fprintf(o.f, ",%llu,%.6f,%.9f,%llu\n", (unsigned long long)r[i].threads, r[i].cpu_s,
                        r[i].energy_j, (unsigned long long)r[i].samples);
            }
            rc = pc_out_close(&o);
        }
    }
    free(r);
    return rc;
}

/* The call tree as the shared writers see it. */
static const char *func_name(const void *ctx, int i)
{
    return ((const pc_prof *)ctx)->f[i].f.name;
}

static const char *func_file(const void *ctx, int i)
{
    const pc_frame *f = &((const pc_prof *)ctx)->f[i].f;
    return f->file && *f->file ? f->file : f->module;
}

static int func_line(const void *ctx, int i)
{
    return ((const pc_prof *)ctx)->f[i].f.line;
}

/* by function and line (lines 0), or by function */
static pc_tree tree_of(pc_prof *p, int lines)
{
    return (pc_tree){.nodes = lines ? p->tree.nodes : p->fold,
                     .n = lines ? p->tree.n : p->nfold,
                     .nfuncs = p->nf,
                     .ctx = p,
                     .name = func_name,
                     .file = func_file,
                     .line = func_line};
}

static int func_map(const void *ctx, int i)
{
    return ((const pc_prof *)ctx)->fmap[i];
}

/* pprof's mappings: one per module (the file, "[kernel.kallsyms]",
 * "[jit]"), its range in the first process it was seen in.  The main
 * binary goes first, as pprof expects: the file mapped lowest (an
 * executable sits below its libraries in a process).  0 or -ENOMEM. */
static int build_maps(pc_prof *p, pc_tree *t)
{
    free(p->fmap);
    free(p->maps);
    p->fmap = calloc(p->nf + 1, sizeof(*p->fmap));
    p->maps = calloc(p->nf + 1, sizeof(*p->maps));
    if (!p->fmap || !p->maps)
        return -ENOMEM;
    size_t nm = 0;
    for (size_t i = 0; i < p->nf; i++) {
        const pc_frame *f = &p->f[i].f;
        p->fmap[i] = -1;
        if (!f->path || !f->path[0])
            continue;
        size_t k = 0;
        while (k < nm && p->maps[k].file != f->path)
            k++;
        if (k == nm)
            p->maps[nm++] = (pc_map){.start = f->mstart,
                                     .limit = f->mlimit,
                                     .offset = f->moff,
                                     .file = f->path,
                                     .build_id = f->build_id};
        if (f->file && f->file[0])
            p->maps[k].has_lines = 1;
        p->fmap[i] = (int)k;
    }
    for (size_t i = 0; i < p->tree.n; i++)
        if (p->tree.nodes[i].inlined && p->fmap[p->tree.nodes[i].func] >= 0)
            p->maps[p->fmap[p->tree.nodes[i].func]].has_inlines = 1;
    /* the main binary first */
    int main_k = -1;
    for (size_t k = 0; k < nm; k++)
        if (p->maps[k].file[0] == '/' && (main_k < 0 || p->maps[k].start < p->maps[main_k].start))
            main_k = (int)k;
    if (main_k > 0) {
        pc_map m = p->maps[main_k];
        p->maps[main_k] = p->maps[0];
        p->maps[0] = m;
        for (size_t i = 0; i < p->nf; i++)
            p->fmap[i] = p->fmap[i] == main_k ? 0 : p->fmap[i] == 0 ? main_k : p->fmap[i];
    }
    t->maps = p->maps;
    t->nmaps = nm;
    t->map_of = func_map;
    return 0;
}

static int write_collapsed(pc_prof *p, const char *dir)
{
    pc_tree t = tree_of(p, 0);
    return pc_tree_write_collapsed(&t, dir);
}

static int write_timeline(pc_prof *p, const char *dir)
{
    pc_out o;
    int *none;
    size_t n;
    int rc = pc_table_open(&o, dir, "timeline.csv", "window_start_s,function,power_w\n", NULL,
                           &none, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < p->ntl; i++) {
        fprintf(o.f, "%.3f,", p->tl[i].start_s);
        pa__csv_write(o.f, p->f[p->tl[i].func].f.name);
        fprintf(o.f, ",%.6f\n", p->tl[i].power_w);
    }
    return pc_out_close(&o);
}

static int write_summary(pc_prof *p, const char *dir, const pc_meta *m)
{
    pc_out o;
    int rc = pc_out_open(&o, dir, "summary.json");
    if (rc < 0)
        return rc;
    double fj, tj;
    pc_prof_sums(p, &fj, &tj);
    double unsampled = 0, unattr = 0;
    for (size_t i = 0; i < p->nf; i++) {
        if (!strcmp(p->f[i].f.name, "[unsampled]"))
            unsampled += p->st[i].self_j;
        if (!strcmp(p->f[i].f.name, "[unattributed]"))
            unattr += p->st[i].self_j;
    }
    proc_row *r;
    size_t np = process_rows(p, &r);
    free(r);
    FILE *f = o.f;
    fputs("{\n  \"target\": ", f);
    pa__json_write(f, m->target);
    fprintf(f, ",\n  \"process_energy_j\": %.9f,\n", m->process_j);
    pc_source_carbon_json(f, m->source, "process_co2e_g", m->process_j);
    fprintf(f, "  \"process_net_energy_j\": %.9f,\n", m->process_nic_j);
    if (m->tree_j >= 0)
        fprintf(f, "  \"tree_energy_j\": %.9f,\n", m->tree_j);
    if (m->unseen_j >= 0)
        fprintf(f, "  \"unseen_processes_energy_j\": %.9f,\n", m->unseen_j);
    fprintf(f, "  \"functions_energy_j\": %.9f,\n", fj - unsampled - unattr);
    fprintf(f, "  \"unsampled_energy_j\": %.9f,\n", unsampled);
    fprintf(f, "  \"unattributed_energy_j\": %.9f,\n", unattr);
    fprintf(f, "  \"threads_energy_j\": %.9f,\n", tj);
    fprintf(f, "  \"conservation_max_error\": %.3g,\n", m->conservation_err);
    fprintf(f, "  \"cpu_time_s\": %.6f,\n", m->process_cpu_s);
    fprintf(f, "  \"threads\": %zu,\n  \"processes\": %zu,\n", p->nt, np);
    /* the rows of functions.csv (issue 31 item 9: the table and the count
     * agree; functions interned but never sampled are in neither) */
    size_t nrows = 0;
    for (size_t i = 0; i < p->nf; i++)
        nrows += keep_func(p, (int)i) != 0;
    fprintf(f, "  \"functions\": %zu,\n  \"stacks\": %zu,\n", nrows, p->nfold);
    fprintf(f, "  \"stacks_with_lines\": %zu,\n", p->tree.n);
    fprintf(f, "  \"duration_s\": %.3f,\n", m->duration_s);
    fprintf(f, "  \"windows\": %llu,\n", (unsigned long long)m->windows);
    fprintf(f, "  \"samples\": %llu,\n", (unsigned long long)m->samples);
    fprintf(f, "  \"samples_lost\": %llu,\n", (unsigned long long)m->samples_lost);
    fprintf(f, "  \"windows_without_samples\": %llu,\n",
            (unsigned long long)m->windows_without_samples);
    fprintf(f, "  \"stacks_truncated\": %llu,\n", (unsigned long long)m->stacks_truncated);
    if (m->extra_json)
        fputs(m->extra_json, f);
    fputs("  \"samples_note\": ", f);
    pa__json_write(f, m->samples_note);
    fputs(",\n  \"symbols_note\": ", f);
    pa__json_write(f, m->symbols_note);
    fputs(",\n", f);
    fprintf(f, "  \"event\": ");
    pa__json_write(f, m->event);
    fprintf(f, ",\n  \"call_graph\": ");
    pa__json_write(f, m->call_graph);
    if (m->frequency)
        fprintf(f, ",\n  \"frequency_hz\": %lu", m->frequency);
    else
        fprintf(f, ",\n  \"interval_s\": %.6f", (double)m->period_ns * 1e-9);
    fprintf(f, ",\n  \"window_s\": %.6f,\n", m->window_s);
    /* the profile grows with the stacks; the symbol tables (kallsyms,
     * perf maps, names) with the modules */
    fprintf(f, "  \"profiler_memory_bytes\": %zu,\n", pc_prof_memory(p) + m->symbols_memory);
    fprintf(f, "  \"profile_memory_bytes\": %zu,\n", pc_prof_memory(p));
    fprintf(f, "  \"symbols_memory_bytes\": %zu,\n", m->symbols_memory);
    fputs("  \"kernel_frames\": ", f);
    pa__json_write(f, m->kernel_state);
    fprintf(f, ",\n  \"demangled\": %s,\n", m->demangled ? "true" : "false");
    pc_source_json(f, m->source, m->filters, m->nfilters);
    fputs(",\n  \"energy_source\": \"CPU energy of the targets per window "
          "from libpowerapi (formula above), split over threads by CPU time "
          "and over a thread's samples equally; network energy is not "
          "attributed to functions\"",
          f);
    if (m->exit_status >= 0)
        fprintf(f, ",\n  \"exit_status\": %d", m->exit_status);
    fputs(",\n  \"complete\": true\n}\n", f);
    return pc_out_close(&o);
}

int pc_prof_write(pc_prof *p, const char *dir, const pc_meta *meta)
{
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return -errno;
    free(p->fold);
    p->fold = NULL;
    p->nfold = 0;
    int rc = pc_tree_fold_lines(p->tree.nodes, p->tree.n, &p->fold, &p->nfold), r;
    if (rc < 0)
        return rc;
    pc_tree_totals(p->fold, p->nfold);
    int (*const simple[])(pc_prof *, const char *) = {write_threads, write_processes,
                                                      write_collapsed, write_timeline};
    if ((r = write_functions(p, dir, 0)) < 0 && !rc)
        rc = r;
    if ((r = write_functions(p, dir, 1)) < 0 && !rc)
        rc = r;
    for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
        if ((r = simple[i](p, dir)) < 0 && !rc)
            rc = r;
    /* the flame graph: per function, under a root frame per process */
    free(p->pfold);
    p->pfold = NULL;
    p->npfold = 0;
    if ((r = pc_tree_fold_lines(p->ptree.nodes, p->ptree.n, &p->pfold, &p->npfold)) < 0)
        return r;
    pc_tree_totals(p->pfold, p->npfold);
    if ((r = name_roots(p)) < 0)
        return r;
    pc_tree t = tree_of(p, 0);
    t.nodes = p->pfold;
    t.n = p->npfold;
    /* the page colours and labels frames by module */
    if ((r = build_maps(p, &t)) < 0 && !rc)
        rc = r;
    if ((r = pc_tree_write_flamegraph(&t, dir, meta->title, meta->process_j, meta->duration_s)) <
            0 &&
        !rc)
        rc = r;
    t = tree_of(p, 1);
    uint64_t period = meta->period_ns   ? meta->period_ns
                      : meta->frequency ? 1000000000ull / meta->frequency
                                        : 0;
    if ((r = build_maps(p, &t)) < 0 && !rc)
        rc = r;
    if (r == 0 &&
        (r = pc_tree_write_pprof(&t, dir, period, meta->duration_s,
                                 "energy from libpowerapi per window, split "
                                 "over each thread's samples; made by "
                                 "powerapi profile")) < 0 &&
        !rc)
        rc = r;
    if ((r = write_summary(p, dir, meta)) < 0 && !rc)
        rc = r;
    return rc;
}

void pc_prof_print_top(pc_prof *p, FILE *out, const char *dir, const pc_meta *meta, int n)
{
    const pc_rank r = {.count = p->nf, .keep = keep_self, .key = key_self, .ctx = p};
    size_t k;
    int *idx = pc_rank_select(&r, &k);
    if (!idx)
        return;
    fprintf(out,
            "profile: %.3f J of CPU energy over %.1f s, %llu samples, "
            "formula %s (%s)\n",
            meta->process_j, meta->duration_s, (unsigned long long)meta->samples,
            *meta->source->formula ? meta->source->formula : "?",
            *meta->source->cpu_source ? meta->source->cpu_source : "?");
    for (size_t i = 0; i < k && (int)i < n; i++) {
        const pc_stat *f = &p->st[idx[i]];
        const pc_frame *fr = &p->f[idx[i]].f;
        fprintf(out, "profile: %10.3f J %5.1f%%  %s  [%s]\n", f->self_j,
                meta->process_j > 0 ? 100.0 * f->self_j / meta->process_j : 0.0, fr->name,
                fr->module);
    }
    if (meta->samples_note[0])
        fprintf(out, "profile: %s\n", meta->samples_note);
    if (meta->symbols_note[0])
        fprintf(out, "profile: %s\n", meta->symbols_note);
    if (meta->kernel_state && !strncmp(meta->kernel_state, "dropped", 7))
        fprintf(out, "profile: kernel frames %s\n", meta->kernel_state);
    if (meta->unseen_j > 0)
        fprintf(out,
                "profile: %.3f J to processes that lived between two windows "
                "(from their samples' CPU time)\n",
                meta->unseen_j);
    char co2[160];
    pc_source_carbon_text(meta->source, meta->process_j, co2, sizeof(co2));
    if (co2[0])
        fprintf(out, "profile: %s (--carbon-intensity: given, not measured)\n", co2);
    fprintf(out, "profile: files in %s/ (flame graph: %s/flamegraph.html)\n", dir, dir);
    free(idx);
}

/* The pprof of what was charged since the previous call: each node's
 * self energy, CPU time and samples less what *d held, in a copy of the
 * tree (nodes are only appended during a run, so an index is the same
 * node from one call to the next).  The delta profile of `powerapi profile
 * --push`. */
int pc_prof_write_delta(pc_prof *p, const char *dir, uint64_t period_ns, double duration_s,
                        pc_delta *d)
{
    pc_tree t = tree_of(p, 1);
    int rc = build_maps(p, &t);
    return rc < 0 ? rc
                  : pc_tree_write_pprof_delta(
                        &t, d, dir, period_ns, duration_s,
                        "energy from libpowerapi per window, split over each thread's "
                        "samples, since the previous push; made by powerapi profile");
}
