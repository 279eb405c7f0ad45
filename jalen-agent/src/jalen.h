/*
 * jalen.h - what the parts of the jalen JVMTI agent share.
 *
 * Not installed.  The agent is one shared object (libjalen.so); these
 * names are internal to it and hidden (-fvisibility=hidden) except the
 * JVMTI entry points.
 *
 * Threads of the agent:
 *   - the signal handler (SIGPROF, any Java thread): writes raw stacks into
 *     the preallocated ring (sampler.c), nothing else;
 *   - JVMTI callbacks (ThreadStart/End, ClassPrepare, NativeMethodBind) on
 *     the JVM's threads: thread table under its mutex (threads.c), native
 *     wrappers counting socket bytes under the net mutex (net.c);
 *   - the agent thread (agentthreads.c): drains the ring, ticks
 *     libpowerapi each window, attributes energy (window.c, profile.c) and
 *     writes the files (writers.c) under the profile lock.  VMDeath takes
 *     the same lock for the last window.
 *
 * The files call each other without a circle (scripts/check_call_cycles.sh,
 * ctest jalen_call_cycles): leaves (sys.c, run.c, options.c, ...) below
 * the tables (threads.c, profile.c, sampler.c, ...), below the run's
 * parts (window.c, agentthreads.c, events.c, load.c, attach.c).  A lower
 * file that needs something of a higher one gets it handed down (the
 * MXBean's lock in jalen_mxbean_hooks, AsyncGetCallTrace to
 * jl_unwind_init) or is told (jl_scopes_set_active).
 */
#ifndef JALEN_H
#define JALEN_H

#include "profcore.h"
#include "scopetab.h"
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define JL_MAX_DEPTH 128                   /* frames kept per stack sample */
#define JL_RING_SLOTS 2048                 /* stack samples between two drains */
#define JL_RING_WORDS (JL_RING_SLOTS / 64) /* words of the ring's bitmaps */

/* ------------------------------------------------------------------ */
/* Options (options.c)                                                 */
/* ------------------------------------------------------------------ */

enum { JL_MODE_CPU = 0, JL_MODE_JVMTI = 1 };
/* mode=cpu's clock (sampler.c): perf's cpu-clock event per thread, which
 * also samples the thread's time in the kernel, where the JVM may open it
 * with kernel samples; else POSIX timers on each thread's CPU-time clock */
enum { JL_CLOCK_AUTO = 0, JL_CLOCK_PERF = 1, JL_CLOCK_TIMER = 2 };
/* the signal of perf's clock (sampler.c): SIGTRAP sent by the event itself
 * (perf_event_attr.sigtrap, Linux 5.13), where the kernel has it, else
 * SIGPROF through the file's owner; the timers always send SIGPROF */
enum { JL_SIG_AUTO = 0, JL_SIG_TRAP = 1, JL_SIG_PROF = 2 };
enum {
    JL_FMT_CSV = 1u << 0,
    JL_FMT_COLLAPSED = 1u << 1,
    JL_FMT_HTML = 1u << 2,
    JL_FMT_JSON = 1u << 3,
    JL_FMT_ALL = 0xf,
};

typedef struct jl_opts {
    uint64_t interval_ns; /* CPU time between two stack samples */
    uint64_t window_ns;   /* power window */
    char *out;            /* output folder, %p expanded */
    unsigned formats;     /* JL_FMT_* */
    char **filters;       /* package prefixes, dotted */
    size_t nfilters;
    int mode;      /* JL_MODE_* */
    int clock;     /* JL_CLOCK_* (mode=cpu) */
    int signal;    /* JL_SIG_* (perf's clock) */
    int net;       /* count socket bytes */
    char *sensors; /* "+"-joined module names to enable, or NULL */
    char *formula; /* "+"-joined formulas (bring their sensors) */
    char *disable; /* "+"-joined modules auto must leave out */
    char *procfs, *sysfs;
    int quiet;
    int fail_abort;
    int top;                 /* methods per window in timeline.csv */
    double carbon_g_per_kwh; /* carbon-intensity=G: grams of CO2e beside
                                joules (jl_prof.source carries it to the
                                writers); 0 none */
    size_t scopes;           /* distinct scope names kept (scope.c) */
    char *scope;             /* energy.collapsed and flamegraph.html: only this scope */
    /* push=pyroscope=URL, push=otlp=URL (push.c): the profile of every
     * push-every (default 10 s) to Pyroscope or as OTLP profiles */
    char *push_pyroscope, *push_otlp;
    uint64_t push_every_ns;
    char *service_name;   /* service-name=: default the main class's */
    char *push_spool;     /* push-spool=DIR */
    char *push_labels[8]; /* push-label=NAME=VALUE, repeatable */
    size_t npush_labels;
    char *trace;             /* trace=: ';'-separated method patterns (trace.c) */
#define JL_TRACE_PATTERNS 64 /* patterns trace= takes */
} jl_opts;

/* Parses the agent's option string (NULL or "" gives the defaults) into o.
 * On error returns -EINVAL with one line in err naming the option. */
