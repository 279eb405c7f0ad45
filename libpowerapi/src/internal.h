/*
 * internal.h - what the engine shares with the built-in modules.
 *
 * Not installed.  Built-in sensors and formulas include it and use the
 * structures directly; user modules go through the accessors of
 * powerapi.h.  Internal non-static names are pa__*.
 */
#ifndef PA_INTERNAL_H
#define PA_INTERNAL_H

#include "powerapi.h"
#include "powerapi_module.h" /* the types the built-ins and the core share */
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PA_MAX_FREQ 64 /* distinct frequencies of time_in_state */
/* PA_MAX_RAPL (RAPL domains over every socket): powerapi_module.h */
/* PA_MAX_IFACES (network interfaces): powerapi_module.h */
/* PA_MAX_COUNTERS (perf events per target): powerapi_module.h */
#define PA_MAX_ASSUMED 1024 /* bytes of the assumed-constants string */
#define PA_PATH_MAX 4096
/* PA_MAX_CPUS (CPU -> socket map entries): powerapi_module.h */

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

typedef struct pa_kv {
    char *key;
    char *value;
} pa_kv;

struct pa_options {
    size_t n;
    pa_kv *kv;
};

/* Parses "k=v,k=v" (NULL/"" gives an empty set).  Keys not in allowed
 * (NULL-terminated, NULL = none allowed) are refused with a message that
 * names the module and suggests the nearest key.  who names the module. */
int pa__options_parse(const char *who, const char *s, const char *const *allowed, pa_options **out);
/* New set = base overridden by the keys of upd (both kept intact). */
int pa__options_merge(const pa_options *base, const pa_options *upd, pa_options **out);
/* Canonical "k=v,k=v" text; returns bytes needed like snprintf. */
int pa__options_format(const pa_options *o, char *buf, size_t len);
void pa__options_free(pa_options *o);

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Sets the thread's last error message and returns err (negative). */
int pa__err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pa__verr(int err, const char *fmt, va_list ap);

/* ------------------------------------------------------------------ */
/* Raw readings                                                        */
/* ------------------------------------------------------------------ */

/* System-wide readings of one tick (cumulative values). */
typedef struct pa_sysread {
    unsigned have;             /* PA_HAVE_* */
    unsigned ncpus;            /* online CPUs */
    uint64_t busy_ns, idle_ns; /* summed over CPUs, /proc/stat */
    uint64_t uptime_ns;        /* since boot, for tasks born in a window */
    double nominal_mhz;        /* from cpuinfo when no cpufreq, else 0 */
    char cpu_model[96];        /* /proc/cpuinfo "model name" */
    unsigned nfreq;
    pa_freq_time freq[PA_MAX_FREQ];
    unsigned nrapl;
    pa_rapl_reading rapl[PA_MAX_RAPL];
    char rapl_path[24];   /* "powercap", "perf", "msr" */
    unsigned rapl_resets; /* domains whose counter went back or jumped
                             (not counted this window) */
    unsigned nnic;
    pa_nic_reading nic[PA_MAX_IFACES];
    double cycles_all;                 /* cumulative system-wide cycles */
    uint64_t sock_bytes[3];            /* rx+tx bytes of every TCP socket the nic
                                          sensor saw, by pa_nic_kind, cumulative */
    unsigned ncpu_socket;              /* entries of cpu_socket (rapl), 0 unknown */
    int16_t cpu_socket[PA_MAX_CPUS];   /* CPU -> physical_package_id, -1 */
    char notes[512];                   /* sensors' notes for the report's assumed
                                          list ("procfs: hidepid=2 ...") */
    unsigned ncpu_time;                /* entries of cpu_busy/idle_ns, 0 unknown */
    uint64_t cpu_busy_ns[PA_MAX_CPUS]; /* per CPU (/proc/stat cpuN), */
    uint64_t cpu_idle_ns[PA_MAX_CPUS]; /* UINT64_MAX: no line (offline) */
} pa_sysread;

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

enum {
    PA_TASK_FD_STAT = 0,  /* procfs-cpu: /proc/<pid>/stat */
    PA_TASK_FD_SCHED = 1, /* procfs-cpu: schedstat of a thread */
    PA_TASK_FD_PERF = 2,  /* perf: group leader */
    PA_TASK_FDS = 4,
};

