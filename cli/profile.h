/*
 * profile.h - `powerapi profile`: what its parts share.
 *
 *   profile.c        the command: options, perf_event_open rings, records
 *                    (MMAP2, COMM, FORK, EXIT, SAMPLE), energy per window
 *   profile_sym.c    addresses to frames: elfutils libdwfl (symbols,
 *                    DWARF lines, inlined frames), perf map files (JIT),
 *                    /proc/kallsyms (kernel), a C++ demangler
 *   profile_unwind.c --call-graph dwarf: stack copies unwound with libdwfl
 *   profile_write.c  the profile model (functions, call tree, threads,
 *                    processes, timeline) and its files, written with the
 *                    writers shared with jalen (profout/)
 *
 * All of it runs on the command's one thread: no locks.
 */
#ifndef PA_CLI_PROFILE_H
#define PA_CLI_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PF_MAX_DEPTH 128  /* frames kept per sample, inlined included */

/* ---- memory maps of a process (profile.c fills, profile_sym.c reads) --- */

typedef struct pf_map {
    uint64_t start, end, pgoff;
    const char *path; /* interned: "/usr/lib/...", "[vdso]", "//anon", "" */
} pf_map;

typedef struct pf_maps {
    pf_map *v;
    size_t n, cap;
    int sorted;
    unsigned version; /* changes with every pf_maps_add */
} pf_maps;

/* Adds a mapping; a new one replaces what it overlaps (as mmap does).
 * Returns 0 or -ENOMEM. */
int pf_maps_add(pf_maps *m, uint64_t start, uint64_t len, uint64_t pgoff,
                const char *path);
const pf_map *pf_maps_find(pf_maps *m, uint64_t addr);
/* Reads /proc/PID/maps under procfs into m.  0 or -errno. */
int pf_maps_read(pf_maps *m, const char *procfs, pid_t pid);
void pf_maps_free(pf_maps *m);
/* Interns a string for the whole run (never freed before pf_sym_fini). */
const char *pf_intern(const char *s);

/* ---- symbolisation (profile_sym.c) ---- */

/* One frame as named. */
typedef struct pf_frame {
    const char *name;   /* interned; "[unknown] libx.so+0x1234" when unknown */
    const char *module; /* interned basename, "[kernel]", "[jit]" */
    const char *source; /* interned "file.c:12" (declaration), or "" */
    int line;           /* declaration line for pprof, 0 unknown */
    int at_line;        /* the line of the address in this function: the
                           line sampled (innermost frame), the line of
                           the call (a caller; an inlined frame's caller:
                           the call's DW_AT_call_line); 0 unknown */
    const char *file;   /* interned source file, or "" */
    int inlined;        /* inlined into the next frame (its caller) */
    /* the module's mapping, for pprof: interned path ("" none: pseudo
     * frames), build id in hex ("" unknown), the executable mapping's
     * range and file offset in the process it was first seen in */
    const char *path, *build_id;
    uint64_t mstart, mlimit, moff;
} pf_frame;

/* Initialises the symboliser; kallsyms is read from procfs (kernel frames
 * are then named) when kernel != 0. */
int pf_sym_init(const char *procfs, int kernel);
void pf_sym_fini(void);
/* Appends the frames of addr in a process (pid for perf maps, its maps),
 * innermost (inlined) first, to out (room for max).  is_return: addr is a
 * return address (the call is at addr - 1).  Returns the count (>= 1). */
int pf_sym_resolve(pid_t pid, pf_maps *maps, uint64_t addr, int is_return,
                   pf_frame *out, int max);
/* Whether addr is a kernel address whose frame is dropped: kallsyms not
 * readable, or its addresses hidden (kptr_restrict).  Reads kallsyms at
 * the first kernel address. */
int pf_sym_kernel_dropped(uint64_t addr);
/* Frames whose name says what they are ("[unsampled]"...). */
pf_frame pf_sym_pseudo(const char *name);
/* The kernel symbols' state ("named", "not readable: ..."), for the
 * summary. */