int jl_opts_parse(const char *s, pid_t pid, jl_opts *o, char *err, size_t errlen);
void jl_opts_free(jl_opts *o);
/* The next of trace='s patterns in *s (';'-separated, but not inside a
 * descriptor's parentheses: (Ljava/lang/String;)I), NUL-terminated in
 * place; NULL after the last.  *s is advanced (the caller's copy). */
char *jl_pattern_next(char **s);

/* ------------------------------------------------------------------ */
/* Stack samples (sampler.c)                                           */
/* ------------------------------------------------------------------ */

/* AsyncGetCallTrace, exported by libjvm.so but declared in no header. */
typedef struct {
    jint lineno; /* BCI, or a negative value for native frames */
    jmethodID method_id;
} jl_asgct_frame;

typedef struct {
    JNIEnv *env_id;
    jint num_frames; /* > 0 frames; <= 0 an error code of ASGCT */
    jl_asgct_frame *frames;
} jl_asgct_trace;

typedef void (*jl_asgct_fn)(jl_asgct_trace *, jint, void *);

typedef struct jl_slot {
    pid_t tid;
    int scope;     /* the thread's open scope (jl_sampler_scope), 0: none */
    int n;         /* frames, or the ASGCT error code when <= 0 */
    int truncated; /* 1: deeper than JL_MAX_DEPTH; the top frame alone,
                    * its callers not walkable (unwind.c): 2 the last
                    * Java frame of the thread's frame anchor, 3 the
                    * compiled code at the PC (or that called its stub) */
    int weight;    /* CPU time this sample stands for, in us: mode=cpu,
                      (1 + timer overruns) x interval; mode=jvmti, the
                      thread's CPU time since its previous sample */
    jl_asgct_frame frames[JL_MAX_DEPTH];
} jl_slot;

typedef struct jl_sampler {
    jl_slot *slots;
    /* bit i % 64 of word i / 64: slot i is free (claimable), or ready
     * (published, not drained yet); a claimed slot being written is in
     * neither.  The lowest free slot is claimed, so that the few slots
     * in use between two drains are the same ones every time (sampler.c) */
    _Atomic uint64_t free_bits[JL_RING_WORDS], ready_bits[JL_RING_WORDS];
    atomic_ulong taken;
    atomic_ulong dropped;
    atomic_int on;
    /* benchmark hook (JALEN_BENCH_PAUSE_FILE, see agentthreads.c): while set, no
     * stack samples, no socket counting, no windows */
    atomic_int paused;
    jl_asgct_fn asgct;
    /* walks ASGCT gave up on (unknown or not walkable Java), and those of
     * them recovery (unwind.c) completed */
    atomic_ulong walks_failed, walks_recovered;
    /* of the rest, those given to the deepest Java frame known alone */
    atomic_ulong walks_partial;
#ifdef JL_TIME_HANDLER
    /* a timing build (-DJL_TIME_HANDLER): ns in the handler, samples */
    atomic_ulong t_total_ns, t_n;
    atomic_ulong t_hist[512]; /* samples by time in the handler, 0.5-us bins */
#endif
    JavaVM *vm;
    uint64_t interval_ns;
    int interval_us;
    int clock;                    /* JL_CLOCK_* asked for */
    int signal;                   /* JL_SIG_* asked for */
    atomic_int trap_refused;      /* the kernel refused perf's SIGTRAP (its errno) */
    atomic_int perf_errno;        /* why perf's clock was not used (0: it was) */
    atomic_ulong n_perf, n_timer; /* clocks started of each kind */
    atomic_ulong n_trap;          /* of the perf clocks, those sending SIGTRAP */
} jl_sampler;

extern jl_sampler jl_smp;

/* Sets the sampler up for a run of options o: the ring, the handlers,
 * AsyncGetCallTrace (-ENOSYS without it); clock=perf or signal=trap that
 * the kernel refuses, -errno with err said. */
int jl_sampler_init(JavaVM *vm, const jl_opts *o, char *err, size_t errlen);
/* Creates a CPU-time timer for thread tid (0: the calling thread). */
/* A thread's sample clock: a perf event (fd >= 0) or a POSIX timer. */
typedef struct jl_timer {
    int fd;
    timer_t t;
} jl_timer;

/* Starts the sample clock of thread tid (0: the calling thread): perf's
 * cpu-clock event where the option allows and the kernel opens it with
 * kernel samples, else a POSIX timer on the thread's CPU-time clock.
 * Negative errno when neither starts. */
int jl_sampler_timer_create(pid_t tid, jl_timer *out);
void jl_sampler_timer_delete(jl_timer t);
/* What mode=cpu's clocks are, for summary.json: "perf-cpu-clock",
 * "thread-cpu-timer", or both ("perf-cpu-clock+thread-cpu-timer"), with
 * the reason perf was not used (empty when it was). */