enum {
    PA_RD_CPU = 1u << 0,      /* cpu_ns set */
    PA_RD_CHILD = 1u << 1,    /* child_cpu_ns set */
    PA_RD_NET = 1u << 2,      /* net_rx/net_tx set */
    PA_RD_COUNTERS = 1u << 3, /* counters set */
};

/* Cumulative readings of a task. */
typedef struct pa_reading {
    unsigned have;           /* PA_RD_* */
    uint64_t cpu_ns;         /* own CPU time (all threads of a process) */
    uint64_t child_cpu_ns;   /* cutime+cstime (reaped children) */
    uint64_t net_rx, net_tx; /* bytes */
    uint64_t net_kind[3];    /* rx+tx bytes by pa_nic_kind of the socket's
                                route (loopback, virtual, physical) */
    double multiplex;        /* lowest time_running/time_enabled */
} pa_reading;

/* A process, thread, tree or cgroup the context follows.  Allocated when
 * first seen, freed one tick after it is gone. */
typedef struct pa_task {
    pa_target_type type;
    pid_t pid, tid, ppid;
    uint64_t start_ticks; /* proc(5) stat field 22: identity with pid */
    char comm[PA_COMM_MAX];
    int cgroup;         /* index in ctx->cgroups, -1 unknown */
    int last_cpu;       /* proc(5) stat field 39 */
    uint64_t seen_tick; /* last tick a sensor saw it */
    uint64_t first_tick;
    unsigned flags;  /* PA_POWER_* of the last window */
    bool watched;    /* explicitly watched (or descendant) */
    bool gone;       /* reported exited; freed next tick */
    bool had_window; /* a window was computed for it before */
    pid_t tree_root; /* processes: root of the tree it was last
                        counted in (PA_WATCH_CHILDREN), else 0 */
    pa_reading cur, prev;
    double *ctr_cur; /* ncounters cumulative counts, or NULL */
    double *ctr_prev;
    double *ctr_d; /* last window */
    /* window */
    bool in_window; /* has a delta this window */
    double d_cpu_s;
    uint64_t d_rx, d_tx;
    /* results: cpu and nic, and in ext (allocated when the context has
     * more components, pa__task_ext) the others': watts [0, PA_EXT_COMPS)
     * then joules; read and written through pa__task_w/_j */
    double cpu_w, nic_w;
    double cpu_j, nic_j;
    double *ext;
    double last_cpu_s;
    int fd[PA_TASK_FDS];  /* sensor-owned fds, closed on free */
    struct pa_task *proc; /* threads: their process */
    /* exits (exits.c): processes only */
    uint64_t dead_ns; /* CPU time of its tasks' exit records so far */
    bool exit_seen;   /* an exit record of it came (dead_ns is set) */
    bool folded;      /* born and gone in one window: reported inside the
                         PA_TARGET_EXITED target, not on its own */
    unsigned nprocs;  /* PA_TARGET_EXITED: processes summed this window */
} pa_task;

/* Components beyond cpu and nic a task keeps in ext. */
#define PA_EXT_COMPS (PA_MAX_COMPONENTS - 2)

/* Where task t's watts / joules of component index k (id - 1) live; NULL
 * for k >= 2 when t has no ext yet. */
static inline double *pa__task_wp(pa_task *t, size_t k)
{
    return k == 0 ? &t->cpu_w : k == 1 ? &t->nic_w : t->ext ? &t->ext[k - 2] : NULL;
}

static inline double *pa__task_jp(pa_task *t, size_t k)
{
    return k == 0 ? &t->cpu_j : k == 1 ? &t->nic_j : t->ext ? &t->ext[PA_EXT_COMPS + k - 2] : NULL;
}

static inline double pa__task_w(const pa_task *t, size_t k)
{
    double *p = pa__task_wp((pa_task *)t, k);
    return p ? *p : 0;
}

static inline double pa__task_j(const pa_task *t, size_t k)
{
    double *p = pa__task_jp((pa_task *)t, k);
    return p ? *p : 0;
}

/* A growable array of task pointers with an open-addressing index. */
typedef struct pa_tasktab {
    pa_task **v;
    size_t n, cap;
    int32_t *idx;   /* hash slots: index into v, or -1 */
    size_t idx_cap; /* power of two */
} pa_tasktab;

typedef struct pa_watch {
    pid_t pid;
    unsigned flags;
} pa_watch;

/* ------------------------------------------------------------------ */
/* Modules                                                             */
/* ------------------------------------------------------------------ */

