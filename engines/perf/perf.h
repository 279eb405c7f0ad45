/*
 * perf.h - the perf_event engine of `powerapi profile`: it samples call
 * stacks with perf_event_open and turns them into frames; the profiling
 * core (profcore/) splits the energy and writes the files.
 *
 *   sampler.c   perf_event_open rings, records (MMAP2, COMM, FORK, EXIT,
 *               SAMPLE), process generations and their maps, the
 *               window's samples and their frames (cached per generation
 *               and address)
 *   sym.c       addresses to frames: elfutils libdwfl (symbols, DWARF
 *               lines, inlined frames), perf map files (JIT),
 *               /proc/kallsyms (kernel), a C++ and Rust demangler
 *   unwind.c    --call-graph dwarf: stack copies unwound with libdwfl
 *
 * Layer: beside the profiling core, whose frames and task table it fills
 * (it includes profcore.h, never the command's headers).  Nothing here
 * prints; errors are negative errno values.  All of it runs on the
 * command's one thread: no locks.
 */
#ifndef PA_PERF_ENGINE_H
#define PA_PERF_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profcore.h"

#define PF_MAX_DEPTH PC_MAX_DEPTH /* frames kept per sample */

typedef pc_frame pf_frame;

/* ---- memory maps of a process (sampler.c fills, sym.c reads) ---- */

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
int pf_maps_add(pf_maps *m, uint64_t start, uint64_t len, uint64_t pgoff, const char *path);
const pf_map *pf_maps_find(pf_maps *m, uint64_t addr);
/* Reads /proc/PID/maps under procfs into m.  0 or -errno. */
int pf_maps_read(pf_maps *m, const char *procfs, pid_t pid);
void pf_maps_free(pf_maps *m);

/* ---- symbolisation (sym.c) ---- */

/* Initialises the symboliser; kallsyms is read from procfs (kernel frames
 * are then named) when kernel != 0. */
int pf_sym_init(const char *procfs, int kernel);
void pf_sym_fini(void);
/* Appends the frames of addr in a process (pid for perf maps, its maps),
 * innermost (inlined) first, to out (room for max).  is_return: addr is a
 * return address (the call is at addr - 1).  Returns the count (>= 1). */
int pf_sym_resolve(pid_t pid, pf_maps *maps, uint64_t addr, int is_return, pf_frame *out, int max);
/* Whether addr is a kernel address whose frame is dropped: kallsyms not
 * readable, or its addresses hidden (kptr_restrict).  Reads kallsyms at
 * the first kernel address. */
int pf_sym_kernel_dropped(uint64_t addr);
/* The kernel symbols' state ("named", "not readable: ..."), for the
 * summary. */
const char *pf_sym_kernel_state(void);
/* The vDSO's image (the same in every 64-bit process of this kernel:
 * ours, copied once into a memfd), as a path libdwfl can open
 * ("/proc/self/fd/N"); "" when there is none.  Not thread-safe. */
const char *pf_vdso_file(void);
/* Modules opened, interned strings and their memory, for the summary. */
size_t pf_sym_memory(void);

/* ---- --call-graph dwarf (unwind.c) ---- */

/* The user registers sampled (perf_event_attr.sample_regs_user, x86-64):
 * AX BX CX DX SI DI BP SP IP and R8..R15, 17 values in that order. */
#define PF_UNWIND_REGS_MASK 0xff01ffull
/* Bytes of user stack copied per sample: 16 KiB, not perf's 8 KiB, since
 * frames of several KiB are common (GNU sort's comparison function
 * reserves 8.6 KiB: with 8 KiB its callers were never seen); the record
 * takes that much ring space whatever the stack's depth. */
#define PF_UNWIND_STACK 16384

typedef struct pf_unwinder pf_unwinder;
/* Unwinds a sample's user stack: perf_regs as sampled, the stack copy
 * (from SP on).  *cache holds the process's unwinder (created, and
 * rebuilt when maps change).  Writes up to max pcs, innermost first;
 * returns their count or -errno.  *beyond: the end of the first stack
 * word the walk wanted past the copy (it ended there), 0 when none. */
