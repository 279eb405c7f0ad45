/*
 * powerapi.h - the one public header of libpowerapi.
 *
 * libpowerapi computes the power (W) and energy (J) of processes, threads
 * and cgroups from hot-pluggable sensor modules (raw readings of the OS and
 * the hardware) and formula modules (power models).  One pa_ctx is one
 * monitoring session; several may coexist in a process.
 *
 * Conventions
 *   - Every function that can fail returns 0 (or a non-negative count) on
 *     success and a negative errno value on failure.  pa_strerror() names
 *     the errno; pa_last_error() gives the detailed message of the last
 *     failure on the calling thread ("cpu-tdp: unknown option 'tpd' (did you
 *     mean 'tdp'?)").  Out-parameters are left untouched on failure.
 *   - The library never prints, aborts or exits.
 *   - Thread safety is stated per declaration.  "Context-safe" means the
 *     call may be made from any thread, concurrently with the background
 *     sampler and with other context-safe calls on the same context.
 */
#ifndef POWERAPI_H
#define POWERAPI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PA_VERSION_MAJOR 0
#define PA_VERSION_MINOR 3
#define PA_VERSION_PATCH 0
#define PA_VERSION_STRING "0.3.0"

/* Returns the library's version string ("0.3.0").  0.2 added open
 * components (pa_component_name, pa_report.ncomponents ...), module ABI 3,
 * calibration (pa_ctx_set_calibration, pa_calibration_*, pa_calibrate_*),
 * pa_machine_get and pa_perf_events_list; 0.3 the exits (the
 * PA_TARGET_EXITED and PA_TARGET_UNACCOUNTED targets, pa_target_info's
 * processes, pa_report's exits_source and exits_lost, pa_frame_task_exit
 * and pa_frame_exits_source).  Thread-safe. */
const char *pa_version(void);

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Short description of a negative errno value returned by the library
 * (pa_strerror(-ENOENT) -> "no such file or directory").  Never NULL.
 * Thread-safe. */
const char *pa_strerror(int err);

/* The detailed message of the last failing call made on this thread
 * (it names the thing that failed and the fix), or "" if none failed.
 * The string lives until the next failing call on the same thread.
 * Thread-safe (thread-local). */
const char *pa_last_error(void);

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

typedef struct pa_ctx pa_ctx;

typedef struct pa_ctx_opts {
    const char *procfs; /* root of procfs, default "/proc" */
    const char *sysfs;  /* root of sysfs, default "/sys" */
    const char *devfs;  /* root of devfs, default "/dev" */
    const char *hwdb;   /* hardware database file, default: installed one,
                           overridden by $POWERAPI_HWDB */
    const char *rootfs; /* where the container runtimes' state is
                           (var/lib/docker, run/containerd, ...), for the
                           names of cgroups (section "Containers, pods and
                           units" below); default "/" */
} pa_ctx_opts;

/* Creates a monitoring context.  opts may be NULL (defaults above); the
 * strings are copied.  No module is enabled yet: "auto" fills in at the
 * first tick (see pa_module_enable).
 * Errors: -ENOMEM; -ENOENT when a root directory does not exist.
 * Thread-safe. */
int pa_ctx_new(pa_ctx **out, const pa_ctx_opts *opts);

/* Stops the sampler if running, stops every module and frees the context.
 * NULL is a no-op.  Must not be called from a report callback. */
void pa_ctx_free(pa_ctx *ctx);

/* Gives the context a calibration file (written by `powerapi calibrate`,
 * read by the cpu-curve formula and by auto's choice of it; see
 * pa_calibration_read), used whatever CPU it was made on.  It comes
 * before $POWERAPI_CALIBRATION (the way in for programs that set none)
 * and the standard places; NULL goes back to them.  The file is read now
 * to check it; formulas read it when they start: set it before the first
 * tick.  Errors: -ENOENT, -EACCES (the file); -EINVAL it does not parse
 * (the message names the file and line); -ENOMEM.  Since 0.2.
 * Context-safe. */
int pa_ctx_set_calibration(pa_ctx *ctx, const char *path);

/* What the sensors read of the machine at the last tick. */
typedef struct pa_machine {
    unsigned ncpus;     /* online CPUs */
    char cpu_model[96]; /* /proc/cpuinfo "model name", "" unknown */
    double nominal_mhz; /* from cpuinfo when there is no cpufreq, else 0 */
} pa_machine;

/* Fills out from the last tick.  Errors: -EINVAL a NULL argument;
 * -ENODATA no tick yet.  Since 0.2.  Context-safe. */
int pa_machine_get(pa_ctx *ctx, pa_machine *out);

/* ------------------------------------------------------------------ */
/* Modules                                                             */
/* ------------------------------------------------------------------ */

typedef enum pa_module_kind {
    PA_SENSOR = 1,  /* reads raw values from the OS or the hardware */
    PA_FORMULA = 2, /* turns deltas of raw values into watts */
} pa_module_kind;

/* What a formula module computes: a component of the power, an open set.
 * Only one formula per component may be enabled at a time.  A context
 * knows "cpu" (PA_COMP_CPU) and "nic" (PA_COMP_NIC) from the start; a
 * formula that declares another (pa_module_ops.component_name: "dram",
 * "gpu", ...) adds it with the next id (3, 4, ..., at most
 * PA_MAX_COMPONENTS in all): a registered formula when it is registered,
 * a built-in one when it is first enabled (so a machine where no GPU
 * formula runs reports no gpu).  pa_component_name() gives the name
 * of an id; reports carry every component of the context (see
 * pa_report.ncomponents), so a program reads components it does not know
 * by name and index, without a new field per component. */
typedef enum pa_component {
    PA_COMP_NONE = 0,
    PA_COMP_CPU = 1,
    PA_COMP_NIC = 2,
} pa_component;

#define PA_MAX_COMPONENTS 8 /* components of one context, cpu and nic included */

/* The name of component c in this context ("cpu", "nic", "gpu"), or NULL
 * when c is not one of its components.  The string lives as long as the
 * context.  Context-safe. */
const char *pa_component_name(pa_ctx *ctx, pa_component c);

/* Which modules run, in three rules:
 *   1. Enabling a formula also enables each sensor it requires
 *      (pa_module_ops.requires) that is not enabled yet, as enabled for it
 *      (pa_module_info.required_by), even one you disabled before.
 *   2. Disabling a formula also disables the sensors enabled only for it,
 *      and disabling a sensor that a formula you enabled requires fails
 *      with -EBUSY and "disable <formula> first".
 *   3. At the next tick, "auto" gives each component (cpu, nic) that no
 *      enabled formula computes the best formula this machine can run,
 *      with its sensors, but never one you disabled nor one that needs a
 *      sensor you disabled.
 * So enabling "cpu-tdp" alone runs procfs-cpu + cpu-tdp, plus nic +
 * nic-linear from auto where interfaces are visible; enabling only a
 * sensor ("perf") keeps auto's formulas.  Auto's candidates for a
 * component are the formulas (built-in or registered) that declare it with
 * an auto_rank above 0, highest rank first; it takes the first whose fits
 * callback says yes and that can be enabled here.  Built-in ranks give:
 * cpu: rapl-share where RAPL is readable, else cpu-curve where a
 * load-power curve or calibration matches this CPU or on a virtual
 * machine, else cpu-tdp; nic: nic-linear.  Disabling a sensor that a
 * formula chosen by auto requires disables that formula too (auto then
 * picks one that does without the sensor, if any).
 * pa_module_disable(ctx, "auto") stops auto (only what you enable runs);
 * pa_module_enable(ctx, "auto", NULL) resumes it and fills in at once.
 *
 * pa_module_enable enables a built-in or registered module by name, with
 * an options string "key=value,key=value" (NULL or "" for defaults), and
 * takes it off the list of modules you disabled.  Enabling an enabled
 * module with the same options is a no-op (it becomes yours if auto or a
 * formula had enabled it); with other options it reconfigures it.
 * Enabling a formula for a component that auto's formula computes
 * replaces it; one you enabled gives -EBUSY.  Takes effect at the next
 * tick.
 * Errors: -ENOENT unknown module (or a required sensor that is unknown);
 * -EINVAL bad option, or a requirement that is not a sensor; -ENODEV the
 * module or a sensor it requires cannot run here (message says why);
 * -EBUSY; errors of the module's start (nothing is left enabled by a
 * failed call).  Context-safe. */
int pa_module_enable(pa_ctx *ctx, const char *name, const char *options);

/* Disables a module and records that auto must not enable it again (until
 * you enable it); the sensors enabled only for a formula go with it.
 * Resources are released after any tick in progress.  Disabling a known
 * module that is not enabled is not an error: auto will leave it out.
 * "auto" stops auto and disables what it had chosen.
 * Errors: -ENOENT unknown module; -EBUSY a sensor that a formula you
 * enabled requires (the message names the formula: disable it first).
 * Context-safe. */