struct pa_env {
    const char *procfs, *sysfs, *devfs, *hwdb;
    const char *rootfs;      /* pa_ctx_opts.rootfs, "/" by default */
    const char *calibration; /* pa_ctx_set_calibration, or NULL */
    pa_ctx *ctx;
};

struct pa_module {
    const pa_module_ops *ops;
    pa_ctx *ctx;
    pa_component comp; /* formulas: the component's id in ctx */
    void *priv;
    pa_options *opts;
    char *opts_text;
    bool by_auto;        /* formula chosen by "auto", replaceable */
    bool by_user;        /* enabled by name by the user; sensors that are
                            not were enabled for the formulas requiring
                            them and go when the last of those goes */
    int fail_count;      /* consecutive failures */
    uint64_t retry_tick; /* do not call before this tick */
    char err[256];
    char auto_why[256]; /* formulas "auto" chose: why */
    struct pa_module *next;
};

/* Data a sensor put in a frame under a key (pa_frame_put), for the
 * formulas that read it (pa_delta_get). */
typedef struct pa_blob {
    char key[32];
    void *data;
    size_t size, cap;
} pa_blob;

typedef struct pa_blobs {
    pa_blob *v;
    size_t n, cap; /* entries used this tick / allocated (kept) */
} pa_blobs;

/* One tick's frame, given to sensors. */
struct pa_frame {
    pa_ctx *ctx;
    uint64_t tick;
    uint64_t time_ns;
    pa_sysread *sys; /* this tick's system readings */
    bool scanned;    /* a task-discovering sensor ran: unseen tasks are gone */
};

typedef struct pa_rapl_delta {
    int socket;
    pa_rapl_kind kind;
    double energy_j;
} pa_rapl_delta;

typedef struct pa_nic_delta {
    const pa_nic_reading *nic; /* this tick's reading */
    uint64_t rx_bytes, tx_bytes;
} pa_nic_delta;

/* The difference between two frames, given to formulas. */
struct pa_frame_delta {
    pa_ctx *ctx;
    double interval_s;
    unsigned ncpus;
    unsigned have;         /* PA_HAVE_* present in both frames */
    double busy_s, idle_s; /* CPU time over the window */
    double capacity_s;     /* interval_s * ncpus */
    unsigned nfreq;
    pa_freq_time freq[PA_MAX_FREQ]; /* time_ns = time in the window */
    unsigned nrapl;
    pa_rapl_delta rapl[PA_MAX_RAPL];
    unsigned nnic;
    pa_nic_delta nic[PA_MAX_IFACES];
    double cycles_all;
    const pa_sysread *cur, *prev;
    size_t ntasks; /* targets with a window */
    pa_task **tasks;
    size_t ncounters;
    const char *const *counter_names;
};

/* What formulas write. */
struct pa_power_table {
    pa_component component; /* of the formula now computing */
    pa_task **tasks;        /* same as the delta's */
    size_t ntasks;
    union { /* system, per component (index = id - 1) */
        double comp_w[PA_MAX_COMPONENTS];
        struct {
            double cpu_w, nic_w;
        };
    };
    double idle_w;         /* system CPU power no task caused */
    double dram_w, psys_w; /* measured, RAPL */
    bool measured;         /* cpu from a measured counter */
    double model_error;    /* relative error of a modelled cpu figure
                              (0.05 = 5 %), < 0 unknown; -1 on entry */
    char assumed[PA_MAX_ASSUMED];
    pa_device_info dev[PA_MAX_DEVICES]; /* pa_table_device */
    size_t ndev;
};

/* Counters of one interned cgroup counted as a whole by a sensor (perf,
 * PERF_FLAG_PID_CGROUP): they include processes that came and went
 * between ticks.  Indexed like ctx->cgroups.  The sensor writes cur,
 * multiplex and cur_tick (and prev_tick = 0 when it (re)opened the
 * counters: cur is then a new baseline); the engine reports cur - prev
 * when both are of consecutive ticks, else the cgroup's processes' sum. */
typedef struct pa_cgroup_ctr {
    uint64_t cur_tick, prev_tick; /* ticks of cur / prev, 0 none */
    double multiplex;
    double cur[PA_MAX_COUNTERS], prev[PA_MAX_COUNTERS];
} pa_cgroup_ctr;

/* ------------------------------------------------------------------ */
/* Context                                                             */
/* ------------------------------------------------------------------ */

struct pa_ctx {
    pthread_mutex_t lock; /* everything below; held during a tick */
    pa_env env;
    char *procfs, *sysfs, *devfs, *rootfs, *hwdb, *calibration;
    struct pa__cgcache *cgcache; /* names of cgroups (cgnames.c) */