const char *jl_sampler_clock(char *why, size_t len);
/* The signal perf's clocks send, for summary.json: "SIGTRAP", "SIGPROF",
 * "SIGTRAP+SIGPROF", or "" (no perf clock), with why SIGTRAP was not used
 * (empty when it was or was not asked for). */
const char *jl_sampler_signal(char *why, size_t len);
/* Claims a slot, or NULL (and counts a drop).  jl_slot_publish marks it
 * ready for the agent thread.  Async-signal-safe. */
jl_slot *jl_slot_claim(void);
void jl_slot_publish(jl_slot *s);
/* Calls fn on every ready slot and frees it.  Agent thread only.  A slot
 * still being written is left for the next drain. */
void jl_sampler_drain(void (*fn)(const jl_slot *, void *), void *user);
/* The open scope of thread tid that its samples carry (jl_slot.scope):
 * set by scope.c at each enter and exit (code 0: none), read by the
 * handler and the mode=jvmti sampler (0: none or unknown).
 * Async-signal-safe. */
void jl_sampler_set_scope(pid_t tid, int code);
int jl_sampler_scope(pid_t tid);

/* ------------------------------------------------------------------ */
/* Tables read by the signal handler, replaced by the agent (rcu.c)      */
/* ------------------------------------------------------------------ */

typedef struct jl_rcu {
    atomic_int readers; /* handlers inside the table */
    void **retired;     /* memory to free once no reader is inside */
    size_t n, cap;
} jl_rcu;

/* Signal handler: around every load and use of the table's pointer. */
static inline void jl_rcu_enter(jl_rcu *r)
{
    atomic_fetch_add(&r->readers, 1);
}
static inline void jl_rcu_exit(jl_rcu *r)
{
    atomic_fetch_sub(&r->readers, 1);
}
/* Writer (under the table's mutex): room for k more retired pointers
 * before a table is swapped, so that retiring never fails; -1 on ENOMEM
 * (then keep the old table). */
int jl_rcu_reserve(jl_rcu *r, size_t k);
/* Writer, after publishing the new table: p (NULL: nothing) is freed
 * later. */
void jl_rcu_retire(jl_rcu *r, void *p);
/* Writer: frees what was retired when no reader is inside. */
void jl_rcu_reclaim(jl_rcu *r);

/* ------------------------------------------------------------------ */
/* Compiled methods' debug information (nmethods.c, mode=cpu)           */
/* ------------------------------------------------------------------ */

/* Agent_OnLoad: turns the table on (mode=cpu with recovery), and asks
 * for can_get_bytecodes (without it, records are not told apart by their
 * bytecode). */
void jl_nmethods_enable(jvmtiEnv *jvmti);
/* CompiledMethodLoad (any thread): the offsets of the method's debug
 * records, from compile_info's inline records (else from map). */
void jl_nmethods_load(jmethodID method, const void *code, jint size, jint map_length,
                      const jvmtiAddrLocationMap *map, const void *compile_info);
/* CompiledMethodUnload (any thread). */
void jl_nmethods_unload(const void *code);
/* Agent thread: publishes the loads and unloads seen since the last call. */
void jl_nmethods_refresh(void);
/* Signal handler: the PC to give AsyncGetCallTrace for the frame that
 * returns to ra, after a call of call_len bytes, so that it decodes the
 * scope of the call (callsite.h); leaf: JL_CALL_*, what was called; [cc_lo,
 * cc_hi): the code cache, where the method is not (yet) known; *drop:
 * the innermost frames of the decoded stack to leave out (callsite.h).
 * Async-signal-safe. */
uintptr_t jl_nmethods_call_pc(uintptr_t ra, int call_len, int leaf, uintptr_t cc_lo,
                              uintptr_t cc_hi, int *drop);
/* Signal handler: the PC to give AsyncGetCallTrace for an interrupted pc,
 * so that the sample goes to the scope of the instruction before it
 * (callsite.h, jl_interrupted_pc); pc itself where its method is not
 * known.  Async-signal-safe. */
uintptr_t jl_nmethods_interrupted_pc(uintptr_t pc);
/* Signal handler: the compiled method whose code holds pc, NULL when none
 * is known.  Async-signal-safe. */
jmethodID jl_nmethods_method_at(uintptr_t pc);
/* Signal handler: the innermost method (and *bci its bytecode index) of
 * the debug record at ra exactly (a call's record sits at its return
 * address), NULL when ra's method or such a record is not known.
 * Async-signal-safe. */
jmethodID jl_nmethods_scope_at(uintptr_t ra, jint *bci);
/* Signal handler: the innermost method (and *bci) of the first debug record
 * after pc, as ASGCT decodes a PC; without one, the compiled method (*bci
 * -1); NULL when pc's method is not known.  Async-signal-safe. */
jmethodID jl_nmethods_scope_after(uintptr_t pc, jint *bci);
/* Bytes the table holds (for agent_memory_bytes). */
size_t jl_nmethods_memory(void);

/* ------------------------------------------------------------------ */
/* Recovery of failed walks (unwind.c, mode=cpu)                        */
/* ------------------------------------------------------------------ */

