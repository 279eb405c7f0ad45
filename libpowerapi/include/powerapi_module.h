/*
 * powerapi_module.h - the module-helper header: what a sensor or a
 * formula may use beyond powerapi.h's "Writing modules" part.
 *
 * powerapi.h gives any module its ops table, its private pointer, its
 * options, the per-task CPU time and keyed frame data.  The built-in
 * modules need a little more of the library (the system's RAPL and NIC
 * readings, the tick's tasks with their counters and network bytes, the
 * CPU packages, the hardware database and calibrations, the CPU split
 * rapl-share and cpu-curve share), and they get it here, as any user's
 * module can: the role collectd's plugin.h and the kernel's
 * include/linux/powercap.h play for their plugins and drivers.  Installed
 * beside powerapi.h (the -dev package); a module includes this header,
 * never the library's internal.h (DESIGN.md section 4.6 names the one
 * built-in that still does, and why).
 *
 * Unless stated otherwise: the pa_frame_* calls are made inside a
 * sensor's sample callback with the frame it was given, the pa_delta_*
 * and pa_table_* calls inside a formula's compute callback with the delta
 * and table it was given, and their results are valid during that call;
 * like every module callback they run on the context's one sampling
 * thread, so they take no lock.  Target indexes i of a delta are those of
 * pa_delta_count; an index out of range reads as "no reading" and writes
 * nothing.
 */
#ifndef POWERAPI_MODULE_H
#define POWERAPI_MODULE_H

#include "powerapi.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the calling thread's last error message (pa_last_error) to the
 * printf-like text and returns err (a negative errno), for a callback's
 * "return pa_error_set(-EINVAL, "x: bad y");".  Thread-safe. */
int pa_error_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Probes the module named name (built-in or registered in env's
 * context) on env, as its probe callback does: 0, or its negative errno
 * with the reason in why; -ENOENT when no module has that name (why
 * says so); 0 for a sensor enabled in env's context and not failing (it
 * runs, with the options it was given).  For a formula whose probe is its
 * sensor's ("rapl-share: measured by rapl: ...").  Context-safe: call it
 * from a probe. */
int pa_env_probe(const pa_env *env, const char *name, char *why, size_t len);

/* ---- frames (sensors) ---- */

/* The time of this tick's frame (ns, the clock the context ticks on). */
uint64_t pa_frame_time_ns(const pa_frame *f);
/* Sensors: a note of this tick for the report's assumed list (printf-
 * like; "; "-separated, a note already there is not repeated; what does
 * not fit in 511 bytes is left out). */
