/*
 * profcore.h - the profiling core: what a stack sampler and its outputs
 * share, whatever produced the stacks (the perf_event engine of `powerapi
 * profile`, engines/perf/; the AsyncGetCallTrace sampler of jalen).
 *
 *   frames        interned strings, a frame as named (pc_frame)
 *   call tree     nodes keyed by (parent, function, inlined, line), the
 *                 one hashed index both tools build (pc_tree_build)
 *   functions     per-function self/total energy, samples, CPU time and
 *                 the filtered view, charged once per function and stack
 *                 (pc_stat); sorted tables (pc_rank, pc_table_open); the window's
 *                 top functions (pc_stat_window_top)
 *   windows       a cumulative reading's increase (pc_cum), and the
 *                 per-window split of the targets' energy over processes,
 *                 threads and samples, processes seen only between two
 *                 windows included (pc_tasks, window.c)
 *   source        the report's formula, sensors, CPU source, assumptions
 *                 (pc_source, source.c)
 *   the profile   functions by (name, module), threads, processes and the
 *                 timeline of `powerapi profile`, and its files
 *                 (pc_prof, profcore/pprofile.c)
 *   writers       profout.h: atomic files, CSV/JSON text, collapsed
 *                 stacks, flame graph, pprof
 *
 * Layer: above the library (it reads pa_report, uses util.h), beside the
 * engines (which include it; it includes no engine), below the command and
 * the agent.  Nothing here prints on its own (pc_prof_print_top writes to
 * the stream it is given), aborts or exits; errors are negative errno
 * values.  Not thread-safe: one profile is built and written from
 * one thread (jalen's agent thread under its profile lock).
 */
#ifndef PA_PROFCORE_H
#define PA_PROFCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "powerapi.h"
#include "profout.h"

#define PC_MAX_DEPTH 128 /* frames kept per sample, inlined included */

/* ---- frames ---- */

/* Interns a string for the whole run (freed by pc_intern_free); NULL is
 * "".  Returns "" when out of memory. */
const char *pc_intern(const char *s);
void pc_intern_free(void);
/* Bytes the interned strings hold. */
size_t pc_intern_memory(void);

/* One frame as named. */
typedef struct pc_frame {
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
} pc_frame;

/* A frame whose name says what it is ("[unsampled]"...): no module. */
pc_frame pc_frame_pseudo(const char *name);

/* ---- the call tree ---- */

/* A call tree being built: nodes (profout.h's pc_tree_node) and the
 * hashed index of (parent, function, inlined, line).  Zero-initialised;
 * hint and node_hint are the index's and the nodes' first sizes (0: 4096
 * and 256). */
typedef struct pc_tree_build {
    pc_tree_node *nodes;
    size_t n, cap;
    int *hash;
    size_t hcap;
    size_t hint, node_hint;
} pc_tree_build;

/* The child of parent (-1: a root) for func at line (0 unknown), inlined
 * into parent's function or called by it (two nodes when both happen);
 * created (children after their parents, first_child/next_sibling linked)
 * when new.  Its index, or -ENOMEM. */
int pc_tree_child(pc_tree_build *b, int parent, int func, int inlined, int line);
/* The leaf of a stack (ids[0] the leaf; inlined and lines per frame, each
 * may be NULL), created as needed; -ENOMEM.  n > 0. */
int pc_tree_stack(pc_tree_build *b, const int *ids, const int *inlined, const int *lines, int n);
void pc_tree_build_free(pc_tree_build *b);
/* Bytes of the nodes and the index. */
size_t pc_tree_build_memory(const pc_tree_build *b);

/* ---- functions ---- */

/* What one function (or class) accumulated.  total_* are counted once per
 * stack however often the function occurs in it (stamp). */