/* Why a failed walk stayed failed: the sampler counts each sample whose
 * walk recovery gave up on by cause and detail (jl_why_count), and
 * summary.json ("walks_unrecovered") and the summary on stderr list them
 * (jl_why_write). */
enum {
    JL_WHY_NONE = 0,
    JL_WHY_NOT_WALKABLE_JAVA, /* ASGCT's not_walkable_Java: not retried;
                               * detail: the PC in the code cache, or 0 */
    JL_WHY_NOT_READY,         /* recovery not set up (yet) in this JVM */
    JL_WHY_NO_STACK,          /* the thread's stack unknown, or SP not on it */
    JL_WHY_INTERPRETER,       /* the PC in the interpreter */
    JL_WHY_FRAME_STATE,       /* a compiled method's code at the PC not an
                               * entry or exit the agent knows; detail: the
                               * instruction's first 4 bytes */
    JL_WHY_CODE_UNKNOWN,      /* the PC in the code cache, in no method or
                               * stub known (yet); detail: as above */
    JL_WHY_STUB_LAYOUT,       /* a stub whose frame the agent cannot read;
                               * detail: the stub's address */
    JL_WHY_STUB_RETURN,       /* the word read as a stub's return address
                               * follows no call; detail: the stub */
    JL_WHY_NATIVE,            /* native code: no return into Java found */
    JL_WHY_STEPS,             /* still in stubs after JL_UNWIND_STEPS pops */
    JL_WHY_REWALK,            /* ASGCT failed again from the caller found;
                               * detail: its code */
    JL_WHY_ANCHOR_EMPTY,      /* in the VM, no last Java frame in the anchor */
    JL_WHY_ANCHOR_WALKABLE,   /* the anchor has its PC: ASGCT's failure stands;
                               * detail: that PC */
    JL_WHY_ANCHOR_RETURN,     /* the word below the anchor's SP follows no
                               * call */
    JL_WHY_ANCHOR_BLOCKED,    /* blocked in a runtime stub: its caller's
                               * scope unknown */
    JL_WHY_N
};
typedef struct jl_why {
    int cause;       /* JL_WHY_* */
    uint64_t detail; /* by cause, above; 0 none */
    /* the deepest Java frame known for sure, which the sample goes to
     * alone where the walk stays failed: part 2, the last Java frame of
     * the thread's frame anchor; 3, the compiled method the PC is in, or
     * that called the stub it is in; 0 none */
    int part;
    jint bci;
    jmethodID method;
} jl_why;
/* Signal handler: counts one sample not recovered for the reason *w
 * (lock-free; a full table counts it under its cause alone). */
void jl_why_count(const jl_why *w);
/* The counts so far, largest first: JSON object members ("cause[:
 * detail]": n) when json, else one "jalen:" line of the top ones. */
void jl_why_write(FILE *f, int json);
/* A new run: the counts back to zero. */
void jl_why_reset(void);
/* Signal handler: the interrupted PC of ucv where it is in the code cache
 * (a cause's detail), else 0. */
uint64_t jl_unwind_where(void *ucv);
/* Signal handler: whether the interrupted PC of ucv is in the interpreter. */
int jl_unwind_in_interpreter(void *ucv);
/* Signal handler: where why holds no frame yet, the compiled method the
 * interrupted PC of ucv is in (the scope of the first debug record after
 * it, as ASGCT decodes a PC) as the deepest frame known (part 3). */
void jl_unwind_pc_frame(void *ucv, jl_why *why);

/* Agent_OnLoad: finds the code cache's bounds and sets the
 * DynamicCodeGenerated callback in cb; asgct: AsyncGetCallTrace (what
 * jl_sampler_init found), for the walks it retries.  Negative when
 * recovery cannot work in this JVM (the agent then runs without it). */
int jl_unwind_init(jvmtiEnv *jvmti, jvmtiEventCallbacks *cb, jl_asgct_fn asgct);
/* VMInit: enables the event and replays the stubs made so far. */
void jl_unwind_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr);
/* ThreadStart (on the new thread): records its stack's bounds. */
void jl_unwind_thread_start(pid_t tid);
/* A running Java thread's kernel tid, from the VM's own structures
 * (gHotSpotVMStructs, java.lang.Thread.eetop); records its stack for
 * recovery too.  For threads that started before the agent attached.
 * 0, -ENOSYS (this JVM does not export them) or -ESRCH (it ended). */
int jl_java_thread_tid(JNIEnv *jni, jthread thr, pid_t *tid);
/* Agent thread: publishes the stubs seen since the last call. */
void jl_unwind_refresh(void);
/* Bytes the stub and stack tables hold (for agent_memory_bytes). */
size_t jl_unwind_memory(void);
/* Signal handler, after ASGCT failed on the context ucv: finds the caller
 * of the stub, the unfinished frame or the native routine and walks again
 * from it.  1 when tr now holds frames; 0 and *why says why not.  stubs_only: only when the PC is
 * in a stub (before any walk: ASGCT would fail there, and that failed
 * walk costs as much as a good one).  Async-signal-safe. */