int pa_module_disable(pa_ctx *ctx, const char *name);

/* Changes the options of an enabled module (only the keys given change).
 * Errors: -ENOENT not enabled; -EINVAL bad option (module unchanged).
 * Context-safe. */
int pa_module_configure(pa_ctx *ctx, const char *name, const char *options);

typedef struct pa_module_info {
    const char *name;        /* static for built-ins, owned by ctx else */
    const char *description; /* one line */
    pa_module_kind kind;
    pa_component component; /* formulas: the id of the component they
                               compute (pa_component_name) */
    int available;          /* probe succeeded on this machine */
    int enabled;
    int failing;                 /* last sample/compute failed, being retried */
    char why[256];               /* why not available, or the last failure */
    char options[256];           /* current options when enabled */
    int user;                    /* enabled by name (pa_module_enable) */
    int by_auto;                 /* formulas: chosen by "auto" */
    char required_by[256];       /* sensors: the enabled formulas that require
                                    it, ","-separated ("cpu-tdp,rapl-share");
                                    "" if none.  A sensor that is enabled
                                    but not user was enabled for them. */
    const char *const *requires; /* formulas: NULL-terminated sensor
                                    names, or NULL; owned by the module */
    const char *const *uses;     /* formulas: sensors used when enabled */
    char auto_why[256];          /* enabled by "auto": why it was chosen */
} pa_module_info;

/* Fills up to cap entries of out with every known module (built-in and
 * registered, sensors first) and returns how many modules exist (which
 * may exceed cap).  out may be NULL when cap is 0.  Probes run against the
 * context's roots.  Context-safe. */
int pa_module_list(pa_ctx *ctx, pa_module_info *out, size_t cap);

/* Fills out for one module, probing only that one (pa_module_list probes
 * every module, which opens the RAPL paths among others).  Errors:
 * -ENOENT unknown module (the message lists the known ones); -EINVAL a
 * NULL argument.  Context-safe. */
int pa_module_get(pa_ctx *ctx, const char *name, pa_module_info *out);

/* The option keys a module accepts (its ops table's options): *out is
 * their NULL-terminated list, owned by the module and valid as long as
 * the context, or NULL when it takes none.  Probes nothing (for shell
 * completion, `powerapi modules --names`).  Errors: -ENOENT unknown
 * module; -EINVAL a NULL argument.  Context-safe. */
int pa_module_option_keys(pa_ctx *ctx, const char *name, const char *const **out);

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

enum {
    PA_WATCH_THREADS = 1u << 0,  /* also report each thread of the pid */
    PA_WATCH_CHILDREN = 1u << 1, /* also report every descendant, and a
                                    tree total for the pid (see
                                    pa_tree_power) */
};

/* Watches a process (all its threads summed).  Watching a watched pid
 * updates its flags.  Errors: -ESRCH no such process in the context's
 * procfs; -EINVAL pid <= 0 or unknown flag.  Context-safe. */
int pa_watch_pid(pa_ctx *ctx, pid_t pid, unsigned flags);

/* Stops watching a pid.  Errors: -ESRCH not watched.  Context-safe. */
int pa_unwatch_pid(pa_ctx *ctx, pid_t pid);

/* pa_watch_all: also report every thread of every process. */
#define PA_WATCH_ALL_THREADS 0x100

/* Watches (on != 0) or stops watching (on == 0) every process of the
 * system; with PA_WATCH_ALL_THREADS in on, every thread too.
 * Context-safe. */
int pa_watch_all(pa_ctx *ctx, int on);

/* ------------------------------------------------------------------ */
/* Ticks                                                               */
/* ------------------------------------------------------------------ */

/* Power over the last window and energy since the target was first seen. */
typedef struct pa_power {
    double cpu_w, nic_w, total_w; /* last window, watts */
    double idle_w;                /* system only: CPU power no task caused */
    double cpu_j, nic_j, total_j; /* cumulative, joules */
    double interval_s;            /* length of the last window */
    double cpu_time_s;            /* CPU time used in the last window */
    uint64_t time_ns;             /* end of the last window (CLOCK_MONOTONIC or the
                                     explicit clock of pa_tick_at) */
    unsigned flags;               /* PA_POWER_* */
} pa_power;

enum {
    PA_POWER_MEASURED = 1u << 0,   /* cpu figure scaled from a measured
                                      counter (RAPL); modelled otherwise */
    PA_POWER_EXITED = 1u << 1,     /* the target is gone; last report */
    PA_POWER_FIRST = 1u << 2,      /* first window the target was seen */
    PA_POWER_RAPL_RESET = 1u << 3, /* system: a RAPL counter went back or
                                      jumped without wrapping (reset,
                                      package plugged in again); its
                                      energy in this window is not
                                      counted (the assumed list says
                                      which) */
};

/* Samples every enabled sensor now, runs the formulas and integrates
 * energy.  The first tick only primes the readings (no window yet).
 * Errors: -EBUSY inside a report callback; -ENODATA no sensor produced
 * anything.  A failing module does not fail the tick (see pa_module_list).
 * Context-safe. */
int pa_tick(pa_ctx *ctx);

/* Same as pa_tick with an explicit clock (ns, strictly increasing), for
 * tests and replays of fixture trees.  Errors as pa_tick, plus -EINVAL
 * when time_ns is not after the previous tick.  Context-safe. */
int pa_tick_at(pa_ctx *ctx, uint64_t time_ns);

typedef enum pa_target_type {
    PA_TARGET_PROCESS = 1,
    PA_TARGET_THREAD = 2,
    PA_TARGET_TREE = 3, /* a watched pid and all its descendants */
    PA_TARGET_CGROUP = 4,
    /* Since 0.3, with every process watched (pa_watch_all): */
    PA_TARGET_EXITED = 5,      /* the processes born and exited inside the
                                  window (never seen alive by a tick),
                                  summed: pid 0, comm "[exited]",
                                  processes their number */
    PA_TARGET_UNACCOUNTED = 6, /* what no process accounts for (interrupts,
                                  CPU time neither a process nor the exit
                                  accounting explains): pid 0, comm
                                  "[unaccounted]" */
    /* Issue 41, in reports grouped by VM (DESIGN.md section 18): */
    PA_TARGET_VM = 7, /* a virtual machine: pid and comm its hypervisor's,
                         vm its names; its processes and threads summed.
                         vm NULL: the processes in no VM, summed ("[not
                         in a VM]", pid 0) */
} pa_target_type;

#define PA_COMM_MAX 16

/* One target of a report. */
typedef struct pa_target_info {
    pa_target_type type;
    pid_t pid;  /* process id (tree: root pid; cgroup: 0) */
    pid_t tid;  /* thread id (threads), else 0 */
    pid_t ppid; /* parent pid of a process, else 0 */
    char comm[PA_COMM_MAX];
    const char *cgroup; /* cgroup v2 path ("/system.slice/x.service"),
                           "" when unknown */
    pa_power power;
    uint64_t net_rx_bytes, net_tx_bytes; /* last window */
    int has_net;                         /* nic sensor gave values */
    const double *counters;              /* last window, one per report counter name,
                                            scaled for multiplexing; NULL if none */
    double multiplex;                    /* time_running/time_enabled, lowest of the
                                            group; 1 when not multiplexed */
    const struct pa_cgroup_names *names; /* the container, pod or unit of
                               the cgroup (of a process: of its cgroup),
                               with cgroup reports on; NULL when none */
    unsigned processes;                  /* PA_TARGET_EXITED: the processes it sums (0 when
                                            the exit accounting is an estimate that cannot
                                            count them); 0 for the other types (since 0.3) */
    const struct pa_vm_info *vm;         /* PA_TARGET_VM: the VM's names; NULL
                                            otherwise (issue 41) */
    double vcpu_w, emulator_w;           /* PA_TARGET_VM: power.total_w split
                                            between its vCPU threads (the guest's
                                            work) and the rest (emulator, I/O,
                                            device model, its other processes);
                                            both < 0 when its threads could not
                                            be told apart in the window; 0 for
                                            the other types */
    double vcpu_j, emulator_j;           /* the same in joules, summed over the
                                            windows whose threads were told apart
                                            (so they add up to at most total_j) */
} pa_target_info;

/* One device of a component in a window (since 0.2): a GPU, as its
 * formula reports it (pa_table_device).  Strings are "" when unknown. */