typedef struct pc_stat {
    double self_j, total_j;
    double fself_j;      /* the filtered view: energy charged here */
    double w_self_j;     /* this window's self energy (the timeline) */
    double cpu_s;        /* CPU time of the stacks through it */
    double cpu_j, net_j; /* total energy by component */
    uint64_t self_samples, total_samples, fself_samples, net_bytes;
    uint64_t stamp;
} pc_stat;

/* How the filtered view treats a function: never charged (outside the
 * filter), charged as the innermost frame only, or charged wherever it
 * is the innermost such frame of a stack. */
enum { PC_CHARGE_NONE = 0, PC_CHARGE_LEAF = 1, PC_CHARGE_ANY = 2 };

/* One stack's weights: energy_j = cpu_j + net_j; samples 0 for energy
 * that no sample carries (pseudo-frames, network bytes). */
typedef struct pc_sample {
    double energy_j, cpu_j, net_j, cpu_s;
    uint64_t samples, net_bytes;
} pc_sample;

/* Charges a stack (ids[0] the leaf, n > 0) to st: self to the leaf,
 * totals once per function.  charge (per function index, NULL: no
 * filtered view) says where the filtered energy goes: the innermost
 * function charged, else outside. */
void pc_stat_add(pc_stat *st, const int *ids, int n, const unsigned char *charge, int outside,
                 uint64_t stamp, const pc_sample *s);
/* The window's k functions with the most self energy (w_self_j > 0), most
 * first, into idx and j; then every w_self_j back to 0.  Their count. */
int pc_stat_window_top(pc_stat *st, size_t n, int k, int *idx, double *j);

/* The rows of a sorted table: those of 0..count-1 that keep (NULL: all),
 * by key descending, ties by name (NULL: by index). */
typedef struct pc_rank {
    size_t count;
    int (*keep)(const void *ctx, int i);
    double (*key)(const void *ctx, int i);
    const char *(*name)(const void *ctx, int i);
    const void *ctx;
} pc_rank;

/* The rows, sorted, in an array of *n indices (the caller's to free), or
 * NULL when out of memory. */
int *pc_rank_select(const pc_rank *r, size_t *n);

/* A CSV table's file in dir: its rows chosen and sorted (r NULL: none,
 * *idx NULL), the file opened (pc_out_open) and its header line
 * written.  0 or -errno (then nothing is open or allocated). */
int pc_table_open(pc_out *o, const char *dir, const char *name, const char *header,
                  const pc_rank *r, int **idx, size_t *n);

/* ---- windows ---- */

/* A cumulative reading (joules since a target was first seen). */
typedef struct pc_cum {
    double last;
    int have;
} pc_cum;

/* The reading's increase since the last one (the whole reading the first
 * time), never negative. */
double pc_cum_delta(pc_cum *c, double now);

/* ---- where the numbers come from ---- */

/* The last report's formula, sensors, CPU source and assumptions
 * (libpowerapi), kept for summary.json. */
typedef struct pc_source {
    char formula[128], sensors[128], cpu_source[32], assumed[1024];
    double carbon_g_per_kwh; /* the user's carbon intensity (the tools'
                                carbon-intensity option): grams of CO2e
                                beside joules; 0 none.  Not from a report:
                                pc_source_from_report keeps it */
} pc_source;

/* Copies them out of a report (NULL members: ""). */
void pc_source_from_report(pc_source *s, const pa_report *rep);
/* summary.json's members "formula", "sensors", "cpu_source", "assumed"
 * (a list from the report's ";"-separated one) and "filter" (n
 * prefixes), each on its own line with two spaces, ",\n" between, none
 * after the last. */
void pc_source_json(FILE *f, const pc_source *s, const char *const *filters, size_t n);

/* Grams of CO2e beside joules in the profile files, at the intensity the
 * user gave (pa_carbon_g, the library's one conversion); each writes
 * nothing when s has none, so the files keep their form without it.  The
 * intensity is stated as an assumption by pc_source_json ("assumed" and
 * "carbon_intensity_g_per_kwh") and by the text and CSV below. */