int jl_unwind_retry(jl_asgct_trace *tr, int depth, void *ucv, pid_t tid, int stubs_only,
                    jl_why *why);
/* Signal handler, the first walk of a sample whose PC, in a compiled
 * method, sits at one of its debug records: ASGCT from the PC before it
 * (jl_nmethods_interrupted_pc).  1 when tr now holds frames; 0 (nothing
 * walked, or no frame) and the caller walks from ucv as it is.
 * Async-signal-safe. */
int jl_unwind_walk_interrupted(jl_asgct_trace *tr, int depth, void *ucv);
/* Signal handler, before any walk, a PC outside the code cache (native
 * code: a leaf routine called straight from compiled Java, a JNI
 * method's C, the VM): walked from the first return into Java code as
 * jl_unwind_retry does, so that a compiled caller is decoded at its call
 * (ASGCT's own walk through native frames decodes a return address at the
 * first record after it, the code after the call).  Not for a thread whose
 * frame anchor (env: its JNIEnv) is walkable: ASGCT walks from that one.
 * 1 when tr holds frames.  Async-signal-safe. */
int jl_unwind_walk_native(jl_asgct_trace *tr, int depth, void *ucv, void *env, pid_t tid);
/* Signal handler, after ASGCT gave up on a thread inside the VM (ticks
 * not_walkable_not_Java or unknown_not_Java): when the thread's frame
 * anchor holds its last Java SP but no PC yet, the return address below
 * that SP is put there for one more walk and taken out again (unwind.c);
 * in a C2 runtime stub, the walk starts at the stub's caller (a thread
 * inside the VM), or, where other threads may walk the stack (blocked),
 * only the caller's innermost scope is taken.  env: the thread's JNIEnv.
 * 1 when tr holds frames, 2 when it holds that one frame alone; 0 and
 * *why says why not.  Async-signal-safe. */
int jl_unwind_walk_anchor(jl_asgct_trace *tr, int depth, void *ucv, void *env, pid_t tid,
                          jl_why *why);

/* ------------------------------------------------------------------ */
/* Threads (threads.c)                                                 */
/* ------------------------------------------------------------------ */

typedef enum jl_kind { JL_K_JAVA = 0, JL_K_GC, JL_K_JIT, JL_K_VM, JL_K_AGENT, JL_K_COUNT } jl_kind;

typedef struct jl_thread {
    pid_t tid;
    char name[64];
    jl_kind kind;
    int alive;
    int has_timer;
    jl_timer timer;
    jobject ref;        /* global ref of the java.lang.Thread (jvmti) */
    double final_cpu_s; /* CPU time at ThreadEnd, < 0 while alive (-2: counted) */
    double end_cpu_s;   /* CPU time at ThreadEnd, kept (< 0: none yet) */
    double end_boot_s;  /* CLOCK_BOOTTIME at ThreadEnd */
    double seen_cpu_s;  /* CPU time counted so far */
    /* this window */
    double w_cpu_s, w_cpu_j, w_net_j;
    uint64_t w_net_bytes;
    double w_samples;   /* this window: sum of the samples' weights */
    uint64_t jv_cpu_ns; /* mode=jvmti: CPU time at the last sample */
    /* cumulative */
    double cpu_s, energy_j, cpu_j, net_j;
    uint64_t net_bytes;
} jl_thread;

typedef struct jl_threads {
    pthread_mutex_t lock;
    jl_thread *v;
    size_t n, cap;
    int *hash; /* tid -> index + 1, open addressing */
    size_t hcap;
} jl_threads;

extern jl_threads jl_thr;

jl_thread *jl_threads_get(pid_t tid, int create); /* lock held */
jl_thread *jl_threads_new(pid_t tid);             /* lock held */
jl_kind jl_classify_comm(const char *comm);
extern const char *const jl_kind_names[JL_K_COUNT];

/* ------------------------------------------------------------------ */
/* Methods and the call tree (profile.c)                               */
/* ------------------------------------------------------------------ */

/* Fixed pseudo-frames, at these indices of the method table. */
enum {
    JL_M_UNATTRIBUTED = 0,
    JL_M_GC,
    JL_M_JIT,
    JL_M_VM,
    JL_M_AGENT,
    JL_M_OUTSIDE_FILTER,
    JL_M_TRUNCATED,
    JL_M_PARTIAL,    /* the callers of the top frame could not be walked: it
                      * is the frame anchor's last Java frame */
    JL_M_PARTIAL_PC, /* the same, the top frame the compiled code at the PC */
    JL_M_ERR0,       /* ASGCT error codes 0, -1, ..., -10 follow */
    JL_M_NFIXED = JL_M_ERR0 + 11,
};

typedef struct jl_method {
    char *name;  /* package.Class.method */
    char *file;  /* "package/dir/Source.java" (pprof), NULL unknown */
    int cls;     /* index in the class table */
    int matches; /* matches the filter */
} jl_method;

typedef struct jl_class {
    char *name;
} jl_class;