#define PA_MAX_DEVICES 16
typedef struct pa_device_info {
    char component[16]; /* "gpu" */
    int index;          /* the vendor's device index (NVML), the card number (DRM) */
    char vendor[16];    /* "nvidia", "amd", "intel" */
    char name[64];      /* "NVIDIA H100 80GB HBM3" */
    char uuid[48];      /* "GPU-..." (NVML) */
    char bus[32];       /* PCI address */
    char source[16];    /* "measured" (an energy counter), "integrated" (a
                           power reading times the window), "modelled" */
    double power_w;     /* last window */
    double idle_w;      /* its idle part, last window */
    double energy_j;    /* cumulative, since the formula first saw it */
    int split;          /* 1: its active part went to processes; 0: it
                           stays unattributed (assumed says why) */
} pa_device_info;

/* What one tick produced.  Owned by the context. */
typedef struct pa_report {
    uint64_t tick;    /* 1 for the first window */
    uint64_t time_ns; /* end of the window */
    double interval_s;
    pa_power system;        /* whole machine */
    const char *formula;    /* formulas that ran, "cpu-tdp+nic-linear" */
    const char *sensors;    /* sensors that ran, "procfs-cpu+nic" */
    const char *cpu_source; /* "rapl" (measured) or "model" */
    const char *assumed;    /* ";"-separated constants not read from the
                               machine: "tdp=10W (default: unknown CPU)" */
    size_t ntargets;
    const pa_target_info *targets;
    size_t ncounters;
    const char *const *counter_names;
    double dram_w;      /* measured DRAM power (RAPL), 0 when absent */
    double psys_w;      /* measured platform power (RAPL psys), 0 when
                           absent; not part of system.total_w */
    double model_error; /* known relative error of a modelled cpu figure
                           (0.05 = 5 %): cpu-curve's validation error of
                           its calibration, or its running error against
                           RAPL when it self-calibrates; < 0 unknown */
    /* Components (since 0.2): every component of the context, by id:
     * component_names[k] is the name of id k + 1, so "cpu" and "nic" come
     * first, then the others in the order they joined the context.  pa_power's cpu_* and
     * nic_* are the first two; its total_* sum every component.
     * system_component_w/_j[k] are the system's watts (last window) and
     * joules (cumulative) of component k; target_component_w/_j[i *
     * ncomponents + k] those of targets[i].  A program reads a component
     * it does not know by its name here (ring readers' reports too).  The
     * arrays are NULL when ncomponents is 0. */
    size_t ncomponents;
    const char *const *component_names;
    const double *system_component_w, *system_component_j;
    const double *target_component_w, *target_component_j;
    /* Devices (since 0.2): each device a formula reported for the window
     * (the GPUs), NULL when none; carried by the ring (version 4). */
    size_t ndevices;
    const pa_device_info *devices;
    /* Exits (since 0.3): how the CPU time of processes that exited inside
     * the window was counted (DESIGN.md section 2, "Exits"):
     * "taskstats" (the kernel's exit accounting, exact), "children-time"
     * (taskstats refused: an estimate from the survivors' cutime/cstime
     * growth, bounded by /proc/stat), "none" (not every process is
     * watched, or no sensor discovers tasks).  With every process watched,
     * the process targets + the PA_TARGET_EXITED target + the
     * PA_TARGET_UNACCOUNTED target + system.idle_w sum to the system's
     * power, per component, every window. */
    const char *exits_source;
    uint64_t exits_lost; /* times the exit records' socket overflowed
                            (the kernel dropped records under a fork
                            storm) since the context started: their CPU
                            time is in the unaccounted target */
    /* The processes the PA_TARGET_EXITED target sums, one record each
     * (type PA_TARGET_PROCESS, flags PA_POWER_EXITED | PA_POWER_FIRST, its
     * comm, ppid, and its nearest live ancestor's cgroup; power and energy
     * of its one window), at most PA_EXITED_MAX a window (the exited
     * target's processes says how many there were); NULL when none or
     * when counted by an estimate.  Not carried by the ring. */
    size_t nexited;
    const pa_target_info *exited;
} pa_report;

#define PA_EXITED_MAX 4096

/* Called by the sampler thread after each tick.  r is valid only during
 * the call.  The callback may call any context-safe function except
 * pa_tick, pa_tick_at, pa_stop and pa_ctx_free. */
typedef void (*pa_report_cb)(pa_ctx *ctx, const pa_report *r, void *user);

/* Starts a background sampler that ticks every period_ns (>= 1 ms) and
 * calls cb (may be NULL) after each tick.  Errors: -EALREADY running;
 * -EINVAL bad period; thread creation errors.  Context-safe. */
int pa_start(pa_ctx *ctx, uint64_t period_ns, pa_report_cb cb, void *user);

/* Stops the sampler and waits for it.  Errors: -ENOENT not running;
 * -EDEADLK from the callback.  Context-safe except from the callback. */
int pa_stop(pa_ctx *ctx);

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

/* Last window's power and cumulative energy of a process (threads summed).
 * Errors: -ESRCH not watched or not seen yet; -ENODATA no window yet.
 * Context-safe. */
int pa_pid_power(pa_ctx *ctx, pid_t pid, pa_power *out);

/* Same for one thread of a pid watched with PA_WATCH_THREADS. */
int pa_tid_power(pa_ctx *ctx, pid_t tid, pa_power *out);

/* Same for a pid watched with PA_WATCH_CHILDREN: the pid and all its
 * descendants, including those that exited (their CPU time is counted
 * through their parents' cutime/cstime). */
int pa_tree_power(pa_ctx *ctx, pid_t pid, pa_power *out);

/* Same for a cgroup v2 path ("/system.slice/ssh.service"): the sum of its
 * processes that the context saw in the window. */
int pa_cgroup_power(pa_ctx *ctx, const char *cgroup, pa_power *out);

/* The whole machine: idle_w is the CPU power no task caused. */
int pa_system_power(pa_ctx *ctx, pa_power *out);

/* Copies the last report.  *out is freed with pa_report_free.
 * Errors: -ENODATA no window yet; -ENOMEM.  Context-safe. */
int pa_report_get(pa_ctx *ctx, pa_report **out);

/* Frees a report from pa_report_get.  NULL is a no-op. */
void pa_report_free(pa_report *r);

/* Asks for cgroup records in reports (aggregated per cgroup v2 path).
 * Context-safe. */
int pa_report_cgroups(pa_ctx *ctx, int on);

/* ------------------------------------------------------------------ */
/* Containers, pods and units (DESIGN.md section 14)                  */
/* ------------------------------------------------------------------ */

/* What a cgroup is, by the names its users know.  Each field is "" when
 * unknown; a cgroup that is no container, pod or unit has none at all. */
typedef struct pa_cgroup_names {
    char runtime[16];         /* "docker", "containerd", "cri-o", "podman",
                                 "lxc"; "" for a CRI container whose state
                                 was not found, and for systemd units */
    char container_id[72];    /* the full ID (64 hexadecimal digits) */
    char container_name[128]; /* "web"; "POD" for a pod's sandbox */
    char pod_name[128];       /* Kubernetes */
    char pod_namespace[64];
    char pod_uid[40];
    char unit[128];  /* systemd unit: the deepest service or scope
                        ("nginx.service", "session-3.scope"), else
                        the deepest slice; "conmon" for a runtime's
                        container monitor */
    char source[64]; /* where the names come from: "cgroup path",
                        "docker config.v2.json", "containerd
                        config.json", "cri-o config.json", "podman
                        containers.json", "/var/log/pods" (joined
                        by ", ") */
} pa_cgroup_names;

/* The names a cgroup path gives by itself (v1 or v2, systemd or cgroupfs
 * driver): Docker (docker-ID.scope, /docker/ID), containerd's CRI plugin
 * (cri-containerd-ID.scope), CRI-O (crio-ID.scope, crio-conmon-ID.scope),
 * Podman (libpod-ID.scope, libpod-conmon-ID.scope), LXC (lxc.payload.NAME,
 * /lxc/NAME), Kubernetes pods of every QoS class (kubepods-*-podUID.slice,
 * /kubepods/QOS/podUID/ID), systemd services, scopes and slices; the
 * deepest match wins, and a container inside a pod carries both.
 * Errors: -EINVAL NULL argument; -ENOENT nothing recognised (*out zeroed).
 * Thread-safe (no state). */
int pa_cgroup_parse(const char *path, pa_cgroup_names *out);

/* pa_cgroup_parse, then the IDs turned into names from the runtimes' own
 * state files under root ("/" when NULL), read only: Docker's
 * var/lib/docker/containers/ID/config.v2.json, containerd's OCI bundles
 * (run/containerd/io.containerd.runtime.v2.task/NS/ID/config.json), CRI-O's
 * (run/ or var/lib/containers/storage/overlay-containers/ID/userdata/
 * config.json), Podman's containers.json, and var/log/pods/NS_POD_UID for a
 * pod's name.  An ID found nowhere keeps its ID (source "cgroup path").
 * Errors as pa_cgroup_parse.  Thread-safe. */
int pa_cgroup_names_resolve(const char *root, const char *path, pa_cgroup_names *out);