    /* components: comp_names[k] is id k + 1 ("cpu", "nic", then those
     * of registered formulas) */
    char comp_names[PA_MAX_COMPONENTS][16];
    const char *comp_ptrs[PA_MAX_COMPONENTS];
    size_t ncomp;

    const pa_module_ops **registered; /* user modules */
    size_t nregistered;
    pa_module *modules; /* enabled, sensors in run order */
    char **disabled;    /* names the user disabled: auto leaves them out */
    size_t ndisabled;
    bool auto_off;   /* pa_module_disable(ctx, "auto") */
    bool auto_dirty; /* modules changed since auto last filled in */

    pa_watch *watches;
    size_t nwatches, watches_cap;
    bool watch_all;
    bool watch_all_threads; /* pa_watch_all with PA_WATCH_ALL_THREADS */
    bool cgroups_on;
    bool names_off; /* cgroups reported without names (bench_cgnames) */

    pa_tasktab procs;   /* processes, keyed by pid */
    pa_tasktab threads; /* threads, keyed by tid */
    pa_tasktab trees;   /* PA_WATCH_CHILDREN totals, keyed by root pid */
    pa_task **gone;     /* left the tables this tick; freed next tick */
    size_t ngone, gone_cap;
    double (*cgroup_j)[PA_MAX_COMPONENTS]; /* per interned cgroup, joules
                                              per component */
    char **cgroups;                        /* interned cgroup paths */
    size_t ncgroups, cgroups_cap;
    pa_cgroup_ctr *cgroup_ctr; /* per interned cgroup, or NULL */
    size_t cgroup_ctr_cap;     /* entries allocated (zeroed) */
    long clk_tck;              /* USER_HZ of proc(5) tick fields */

    /* counters currently declared by sensors */
    char *counter_names[PA_MAX_COUNTERS];
    size_t ncounters;

    uint64_t tick;    /* ticks done */
    uint64_t windows; /* windows computed (ticks after the first) */
    uint64_t last_time_ns;
    pa_sysread sys[2]; /* current / previous */
    pa_blobs blobs[2]; /* sensors' keyed data, indexed like sys */
    int sys_cur;
    bool have_prev;
    double sys_j[PA_MAX_COMPONENTS];
    pa_power sys_power;

    /* the published report */
    pa_report report;
    bool have_report;
    pa_target_info *rtargets;
    size_t rtargets_cap;
    double *rcounters;
    size_t rcounters_cap;
    double *rcomp; /* the report's component watts and joules */
    size_t rcomp_cap;
    char rformula[256], rsensors[256], rsource[16], rassumed[PA_MAX_ASSUMED];
    pa_device_info rdev[PA_MAX_DEVICES]; /* the report's devices */
    pa_target_info *rexited;             /* the report's exited processes */
    size_t rexited_cap;

    /* exits (exits.c): this tick's exit records, where they came from,
     * and the two targets of what no live process accounts for */
    pa_task_exit *exits;
    size_t nexits, exits_cap;
    char exits_src[16];  /* set by a sensor this tick, "" none */
    uint64_t exits_lost; /* records the kernel dropped, cumulative */
    char rexits_src[16]; /* the report's */
    pa_task *exited_t, *unacc_t;

    pa_task **win; /* scratch: tasks with a window */
    size_t win_cap, nwin;
    double *cg_scratch; /* scratch: per-cgroup sums of a report */
    size_t cg_scratch_cap;

    /* sampler */
    pthread_t sampler;
    bool running, stopping;
    pthread_cond_t cond;
    uint64_t period_ns;
    pa_report_cb cb;
    void *cb_user;
    pthread_t cb_thread;
    bool in_cb;

    _Atomic(struct pa__scopes *) scopes; /* scope.c, made at first use */
};

/* Exits (exits.c, DESIGN.md section 2 "Exits").  Called by the tick, under
 * the lock: apply, after the sensors and before the unseen tasks are
 * retired, gives each watched process its tasks' exit records;
 * window, once the window's tasks are in ctx->win and the retired ones in
 * ctx->gone, gives a retired process with exit records its last window
 * and adds the processes born and gone in the window (every process
 * watched: taskstats records, else one estimate from the survivors'
 * cutime/cstime); fold, after the formulas and the integration, sums them
 * into the PA_TARGET_EXITED target and the rest into PA_TARGET_UNACCOUNTED
 * (watts, CPU time, joules).  -ENOMEM. */