/* A method's line number table (JVMTI), BCIs ascending; n = 0: none (a
 * native method, a class compiled without lines, an error). */
typedef struct jl_lines {
    int n;
    jvmtiLineNumberEntry *v;
} jl_lines;

/* A call-tree node (func: the method's index), as profcore/ writes it;
 * total_j is filled before writing.  self_cpu_s and self_samples stay 0. */
typedef pc_tree_node jl_node;

typedef struct jl_timeline_row {
    double start_s;
    int method;
    double power_w;
} jl_timeline_row;

typedef struct jl_profile {
    jl_method *m;
    size_t nm, capm;
    /* per method: what it accumulated, and how the filtered view charges
     * it (profcore.h: the same statistics as powerapi profile's) */
    pc_stat *ms;
    unsigned char *mcharge;
    size_t capms, capmch;
    jl_class *c;
    size_t nc, capc;
    pc_stat *cs; /* per class */
    size_t capcs;
    pc_tree_build tree; /* per method and line (profcore.h) */
    int *mhash;         /* jmethodID -> method + 1 */
    jmethodID *mhkeys;
    jl_lines *mhlines; /* each jmethodID's line number table */
    size_t mhcap, mhn;
    int *chash; /* class name -> class + 1 */
    size_t chcap;
    uint64_t stamp;
    jl_timeline_row *tl;
    size_t ntl, captl;
    /* totals */
    double process_j, process_cpu_j, process_nic_j;
    double unattributed_j;
    uint64_t windows, samples, samples_dropped, net_bytes;
    uint64_t windows_empty; /* windows with CPU energy and no stack sample */
    double duration_s;
    double start_s;
    pc_source source; /* the last report's formula, sensors... */
} jl_profile;

extern jl_profile jl_prof;

int jl_profile_init(const jl_opts *o);
/* A new run in the same JVM (options o): every energy, count, the call
 * tree and the timeline back to zero; the methods and classes named so
 * far stay (their filter matched again under o). */
void jl_profile_reset(const jl_opts *o);
/* Method index of a jmethodID (resolving its name, source file and line
 * table the first time). */
int jl_method_of(jvmtiEnv *jvmti, jmethodID id);
/* The same, and in *line the source line of bci in it (0 unknown: a
 * negative bci, no line table). */
int jl_method_line(jvmtiEnv *jvmti, jmethodID id, jint bci, int *line);
/* A pseudo-method named name (a frame no jmethodID has, "[scope x]"):
 * a new index each call, -1 when out of memory. */
int jl_method_pseudo(const char *name);
/* Adds one weighted stack (frames[0] = top; lines: each frame's line, or
 * NULL) to the profile: its energy, the CPU seconds it stands for (what
 * profile.pb.gz's cpu column sums) and how many stack samples it stands
 * for (count_sample: methods.csv's and pprof's sample counts; 0 for
 * energy no sample holds). */
void jl_profile_add(const int *frames, const int *lines, int n, double cpu_j, double net_j,
                    uint64_t net_bytes, double cpu_s, int count_sample);
/* The window buffer holds, per sample: tid, weight, n, frames[n],
 * lines[n]. */

/* ------------------------------------------------------------------ */
/* Network (net.c)                                                     */
/* ------------------------------------------------------------------ */

void JNICALL jl_on_native_bind(jvmtiEnv *jvmti, JNIEnv *env, jthread thr, jmethodID method,
                               void *address, void **new_address);
typedef struct jl_net_rec {
    pid_t tid;
    int n;
    jmethodID *frames; /* top first */
    /* bytes so far: written by thread tid only (a plain load and store,
     * no locked add on every socket call), read by the agent thread */
    uint64_t w_total;
    uint64_t w_seen; /* agent thread: w_total at the last drain */
    uint64_t bytes;
} jl_net_rec;
/* Calls fn for every record with bytes in the window and zeroes them. */
void jl_net_drain(void (*fn)(jl_net_rec *, uint64_t, void *), void *user);
void jl_net_init(jvmtiEnv *jvmti);
/* Bytes the net records hold (for summary.json's agent_memory_bytes). */
size_t jl_net_memory(void);
/* Socket bytes the calling thread moved so far (the count of its own
 * wrapper calls; scopes read it at both ends). */
uint64_t jl_net_thread_bytes(void);
/* Stack walks the socket wrappers made. */
uint64_t jl_net_walk_count(void);
void jl_net_new_window(void);

/* ------------------------------------------------------------------ */
/* Scopes: org.powerapi.jalen.Scope's natives and calls (scope.c)       */
/* ------------------------------------------------------------------ */

/* Agent_OnLoad: at most max_names distinct names (the rest are counted
 * under PA_SCOPE_OTHER, said once on stderr unless quiet). */
void jl_scopes_init(size_t max_names, int quiet);
/* Whether a run goes on (1 from its load, 0 once it ended): the calls
 * that close outside a run are not queued, nobody would drain them. */
void jl_scopes_set_active(int on);
/* ClassPrepare and VMInit's loaded classes: when k is
 * org.powerapi.jalen.Scope, binds its natives and sets its flag. */