/* ------------------------------------------------------------------ */
/* Virtual machines on this host (DESIGN.md section 18)               */
/* ------------------------------------------------------------------ */

/* The most vCPU threads a pa_vm_info lists. */
#define PA_VM_MAX_VCPUS 256

/* One virtual machine running on this host, by the names its users know.
 * Strings are "" when unknown. */
typedef struct pa_vm_info {
    char name[128];                   /* "web1" (libvirt's domain, Proxmox's name,
                                         Firecracker's --id, KubeVirt's VMI) */
    char uuid[40];                    /* "c7a5fdbd-edaf-9455-926a-d65c16db1809" */
    char hypervisor[24];              /* "qemu", "firecracker", "cloud-hypervisor" */
    char manager[16];                 /* "libvirt", "proxmox", "kubevirt"; "" for a
                                         hypervisor started by hand */
    char id[72];                      /* the manager's own id: libvirt's domain id ("1"),
                                         Proxmox's VMID ("100"), the KubeVirt pod's UID */
    char source[64];                  /* where the name came from: "qemu -name",
                                         "libvirt cgroup", "proxmox VMID.conf",
                                         "kubevirt pod", "firecracker --id",
                                         "firecracker api socket", "cloud-hypervisor
                                         api socket" */
    char cgroup[256];                 /* the VM's own cgroup (libvirt's scope,
                                         Proxmox's VMID.scope, KubeVirt's compute
                                         container); its processes are the VM's.  ""
                                         when the hypervisor runs in a cgroup not its
                                         own (started by hand) */
    pid_t pid;                        /* the hypervisor's process */
    unsigned nthreads;                /* its threads when listed */
    unsigned nvcpus;                  /* how many of them are vCPU threads (at most
                                         PA_VM_MAX_VCPUS); 0 when they cannot be told
                                         apart (QEMU without debug-threads=on names
                                         every thread after the program) */
    pid_t vcpu_tids[PA_VM_MAX_VCPUS]; /* the vCPU threads, by index; the
                            process's other threads are the emulator's
                            (I/O, device model, monitor) */
} pa_vm_info;

/* The VM a hypervisor's command line starts (NUL-separated arguments, as
 * /proc/PID/cmdline, len bytes): QEMU (qemu-system-*, qemu-kvm, kvm: its
 * name from -name guest=NAME or -name NAME, with ",," for a comma, the
 * uuid from -uuid or -smbios type=1,uuid=), Firecracker (--id, else the
 * --api-sock file's name) and cloud-hypervisor (the --api-socket file's
 * name, or its folder's when the file is named generically).  Fills
 * hypervisor, name, uuid, id and source of a zeroed *out.
 * Errors: -EINVAL NULL argument; -ENOENT no hypervisor's command line
 * (*out zeroed).  Thread-safe (no state). */
int pa_vm_parse_cmdline(const char *cmdline, size_t len, pa_vm_info *out);

/* The VM a cgroup path is: libvirt's machine.slice/machine-qemu\x2dN\x2dNAME.scope
 * (systemd's escaping undone; also cgroupfs' /machine/qemu-N-NAME.libvirt-qemu)
 * and Proxmox's qemu.slice/VMID.scope.  Fills manager, id, name (libvirt),
 * source and cgroup (the path up to the VM's own cgroup) of a zeroed *out.
 * Errors: -EINVAL NULL argument; -ENOENT no VM's cgroup (*out zeroed).
 * Thread-safe (no state). */
int pa_vm_parse_cgroup(const char *path, pa_vm_info *out);

/* The vCPU index of a hypervisor's thread named comm (proc(5)
 * /proc/PID/task/TID/comm): QEMU's "CPU 3/KVM" (and "/TCG"),
 * Firecracker's "fc_vcpu 3", cloud-hypervisor's "vcpu3"; -1 for any other
 * thread (the emulator's).  Thread-safe (no state). */
int pa_vm_vcpu_index(const char *comm);

/* A host's VMs, kept between scans: each scan lists the processes of
 * procfs, and reads a command line, a cgroup and a manager's files only
 * for a hypervisor's process it has not seen before (its threads are
 * listed again at every scan). */
typedef struct pa_vms pa_vms;

/* A VM table over procfs ("/proc" when NULL) and rootfs (where Proxmox's
 * etc/pve/qemu-server and the container runtimes' state are, "/" when
 * NULL; the same root as pa_ctx_opts' rootfs).  Empty until scanned.
 * Errors: -ENOMEM.  Thread-safe; the table is not (one caller at a
 * time). */
int pa_vms_new(pa_vms **out, const char *procfs, const char *rootfs);

/* Lists the VMs running now.  Errors: -ENOENT, -EACCES procfs cannot be
 * listed (the message names it); -ENOMEM.  A VM whose files vanish while
 * read (it stopped) is left out.  Not thread-safe (the table). */
int pa_vms_scan(pa_vms *v);

/* The VMs of the last scan: their count, the i-th (NULL past the end),
 * the VM a process belongs to (its hypervisor's pid, or a process in the
 * VM's own cgroup: pass its cgroup path, NULL when unknown), NULL when
 * none.  Pointers stay valid until the next scan or pa_vms_free.  Not
 * thread-safe (the table). */
size_t pa_vms_count(const pa_vms *v);
const pa_vm_info *pa_vms_get(const pa_vms *v, size_t i);
const pa_vm_info *pa_vms_of_process(const pa_vms *v, pid_t pid, const char *cgroup);

/* Frees the table.  NULL is a no-op. */
void pa_vms_free(pa_vms *v);

/* One scan as a copied array (*out, *n; freed with free()): the way in
 * for a caller that scans once (the guests' export).  Errors as
 * pa_vms_new and pa_vms_scan.  Thread-safe. */
int pa_vm_list(const char *procfs, const char *rootfs, pa_vm_info **out, size_t *n);

/* ------------------------------------------------------------------ */
/* Scopes: the energy of a region of code                              */
/* ------------------------------------------------------------------ */

/* A scope is a named region of code on the calling thread:
 *
 *     pa_scope_begin(ctx, "checkout");
 *     ...                                    // the work of one request
 *     pa_scope_result r;
 *     pa_scope_end(ctx, "checkout", &r);     // r.energy_j, r.cpu_time_s
 *
 * Its CPU time is the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) at the
 * end less at the begin; its energy is that CPU time times the context's
 * energy per CPU-second of its last window at the scope's end (not of the
 * windows the scope ran in; DESIGN.md section 15):
 *
 *     E = t_cpu x P_cpu x d / c        P_cpu, c: the CPU power (W) and the
 *                                      CPU time (s) of the priced process
 *                                      over the last window of length d
 *
 * The priced process is the calling process (pa_scope_opts.pid) when the
 * context watches it and it ran in that window with a power; otherwise
 * the machine's: (system cpu_w - idle_w) x d / busy CPU time, the power
 * no task caused left out.  A window in which neither ran keeps the
 * previous price.  The figure is measured when the window's CPU power was
 * (RAPL: PA_POWER_MEASURED in the flags), modelled otherwise.  A scope
 * that ends before the context's first window has no price: energy 0 and
 * PA_SCOPE_NO_WINDOW.  Network energy is not counted.
 *
 * Scopes nest (up to PA_SCOPE_MAX_DEPTH open on a thread, across
 * contexts): a scope's inclusive figures contain its children's,
 * self = inclusive - children, exactly (CPU ns, and joules: a parent's
 * inclusive energy is its self CPU time at its own price plus its
 * children's energies).  A scope whose name is already open further out
 * on the thread (recursion) is flagged PA_SCOPE_RECURSIVE: its calls and
 * self figures count, its inclusive ones are already in the outer one's.
 *
 * Each name gets aggregates (pa_scope_stats): calls, CPU time, energy,
 * self and inclusive, and the energy per call (mean, p50, p95, p99 from a
 * log-bucketed histogram: 8 buckets per power of two, values within
 * 6.25 %).  At most pa_scope_opts.max_names names are kept (default
 * PA_SCOPE_DEFAULT_NAMES); the calls of the others are counted under
 * PA_SCOPE_OTHER ("[other scopes]"), whose stats carry a note.
 *
 * Cost: after a name's first use on a context, begin and end take no
 * lock and allocate nothing (a thread-local stack, per-name atomic
 * counters; the tick publishes each window's price).  Begin and end read
 * the thread CPU clock (one system call each).  The context's first scope
 * and pa_scope_configure read the last window's price through
 * pa_pid_power and pa_system_power. */

#define PA_SCOPE_MAX_DEPTH 64      /* open scopes on one thread */
#define PA_SCOPE_NAME_MAX 128      /* bytes of a name, NUL included */
#define PA_SCOPE_DEFAULT_NAMES 256 /* distinct names kept per context */
#define PA_SCOPE_OTHER "[other scopes]"