int pa__exits_apply(pa_ctx *ctx, uint64_t tick);
int pa__exits_window(pa_ctx *ctx, uint64_t tick, double busy_s);
int pa__exits_fold(pa_ctx *ctx, const pa_power_table *tab, double interval_s, double busy_s);
/* The targets the report appends after the others (0, 1 or 2). */
size_t pa__exits_targets(const pa_ctx *ctx, const pa_task **out2);
/* The report's records of the processes folded into the exited target
 * (ctx->rexited, at most PA_EXITED_MAX), filled with fill(ctx, out, task,
 * user); returns their number, or -ENOMEM. */
typedef void (*pa__exits_fill_fn)(pa_ctx *ctx, pa_target_info *out, const pa_task *t, void *user);
int pa__exits_records(pa_ctx *ctx, pa__exits_fill_fn fill, void *user);
void pa__exits_free(pa_ctx *ctx);
/* Adds t to the window's tasks (ctx->win).  -ENOMEM. */
int pa__win_push(pa_ctx *ctx, pa_task *t);
/* Adds t to the tasks freed at the next tick.  -ENOMEM. */
int pa__gone_push(pa_ctx *ctx, pa_task *t);

/* Scopes (scope.c): a window ended (called by the tick, under the lock);
 * freeing them with the context. */
void pa__scopes_window(pa_ctx *ctx);
void pa__scopes_free(pa_ctx *ctx);

/* Engine services for built-in sensors (called from sample()). */

/* Finds or creates the task (type, pid, tid).  start_ticks identifies the
 * process: a different value means the pid was reused, the old task is
 * reported exited and a new one begins.  Marks it seen this tick.  NULL
 * on ENOMEM. */
pa_task *pa__task_seen(pa_frame *f, pa_target_type type, pid_t pid, pid_t tid,
                       uint64_t start_ticks);
/* Task tables (tasks.c). */
pa_task *pa__tasktab_get(const pa_tasktab *t, pid_t id);
int pa__tasktab_put(pa_tasktab *t, pa_task *task, pid_t id);
void pa__tasktab_remove_at(pa_tasktab *t, size_t i); /* then reindex */
int pa__tasktab_reindex(pa_tasktab *t);
void pa__tasktab_free(pa_tasktab *t); /* frees the tasks too */
pa_task *pa__task_new(pa_target_type type, pid_t pid, pid_t tid);
void pa__task_free(pa_task *task);
/* Gives a task counter storage when the context has counters. */
int pa__task_alloc_counters(pa_ctx *ctx, pa_task *t);
int pa__task_retire(pa_ctx *ctx, pa_tasktab *tab, size_t i);
/* Engine (engine.c), called with ctx->lock held. */
int pa__tick_locked(pa_ctx *ctx, uint64_t time_ns);
/* "auto" (auto.c): gives every component no enabled formula computes the
 * best formula it may run (with its sensors).  Never fails: a component
 * it cannot fill stays empty. */
void pa__auto_fill(pa_ctx *ctx);

/* Module lifecycle (module.c), called with ctx->lock held. */
const pa_module_ops *pa__ops_find(const pa_ctx *ctx, const char *name);
pa_module *pa__mod_find(const pa_ctx *ctx, const char *name);
/* Enables name (see pa_module_enable), a module, not "auto"; by_auto: as
 * auto's choice. */
int pa__enable_locked(pa_ctx *ctx, const char *name, const char *options, bool by_auto);
/* Disables name (see pa_module_disable), a module, not "auto". */
int pa__disable_locked(pa_ctx *ctx, const char *name);
/* Unlinks and stops m, with the sensors enabled only for it. */
void pa__mod_remove(pa_ctx *ctx, pa_module *m);
/* Stops and frees a module that is not linked. */
void pa__module_destroy(pa_module *m);
bool pa__is_disabled(const pa_ctx *ctx, const char *name);
/* Runs ops->probe against the context's roots; why gets the reason. */
int pa__probe(const pa_ctx *ctx, const pa_module_ops *ops, char *why, size_t len);
/* A table's fields of any abi: NULL/0 where its abi has none. */
const char *const *pa__ops_requires(const pa_module_ops *o);
unsigned pa__ops_flags(const pa_module_ops *o);
int pa__ops_rank(const pa_module_ops *o);
/* 1 when auto may choose ops here (no fits callback: 1), else 0. */
int pa__ops_fits(const pa_module_ops *o, const pa_env *env, char *why, size_t len);
/* Components: the id of a formula table's component in ctx (NONE for a
 * sensor, or a component not in the context yet); the id of name, added
 * when new (-ENOSPC past the limit); the context's first components
 * ("cpu", "nic"; a registered formula's join at registration, a
 * built-in's when one of its formulas is first enabled). */
