/*
 * profout.h - the profile files shared by jalen (the JVMTI agent) and
 * `powerapi profile`: one implementation of the atomic file replacement,
 * the CSV and JSON text, the call tree's collapsed stacks, the flame graph
 * page and the pprof profile (profile.pb.gz).
 *
 * Not installed: a static library (position-independent, for libjalen.so)
 * linked into the agent and the command.  Nothing here prints, aborts or
 * exits; errors are negative errno values.  Not thread-safe: each caller
 * writes its files from one thread.
 */
#ifndef PA_PROFOUT_H
#define PA_PROFOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- files ---- */

/* A file being written as "<dir>/.<name>.tmp", to take "<dir>/<name>"'s
 * place in one step when closed: a reader never sees half a file, and a
 * killed writer leaves the last complete version. */
typedef struct pc_out {
    FILE *f;
    char tmp[4200];
    char dst[4200];
} pc_out;

/* Opens the temporary file (unlocked stdio, 64 KiB buffer).  0 or -errno. */
int pc_out_open(pc_out *o, const char *dir, const char *name);
/* Closes and puts the file in place; on a write error removes it and
 * returns the write's -errno (-ENOSPC, -EROFS; -EIO when unknown), or the
 * rename's. */
int pc_out_close(pc_out *o);

/* mkdir -p: path and each missing folder above it, with mode (less the
 * umask).  What exists already is no error (a file named path too: the
 * caller's files in it then fail to open).  0, -ENAMETOOLONG (PATH_MAX),
 * or mkdir(2)'s -errno (-ENOTDIR where a folder above is a file).  The one
 * implementation for the agent's output folder and the command's
 * (replays, calibration files). */
int pc_out_mkdirs(const char *path, mode_t mode);

/* ---- text ---- */

/* Unsigned decimal, without printf. */
void pc_out_u64(FILE *f, uint64_t v);
/* v with dec (<= 9) decimals, as "%.*f" but for the last digit's rounding
 * (printf's exact conversion is the costly part of rewriting files every
 * window). */
void pc_out_fix(FILE *f, double v, int dec);
/* s (NULL as "") as a JSON string with its quotes, and as one CSV field:
 * pa__json_write and pa__csv_write (libpowerapi/src/util.h), the one set
 * of escaping rules of the project, for the sources that see only public
 * headers (the command). */
void pc_out_json_str(FILE *f, const char *s);
void pc_out_csv_field(FILE *f, const char *s);

/* JSON array items of a ";"-separated list (libpowerapi's "assumed"),
 * each trimmed of leading blanks, empty ones left out, ", " between:
 * what goes between the brackets. */
void pc_out_json_list(FILE *f, const char *list);
/* JSON array items of n strings, ", " between. */
void pc_out_json_strings(FILE *f, const char *const *v, size_t n);

/* ---- the call tree ---- */

/* One node of a call tree: a function (an index into the caller's table)
 * called from its parent (-1: a root, the outermost frame).  Children are
 * created after their parents (the writers rely on it). */
typedef struct pc_tree_node {
    int func;
    int parent, first_child, next_sibling;
    double self_j, total_j; /* total_j: pc_tree_totals fills it */
    double self_cpu_s;      /* CPU time of the samples ending here (0 when
                               the caller does not count it) */
    uint64_t self_samples;
    unsigned char inlined; /* this frame was inlined into its parent's
                              function (pprof: one location, two lines) */
    int line;              /* the line of the function this node was at: sampled
                              (a leaf) or calling its child; 0 unknown.  Nodes that
                              differ only in line are siblings (pprof's line-level
                              locations); pc_tree_fold_lines merges them */
} pc_tree_node;

/* A module (pprof's Mapping): the executable mapping of a file. */
typedef struct pc_map {
    uint64_t start, limit, offset;
    const char *file;     /* path, or "[kernel.kallsyms]", "[jit]" */
    const char *build_id; /* hex; NULL or "" unknown */
    int has_lines;        /* file and line numbers known for some function */
    int has_inlines;      /* inlined frames known */
} pc_map;