int pf_unwind(pf_unwinder **cache, pid_t pid, pid_t tid, pf_maps *maps, const uint64_t *perf_regs,
              const char *stack, size_t stack_len, uint64_t *pcs, int max, uint64_t *beyond);
void pf_unwinder_free(pf_unwinder *u);
/* Makes the pages of [lo, hi) of tid's memory present by reading a byte of
 * each (process_vm_readv; nothing written: pages never touched get the
 * zero page), so that the kernel's stack copy, which stops at a page not in
 * memory, passes them.  0 or -errno (EPERM: not ours to read, ESRCH:
 * gone). */
int pf_unwind_fault_in(pid_t tid, uint64_t lo, uint64_t hi);
/* The same for the top PF_UNWIND_PREFAULT bytes of pid's main stack
 * ([stack] in procfs's maps): done when a program starts. */
#define PF_UNWIND_PREFAULT (256 * 1024)
int pf_unwind_fault_in_stack(const char *procfs, pid_t pid);

/* ---- counted functions: --count (uprobe.c, DESIGN.md 13.7) ---- */

typedef struct pf_count pf_count;
/* The functions spec names ("FUNC[,LIB:FUNC...]", shell wildcards;
 * FUNC alone is exe's, exe NULL: every FUNC needs its LIB), found in the
 * files' symbol tables; sysfs: the root of the uprobe PMU's type.  0, or
 * -errno with one line in err (no uprobe PMU, no such library, no such
 * function: stripped?). */
int pf_count_new(pf_count **out, const char *sysfs, const char *spec, const char *exe, char *err,
                 size_t len);
/* Opens every function's uprobe on every CPU (root only: uprobes need
 * CAP_SYS_ADMIN); the calls of process root and the processes it starts
 * are counted from then on.  0 or -errno with one line in err. */
int pf_count_open(pf_count *c, pid_t root, char *err, size_t len);
/* Before pf_count_open: on, each call is timed too, with a return probe
 * (uretprobe; not for kernel functions). */
void pf_count_time(pf_count *c, int on);
/* Function i's mean time per call in ns (its return's time less its
 * call's), or -1: not timed, or a call not returned yet. */
double pf_count_mean_ns(const pf_count *c, size_t i);
/* Adds a process whose calls are counted.  0 or -ENOMEM. */
int pf_count_target_add(pf_count *c, pid_t pid);
/* Reads the rings: every 100 ms or so, and once at the end. */
void pf_count_poll(pf_count *c);
/* The functions counted, and function i's calls so far (its symbol and
 * file in *name and *path). */
size_t pf_count_n(const pf_count *c);
uint64_t pf_count_read(const pf_count *c, size_t i, const char **name, const char **path);
/* Function i's calls by thread (*out valid until the next poll). */
typedef struct pf_cthread {
    pid_t pid, tid;
    uint64_t calls;
    /* with pf_count_time: returns seen, and the sums of the calls' and
     * the returns' times (ns): their difference is the time in calls
     * once every call returned */
    uint64_t returns, sum_entry_ns, sum_return_ns;
} pf_cthread;
size_t pf_count_threads(const pf_count *c, size_t i, const pf_cthread **out);
/* Records the rings lost: that many calls are not counted (0: exact). */
uint64_t pf_count_lost(const pf_count *c);
void pf_count_free(pf_count *c); /* NULL: nothing */

/* ---- the scope trace (strace.c) ---- */

/* Which C scope each thread of the profiled command is in: the reader of
 * the trace its library writes (libpowerapi/src/scopetrace.h). */
typedef struct pf_strace pf_strace;
/* Makes the trace's file (in /dev/shm); *env is the command's
 * environment entry that names it ("POWERAPI_SCOPE_TRACE=PATH", valid
 * until pf_strace_free).  0 or -errno. */