pa_component pa__ops_component(const pa_ctx *ctx, const pa_module_ops *o);
/* The name a formula table gives its component ("cpu", "gpu"), NULL for
 * a sensor or a formula of none. */
const char *pa__ops_comp_name(const pa_module_ops *o);
int pa__comp_intern(pa_ctx *ctx, const char *name, pa_component *out);
int pa__comp_init(pa_ctx *ctx);
/* A task's power (cpu, nic, total over every component), as reports and
 * the getters give it; measured sets PA_POWER_MEASURED (tasks.c). */
void pa__task_power(const pa_ctx *ctx, const pa_task *t, double interval_s, uint64_t time_ns,
                    bool measured, pa_power *out);
/* The last window's power of a target, live or exited in the last tick,
 * as the getters give it, with ctx->lock held (tasks.c): 0, -ESRCH (no such
 * target) or -ENODATA (no complete window yet); sets no message, so that a
 * caller inside the library keeps the user's last error. */
int pa__target_power_locked(pa_ctx *ctx, pa_target_type type, pid_t id, pa_power *out);
/* Copies a report into one allocation. */
int pa__report_copy(const pa_report *r, pa_report **out);
/* Is pid watched with (at least) these PA_WATCH_* flags (0: at all)? */
bool pa__watched_with(const pa_ctx *ctx, pid_t pid, unsigned flags);
/* Looks a task up without creating it. */
pa_task *pa__task_find(pa_ctx *ctx, pa_target_type type, pid_t id);
/* Returns the index of the interned cgroup path (or -1 on ENOMEM). */
int pa__cgroup_intern(pa_ctx *ctx, const char *path);
/* The direct counters of interned cgroup g (storage grown on demand,
 * zeroed); NULL if g is not interned or on ENOMEM. */
pa_cgroup_ctr *pa__cgroup_ctr(pa_ctx *ctx, size_t g);
/* Declares the counters the perf sensor reports (replaces previous). */
int pa__counters_declare(pa_ctx *ctx, const char *const *names, size_t n);

/* The weights of the CPU split (share.c): cycles when the perf sensor
 * counts them, CPU time otherwise; W = the system's, never less than the
 * processes' sum (what no process accounts for goes to the unaccounted
 * target when every process is watched, exits.c). */
void pa__share_weights(const pa_frame_delta *d, pa_share_w *sw);

/* The CPU split (share.c) of rapl-share and cpu-curve:
 * active watts of the window's CPU power p go to the targets by their
 * cycles (perf sensor) or CPU time over W; sets t->cpu_w = p and
 * t->idle_w = p - active. */
void pa__share_split(const pa_frame_delta *d, pa_power_table *t, double p, double active);

/* The load-power curve this machine's CPU has (curve.c; read by cpu-curve
 * and by the CPU formulas' fits): 1 when a calibration or a hwdb curve
 * matches, 2 on a virtual machine without one (cpu-curve's default
 * per-vCPU curve), 0 otherwise; why says which, and why the calibration
 * given was not used. */
int pa__curve_match(const pa_env *env, char *why, size_t len);
/* /proc/cpuinfo's first "model name" (or "Processor"/"cpu model") into
 * model ("" when none), and *vm whether the "hypervisor" flag is set. */
void pa__cpuinfo_read(const char *procfs, char *model, size_t len, bool *vm);
/* A calibration for this CPU model: the context's (env->calibration),
 * else $POWERAPI_CALIBRATION's, used whatever CPU it was made on, else
 * one at a standard place made on this model; path gets its name.  When
 * the file given cannot be used, bad (when not NULL) gets the reason
 * ("$POWERAPI_CALIBRATION not used: ..." or "calibration not used: ...").
 */
bool pa__calib_for_model(const pa_env *env, const char *model, pa_curve *out, char *path,
                         size_t plen, char *bad, size_t badlen);

/* The module table of built-ins: NULL-terminated. */
const pa_module_ops *const *pa__builtins(void);
#define pa__builtin_modules (pa__builtins())