typedef struct pc_tree {
    pc_tree_node *nodes;
    size_t n;
    size_t nfuncs;
    const void *ctx;
    /* the function's name (never NULL) */
    const char *(*name)(const void *ctx, int func);
    /* pprof only, may be NULL: source file ("" unknown) and line (0) */
    const char *(*file)(const void *ctx, int func);
    int (*line)(const void *ctx, int func);
    /* pprof only: the modules, the main binary first (none: one mapping
     * named main_name, or "" when NULL), and each function's (-1 none) */
    const pc_map *maps;
    size_t nmaps;
    int (*map_of)(const void *ctx, int func);
    const char *main_name;
    /* the differential flame graph only (`powerapi diff`, issue 44), else
     * NULL: each node's inclusive energy in the profiles A and B, which
     * the page colours and its tooltip and search sum; the nodes' total_j
     * is then their width */
    const double *diff_a_j, *diff_b_j;
    /* the flame graph only, may be NULL: a line its tooltip adds for the
     * function ("" none; jalen: a traced method's calls and energy per
     * call), valid until the next call */
    const char *(*note)(const void *ctx, int func);
} pc_tree;

/* total_j = self_j plus the children's totals, for every node. */
void pc_tree_totals(pc_tree_node *nodes, size_t n);

/* The tree with the nodes that differ only in line merged (lines 0): the
 * function-level tree of the collapsed stacks and the flame graph.  Its
 * totals are not filled.  *out is the caller's to free.  0 or -ENOMEM. */
int pc_tree_fold_lines(const pc_tree_node *in, size_t n, pc_tree_node **out, size_t *nout);

/* The stacks whose root is function root_func (a copy of those nodes,
 * parents before children as in the input, links remade; totals not
 * filled): the filtered view of one root, e.g. a scope's "[scope NAME]"
 * frame.  *out is the caller's to free (NULL when nothing matches).  0 or
 * -ENOMEM. */
int pc_tree_subtree(const pc_tree_node *in, size_t n, int root_func, pc_tree_node **out,
                    size_t *nout);

/* energy.collapsed: one line per node with self energy, "root;...;leaf
 * MICROJOULES" (flamegraph.pl, speedscope).  A ';' in a name becomes ':'.
 * Totals not needed.  0 or -errno. */
int pc_tree_write_collapsed(const pc_tree *t, const char *dir);

/* flamegraph.html: the self-contained page (flamegraph.html.in) with the
 * tree's nodes of at least 2e-5 of the total; needs pc_tree_totals.
 * 0 or -errno. */
int pc_tree_write_flamegraph(const pc_tree *t, const char *dir, const char *title, double process_j,
                             double duration_s);

/* profile.pb.gz (pprof's profile.proto, gzip): sample types samples
 * (count), cpu (nanoseconds), energy (microjoules, the default); one
 * sample per node with self samples or energy, its location ids leaf
 * first; one function per function; one location per function not
 * inlined (its line the declaration's), one per function and line of the
 * nodes with a line, each linked to its function's mapping, and one per
 * node inlined into its parent, whose lines are the inlined chain
 * innermost first (the pprof convention), each the node's line or else
 * its function's declaration line.  Mappings say the functions are named (pprof
 * never tries to symbolise them again), with file names and lines when
 * has_lines.  period_ns is the
 * sampling period (0 unknown); comment goes into the profile's comments.
 * 0 or -errno. */
int pc_tree_write_pprof(const pc_tree *t, const char *dir, uint64_t period_ns, double duration_s,
                        const char *comment);

/* What a delta pushed last: the nodes' figures then.  Zero it to start;
 * free(last) at the end. */
typedef struct pc_delta {
    struct pc_tree_node *last;
    size_t cap;
    double energy_j; /* the energy of the last delta */
} pc_delta;

/* pc_tree_write_pprof of what t's nodes gained since the previous call
 * with d (since the start for a zeroed d): t's nodes only ever grow in
 * number and in figures (a tree that is built, never rebuilt).  0 or
 * -errno. */
int pc_tree_write_pprof_delta(const pc_tree *t, pc_delta *d, const char *dir, uint64_t period_ns,
                              double duration_s, const char *comment);

/* The flame graph page, up to and after its data (generated at build
 * time from flamegraph.html.in). */
extern const char pc_flamegraph_head[];
extern const char pc_flamegraph_tail[];

#endif