void pa_frame_note(pa_frame *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The tick's number (one more at each tick of the context). */
uint64_t pa_frame_tick(const pa_frame *f);

/* Counters a task or cgroup holds (pa_frame_task_counters). */
#define PA_MAX_COUNTERS 16

/* Sensors that read per-task data: the processes and threads the context
 * knows, by index i from 0 to pa_frame_task_count(f) - 1 (the processes
 * first; stable during one sample call only).  pa_frame_task gives task
 * i: 0; -ENOENT when no sensor saw it at this tick (it is gone, or the
 * task-discovering sensor has not run yet); -ERANGE past the end (out
 * untouched on error). */
typedef struct pa_frame_task_info {
    pa_target_type type;  /* PA_TARGET_PROCESS or PA_TARGET_THREAD */
    pid_t pid;            /* the process (a thread's too) */
    pid_t tid;            /* threads: the thread, else 0 */
    uint64_t start_ticks; /* proc(5) stat field 22: with the id, its identity */
    int cgroup;           /* processes: its cgroup's index (pa_frame_cgroup_path),
                             -1 unknown */
} pa_frame_task_info;
size_t pa_frame_task_count(const pa_frame *f);
int pa_frame_task(const pa_frame *f, size_t i, pa_frame_task_info *out);
/* Sensors: task i's cumulative network bytes at this tick: rx and tx, and
 * rx + tx by the pa_nic_kind of each socket's route (by_kind NULL: none),
 * for the formulas' pa_delta_net_bytes.  0, or -ERANGE. */
int pa_frame_task_net(pa_frame *f, size_t i, uint64_t rx, uint64_t tx, const uint64_t by_kind[3]);
/* Sensors that declared counters (pa_module_counters_declare): task i's
 * cumulative counts at this tick, n values in the declared order, and the
 * lowest time_running / time_enabled of its counters (multiplexing).  0,
 * or -ERANGE (i, or n over PA_MAX_COUNTERS). */
int pa_frame_task_counters(pa_frame *f, size_t i, const double *v, size_t n, double multiplex);
/* Declares the per-task counters the module reports (names in order, at
 * most PA_MAX_COUNTERS; replaces what it declared before), for the
 * reports' counter columns and pa_delta_share_weights's cycles; flag the
 * table PA_MOD_TASK_COUNTERS so that they go with the module.  Call it
 * from start or configure.  0, -EINVAL (n too big), -ENOMEM. */
int pa_module_counters_declare(pa_module *m, const char *const *names, size_t n);

/* Cgroups (pa_ctx_opts cgroups on): whether the context follows them (1
 * or 0), how many it has interned so far, and cgroup g's path as
 * /proc/PID/cgroup gives it ("/system.slice/x.service"); NULL past the
 * end. */
int pa_frame_cgroups_on(const pa_frame *f);
size_t pa_frame_cgroup_count(const pa_frame *f);
const char *pa_frame_cgroup_path(const pa_frame *f, size_t g);
/* Sensors that count a cgroup as a whole (with the processes that came
 * and went between ticks): cgroup g's cumulative counts at this tick (n
 * values as declared) and their multiplexing; fresh when the counters
 * were (re)opened, so that these are a new baseline, not an increase.  0,
 * -ERANGE (g, or n over PA_MAX_COUNTERS), -ENOMEM. */
int pa_frame_cgroup_counters(pa_frame *f, size_t g, const double *v, size_t n, double multiplex,
                             bool fresh);
/* Sensors: the system-wide unhalted cycles (cumulative, scaled by
 * multiplexing) for the CPU split; sets PA_HAVE_CYCLES. */
void pa_frame_cycles_set(pa_frame *f, double cycles);

/* ---- reading files under a root (pa_env_procfs, _sysfs, _devfs) ---- */

/* Joins root and the printf-like rel into buf ("root/rel"): 0, or
 * -ENAMETOOLONG when it does not fit.  Thread-safe. */
int pa_path_join(char *buf, size_t len, const char *root, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Reads the whole small file root/rel into buf, NUL-terminated (what does
 * not fit is left out): the bytes read, or -errno.  Thread-safe. */
ssize_t pa_file_read(const char *root, const char *rel, char *buf, size_t len);
/* Reads fd from offset 0 into buf, NUL-terminated, for a file kept open
 * and read again each tick (sysfs, procfs): the bytes read, or -errno.
 * Thread-safe. */
ssize_t pa_fd_read(int fd, char *buf, size_t len);
/* Parses an unsigned decimal at *p (after spaces and tabs) and advances
 * *p past it: 0; -EINVAL none there, -ERANGE over 64 bits (*p and out
 * untouched on error).  Thread-safe. */
int pa_u64_parse(const char **p, uint64_t *out);
/* Parses a sysfs CPU list ("0-3,8,10-11") into cpus: the count (at most
 * cap).  Thread-safe. */
int pa_cpulist_parse(const char *s, int *cpus, int cap);

/* ---- what the window holds (pa_delta_have) ---- */

/* Readings present in both frames of a window. */
enum {
    PA_HAVE_CPU = 1u << 0,    /* busy/idle CPU time, online CPUs */
    PA_HAVE_FREQ = 1u << 1,   /* time per frequency */
    PA_HAVE_RAPL = 1u << 2,   /* RAPL energy (pa_delta_rapl) */
    PA_HAVE_NIC = 1u << 3,    /* interface bytes (pa_delta_nic) */
    PA_HAVE_CYCLES = 1u << 4, /* system-wide unhalted cycles */
    PA_HAVE_SOCK = 1u << 5,   /* per-socket TCP totals (pa_delta_sock_bytes) */
};

/* The PA_HAVE_* readings both frames of the window hold. */
unsigned pa_delta_have(const pa_frame_delta *d);

/* ---- the CPUs' time (procfs-cpu) ---- */

/* Online CPUs of the window (at least 1). */
unsigned pa_delta_ncpus(const pa_frame_delta *d);
/* Busy CPU seconds of the window: the system's (PA_HAVE_CPU), else the
 * sum of the processes' CPU time, and then *summed is true (say so with
 * pa_table_assume). */
double pa_delta_cpu_busy_s(const pa_frame_delta *d, bool *summed);
/* The CPU model name of this tick's frame (/proc/cpuinfo "model name"),
 * "" when unknown. */
const char *pa_delta_cpu_model(const pa_frame_delta *d);
/* The nominal frequency (MHz) cpuinfo gives when there is no cpufreq, 0
 * when unknown or when cpufreq gives the frequencies. */
double pa_delta_nominal_mhz(const pa_frame_delta *d);

/* Time at one frequency over the window, summed over the CPUs. */
typedef struct pa_freq_time {
    uint32_t khz;
    uint64_t time_ns;
} pa_freq_time;
/* Frequencies of the window (0 without PA_HAVE_FREQ), and frequency i of
 * them into out: 0, or -ERANGE (out untouched). */
size_t pa_delta_freq_count(const pa_frame_delta *d);
int pa_delta_freq(const pa_frame_delta *d, size_t i, pa_freq_time *out);

/* ---- RAPL (the rapl sensor) ---- */

typedef enum pa_rapl_kind {
    PA_RAPL_PKG = 0,
    PA_RAPL_CORE,   /* PP0, part of the package */
    PA_RAPL_UNCORE, /* PP1, part of the package */
    PA_RAPL_DRAM,
    PA_RAPL_PSYS,
} pa_rapl_kind;

/* RAPL domains a frame holds, over every package. */
#define PA_MAX_RAPL 32

/* One RAPL domain's reading. */
typedef struct pa_rapl_reading {
    int socket; /* physical package id */
    pa_rapl_kind kind;
    uint64_t energy_uj; /* cumulative, wraparound already unfolded */
} pa_rapl_reading;

/* Sensors: this tick's RAPL readings, n domains (replacing any of the
 * tick), read through source ("powercap", "perf", "msr"; at most 23
 * bytes), for the formulas' pa_delta_rapl; sets PA_HAVE_RAPL.  0, or
 * -EINVAL (n over PA_MAX_RAPL, source NULL). */
int pa_frame_rapl_set(pa_frame *f, const pa_rapl_reading *r, size_t n, const char *source);
/* Sensors: counts one domain whose counter went back or jumped this tick
 * (its energy is not counted), for the report's rapl_resets. */
void pa_frame_rapl_reset(pa_frame *f);

/* One RAPL domain's energy over the window. */
typedef struct pa_rapl_window {
    int socket; /* physical package id */
    pa_rapl_kind kind;
    double energy_j;
} pa_rapl_window;

/* RAPL domains of the window (0 without PA_HAVE_RAPL), and domain i of
 * them into out: 0, or -ERANGE (i out of range; out untouched). */
size_t pa_delta_rapl_count(const pa_frame_delta *d);
int pa_delta_rapl(const pa_frame_delta *d, size_t i, pa_rapl_window *out);

/* ---- the machine's CPUs ---- */

/* Entries of a CPU -> package map (CPUs 0 to PA_MAX_CPUS - 1). */
#define PA_MAX_CPUS 1024

/* This machine's CPU -> physical package map (<sysfs> topology of the
 * online CPUs; -1 unknown) into map[cap]: the entries used (highest CPU +
 * 1), 0 when no CPU's package is known.  For a module's start (the
 * frame's own map is pa_delta_cpu_packages).  Thread-safe. */
unsigned pa_env_cpu_packages(const pa_env *env, int16_t *map, size_t cap);
/* The physical package of one CPU (<sysfs> topology), -1 unknown.
 * Thread-safe. */
int pa_env_cpu_package(const pa_env *env, int cpu);
/* Sensors: this tick's CPU -> physical package map (n entries, -1
 * unknown), for the formulas' pa_delta_cpu_packages.  0, or -EINVAL (n
 * over PA_MAX_CPUS). */
int pa_frame_cpu_packages_set(pa_frame *f, const int16_t *map, unsigned n);

/* Busy fraction over the window of the CPUs whose map entry is pkg
 * (/proc/stat cpuN lines of both frames), -1 when none has both. */
double pa_delta_cpus_busy(const pa_frame_delta *d, const int16_t *map, unsigned nmap, int pkg);

/* The CPU -> physical package map of this tick's frame (*map[cpu], -1
 * unknown; owned by the context): its entries, 0 when unknown. */
unsigned pa_delta_cpu_packages(const pa_frame_delta *d, const int16_t **map);
/* Busy fraction over the window of package pkg's CPUs (/proc/stat cpuN
 * lines of both frames), -1 when none of them has both. */
double pa_delta_package_busy(const pa_frame_delta *d, int pkg);
/* The CPU target i last ran on (proc(5) stat field 39), -1 unknown. */
int pa_delta_last_cpu(const pa_frame_delta *d, size_t i);
/* 1 when the context watches every process (pa_watch_all), else 0. */
int pa_delta_all_watched(const pa_frame_delta *d);

/* ---- the CPU split of rapl-share and cpu-curve ---- */

/* The weights of the split: the cycles of the perf sensor when it counts
 * them, CPU time otherwise. */
typedef struct pa_share_w {
    int ci;       /* the cycles counter's index, -1 none */
    bool cycles;  /* weights are cycles */
    bool all;     /* every process is watched */
    double w_all; /* the system's weight, never less than the processes' sum */
} pa_share_w;
/* Fills sw for the window. */
void pa_delta_share_weights(const pa_frame_delta *d, pa_share_w *sw);
/* Target i's weight under sw: its cycles or its CPU seconds in the
 * window, 0 when it has none. */
double pa_delta_share_w(const pa_frame_delta *d, size_t i, const pa_share_w *sw);
/* Splits the window's CPU power p: the active watts go to the targets by
 * their weights over the system's (what no process accounts for goes to
 * the unaccounted target when every process is watched); sets the system
 * cpu watts to p and the idle watts to p - active. */
void pa_table_share_split(const pa_frame_delta *d, pa_power_table *t, double p, double active);

/* The load-power curve this machine's CPU has, for a CPU formula's fits:
 * 1 when a calibration file or a hwdb curve matches this CPU, 2 on a
 * virtual machine without one (the default per-vCPU curve), 0 otherwise;
 * why says which (and why a calibration given was not used). */
int pa_curve_match(const pa_env *env, char *why, size_t len);

/* The default curve, per vCPU, of Cloud Carbon Footprint's methodology
 * (cloudcarbonfootprint.org/docs/methodology, "Compute"): the averages
 * over the AWS processor micro-architectures of the min (idle) and max
 * (100 % load) watts per vCPU it derives from SPECpower_ssj2008 results:
 * 0.74 W and 3.5 W, linear in between (its Average Watts formula).
 * Always labelled assumed. */
#define PA_CURVE_VCPU_MIN_W 0.74
#define PA_CURVE_VCPU_MAX_W 3.5

/* Power (W) of curve c at utilisation u (0..1) and frequency mhz from its
 * per-frequency curves (c->nfreq >= 2): linear in the frequency between
 * the two nearest, the end curves outside them; pa_curve_power_w with
 * fewer than 2.  Thread-safe. */
double pa_curve_power_freq_w(const pa_curve *c, double mhz, double u);
/* Parses "LOAD%:W,LOAD%:W" (or '+'-separated, as in options) into
 * c->load, c->watts and c->n: 0, or -EINVAL with the reason in why.
 * Thread-safe. */
int pa_curve_points_parse(const char *s, pa_curve *c, char *why, size_t why_len);
/* A calibration for this CPU model: the context's (pa_env_calibration),
 * else $POWERAPI_CALIBRATION's, used whatever CPU it was made on, else
 * one at a standard place made on this model, read into out with its
 * file's name in path.  1 found, 0 none; when a file given cannot be used,
 * bad (when not NULL) gets why ("calibration not used: ...").  Reads
 * files: call it once per model, not per tick. */
int pa_calibration_find(const pa_env *env, const char *model, pa_curve *out, char *path,
                        size_t plen, char *bad, size_t badlen);

/* The relative error of the window's modelled cpu figure (0.05 = 5 %;
 * < 0 unknown, as it is unless a formula sets it): the model_error of
 * the report's system figures. */
void pa_table_set_model_error(pa_power_table *t, double err);

/* Marks the window's cpu figure as measured (PA_POWER_MEASURED) and sets
 * the RAPL DRAM and PSYS watts of the report. */
void pa_table_set_measured(pa_power_table *t, double dram_w, double psys_w);

/* What the formulas that computed before this one (PA_MOD_AFTER_FORMULAS)
 * wrote in the window: the system's watts of component id comp (0 for an
 * unknown id or one nobody computed). */
double pa_table_system_comp_w(const pa_power_table *t, pa_component comp);
/* Target i's watts of component id comp in the window (0 when none). */
double pa_table_target_comp_w(const pa_power_table *t, size_t i, pa_component comp);
/* Whether the window's cpu figure is measured (pa_table_set_measured),
 * with the RAPL DRAM watts it set in *dram_w (0 when not measured; NULL
 * accepted). */
bool pa_table_measured_get(const pa_power_table *t, double *dram_w);
/* The name of component id comp of the window's context ("cpu", "nic",
 * "gpu"...), NULL beyond the last: pa_component_name for a formula,
 * which holds the context's lock already. */
const char *pa_delta_component_name(const pa_frame_delta *d, pa_component comp);

/* ---- network (the nic sensor) ---- */

typedef enum pa_nic_kind {
    PA_NIC_PHYSICAL = 0,
    PA_NIC_VIRTUAL,
    PA_NIC_LOOPBACK,
} pa_nic_kind;

/* Interfaces a frame holds. */
#define PA_MAX_IFACES 32

/* One interface's reading. */
typedef struct pa_nic_reading {
    char name[16];
    pa_nic_kind kind;
    uint32_t speed_mbps;                                 /* 0 when unknown */
    char driver[32];                                     /* "" when unknown */
    uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets; /* cumulative */
} pa_nic_reading;

/* Sensors: this tick's interfaces, n readings (replacing any of the
 * tick), for the formulas' pa_delta_nic; sets PA_HAVE_NIC.  0, or -EINVAL
 * (n over PA_MAX_IFACES). */
int pa_frame_nic_set(pa_frame *f, const pa_nic_reading *r, size_t n);
/* Sensors: the cumulative rx + tx bytes of every TCP socket seen, by the
 * pa_nic_kind of its route, for pa_delta_sock_bytes; sets PA_HAVE_SOCK. */
void pa_frame_sock_bytes_set(pa_frame *f, const uint64_t bytes[3]);

/* One interface over the window. */
typedef struct pa_nic_window {
    char name[16];
    pa_nic_kind kind;
    uint32_t speed_mbps; /* 0 when unknown */
    char driver[32];     /* "" when unknown */
    uint64_t rx_bytes, tx_bytes;
} pa_nic_window;

/* Interfaces of the window (0 without PA_HAVE_NIC), and interface i of
 * them into out: 0, or -ERANGE (out untouched). */
size_t pa_delta_nic_count(const pa_frame_delta *d);
int pa_delta_nic(const pa_frame_delta *d, size_t i, pa_nic_window *out);
/* Bytes (rx + tx) of every TCP socket the nic sensor saw over the window,
 * by the pa_nic_kind of its route: 0, or -ENODATA without PA_HAVE_SOCK
 * (bytes untouched). */
int pa_delta_sock_bytes(const pa_frame_delta *d, uint64_t bytes[3]);
/* Target i's network bytes over the window: by_kind[k] the rx + tx bytes
 * of its sockets by pa_nic_kind, *rxtx its rx + tx bytes.  0; -ENOENT no
 * reading this tick; -ENODATA one this tick but none the tick before
 * (outputs untouched on error). */
int pa_delta_net_bytes(const pa_frame_delta *d, size_t i, uint64_t by_kind[3], uint64_t *rxtx);

/* ---- the hardware database (data/hwdb.txt, DESIGN.md section 7) ---- */

/* The database m's context reads: the one it was given (pa_ctx_opts.hwdb),
 * else the installed one, else the source tree's; NULL when none is
 * installed. */
const char *pa_module_hwdb(const pa_module *m);

/* The "curve" record (a load-power curve) matching the CPU model (the
 * longest match) in the database at hwdb_path (NULL as in
 * pa_hwdb_cpu_find).  0; -ENOENT none (no message); -errno with a
 * message.  Thread-safe. */
int pa_hwdb_curve_find(const char *hwdb_path, const char *model, pa_curve *out);

/* A CPU model's record. */
typedef struct pa_hwdb_cpu {
    char match[96]; /* substring of /proc/cpuinfo model name */
    double tdp_w;
    double base_mhz;
    size_t nvolt;
    struct {
        double mhz, volt;
    } volt[16];
    char source[160]; /* data sheet */
    unsigned threads; /* hardware threads per package, 0 = not given */
} pa_hwdb_cpu;

/* The CPU record whose match string model contains (the longest match)
 * in the database at hwdb_path (NULL: pa_module_hwdb's default).  0;
 * -ENOENT none (no message); -errno when the file cannot be read or has a
 * bad line (message names the file and line).  Thread-safe. */
int pa_hwdb_cpu_find(const char *hwdb_path, const char *model, pa_hwdb_cpu *out);
/* Parses "MHZ:VOLTS,MHZ:VOLTS" (or '+'-separated, as in options) into
 * cpu->volt and cpu->nvolt: 0, or -EINVAL with the reason in why.
 * Thread-safe. */
int pa_hwdb_volt_parse(const char *s, pa_hwdb_cpu *cpu, char *why, size_t why_len);

/* A NIC driver's record: power per link state. */
typedef struct pa_hwdb_nic {
    char match[32]; /* driver name, or "default" */
    size_t nstates;
    struct {
        double mbps, watts;
    } state[8];
    double idle_w;
    char source[160];
} pa_hwdb_nic;

/* The record of driver ("e1000e"; "default" is a record like any other)
 * in the database at hwdb_path (NULL: the installed one, as
 * pa_env_hwdb's NULL means).  0; -ENOENT none (no message); -errno when
 * the file cannot be read (message set).  Reads the file at each call:
 * cache what you look up.  Thread-safe. */
int pa_hwdb_nic_find(const char *hwdb_path, const char *driver, pa_hwdb_nic *out);

#ifdef __cplusplus
}
#endif

#endif /* POWERAPI_MODULE_H */