enum {
    /* PA_POWER_MEASURED (bit 0) also applies to scopes */
    PA_SCOPE_NO_WINDOW = 1u << 8,   /* no window yet: energy 0 */
    PA_SCOPE_RATE_SYSTEM = 1u << 9, /* priced from the machine, not the
                                       process (not watched, or it did
                                       not run in the window) */
    PA_SCOPE_RECURSIVE = 1u << 10,  /* the name was open further out */
    PA_SCOPE_FOLDED = 1u << 11,     /* counted under PA_SCOPE_OTHER */
};

typedef struct pa_scope_opts {
    size_t max_names;        /* distinct names kept, 1..65536; 0: default */
    pid_t pid;               /* process whose energy per CPU-second prices the
                                scopes: 0 the calling process (getpid()), > 0
                                another one (a replay, a fixture tree), -1 always
                                the machine's */
    double carbon_g_per_kwh; /* > 0: the stats give grams of CO2e at this
                                carbon intensity (pa_carbon_g; the user's
                                figure, stated in the stats); 0: none */
} pa_scope_opts;

/* Sets the scope options of a context and reads the price of its last
 * window now (scopes read it again after each window; a window that
 * prices nothing, neither the process nor the machine having run, keeps
 * the previous price).  max_names can change only before the context's
 * first scope; pid at any time.  opts NULL restores the defaults.
 * carbon_g_per_kwh at any time (the stats read then convert with it).
 * Errors: -EINVAL NULL ctx, max_names out of range, pid < -1; -ERANGE
 * carbon_g_per_kwh neither 0 nor in pa_carbon_intensity_parse's range;
 * -EBUSY max_names changed after the first scope; -ENOMEM.
 * Context-safe. */
int pa_scope_configure(pa_ctx *ctx, const pa_scope_opts *opts);

/* Opens scope `name` (1 to PA_SCOPE_NAME_MAX - 1 bytes, any text) on the
 * calling thread and reads its CPU clock.  A name beyond max_names is
 * counted under PA_SCOPE_OTHER.
 * Errors: -EINVAL NULL ctx or name, empty name; -ENAMETOOLONG; -E2BIG
 * PA_SCOPE_MAX_DEPTH scopes already open on this thread; -ENOMEM (a
 * name's first use).  Thread-safe: any thread, concurrently, on any
 * context; not from a module callback of the same context.  A scope
 * still open when its context is freed must not be ended (end it first:
 * pa_ctx_free cannot see the threads' stacks). */
int pa_scope_begin(pa_ctx *ctx, const char *name);

/* What pa_scope_end says of the scope it closed. */
typedef struct pa_scope_result {
    double cpu_time_s;      /* inclusive: the thread's CPU time */
    double self_cpu_time_s; /* less the scopes nested in it */
    double energy_j;        /* inclusive */
    double self_energy_j;
    double j_per_cpu_s; /* the price: energy per CPU-second */
    unsigned depth;     /* 0: outermost on the thread */
    unsigned flags;     /* PA_POWER_MEASURED, PA_SCOPE_* */
} pa_scope_result;

/* Closes the innermost scope open on this thread, which must be `name`
 * on ctx (name NULL: whatever its name), adds it to its name's
 * aggregates and, when out is not NULL, fills *out.
 * Errors: -EINVAL NULL ctx; -ENOENT no scope open on this thread; -EPROTO
 * the innermost scope is another one (another name, or opened on another
 * context): scopes end in the reverse order of their begins, and nothing
 * is closed.  Thread-safe as pa_scope_begin. */
int pa_scope_end(pa_ctx *ctx, const char *name, pa_scope_result *out);

/* pa_scope_begin and pa_scope_end with an explicit thread CPU clock (ns,
 * not decreasing within a scope), for tests and replays.  Errors as
 * theirs, plus -EINVAL when cpu_ns is before the scope's begin. */
int pa_scope_begin_at(pa_ctx *ctx, const char *name, uint64_t cpu_ns);
int pa_scope_end_at(pa_ctx *ctx, const char *name, uint64_t cpu_ns, pa_scope_result *out);

/* One name's aggregates.  "Rated" calls are those that ended after the
 * context's first window; the per-call figures are over them. */
typedef struct pa_scope_stats {
    const char *name;                   /* owned by the context, valid until freed */
    uint64_t calls;                     /* ended scopes */
    uint64_t rated_calls;               /* of which priced (a window existed) */
    uint64_t measured_calls;            /* of which priced from RAPL */
    double cpu_time_s, self_cpu_time_s; /* sums */
    double energy_j, self_energy_j;     /* sums */
    /* energy per rated call: mean, then quantiles of the histogram */
    double mean_j, p50_j, p95_j, p99_j;
    double self_mean_j, self_p50_j, self_p95_j, self_p99_j;
    unsigned flags;   /* PA_POWER_MEASURED when every rated call
                         was; PA_SCOPE_FOLDED for PA_SCOPE_OTHER */
    const char *note; /* PA_SCOPE_OTHER: why names were folded;
                         else NULL.  Static. */
    /* with pa_scope_opts.carbon_g_per_kwh: that intensity (the
     * assumption), and the grams of CO2e of energy_j, self_energy_j and
     * mean_j (pa_carbon_g); all 0 without one */
    double carbon_g_per_kwh;
    double co2e_g, self_co2e_g, mean_co2e_g;
} pa_scope_stats;

/* Fills up to cap entries of out with each name's aggregates, in the
 * order of the names' first use (PA_SCOPE_OTHER last, when it counted a
 * call), and returns how many names there are (may exceed cap).  out may
 * be NULL when cap is 0.  A context without scopes has 0.  The figures of
 * one name are read while scopes may end: each is consistent, two may be
 * one call apart.  Errors: -EINVAL.  Context-safe. */
int pa_scope_list(pa_ctx *ctx, pa_scope_stats *out, size_t cap);

/* Fills *out with the aggregates of one name (or PA_SCOPE_OTHER).
 * Errors: -EINVAL NULL argument; -ENOENT no scope of that name ended or
 * began (or it was folded: look at PA_SCOPE_OTHER).  Context-safe. */
int pa_scope_get(pa_ctx *ctx, const char *name, pa_scope_stats *out);

/* ------------------------------------------------------------------ */
/* Carbon: grams of CO2e at an intensity the user states               */
/* ------------------------------------------------------------------ */

/* Nothing here measures carbon: the grams of CO2e of an energy are that
 * energy times a carbon intensity (grams of CO2e per kWh of electricity)
 * that the user gives and every output states as an assumption.  No
 * intensity is built in.  One conversion for every output (DESIGN.md
 * section 17):
 *
 *     g = E / 3.6e6 x I          E in J (3.6e6 J = 1 kWh), I in g/kWh
 */
#define PA_CARBON_MAX_G_PER_KWH 5000.0 /* above any grid's: lignite ~1100 */
#define PA_J_PER_KWH 3.6e6

/* Parses a carbon intensity a person typed: a decimal number of grams
 * of CO2e per kWh, more than 0 and at most PA_CARBON_MAX_G_PER_KWH, with
 * or without the unit ("385", "56.5", "385g/kWh").  Errors: -EINVAL NULL
 * argument, not a number or junk after it; -ERANGE 0, negative, not
 * finite or above the maximum; the message (pa_last_error) names the
 * forms.  *out untouched on error.  Thread-safe. */
int pa_carbon_intensity_parse(const char *s, double *out_g_per_kwh);

/* The grams of CO2e of energy_j joules at g_per_kwh: energy_j / 3.6e6 x
 * g_per_kwh.  Errors: -ERANGE intensity out of the range that
 * pa_carbon_intensity_parse accepts; -EDOM energy not finite (a figure
 * that is unknown has no grams either); -EINVAL out NULL.  *out_g
 * untouched on error.  Thread-safe. */
int pa_carbon_g(double energy_j, double g_per_kwh, double *out_g);

/* The assumption as every output states it, into buf (NUL-terminated,
 * cut to len): "carbon intensity 385 gCO2e/kWh (given, not measured)".
 * Returns the length it needed (as snprintf), or -ERANGE (intensity out
 * of range) or -EINVAL (buf NULL with len > 0).  Thread-safe. */