void jl_scope_bind(jvmtiEnv *jvmti, JNIEnv *env, jclass k);
/* Agent thread, at the end of a window (profile lock held): prices the
 * calls that ended in it at the window's process CPU energy over its CPU
 * time and NIC energy over its socket bytes. */
void jl_scopes_window(double cpu_j, double cpu_s, double nic_j, uint64_t bytes);
/* The energy of the outermost scopes' time and bytes, and of the rest
 * (profile lock held). */
void jl_scopes_totals(double *scoped_j, double *unscoped_j);
/* summary.json's scope lines (each ends with ",\n"). */
void jl_scopes_json(FILE *f);
/* Each name's aggregates, first-use order, PA_SCOPE_OTHER last; *out is
 * the caller's to free (NULL when there are none). */
typedef struct jl_scope_row {
    pa_scope_stats s;
    pa__scope_net net;
} jl_scope_row;
size_t jl_scopes_get(jl_scope_row **out);
/* Agent thread: the pseudo-method "[scope NAME]" of a code of
 * jl_slot.scope (-1: none). */
int jl_scope_frame(int code);
/* Agent thread: the pseudo-method of scope name (made at its first use),
 * -1 when that name never had a scope. */
int jl_scope_frame_of(const char *name);
size_t jl_scopes_memory(void);
/* A window's prices, as scopes and traced methods are priced: *p the
 * process's CPU energy per CPU-second, *b its NIC energy per socket byte
 * (0 without bytes); 0 when the window has no CPU time to price by (*p 0). */
int jl_window_prices(double cpu_j, double cpu_s, double nic_j, uint64_t bytes, double *p,
                     double *b);

/* ------------------------------------------------------------------ */
/* Traced methods: trace=PATTERNS (trace.c, DESIGN.md 11.2)             */
/* ------------------------------------------------------------------ */

/* Agent_OnLoad (spec NULL: no tracing): the capabilities, the runtime jar
 * on the boot class path.  Negative errno with one line in err. */
int jl_trace_init(jvmtiEnv *jvmti, const char *spec, int quiet, char *err, size_t errlen);
/* Whether trace= is on. */
int jl_trace_on(void);
/* VMInit: binds Trace's natives and loads the rewriter; from then on the
 * classes that load are rewritten where a pattern names their methods. */
void jl_trace_vm_init(jvmtiEnv *jvmti, JNIEnv *env);
void JNICALL jl_trace_on_class_file(jvmtiEnv *jvmti, JNIEnv *env, jclass redefined, jobject loader,
                                    const char *name, jobject pd, jint len,
                                    const unsigned char *data, jint *new_len,
                                    unsigned char **new_data);
/* At runtime (attach's trace command): the patterns become spec ("" none:
 * tracing removed); the loaded classes that the old or the new patterns
 * name are retransformed.  One line on f.  0 or negative errno. */
int jl_trace_set(jvmtiEnv *jvmti, JNIEnv *env, const char *spec, FILE *f);
/* Agent thread, each window (profile lock held): prices what the traced
 * calls added since the last one. */
void jl_trace_window(double cpu_j, double cpu_s, double nic_j, uint64_t bytes);
/* calls.csv's header and rows on f (profile lock held). */
void jl_trace_rows(FILE *f);
/* calls.csv in dir (nothing without trace=). */
int jl_trace_write_csv(const char *dir);
/* The flame graph's tooltip line for method (package.Class.method, every
 * overload traced summed): "traced: N calls, X J a call (self Y J), wall
 * p50 Z ms", "" when it is not traced.  A static buffer: profile lock. */
const char *jl_trace_note(const char *method);
/* summary.json's trace members (each line ends with ",\n"). */
void jl_trace_json(FILE *f);
/* The end of the run: the patterns that matched nothing, said on stderr. */
void jl_trace_finish(void);

/* ------------------------------------------------------------------ */
/* Writers (writers.c)                                                 */
/* ------------------------------------------------------------------ */

int jl_write_all(const jl_opts *o, int final);
/* profile.pb.gz in dir of what the methods were charged since the last
 * call with d (push.c).  0 or -errno. */
int jl_write_pprof_delta(const char *dir, pc_delta *d, double since_s);

/* push= (push.c): starts the session when asked (0, or -errno after one
 * line on stderr); at the end of each window, pushes when push-every has
 * passed, and at the final window pushes the rest and stops. */
int jl_push_start(const jl_opts *o);
void jl_push_window(int final);
/* A new run: timeline.csv is created again at its first window. */
void jl_write_reset(void);
void jl_print_summary(const jl_opts *o, FILE *f);
/* Why a run has no stack sample, or windows without one; "" when every
 * window had (summary.json's samples_note, the closing line). */
void jl_samples_note(const jl_opts *o, char *out, size_t len);