/* A summary.json line "  \"key\": GRAMS,\n" of energy_j. */
void pc_source_carbon_json(FILE *f, const pc_source *s, const char *key, double energy_j);
/* Text for people (a summary line, a flame graph's title): "CO2e G g at
 * an assumed I gCO2e/kWh" of energy_j into buf; "" without intensity. */
void pc_source_carbon_text(const pc_source *s, double energy_j, char *buf, size_t len);
/* A CSV file's carbon columns (scopes.csv, ...): the header's
 * ",co2e_g,carbon_intensity_g_per_kwh", then each row's ",G,I" of the
 * row's energy_j (G with 9 decimals, empty when the energy is unknown). */
void pc_source_carbon_csv_header(FILE *f, const pc_source *s);
void pc_source_carbon_csv_row(FILE *f, const pc_source *s, double energy_j);

/* ---- the profile of `powerapi profile` (pprofile.c) ---- */

typedef struct pc_prof pc_prof;

typedef struct pc_meta {
    const char *title;       /* flame graph title */
    const char *target;      /* "pid 123" / "command: make -j2" */
    const char *event;       /* "cpu-clock" */
    const char *call_graph;  /* "fp" */
    uint64_t period_ns;      /* 0 with --frequency */
    unsigned long frequency; /* 0 with --interval */
    double window_s;
    const char *const *filters;
    size_t nfilters;
    const pc_source *source;
    const char *kernel_state;
    int demangled; /* C++ and Rust names demangled (always, since
                      libiberty is linked; kept in summary.json) */
    uint64_t samples, samples_lost, windows;
    uint64_t windows_without_samples; /* with energy but no stack */
    uint64_t stacks_truncated;        /* ended at a return address outside code */
    char samples_note[256];           /* why there is no sample, or windows
                                         without one ("" when every window had) */
    char symbols_note[512];           /* which program's frames are unnamed,
                                         and what names them ("" none) */
    double duration_s;
    double process_j;     /* CPU energy of the targets (libpowerapi) */
    double process_nic_j; /* network energy (not attributed to functions) */
    double process_cpu_s;
    int exit_status;         /* -1: not a command */
    double conservation_err; /* worst window: |functions - process| /
                               process, and the same for threads */
    double tree_j;           /* a command's tree energy (libpowerapi's
                                pa_tree_power), -1 when not a command */
    double unseen_j;         /* --all: the energy given to processes no
                                report had, from their samples' CPU time;
                                -1 without --all */
    size_t symbols_memory;   /* the engine's symbol tables, bytes */
    const char *extra_json;  /* members added to summary.json as they are
                                ("  \"key\": value,\n" lines), or NULL */
} pc_meta;

int pc_prof_new(pc_prof **out, const char *const *filters, size_t nfilters);
void pc_prof_free(pc_prof *p);
/* Adds one stack (frames[0] = leaf) with its energy, CPU time and sample
 * count; the thread tid of process pid (comm names) gets them too. */
int pc_prof_add(pc_prof *p, const pc_frame *frames, int n, double energy_j, double cpu_s,
                uint64_t samples, pid_t pid, pid_t tid, const char *pcomm, const char *tcomm);
/* At the end of a run, before pc_prof_write: the function of frames
 * named name (module module, both interned) becomes the function of frame
 * to (merged with it when it exists already): its tree nodes, statistics
 * and timeline rows.  A stack that held two such frames that become one
 * function counts its energy twice in that function's total (a recursion
 * through two addresses: rare).  1 renamed, 0 not found, or -ENOMEM. */
int pc_prof_rename(pc_prof *p, const char *name, const char *module, const pc_frame *to);

/* Adds energy to a pseudo-frame ("[unsampled]") of a thread. */
int pc_prof_add_pseudo(pc_prof *p, const char *name, double energy_j, pid_t pid, pid_t tid,
                       const char *pcomm, const char *tcomm);