int pa_carbon_assumption(double g_per_kwh, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Writing modules                                                     */
/* ------------------------------------------------------------------ */

/* Version of pa_module_ops, checked by pa_module_register.  2 added
 * requires and uses, 3 flags, component_name, auto_rank and fits (each
 * at the end of the table).  Tables built against an older version are
 * still accepted and read without the later fields: version 1 as modules
 * that declare no needs, 1 and 2 as modules with no flags that auto never
 * chooses. */
#define PA_MODULE_ABI 3

/* pa_module_ops.flags (abi >= 3): what a sensor does for the core. */
enum {
    /* Lists the tasks (processes, threads) of the machine at each sample:
     * runs before the other sensors, and after it ran, the tasks that no
     * sensor saw are reported exited. */
    PA_MOD_DISCOVERS_TASKS = 1u << 0,
    /* Declares per-task counters: they are dropped from reports when the
     * sensor is disabled. */
    PA_MOD_TASK_COUNTERS = 1u << 1,
    /* Formulas (since 0.3): computes after every formula without it, so
     * that it reads their figures of the window (pa_table_system_comp_w,
     * pa_table_target_comp_w): the platform formula, the wall less what
     * the other components account for. */
    PA_MOD_AFTER_FORMULAS = 1u << 2,
};

typedef struct pa_module pa_module;           /* one enabled module */
typedef struct pa_env pa_env;                 /* the context's environment */
typedef struct pa_options pa_options;         /* parsed "key=value,..." */
typedef struct pa_frame pa_frame;             /* one tick's raw readings */
typedef struct pa_frame_delta pa_frame_delta; /* two frames' difference */
typedef struct pa_power_table pa_power_table; /* a formula's output */

/* A module is a static const table of callbacks, registered by name.
 * Optional callbacks may be NULL.  A sensor implements sample, a formula
 * compute.  All callbacks of one context run on one thread at a time. */
typedef struct pa_module_ops {
    unsigned abi;     /* PA_MODULE_ABI */
    const char *name; /* [a-z0-9_-]+, at most 63, unique */
    pa_module_kind kind;
    pa_component component;     /* formulas: PA_COMP_CPU or PA_COMP_NIC;
                                   another with component_name */
    const char *description;    /* one line */
    const char *const *options; /* NULL-terminated accepted keys, or NULL
                                   for none; others are refused with a
                                   suggestion */
    /* Can the module run here?  0, or negative errno with a reason. */
    int (*probe)(const pa_env *env, char *why, size_t why_len);
    /* Allocates state (pa_module_set_priv) and opens what it needs. */
    int (*start)(pa_module *m, const pa_options *opts);
    /* Sensors: adds this tick's readings to the frame. */
    int (*sample)(pa_module *m, pa_frame *frame);
    /* Formulas: fills the power of their component. */
    int (*compute)(pa_module *m, const pa_frame_delta *d, pa_power_table *out);
    /* Applies new options while enabled; NULL means stop+start. */
    int (*configure)(pa_module *m, const pa_options *opts);
    /* Releases everything start allocated. */
    void (*stop)(pa_module *m);
    /* Formulas (abi >= 2): NULL-terminated names of the sensors they need,
     * enabled with them (see pa_module_enable), or NULL for none. */
    const char *const *requires;
    /* Formulas (abi >= 2): sensors they read when enabled but do without
     * ("rapl-share" uses "perf" for cycles); never enabled for them. */
    const char *const *uses;
    /* abi >= 3: PA_MOD_* (sensors; PA_MOD_AFTER_FORMULAS: formulas). */
    unsigned flags;
    /* Formulas (abi >= 3): the component they compute, by name
     * ([a-z0-9_]+, at most 15: "cpu", "nic", "dram", "gpu"); NULL: the
     * one of `component`.  A new name is added to the context's
     * components at registration. */
    const char *component_name;
    /* Formulas (abi >= 3): auto's preference among the formulas of the
     * component, highest first; 0: auto never chooses it. */
    int auto_rank;
    /* Formulas (abi >= 3), optional: may auto choose it on this machine?
     * Called by auto, in rank order, once every formula ranked above it
     * was passed over; 1 yes, 0 no; why gets the reason either way (shown
     * as pa_module_info.auto_why).  NULL: yes. */
    int (*fits)(const pa_env *env, char *why, size_t len);
} pa_module_ops;

/* Registers a module for this context.  ops must outlive the context.
 * The names in requires and uses are checked when the formula is enabled
 * (the sensors may be registered after it).  A formula of a component the
 * context does not know yet adds it (see pa_component).
 * Errors: -EEXIST name taken; -EINVAL bad table: an abi this library does
 * not speak (1 to PA_MODULE_ABI; the message names both versions: rebuild
 * the module against this powerapi.h), name, callbacks, a sensor with
 * requires/uses/component, a bad name in them, unknown flags; -ENOSPC a
 * new component beyond PA_MAX_COMPONENTS.  Context-safe. */
int pa_module_register(pa_ctx *ctx, const pa_module_ops *ops);

/* Module helpers (for use inside callbacks). */
void *pa_module_priv(const pa_module *m);
void pa_module_set_priv(pa_module *m, void *priv);
const pa_env *pa_module_env(const pa_module *m);
/* Sets the detailed failure message of this module (printf-like). */
void pa_module_errorf(pa_module *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *pa_env_procfs(const pa_env *env);
const char *pa_env_sysfs(const pa_env *env);
const char *pa_env_devfs(const pa_env *env);
/* The root the context was given for files of the running system beyond
 * procfs and sysfs (pa_ctx_opts.rootfs; "/" by default): where a module
 * looks for configuration files and mount points (since 0.5). */
const char *pa_env_rootfs(const pa_env *env);
/* The hardware database and calibration file the context was given
 * (pa_ctx_opts.hwdb, pa_ctx_set_calibration), or NULL (since 0.2). */
const char *pa_env_hwdb(const pa_env *env);
const char *pa_env_calibration(const pa_env *env);

/* Option values: NULL / def when absent.  The typed getters return
 * -EINVAL (with a message naming the key) when the value does not parse.
 * Durations accept "500ms", "2s", "10us", "1m"; power "95W" or "95". */
const char *pa_options_get(const pa_options *o, const char *key);
int pa_options_get_double(const pa_options *o, const char *key, double def, double *out);
int pa_options_get_duration_ns(const pa_options *o, const char *key, uint64_t def, uint64_t *out);

/* Frames for user sensors: add a CPU time reading (ns, cumulative) for a
 * pid or tid the context watches.  Errors: -ESRCH not a target. */
int pa_frame_set_cpu_ns(pa_frame *f, pid_t pid, pid_t tid, uint64_t cpu_ns);

/* Frames for sensors that see tasks exit (since 0.3): one task (a
 * thread, or a single-threaded process) that exited, with the CPU time it
 * used over its whole life, as the kernel's exit accounting gives it
 * (taskstats).  Call it after the task-discovering sensor of the tick has
 * looked at the tasks alive (a task it no longer saw has its record
 * here).  The context gives a watched process that exited its last
 * window's CPU time from these records, and the processes it never saw
 * alive their own record (PA_TARGET_EXITED).  Errors: -EINVAL bad
 * record; -ENOMEM. */
typedef struct pa_task_exit {
    pid_t tid;  /* the task */
    pid_t pid;  /* its process (thread group) */
    pid_t ppid; /* the process's parent */
    char comm[PA_COMM_MAX];
    uint64_t cpu_ns; /* user + system time over its life */
} pa_task_exit;
int pa_frame_task_exit(pa_frame *f, const pa_task_exit *e);
/* Says where this tick's exit records come from ("taskstats", at most 15
 * bytes) and how many the kernel dropped so far (lost, cumulative), for
 * pa_report.exits_source and exits_lost.  Without a call, a tick counts
 * exits with the "children-time" estimate.  Errors: -EINVAL. */
int pa_frame_exits_source(pa_frame *f, const char *source, uint64_t lost);

/* Frames for any sensor (since 0.2): stores a copy of size bytes under
 * key, this tick's readings of the sensor's own kind ("gpu": per-process
 * energy counters, say) for the formulas that read them with
 * pa_delta_get; a second put of a key in one tick replaces the first.
 * This is how a new kind of sensor and its formula exchange readings
 * without a change to the library.  Errors: -EINVAL key empty or over
 * 31 bytes, size 0 or over PA_FRAME_DATA_MAX; -ENOMEM. */
#define PA_FRAME_DATA_MAX (1u << 20)
int pa_frame_put(pa_frame *f, const char *key, const void *data, size_t size);

/* Deltas for user formulas. */
double pa_delta_interval_s(const pa_frame_delta *d);
size_t pa_delta_count(const pa_frame_delta *d);
/* Which target i is (since 0.2): its type, pid and tid (0 unless a
 * thread); 0 when i is out of range. */
pa_target_type pa_delta_type(const pa_frame_delta *d, size_t i);
pid_t pa_delta_pid(const pa_frame_delta *d, size_t i);
pid_t pa_delta_tid(const pa_frame_delta *d, size_t i);
/* Whether target i is a process of the tree of root (root itself or one
 * of its descendants), for a formula that gives a tree (PA_TARGET_TREE,
 * pa_delta_pid: its root) its members' sum (since 0.2). */
int pa_delta_in_tree(const pa_frame_delta *d, size_t i, pid_t root);
/* The data a sensor put under key at this tick (*size its bytes), or
 * NULL when none did; with prev not NULL, *prev (and *prev_size) the
 * previous tick's, NULL when there was none.  Owned by the context,
 * valid during the compute call (since 0.2). */
const void *pa_delta_get(const pa_frame_delta *d, const char *key, size_t *size, const void **prev,
                         size_t *prev_size);
/* CPU time (s) of target i in the window, and the window's CPU capacity
 * (interval x online CPUs) and busy time (s). */
double pa_delta_cpu_s(const pa_frame_delta *d, size_t i);
double pa_delta_capacity_s(const pa_frame_delta *d);
double pa_delta_busy_s(const pa_frame_delta *d);
/* Sets target i's power for the formula's component, and the system's. */
void pa_table_set_target_w(pa_power_table *t, size_t i, double w);
void pa_table_set_system_w(pa_power_table *t, double w, double idle_w);
/* Reports one device of the formula's component for the window (since
 * 0.2); beyond PA_MAX_DEVICES a window's devices are left out. */
void pa_table_device(pa_power_table *t, const pa_device_info *dev);
/* Records a constant not read from the machine ("tdp=10W (default)"). */
void pa_table_assume(pa_power_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a duration ("500ms", "2s", "1.5s", "10us", "3m") into ns.
 * Errors: -EINVAL.  Thread-safe. */
int pa_parse_duration_ns(const char *s, uint64_t *out);

/* The same, for a duration a person typed: a bare number ("5") is refused
 * with -EDOM and a message that names the forms, since it is as likely
 * meant in ms or ns as in seconds.  Other errors as pa_parse_duration_ns.
 * Thread-safe. */
int pa_parse_duration_unit_ns(const char *s, uint64_t *out);

/* ------------------------------------------------------------------ */
/* Calibrations (the load-power curves of cpu-curve), since 0.2        */
/* ------------------------------------------------------------------ */

/* A load-power curve: power at increasing utilisation, from a hwdb
 * "curve" record, a calibration file or options. */
#define PA_CURVE_MAX 32
#define PA_CURVE_FREQS 8
typedef enum pa_curve_per {
    PA_CURVE_SERVER = 0, /* the whole measured machine (SPECpower: wall) */
    PA_CURVE_PACKAGE,    /* one CPU package */
    PA_CURVE_VCPU,       /* one logical CPU (cloud per-vCPU figures) */
} pa_curve_per;

typedef struct pa_curve {
    char match[96]; /* hwdb match string, or the calibrated CPU model */
    size_t n;
    double load[PA_CURVE_MAX]; /* utilisation 0..1, strictly increasing */
    double watts[PA_CURVE_MAX];
    pa_curve_per per;
    unsigned packages; /* packages of the measured machine (>= 1) */
    unsigned threads;  /* logical CPUs of the measured machine, 0 unknown */
    double mhz;        /* mean frequency while measured, 0 unknown */
    double error;      /* known relative error of the curve, < 0 unknown */
    char source[256];  /* where the points come from */
    /* per-frequency curves of `powerapi calibrate --frequencies` (fpoint
     * lines): nfreq curves at fmhz[] MHz, increasing */
    size_t nfreq;
    double fmhz[PA_CURVE_FREQS];
    size_t fn[PA_CURVE_FREQS];
    double fload[PA_CURVE_FREQS][PA_CURVE_MAX];
    double fwatts[PA_CURVE_FREQS][PA_CURVE_MAX];
    double fres[PA_CURVE_FREQS][PA_CURVE_MAX]; /* RMS residual, W */
} pa_curve;

/* Power (W) of curve c at utilisation load (0..1): linear between points,
 * the last value above them; below the first, the straight line of the
 * points within 25 points of load of it, never below 0.  Thread-safe. */
double pa_curve_power_w(const pa_curve *c, double load);

/* Reads a calibration file into out (per = server, match = the CPU model
 * it was made on).  Errors: -errno of the file, -EINVAL a line that does
 * not parse (the message names the file and line).  Thread-safe. */
int pa_calibration_read(const char *path, pa_curve *out);

/* Writes c as a calibration file.  residual_w[i] is the RMS residual (W)
 * of point i, NULL when unknown; ncpus the machine's online CPUs; the
 * validation figures (mean and 95th percentile of the absolute error, and
 * the energy error, in %) < 0 when there was no validation.  Errors:
 * -errno of the file (the message names it).  Thread-safe. */
int pa_calibration_write(const char *path, const pa_curve *c, const double *residual_w,
                         unsigned ncpus, double valid_mean_pct, double valid_p95_pct,
                         double valid_energy_pct);

/* Where `powerapi calibrate` writes by default: for root
 * /var/lib/powerapi/calibration.txt, else
 * $XDG_DATA_HOME/powerapi/calibration.txt (~/.local/share when unset).
 * Errors: -ENAMETOOLONG; -ENOENT no home directory.  Thread-safe. */
int pa_calibration_standard_path(char *buf, size_t len);

/* Measuring a calibration (what `powerapi calibrate` runs), since 0.2.
 *
 * A ladder of duty-cycle loads (active idle, then 1/levels .. 100 % of all
 * CPUs: one pinned worker thread per online CPU, busy for duty x 10 ms of
 * every 10 ms), each level step_ns long after settle_ns, reps times,
 * measured in windows of window_ns by the context (which must have
 * procfs-cpu, rapl and rapl-share enabled): a point is a level's mean
 * utilisation (/proc/stat) and RAPL package + DRAM power, its residual
 * the RMS of its windows around the curve.  Where cpufreq lets a frequency
 * be set (scaling_setspeed under the userspace governor, else
 * scaling_max_freq), the ladder runs first at each frequency asked for;
 * the settings are restored after, by pa_calibrate_free, and by
 * pa_calibrate_restore_cpufreq (for the caller's signal handlers).
 * Validation: a random walk of load (a step of +-10..30 % every second)
 * for validate_ns, the curve's power at each 1 s window's utilisation
 * against RAPL.
 *
 * Thread safety: one calibration at a time in a process (the cpufreq
 * settings it saves are process-wide; a second pa_calibrate_new fails
 * with -EBUSY); its calls from one thread; nothing else ticks the context
 * meanwhile.  The library prints nothing: progress and warnings go to
 * note (one line each, no newline), errors to pa_last_error. */
#define PA_CALIBRATE_VERSION 1 /* the layout of pa_calibrate_params */

typedef struct pa_calibrate_params {
    unsigned version;     /* PA_CALIBRATE_VERSION */
    uint64_t step_ns;     /* time at each load level (`calibrate`: 5 s) */
    uint64_t settle_ns;   /* left out at the start of each level (500 ms) */
    uint64_t window_ns;   /* measurement window (500 ms); two must fit in
                             step_ns - settle_ns */
    uint64_t validate_ns; /* the random walk of validation (30 s), 0: none */
    unsigned reps;        /* repetitions of the ladder, 1..50 (3) */
    unsigned levels;      /* load levels above idle, 1..50 (10) */
    /* frequencies to calibrate at (pa_calibrate_check_frequencies): NULL
     * "min,mid,max", "none" the current frequency only */
    const char *frequencies;
    const char *sysfs;                        /* where cpufreq is read, NULL: "/sys" */
    const char *windows_csv;                  /* NULL, or a file for the validation windows
                                                 (u,model_w,measured_w,interval_s) */
    void (*note)(void *arg, const char *msg); /* progress, warnings; or NULL */
    void *note_arg;
    /* the strings must live until pa_calibrate_free */
} pa_calibrate_params;

typedef struct pa_calibrate pa_calibrate;

/* The curve measured: points, per-frequency curves (curve.nfreq), the RMS
 * residual of each point, the online CPUs, and the cpufreq file that set
 * the frequencies ("" none). */
typedef struct pa_calibrate_curve_result {
    pa_curve curve;
    double residual_w[PA_CURVE_MAX];
    unsigned ncpus;
    char cpufreq_file[64];
} pa_calibrate_curve_result;

/* The validation: windows (0: none run), mean and 95th percentile of the
 * absolute error and the energy error in % (< 0 without windows), and the
 * energy of the model and of RAPL over the run. */
typedef struct pa_calibrate_validation {
    size_t windows;
    double mean_pct, p95_pct, energy_pct;
    double model_j, measured_j;
} pa_calibrate_validation;

/* Checks a frequencies list: "none", or up to PA_CURVE_FREQS of min, mid,
 * max and MHz values joined by ','.  0, or -EINVAL with the message.
 * Thread-safe. */
int pa_calibrate_check_frequencies(const char *spec);

/* Starts a calibration on ctx: checks p, finds the frequencies it can
 * set, starts the (idle) load threads and ticks once.  Errors: -EINVAL (p,
 * its version), -EBUSY (another calibration), -ENOMEM, -EAGAIN (threads),
 * the tick's. */
int pa_calibrate_new(pa_ctx *ctx, const pa_calibrate_params *p, pa_calibrate **out);

/* Runs the ladders (minutes: see the note "ladder of ..."); fills out.
 * Errors: -ENODATA a window without RAPL, or fewer than 2 distinct load
 * levels (a busy machine); -errno of cpufreq (the message says to ask
 * for "none"); the tick's. */
int pa_calibrate_curve(pa_calibrate *cal, pa_calibrate_curve_result *out);

/* Validates curve c on a random walk of load (p.validate_ns; nothing
 * without).  Errors: as pa_calibrate_curve; -errno of windows_csv. */
int pa_calibrate_validate(pa_calibrate *cal, const pa_curve *c, pa_calibrate_validation *out);

/* Stops the load threads, restores cpufreq, frees.  NULL is a no-op. */
void pa_calibrate_free(pa_calibrate *cal);

/* Writes back the cpufreq settings a calibration changed, if any.
 * Async-signal-safe (open, write, close): for a handler of SIGINT/SIGTERM
 * that then lets the signal end the process. */
void pa_calibrate_restore_cpufreq(void);

/* ------------------------------------------------------------------ */
/* Hardware events (the perf sensor), since 0.2                        */
/* ------------------------------------------------------------------ */

/* Called once per event by pa_perf_events_list: its name (as the perf
 * sensor's events= option takes it), a description, and status 0 when it
 * opens on the calling thread, else -errno (-ENOENT no such PMU event
 * here, -EACCES privilege).  Returns 0 to go on, < 0 to stop. */
typedef int (*pa_perf_event_cb)(const char *name, const char *desc, int status, void *user);

/* Lists every event this machine's libpfm4 (and the generic kernel table)
 * can encode.  Returns the number of events listed, or the callback's
 * negative value when it stopped.  Thread-safe. */
int pa_perf_events_list(pa_perf_event_cb cb, void *user);

/* ------------------------------------------------------------------ */
/* Shared-memory ring (powerapi daemon and its readers)                */
/* ------------------------------------------------------------------ */

/* A POSIX shared-memory ring of tumbling windows: one writer (usually
 * `powerapi daemon`) publishes each report; any number of read-only
 * readers, in other processes, read windows at their own pace.  Each slot
 * has a sequence counter (a seqlock): the writer never waits for readers,
 * and a reader never returns a window that was being overwritten while it
 * copied it (it counts such a window as lost instead).  A window holds the
 * system record and up to max_targets targets (processes, threads,
 * cgroups); when a report has more, the most powerful are kept and the
 * truncation is counted (pa_ring_info.truncated).  Perf counters are
 * carried (version 2): a window stores the report's counter names (up to
 * 16, the most a context counts) and each target its counters and
 * multiplex; targets without counters read back with counters NULL.
 * Components are carried (version 3): a window stores the report's
 * component names and the watts and joules of each, for the system and
 * each target, so that readers get pa_report.ncomponents and the arrays
 * beside it as the writer's report had them.  Devices are carried
 * (version 4): a window stores the report's pa_report.devices (the GPUs);
 * an aggregate has each device's power and idle part averaged over its
 * windows and its newest energy.  VM records are carried (version 5, issue
 * 41): a PA_TARGET_VM target keeps its pa_vm_info's strings, thread and
 * vCPU counts (not the vCPU thread ids) and vcpu_w, emulator_w, vcpu_j,
 * emulator_j; an aggregate averages the vCPU and emulator watts over the
 * windows that had them and keeps the newest joules. */

#define PA_RING_VERSION 5               /* layout version of the ring */
#define PA_RING_DEFAULT_NAME "powerapi" /* shm name: /dev/shm/powerapi */

typedef struct pa_ring_writer pa_ring_writer;
typedef struct pa_ring_reader pa_ring_reader;

typedef struct pa_ring_opts {
    uint32_t capacity;    /* windows kept, default 100 */
    uint32_t max_targets; /* targets per window, default 1024 */
    uint32_t mode;        /* permission bits, default 0644 */
    int set_gid;          /* nonzero: chown the ring to gid */
    gid_t gid;
    uint64_t interval_ns; /* the writer's window length, for staleness
                             checks by readers; default 1 s */
} pa_ring_opts;

/* Creates the ring `name` ("powerapi" or "/powerapi"; one component, at
 * most 200 bytes) in POSIX shared memory, readable per opts->mode (the
 * umask does not apply).  opts may be NULL (defaults above).  A ring left
 * by a writer that died is replaced.
 * Errors: -EINVAL bad name or option; -EEXIST a live writer owns the
 * name; -EACCES/-EPERM; -ENOMEM.  Thread-safe. */
int pa_ring_create(const char *name, const pa_ring_opts *opts, pa_ring_writer **out);

/* Publishes a report as the next window, overwriting the oldest.  Never
 * blocks and never allocates once the writer has seen its largest report.
 * Counter names share the window's string pool with the cgroup paths and
 * are stored first; a window whose names do not fit carries no counters.
 * Errors: -EINVAL (NULL report, more than 16 counters).  Not thread-safe: one publishing thread per
 * writer (pa_ring_heartbeat may run concurrently). */
int pa_ring_publish(pa_ring_writer *w, const pa_report *r);

/* Tells readers the writer is alive although no window was published
 * (long intervals).  Thread-safe with pa_ring_publish. */
void pa_ring_heartbeat(pa_ring_writer *w);

/* Marks the ring stopped, unlinks its name and frees the writer.
 * Readers that have it open see -EOWNERDEAD.  NULL is a no-op. */
void pa_ring_destroy(pa_ring_writer *w);

/* Opens the ring `name` read-only.
 * Errors: -ENOENT no such ring (no daemon running); -EACCES; -EPROTO not
 * a powerapi ring, or another layout version (the message names both);
 * -EAGAIN the ring is being created; -EOWNERDEAD its writer died or
 * stopped.  Thread-safe. */
int pa_ring_open(const char *name, pa_ring_reader **out);

/* Reads one window: the first one after *seq_inout (0: the newest).  On
 * success *seq_inout is that window's sequence number (1, 2, ...) and *out
 * points to a report owned by the reader, valid until its next read or
 * close.  Windows overwritten before the reader got them are skipped and
 * counted (pa_ring_info.lost).
 * Errors: -EAGAIN no newer window yet (the last report stays valid);
 * -EOWNERDEAD the writer died or stopped and no newer window remains;
 * -EINVAL.  Not thread-safe (one thread per reader; open several readers
 * for several threads). */
int pa_ring_read(pa_ring_reader *r, uint64_t *seq_inout, const pa_report **out);

/* Aggregates into one report every window after *seq_inout (0: no lower
 * bound) that ends within span_ns of the newest window's end (0: no
 * bound): a reader's own interval (1 s, 10 s views).  Each target's and
 * the system's power is its energy over the covered windows divided by
 * their total length (a target absent from a window counts 0 W there);
 * interval_s is that total length, energies (J) are the latest
 * cumulative ones, CPU time and network bytes are summed.  Perf counters
 * (counts per window) are summed and a target's multiplex is its lowest;
 * the report has the newest window's counter names, and only windows
 * with the same set of names (in any order) add to the counters: older
 * windows counted with other events (the daemon was reconfigured) add
 * power but no counts.  A target has counters (not NULL) when at least one
 * such window had them for it.  *seq_inout
 * becomes the newest window included.  Ownership, errors and thread
 * safety as pa_ring_read. */
int pa_ring_aggregate(pa_ring_reader *r, uint64_t *seq_inout, uint64_t span_ns,
                      const pa_report **out);

typedef struct pa_ring_info {
    uint32_t version;     /* layout version */
    uint32_t capacity;    /* windows */
    uint32_t max_targets; /* per window */
    uint32_t mode;        /* permission bits of the ring */
    pid_t writer_pid;
    int alive;            /* writer running and heartbeat fresh */
    uint64_t interval_ns; /* the writer's window length */
    uint64_t newest;      /* sequence of the newest window, 0 if none */
    uint64_t oldest;      /* oldest still in the ring, 0 if none */
    uint64_t heartbeat_age_ns;
    uint64_t lost;      /* windows this reader missed (overwritten) */
    uint64_t windows;   /* windows in the last read/aggregate */
    uint64_t truncated; /* targets the writer dropped in those windows */
} pa_ring_info;

/* Describes the ring and this reader.  Errors: -EINVAL.  Not thread-safe
 * (as pa_ring_read). */
int pa_ring_get_info(pa_ring_reader *r, pa_ring_info *out);

/* Unmaps and frees the reader.  NULL is a no-op. */
void pa_ring_close(pa_ring_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* POWERAPI_H */
