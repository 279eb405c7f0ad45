/*
 * pdiff_int.h - what the files of the comparison share inside profcore/
 * (pdiff_load.c reads a side, pdiff.c compares, pdiff_out.c writes): the
 * sides' tables.  Not a public header.
 */
#ifndef PA_PDIFF_INT_H
#define PA_PDIFF_INT_H

#include "pdiff.h"

/* A function of one side: interned name and module, a value per run. */
typedef struct pside_fn {
    const char *name, *module;
    double *self, *total; /* [runs] */
    int unsure;           /* an "[unknown] mod+0x..." frame, keyed by module */
    int peer;             /* pdiff.c: the row it went to, -1 none */
} pside_fn;

/* A node of one side's call tree: an interned frame name under its
 * parent (-1: a root), with its self energy, the mean over the runs;
 * parents before children. */
typedef struct pside_node {
    const char *name;
    int parent;
    double self;
} pside_node;

struct pc_side {
    char tool[8];     /* "profile", "jalen", "pprof" */
    const char *unit; /* "J", "s" */
    size_t runs, run; /* runs, and the run being read */
    double *total;    /* [runs] */
    pside_fn *fns;
    size_t nfns, fcap;
    int *fhash;
    size_t fhcap;
    pside_node *nodes;
    size_t nnodes, ncap;
    int *nhash;
    size_t nhcap;
    /* the last stack read, its frames' ends and nodes: collapsed stacks
     * come in tree order, so most of a line is the last one's prefix */
    char *last;
    size_t last_cap;
    int *last_node, *last_end;
    size_t last_n, last_ncap, last_ecap;
};

/* The function (name, module) of s, added when new (with zeroed
 * values); its index or -ENOMEM.  Names "[unknown] MOD+0x..." become
 * "[unknown] MOD", unsure. */
int pc__side_fn(pc_side *s, const char *name, const char *module);
/* The index of (name, module), both interned, or -1. */
int pc__side_find(const pc_side *s, const char *name, const char *module);
/* Adds self_j / runs to the stack path (root first, ';'-joined; frames
 * "[unknown] MOD+0x..." as "[unknown] MOD"), its nodes created as
 * needed.  0 or -ENOMEM. */
int pc__side_stack(pc_side *s, const char *path, double self_j);

/* A comparison's tree node (pdiff.c builds them, pdiff_out.c draws). */
typedef struct pdiff_node {
    const char *name;
    int parent, first_child, next_sibling;
    double a_self, b_self, a_total, b_total;
} pdiff_node;

struct pc_diff {
    const char *unit;
    size_t runs_a, runs_b;
    char tool[8];
    pc_change total;
    pc_diff_row *rows;
    size_t nrows;
    pdiff_node *nodes;
    size_t nnodes;
    char method[320];
};

#endif