/* ------------------------------------------------------------------ */
/* Small helpers (sys.c: a leaf, calls no other file)                   */
/* ------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in seconds: the clock of the windows and the MXBean. */
double jl_now_s(void);
/* The calling thread's kernel tid.  Async-signal-safe. */
pid_t jl_gettid(void);

/* ------------------------------------------------------------------ */
/* The run's state (run.c: data alone)                                 */
/* ------------------------------------------------------------------ */

/* The agent's own Java threads (agentthreads.c), filed as [agent] */
#define JL_AGENT_NAME "jalen-agent"
#define JL_SAMPLER_NAME "jalen-sampler" /* mode=jvmti */
#define JL_MXBEAN_NAME "jalen-mxbean"   /* registers the MXBean, then ends */

typedef struct jl_run_state {
    jvmtiEnv *jvmti; /* NULL until the first run (jl_agent_load) */
    jl_opts o;
    pa_ctx *ctx; /* libpowerapi, watching the JVM's pid */
    pid_t pid;
    atomic_int active; /* profiling: events do their work */
    int done;          /* the last window is written (profile lock) */
    int attached;      /* loaded by Agent_OnAttach */
    /* the agent's threads, set by those threads, read by others */
    atomic_int agent_tid, sampler_tid, mxbean_tid;
    /* the profile lock: jl_prof and the window's work (then jl_thr.lock) */
    pthread_mutex_t prof_lock;
} jl_run_state;

extern jl_run_state jl_run;

/* ------------------------------------------------------------------ */
/* Java threads (javathreads.c): their events, names and clocks         */
/* ------------------------------------------------------------------ */

void JNICALL jl_on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr);
void JNICALL jl_on_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr);
/* VMInit (or attach): the calling thread as at ThreadStart, then the Java
 * threads that started before the agent (their tids from the VM's
 * structures, else their names matched in /proc/self/task). */
void jl_java_threads_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr);
/* A Java thread's name now, when Thread.setName changed it since it was
 * read (thr lock held). */
void jl_java_thread_rename(jvmtiEnv *jvmti, jl_thread *t, jthread thr);
/* The end of a run: every thread's sample clock deleted. */
void jl_java_threads_stop_timers(void);
/* A new run: the table emptied, its clocks deleted and its references
 * freed (jni NULL: references kept). */
void jl_java_threads_clear(JNIEnv *jni);

/* ------------------------------------------------------------------ */
/* Windows (window.c): the Jalen equations applied, DESIGN.md 6.4       */
/* ------------------------------------------------------------------ */

/* Agent thread (profile lock held): the ring drained into the window's
 * samples. */
void jl_drain(void);
/* Profile lock held: closes the window that began at the last one (the
 * tick, the samples, the bytes, the scopes, the files; final: the last
 * window, complete=true). */
void jl_process_window(int final);
/* A run's first window begins at now (jl_now_s). */
void jl_windows_start(double now);
/* A new run (profile lock held): no sample, no reading, no warning kept. */
void jl_windows_reset(void);
/* The samples the windows kept (taken less those dropped after the ring). */
uint64_t jl_windows_samples(void);

/* ------------------------------------------------------------------ */
/* mode=jvmti's sampler (jvmtisampler.c)                                */
/* ------------------------------------------------------------------ */

/* Sampler thread: one stack of each runnable Java thread into the ring,
 * weighted by the CPU time the thread used since its previous one. */
void jl_jvmti_sample(jvmtiEnv *jvmti);

/* ------------------------------------------------------------------ */
/* The agent's threads (agentthreads.c)                                 */
/* ------------------------------------------------------------------ */

/* VMInit: the agent thread, the mode=jvmti sampler's and (once per JVM)
 * the MXBean's. */
void jl_agent_threads_start(jvmtiEnv *jvmti, JNIEnv *jni);
/* The end of a run (VMDeath, stop): clocks and agent threads stopped, the
 * last window written with complete=true, the closing summary on f (NULL:
 * none). */
void jl_agent_finish(FILE *f);
/* A new run: 0 once the last run's agent threads have ended, else -EBUSY
 * (the run not reset). */
int jl_agent_threads_rearm(void);

/* ------------------------------------------------------------------ */
/* JVMTI events (events.c)                                              */
/* ------------------------------------------------------------------ */

/* Sets the agent's event callbacks (and recovery's, mode=cpu). */
int jl_events_init(char *err, size_t errlen);
/* Turns the agent's events on or off. */
void jl_events_mode(jvmtiEventMode mode);
/* VMInit, also called at attach on the attaching thread. */
void JNICALL jl_on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr);

/* ------------------------------------------------------------------ */
/* Loading (load.c), for Agent_OnLoad and attach.c                      */
/* ------------------------------------------------------------------ */

/* Parses options and starts profiling: JVMTI, power, sampling, events.
 * live: the JVM runs already (Agent_OnAttach): VMInit's work is done at
 * once, the threads running now are found through the VM's structures,
 * and the methods compiled before now are replayed.  0, or negative
 * errno with one line in err. */
int jl_agent_load(JavaVM *vm, const char *options, int live, char *err, size_t errlen);

#endif /* JALEN_H */