/* Built-in modules (defined in sensors/ and formulas/). */
extern const pa_module_ops pa__mod_procfs_cpu;
extern const pa_module_ops pa__mod_rapl;
extern const pa_module_ops pa__mod_perf;
extern const pa_module_ops pa__mod_nic;
extern const pa_module_ops pa__mod_cpu_tdp;
extern const pa_module_ops pa__mod_rapl_share;
extern const pa_module_ops pa__mod_nic_linear;

/* perf sensor: pa__perf_events_list is in sensors/perf_events.h. */

/* nic sensor: pa__nic_diag_parse is in sensors/nic.h. */

/* ------------------------------------------------------------------ */
/* Small shared utilities                                              */
/* ------------------------------------------------------------------ */

/* Reads a whole small file under root (path relative, e.g. "stat") into
 * buf (NUL-terminated).  Returns bytes read or -errno. */
ssize_t pa__read_file(const char *root, const char *rel, char *buf, size_t len);
/* Reads with pread(fd, 0); returns bytes or -errno; NUL-terminates. */
ssize_t pa__pread_all(int fd, char *buf, size_t len);
/* Parses an unsigned decimal at *p, advances *p; -EINVAL if none. */
int pa__parse_u64(const char **p, uint64_t *out);
/* Parses a CPU list of sysfs ("0-3,8,10-11") into cpus; returns the count
 * (at most cap). */