int pf_strace_new(pf_strace **out, const char **env);
void pf_strace_free(pf_strace *s); /* and removes the file */
/* Reads the events written since the last call. */
void pf_strace_read(pf_strace *s);
/* The root frame's name ("[scope NAME]", interned) of thread tid at
 * t_ns (CLOCK_MONOTONIC), NULL outside every scope. */
const char *pf_strace_at(pf_strace *s, pid_t tid, uint64_t t_ns);
/* Forgets what no sample at or after before_ns needs. */
void pf_strace_trim(pf_strace *s, uint64_t before_ns);
/* Events overwritten before they were read. */
uint64_t pf_strace_lost(const pf_strace *s);

/* ---- the sampler (sampler.c) ---- */

typedef struct pf_engine pf_engine;

typedef struct pf_engine_cfg {
    const char *procfs; /* root of /proc */
    const char *event;  /* "cpu-clock", "task-clock", "cycles" */
    uint64_t period_ns; /* 0 with freq */
    unsigned long freq; /* samples per second, 0 with period_ns */
    bool dwarf;         /* --call-graph dwarf */
    bool all;           /* every task, per CPU */
    pc_tasks *tasks;    /* the core's processes and threads: names,
                            exits, one entry per process the engine knows */
    pf_strace *scopes;  /* the command's C scopes, or NULL */
} pf_engine_cfg;

/* kernel.perf_event_paranoid under procfs (2 when unreadable). */
int pf_paranoid(const char *procfs);

int pf_engine_new(pf_engine **out, const pf_engine_cfg *cfg);
void pf_engine_free(pf_engine *e);
/* Samples thread tid (inherited by what it starts) on every CPU, the
 * events opened disabled with enable_on_exec when cmd.  0 or -errno. */
int pf_engine_open_task(pf_engine *e, pid_t tid, bool cmd);
/* Every existing thread of pid.  0 or -errno (-ESRCH: no thread). */
int pf_engine_open_pid(pf_engine *e, pid_t pid);
/* --all: one event and ring per CPU.  0 or -errno; *mmap_cpu is the CPU
 * whose ring could not be mapped (-1 otherwise). */
int pf_engine_open_all(pf_engine *e, int *mmap_cpu);
/* Whether kernel samples are taken (false once an open was refused
 * them). */
bool pf_engine_kernel(const pf_engine *e);
/* The generation of pid (its maps read from procfs when unknown). */
void pf_engine_touch(pf_engine *e, pid_t pid);
/* Reads every ring and handles the records in time order. */
void pf_engine_drain(pf_engine *e);
/* The window's stacks as the core reads them (pc_tasks_window): each
 * sample's thread, its period as weight, its frames (kernel frames
 * dropped when they cannot be named; "[kernel]" when none is left);
 * window_done forgets them. */
pc_engine pf_engine_stacks(pf_engine *e);
/* The JVMs among the sampled processes whose JIT-compiled frames no perf
 * map (/tmp/perf-PID.map) named, at most max (their pids in out). */
size_t pf_sym_unnamed_jvms(pid_t *out, size_t max);

/* At the end of a run: the frames of anonymous code that no perf map
 * named when they were sampled, named now if a map appeared since
 * (-XX:+DumpPerfMapAtExit writes it at the JVM's exit): fn gets each
 * frame's old name and module and its new frame.  Returns how many. */
size_t pf_sym_late_jit(void (*fn)(void *user, const char *name, const char *module,
                                  const pf_frame *now),
                       void *user);

/* Whether the window drained so far holds a stack. */
bool pf_engine_window_has_stacks(const pf_engine *e);

/* Samples stored, lost (by the kernel, or not stored), and stacks that
 * ended at a return address outside code (truncated may be NULL). */
void pf_engine_counts(const pf_engine *e, uint64_t *samples, uint64_t *lost, uint64_t *truncated);

#endif