/* Credits a thread's CPU time (from libpowerapi) without a stack. */
int pc_prof_thread_cpu(pc_prof *p, pid_t pid, pid_t tid, const char *pcomm, const char *tcomm,
                       double cpu_s);
/* Closes a window: the top functions of the window go to timeline.csv. */
void pc_prof_window_end(pc_prof *p, double start_s, double len_s);
/* Writes every file into dir (created).  0 or -errno (the first failure;
 * the others are still written). */
int pc_prof_write(pc_prof *p, const char *dir, const pc_meta *meta);
/* profile.pb.gz in dir (pprof, as pc_prof_write's) of what was charged
 * since the previous call with d (since the start for a zeroed d).  0 or
 * -errno. */
int pc_prof_write_delta(pc_prof *p, const char *dir, uint64_t period_ns, double duration_s,
                        pc_delta *d);

/* Prints the n functions of most self energy to out (the command's
 * summary on stderr). */
void pc_prof_print_top(pc_prof *p, FILE *out, const char *dir, const pc_meta *meta, int n);
/* Sums for the conservation check: functions' self energy (pseudo-frames
 * included), threads' energy. */
void pc_prof_sums(pc_prof *p, double *functions_j, double *threads_j);
/* The file whose unnamed frames ("[unknown] FILE+0x...", no symbol or
 * debug information) hold the most self energy: its path (*path, interned,
 * "" when none) and their share of every function's self energy. */
double pc_prof_unnamed(pc_prof *p, const char **path);
/* The sums of every function named name, in any module (profile
 * --count's energy per call); 0, or -ENOENT when no sample had it. */
int pc_prof_function(const pc_prof *p, const char *name, pc_stat *out);
size_t pc_prof_memory(pc_prof *p);

/* ---- the per-window split of `powerapi profile` (window.c) ---- */

/* The targets' processes (one entry per pid, whatever its generations)
 * and threads, with this window's bookkeeping.  Per window:
 * pc_tasks_window, or its steps: pc_tasks_begin, pc_tasks_report (the
 * libpowerapi report), pc_tasks_sample for every sample, pc_tasks_split
 * (energies), then pc_tasks_charge for each sample, and pc_tasks_end. */
typedef struct pc_proc {
    pid_t pid;
    char comm[PA_COMM_MAX];
    pc_cum cum;  /* the process's cumulative CPU joules */
    double w_j;  /* this window's CPU energy */
    bool w_seen; /* in this window's report */
    double w_thr_cpu_s;
} pc_proc;

typedef struct pc_thr {
    pid_t pid, tid;
    char comm[PA_COMM_MAX];
    double w_cpu_s; /* this window, from the report */
    uint64_t w_samples;
    double w_sampled_cpu_s; /* samples x period */
    bool w_exited;          /* an EXIT record in this window */
    bool w_first;           /* first report: its CPU time before the
                               first reading is in no report either */
    double w_j;
    bool w_reported;
} pc_thr;

/* What a window's report gave. */
typedef struct pc_win {
    double procs_j;  /* sum of the processes' energy */
    double nic_j;    /* their network energy */
    double cpu_s;    /* their CPU time */
    double extra_j;  /* energy of processes no report had (set by the
                        caller: a tree's excess, or pc_tasks_unseen) */
    double window_j; /* procs_j + extra_j, after pc_tasks_split */
    double error;    /* after pc_tasks_window: |functions - window_j|
                        and |threads - window_j| over window_j, the
                        larger (0 for a window without energy) */
} pc_win;

/* A sampling engine as a window sees it: stacks with their weights.
 * Engines (engines/perf/) fill one; the core calls it. */
typedef struct pc_engine {
    void *self;
    /* the window's stack at *at (0: the first): its thread and weight
     * (the CPU time it stands for, in ns); *at then moves past it.  false
     * after the last */
    bool (*next)(void *self, size_t *at, pid_t *pid, pid_t *tid, uint64_t *weight_ns);
    /* the frames of the stack at at (as given to next), leaf first; their
     * count (> 0 for a stack with addresses) */
    int (*frames)(void *self, size_t at, pc_frame *out, int max);
    /* forgets the window's stacks */
    void (*window_done)(void *self);
} pc_engine;