const char *pf_sym_kernel_state(void);
/* Modules opened and their memory, for the summary. */
size_t pf_sym_memory(void);

/* ---- --call-graph dwarf (profile_unwind.c) ---- */

/* The user registers sampled (perf_event_attr.sample_regs_user, x86-64):
 * AX BX CX DX SI DI BP SP IP and R8..R15, 17 values in that order. */
#define PF_UNWIND_REGS_MASK 0xff01ffull
#define PF_UNWIND_STACK 8192 /* bytes of user stack copied per sample */

typedef struct pf_unwinder pf_unwinder;
/* Unwinds a sample's user stack: perf_regs as sampled, the stack copy
 * (from SP on).  *cache holds the process's unwinder (created, and
 * rebuilt when maps change).  Writes up to max pcs, innermost first;
 * returns their count or -errno. */
int pf_unwind(pf_unwinder **cache, pid_t pid, pid_t tid, pf_maps *maps,
              const uint64_t *perf_regs, const char *stack, size_t stack_len,
              uint64_t *pcs, int max);
void pf_unwinder_free(pf_unwinder *u);

/* ---- the profile model and its files (profile_write.c) ---- */

typedef struct pf_prof pf_prof;

typedef struct pf_meta {
    const char *title;        /* flame graph title */
    const char *target;       /* "pid 123" / "command: make -j2" */
    const char *event;        /* "cpu-clock" */
    const char *call_graph;   /* "fp" */
    uint64_t period_ns;       /* 0 with --frequency */
    unsigned long frequency;  /* 0 with --interval */
    double window_s;
    const char *const *filters;
    size_t nfilters;
    const char *formula, *sensors, *cpu_source, *assumed;
    const char *kernel_state;
    int demangled; /* C++ and Rust names demangled (always, since
                      libiberty is linked; kept in summary.json) */
    uint64_t samples, samples_lost, samples_unknown_pid, windows;
    double duration_s;
    double process_j;      /* CPU energy of the targets (libpowerapi) */
    double process_nic_j;  /* network energy (not attributed to functions) */
    double process_cpu_s;
    int exit_status;       /* -1: not a command */
    double conservation_err; /* worst window: |functions - process| /
                               process, and the same for threads */
    double tree_j;         /* a command's tree energy (libpowerapi's
                              pa_tree_power), -1 when not a command */
    double unseen_j;       /* --all: the energy given to processes no
                              report had, from their samples' CPU time;
                              -1 without --all */
} pf_meta;

int pf_prof_new(pf_prof **out, const char *const *filters, size_t nfilters);
void pf_prof_free(pf_prof *p);
/* Adds one stack (frames[0] = leaf) with its energy, CPU time and sample
 * count; the thread tid of process pid (comm names) gets them too. */
int pf_prof_add(pf_prof *p, const pf_frame *frames, int n, double energy_j,
                double cpu_s, uint64_t samples, pid_t pid, pid_t tid,
                const char *pcomm, const char *tcomm);
/* Credits a thread's CPU time (from libpowerapi) without a stack. */
int pf_prof_thread_cpu(pf_prof *p, pid_t pid, pid_t tid, const char *pcomm,
                       const char *tcomm, double cpu_s);
/* Closes a window: the top functions of the window go to timeline.csv. */
void pf_prof_window_end(pf_prof *p, double start_s, double len_s);
/* Writes every file into dir (created).  0 or -errno (the first failure;
 * the others are still written). */
int pf_prof_write(pf_prof *p, const char *dir, const pf_meta *meta);
/* Prints the top functions to f. */
void pf_prof_print_top(pf_prof *p, const char *dir, const pf_meta *meta,
                       int n);
/* Sums for the conservation check: functions' self energy (pseudo-frames
 * included), threads' energy. */
void pf_prof_sums(pf_prof *p, double *functions_j, double *threads_j);
size_t pf_prof_memory(pf_prof *p);

#endif