int pa__parse_cpulist(const char *s, int *cpus, int cap);
/* Joins root and rel into buf; -ENAMETOOLONG if it does not fit. */
int pa__path(char *buf, size_t len, const char *root, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int pa__vpath(char *buf, size_t len, const char *root, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* 1 when the procfs root is a procfs mounted with hidepid (1, 2,
 * invisible, noaccess) that hides other users' processes from us (not
 * root, not in its gid= group); *opt gets "hidepid=2".  0 otherwise,
 * also for fixture trees. */
int pa__procfs_hidepid(const char *procfs, char *opt, size_t len);

/* ---- the machine's CPUs (cpus.c), for rapl and the CPU formulas ---- */

/* Physical package of a CPU from <sysfs> topology; -1 when unknown. */
int pa__cpu_package(const pa_env *env, int cpu);
/* The CPU -> physical_package_id map of the online CPUs (-1 unknown) in
 * map[cap]; returns the entries used (highest CPU + 1), 0 when no CPU's
 * package is known. */
unsigned pa__cpu_packages(const pa_env *env, int16_t *map, size_t cap);
/* Busy fraction over the window of the CPUs whose map entry is pkg
 * (/proc/stat cpuN lines of both frames), or -1 when none has both. */
double pa__package_busy(const pa_frame_delta *d, const int16_t *map, unsigned nmap, int pkg);
/* Whether process p is root or descends from it (the context's process
 * table, at most 128 generations up). */
bool pa__in_tree(const pa_ctx *ctx, const pa_task *p, pid_t root);
/* Appends "; "-separated text to an assumed list, deduplicated. */
void pa__assume(char *list, size_t len, const char *text);

/* Hardware database (libpowerapi/src/hwdb.c). */
/* The load-power curves of cpu-curve (pa_curve, powerapi.h; curve.c). */

/* PA_CURVE_VCPU_MIN_W, PA_CURVE_VCPU_MAX_W: powerapi_module.h */

/* Power at utilisation u (0..1): linear between points, the last value
 * above them; below the first (a calibration made on a busy machine), the
 * straight line of the points within 25 points of load of it, through
 * it, never below 0.  Thread-safe. */
double pa__curve_at(const pa_curve *c, double u);
/* Power at utilisation u and frequency mhz from the per-frequency curves
 * (nfreq >= 2): linear in the frequency between the two nearest, the end
 * curves outside them; pa__curve_at when there are fewer than 2. */
double pa__curve_at_freq(const pa_curve *c, double mhz, double u);
/* Parses "LOAD%:W,LOAD%:W" (or '+'-separated) into c->load/watts;
 * -EINVAL with the reason in why. */
int pa__curve_parse_points(const char *s, pa_curve *c, char *why, size_t why_len);
/* The curve record of the hardware database matching the model name
 * (longest match).  0, -ENOENT (no message), or -errno with a message. */
int pa__hwdb_curve(const char *hwdb_path, const char *model, pa_curve *out);
/* Reads a calibration file written by `powerapi calibrate` into out
 * (per=server of this machine; match = the CPU model it was made on).
 * -errno with a message naming the file and line. */
int pa__calib_read(const char *path, pa_curve *out);
/* Writes a calibration file; residual_w[i] is the RMS residual of point
 * i, NULL when unknown.  valid_* are the validation figures (< 0: none).
 * kernel / date NULL: uname's release / the current UTC time.
 * -errno with a message. */
int pa__calib_write(const char *path, const pa_curve *c, const double *residual_w,
                    const char *kernel, const char *date, unsigned ncpus, double valid_mean_pct,
                    double valid_p95_pct, double valid_energy_pct);
/* The calibration file the library uses: the context's (env->calibration
 * when env is not NULL), else $POWERAPI_CALIBRATION, else
 * $XDG_DATA_HOME/powerapi/calibration.txt (~/.local/share when unset),
 * else /var/lib/powerapi/calibration.txt, the first that is readable;
 * NULL if none.  buf holds the result. */
const char *pa__calib_default(const pa_env *env, char *buf, size_t len);
/* Where `powerapi calibrate` writes by default: /var/lib/powerapi for
 * root, else $XDG_DATA_HOME/powerapi (file calibration.txt). */
int pa__calib_standard_path(char *buf, size_t len);

/* Finds the CPU record whose match string is contained in model
 * (longest match wins).  Returns 0 and fills out, -ENOENT if none,
 * -errno if the file cannot be read (message set). */
int pa__hwdb_cpu(const char *hwdb_path, const char *model, pa_hwdb_cpu *out);
/* Same for a NIC driver ("e1000e"); "default" record as fallback is the
 * caller's choice. */
int pa__hwdb_nic(const char *hwdb_path, const char *driver, pa_hwdb_nic *out);
/* The database file to read: configured if non-NULL, else PA_HWDB_DEFAULT
 * if readable, else the source tree's (PA_HWDB_BUILDTREE), else NULL.
 * Both lookups above accept hwdb_path NULL and resolve it this way. */
const char *pa__hwdb_path(const char *configured);
/* Parses "MHZ:VOLTS,MHZ:VOLTS" (or '+'-separated, as in options) into
 * cpu->volt/nvolt; -EINVAL with the reason in why. */
int pa__hwdb_parse_volt(const char *s, pa_hwdb_cpu *cpu, char *why, size_t why_len);

/* ---- shared by the CPU models (formulas/cpu_tdp.c, cpu_curve.c) ---- */

/* The hardware database m's context is configured with, resolved as
 * pa__hwdb_path does (NULL: none installed; hwdb.c). */
const char *pa__module_hwdb(const pa_module *m);
/* CPUs of the frame: d->ncpus, else the current frame's, at least 1
 * (cpus.c, as the next one). */
unsigned pa__delta_ncpus(const pa_frame_delta *d);
/* Busy CPU seconds of the window: d->busy_s with system CPU time, else
 * the sum of the processes' CPU time (*summed true: the caller states it
 * as an assumption). */
double pa__delta_busy_s(const pa_frame_delta *d, bool *summed);

/* ---- cgroup names, cached per context (cgnames.c) ---- */

/* The cgroup path of a process from the text of /proc/PID/cgroup (len
 * bytes): the v2 line's path unless it is the root, else the v1 path of
 * name=systemd, else of the cpu controller (a hybrid host's containers
 * live in v1 trees), else the v2 root.  0, or -ENOENT when no line has a
 * path. */
int pa__cgroup_pick(const char *text, size_t len, char *out, size_t outlen);

typedef struct pa__cgcache pa__cgcache;
/* A cache reading runtimes' state under root ("/" when NULL or ""). */
pa__cgcache *pa__cgcache_new(const char *root);
void pa__cgcache_free(pa__cgcache *c);
/* The names of the context's cgroup g (its path): parsed and resolved the
 * first time, read again when their state file changes, tried again with
 * a growing delay (1 s to 64 s, from now_ns) while an ID is not found.
 * NULL when the cgroup is no container, pod or unit (or out of memory). */
const pa_cgroup_names *pa__cgcache_get(pa__cgcache *c, size_t g, const char *path, uint64_t now_ns);
/* The same, keyed by the path (for readers of a ring, whose cgroups have
 * no index); a cache is used by index or by path, not both. */
const pa_cgroup_names *pa__cgcache_get_path(pa__cgcache *c, const char *path, uint64_t now_ns);
/* State lookups made so far (each reads a runtime's files). */
uint64_t pa__cgcache_reads(const pa__cgcache *c);

#endif /* PA_INTERNAL_H */