typedef struct pc_tasks {
    pc_proc *procs;
    size_t nprocs, capprocs;
    pc_thr *thrs;
    size_t nthrs, capthrs;
    /* indexes of procs by pid and thrs by (pid, tid): pa__index_reserve's
     * slots (a machine's processes come and go: a continuous --all run
     * meets tens of thousands) */
    int *phash, *thash;
    size_t phcap, thcap;
    bool period_is_time; /* a sample's period is CPU time (not cycles) */
    /* the report's processes: which are targets (NULL: all), and a hook
     * called on each before it is read (the engine learns its maps) */
    bool (*is_target)(void *user, pid_t pid);
    void (*on_proc)(void *user, pid_t pid);
    /* pc_tasks_window: the energy of processes no report had (NULL:
     * none), and the pid "[unattributed]" energy is credited to */
    double (*extra)(void *user, const pa_report *rep, pc_win *w);
    pid_t fallback_pid;
    void *user;
} pc_tasks;

/* The entry of pid (created, comm empty), NULL when out of memory. */
pc_proc *pc_tasks_proc(pc_tasks *t, pid_t pid);
/* The entry of pid if known, else NULL. */
pc_proc *pc_tasks_proc_find(pc_tasks *t, pid_t pid);
/* The entry of thread tid of pid (created), NULL when out of memory. */
pc_thr *pc_tasks_thr(pc_tasks *t, pid_t pid, pid_t tid);
/* A process's name ("" unknown). */
const char *pc_tasks_comm(pc_tasks *t, pid_t pid);
void pc_tasks_set_comm(pc_tasks *t, pid_t pid, const char *comm);
void pc_tasks_free(pc_tasks *t);

/* Clears the window's bookkeeping (w_exited stays: set since the last
 * window, cleared by pc_tasks_end). */
void pc_tasks_begin(pc_tasks *t);
/* Reads the report's processes and threads (NULL: none) into w. */
void pc_tasks_report(pc_tasks *t, const pa_report *rep, pc_win *w);
/* Counts a sample of thread tid of pid, period its CPU time in ns. */
void pc_tasks_sample(pc_tasks *t, pid_t pid, pid_t tid, uint64_t period_ns);
/* --all: the energy of processes that lived and died between two ticks,
 * from their samples' CPU time (DESIGN.md section 13.2); may lower the
 * processes' energy (w->procs_j with it).  Returns it. */
double pc_tasks_unseen(pc_tasks *t, const pa_report *rep, pc_win *w);
/* Splits the window's energy over threads (by CPU time) and the samples
 * of processes without CPU time; what lands on no sample goes to p's
 * "[unattributed]" (credited to pid fallback_pid). */
void pc_tasks_split(pc_tasks *t, pc_win *w, pc_prof *p, pid_t fallback_pid);
/* Charges one sample of thread tid of pid to p, after pc_tasks_split:
 * its frames (frames[0] the leaf, n > 0), its thread's energy over its
 * samples, and its period as CPU time (where it is time).  0 or -ENOMEM. */
int pc_tasks_charge(pc_tasks *t, pc_prof *p, pid_t pid, pid_t tid, uint64_t period_ns,
                    const pc_frame *frames, int n);
/* Threads' CPU time and "[unsampled]" energy to p; clears w_exited. */
void pc_tasks_end(pc_tasks *t, pc_prof *p);
/* One whole window: the report (NULL: none) read, the engine's stacks
 * counted, the extra energy asked for, the energy split and every stack
 * charged to p with its frames, the threads closed, and the engine's
 * stacks forgotten; the conservation of the window in w->error. */
void pc_tasks_window(pc_tasks *t, pc_prof *p, const pc_engine *e, const pa_report *rep, pc_win *w);

#endif
