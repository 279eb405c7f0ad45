/*
 * procfs_cpu.c - the "procfs-cpu" sensor.
 *
 * System: busy/idle CPU time and online CPUs from <procfs>/stat, uptime
 * from <procfs>/uptime, the CPU model and nominal MHz from
 * <procfs>/cpuinfo (read once at start), and the time spent at each
 * frequency from cpufreq's stats/time_in_state under <sysfs>.
 *
 * Tasks: CPU time of processes from <procfs>/<pid>/stat (utime+stime) and
 * of threads from <procfs>/<pid>/task/<tid>/schedstat (ns), falling back
 * to the thread's stat.  Which: every process (watch_all), or the watched
 * pids; a pid watched with PA_WATCH_CHILDREN needs every process's ppid,
 * so all are read and the pid and its descendants registered.  Threads:
 * those of pids watched with PA_WATCH_THREADS and, for a tree watched
 * with both flags (not under watch_all), of every process of the tree.
 *
 * Why stat and not schedstat for processes: <procfs>/<pid>/schedstat is
 * the MAIN THREAD's run time only.  Checked on the development VM (Linux,
 * 2 vCPUs) with a process whose two threads each spun 1 s: schedstat read
 * 0.997 s while stat utime+stime read 1.99 s (199 ticks).  stat sums every
 * thread, dead ones included, at USER_HZ (10 ms) resolution.
 *
 * Cost: on a real procfs each task's stat (and a thread's schedstat) is
 * opened once and re-read with pread(2) at offset 0, which regenerates the
 * record; once the process is reaped the pread fails with ESRCH, even if
 * the pid was reused meanwhile, so a kept fd never reads another process.
 * On a directory tree that is not a procfs (test fixtures) an unlinked file
 * stays readable through an open fd, so fds are not kept there.  At most
 * half of RLIMIT_NOFILE is kept open; beyond that, open/read/close.  The
 * trade (bench/bench_tick.c, 2-vCPU VM): a pread costs about 0.6 x an
 * open/read/close, but each kept fd holds about 4.5 KiB of kernel memory
 * (a struct file and the seq_file page).
 * Directories are listed with getdents64 into a buffer owned by the
 * module, so a tick allocates nothing once the task tables have grown.
 */
#include "internal.h"
#include "taskstats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PC_PROC_SUPER_MAGIC 0x9fa0
#define PC_SYSFS_MAGIC 0x62656572
#define PC_DENTS_SIZE 32768
#define PC_REC_SIZE 2048           /* one stat record: ~300 bytes in practice */
#define PC_SYSSTAT_INIT 16384      /* <procfs>/stat cpu lines; grows */
#define PC_AUX_SIZE 8192           /* cgroup, schedstat, time_in_state */
#define PC_TIS_UNIT_NS 10000000ull /* time_in_state counts 10 ms units */

/* One parsed <procfs>/<pid>/stat record (proc(5) field numbers). */
typedef struct pc_rec {
    pid_t pid;              /* (1) */
    pid_t ppid;             /* (4) */
    int last_cpu;           /* (39) processor */
    uint64_t utime;         /* (14) clock ticks */
    uint64_t stime;         /* (15) */
    uint64_t cutime;        /* (16) */
    uint64_t cstime;        /* (17) */
    uint64_t start_ticks;   /* (22) starttime */
    char comm[PA_COMM_MAX]; /* (2) */
} pc_rec;

/* A process met while scanning every pid for PA_WATCH_CHILDREN. */
typedef struct pc_scan {
    pc_rec rec;
    signed char mark; /* 1 register, -1 not, 0 unknown yet */
} pc_scan;

/* One time_in_state file and the CPUs it stands for. */
typedef struct pc_freqsrc {
    char *path;
    int fd;          /* kept open on a real sysfs, else -1 */
    unsigned weight; /* online CPUs of the policy */
} pc_freqsrc;

typedef struct pc_state {
    int procfd;      /* the procfs root, O_DIRECTORY */
    int statfd;      /* <procfs>/stat */
    int uptimefd;    /* <procfs>/uptime */
    bool keep_fds;   /* procfs root is a real procfs */
    bool keep_sysfs; /* sysfs root is a real sysfs */
    long clk_tck;
    size_t fd_budget; /* task fds we may keep open */
    size_t fds_held;  /* kept task fds at the end of the last tick */
    size_t fds_new;   /* kept task fds opened this tick */
    size_t fds_count; /* kept task fds counted this tick */

    char note[256]; /* for every report: why some processes are missing */
    char cpu_model[96];
    double cpuinfo_mhz; /* "cpu MHz" of cpuinfo */
    double base_mhz;    /* intel_pstate's base_frequency, 0 if none */

    char *sysbuf; /* <procfs>/stat */
    size_t sysbuf_cap;
    char rec[PC_REC_SIZE];
    char aux[PC_AUX_SIZE];
    char dents[PC_DENTS_SIZE];
    char tdents[PC_DENTS_SIZE]; /* task/ of one process */

    pc_freqsrc *freq;
    size_t nfreq;

    /* exits (DESIGN.md section 2, "Exits"): the kernel's records while
     * every process is watched on the real procfs, or a file's (tests) */
    bool exits_off;    /* exits=off */
    char *exitfile;    /* exitfile=PATH */
    pa__taskstats *ts; /* open while every process is watched */
    bool ts_tried;     /* refused: the estimate, and why */
    char ts_why[300];

    pc_scan *scan; /* PA_WATCH_CHILDREN: every process of the tick */
    size_t nscan, scan_cap;
    int32_t *hash;   /* pid -> index in scan, open addressing */
    size_t hash_cap; /* power of two */
} pc_state;

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

/* One pread at offset 0.  pa__pread_all loops until a read returns 0,
 * and on procfs every pread regenerates the whole record: a second call
 * doubles the cost of a tick.  A procfs or sysfs record comes in one read
 * when the buffer is large enough; a full buffer is reported as -EFBIG so
 * that a record is never silently cut. */
static ssize_t pc_pread(int fd, char *buf, size_t len)
{
    ssize_t r;
    do
        r = pread(fd, buf, len - 1, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if ((size_t)r == len - 1)
        return -EFBIG;
    buf[r] = '\0';
    return r;
}

static int pc_openat(int dirfd, const char *rel)
{
    int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Reads rel (relative to dirfd) with open/pread/close. */
static ssize_t pc_read_at(int dirfd, const char *rel, char *buf, size_t len)
{
    int fd = pc_openat(dirfd, rel);
    if (fd < 0)
        return fd;
    ssize_t n = pc_pread(fd, buf, len);
    close(fd);
    return n;
}

static bool pc_may_keep(const pc_state *p)
{
    return p->keep_fds && p->fds_held + p->fds_new < p->fd_budget;
}

/*
 * Reads a task's file through its kept fd *slot when there is one, else
 * by path.  A kept fd that fails (ESRCH: reaped) is closed and the path
 * tried once, as the pid may belong to a new process now.  With keep, a
 * newly opened fd is returned in *fresh (the caller stores it in the task
 * or closes it), else closed here.
 */
static ssize_t pc_read_task(pc_state *p, int *slot, const char *rel, char *buf, size_t len,
                            bool keep, int *fresh)
{
    *fresh = -1;
    if (slot && *slot >= 0) {
        ssize_t n = pc_pread(*slot, buf, len);
        if (n >= 0)
            return n;
        close(*slot);
        *slot = -1;
    }
    int fd = pc_openat(p->procfd, rel);
    if (fd < 0)
        return fd;
    ssize_t n = pc_pread(fd, buf, len);
    if (n >= 0 && keep && pc_may_keep(p)) {
        *fresh = fd;
        p->fds_new++;
    } else {
        close(fd);
    }
    return n;
}

/* Stores a fresh fd in a task slot (or closes it if the slot is taken). */
static void pc_adopt(pc_state *p, int *slot, int fresh)
{
    if (fresh < 0)
        return;
    if (*slot < 0) {
        *slot = fresh;
    } else {
        close(fresh);
        p->fds_new--;
    }
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

static uint64_t pc_ticks_ns(const pc_state *p, uint64_t ticks)
{
    uint64_t hz = (uint64_t)p->clk_tck;
    return ticks / hz * 1000000000ull + ticks % hz * 1000000000ull / hz;
}

/*
 * Parses a <procfs>/<pid>/stat or task/<tid>/stat record (proc(5)).  The
 * comm is what lies between the FIRST '(' and the LAST ')', so names with
 * spaces and parentheses parse.  Any missing or malformed field, or a
 * record that does not end with a newline (truncated), rejects the whole
 * record: -EPROTO.
 */
static int pc_parse_stat(const char *buf, size_t n, pid_t want, pc_rec *r)
{
    const char *p = buf, *end = buf + n;
    uint64_t v;
    pc_rec out;

    memset(&out, 0, sizeof(out));
    if (n < 4 || buf[n - 1] != '\n')
        return -EPROTO; /* empty or truncated */
    /* (1) pid */
    if (*p < '0' || *p > '9' || pa__parse_u64(&p, &v) || v != (uint64_t)want)
        return -EPROTO;
    out.pid = want;
    /* (2) comm, "(name)" */
    if (p[0] != ' ' || p[1] != '(')
        return -EPROTO;
    const char *name = p + 2;
    const char *close_paren = memrchr(name, ')', (size_t)(end - name));
    if (!close_paren)
        return -EPROTO;
    size_t clen = (size_t)(close_paren - name);
    if (clen >= PA_COMM_MAX) /* kernel threads may show longer names */
        clen = PA_COMM_MAX - 1;
    memcpy(out.comm, name, clen);
    out.comm[clen] = '\0';
    p = close_paren + 1;
    /* (3) state: one character */
    if (p[0] != ' ' || p[1] == ' ' || p[1] == '\n' || p[1] == '\0' || p[2] != ' ')
        return -EPROTO;
    p += 2;
    /* (4) .. (39): decimal fields, some signed (7 tty_nr, 8 tpgid,
     * 18 priority, 19 nice); the ones used here must be unsigned. */
    for (int field = 4; field <= 39; field++) {
        bool neg = false;
        if (*p != ' ')
            return -EPROTO;
        p++;
        if (*p == '-') {
            neg = true;
            p++;
        }
        if (*p < '0' || *p > '9' || pa__parse_u64(&p, &v))
            return -EPROTO;
        switch (field) {
        case 4: /* ppid */
            if (neg || v > INT32_MAX)
                return -EPROTO;
            out.ppid = (pid_t)v;
            break;
        case 14: /* utime, clock ticks */
            out.utime = v;
            break;
        case 15: /* stime */
            out.stime = v;
            break;
        case 16: /* cutime: waited-for children, ticks */
            out.cutime = v;
            break;
        case 17: /* cstime */
            out.cstime = v;
            break;
        case 22: /* starttime, ticks after boot: identity with the pid */
            out.start_ticks = v;
            break;
        case 39: /* processor last run on */
            if (neg || v > INT32_MAX)
                return -EPROTO;
            out.last_cpu = (int)v;
            break;
        default:
            continue;
        }
        if (neg)
            return -EPROTO;
    }
    /* (40) and later fields: present on every kernel since 2.6, checked
     * only for being the rest of one line. */
    if (*p != ' ' && *p != '\n')
        return -EPROTO;
    *r = out;
    return 0;
}

/* First field of schedstat: ns on CPU. */
static int pc_parse_schedstat(const char *buf, uint64_t *ns)
{
    const char *p = buf;
    uint64_t v;
    if (*p < '0' || *p > '9' || pa__parse_u64(&p, &v) || *p != ' ')
        return -EPROTO;
    *ns = v;
    return 0;
}

/* "user nice system idle iowait irq softirq ..." at q: busy and idle
 * ticks.  0, or -EPROTO. */
static int pc_parse_cpu_fields(const char *q, uint64_t *busy, uint64_t *idle)
{
    uint64_t f[7];
    for (int i = 0; i < 7; i++) {
        while (*q == ' ')
            q++;
        if (*q < '0' || *q > '9' || pa__parse_u64(&q, &f[i]))
            return -EPROTO;
    }
    if (*q != ' ' && *q != '\n')
        return -EPROTO;
    *busy = f[0] + f[1] + f[2] + f[5] + f[6];
    *idle = f[3] + f[4];
    return 0;
}

/*
 * <procfs>/stat: "cpu  user nice system idle iowait irq softirq steal
 * guest guest_nice" (proc(5), USER_HZ ticks) then one "cpuN" line per
 * online CPU.  guest and guest_nice are already counted in user and
 * nice; steal is time the hypervisor gave to others, so it is neither
 * busy nor idle here.  With s, each CPU's busy and idle ticks go to
 * s->cpu_busy_ns/cpu_idle_ns[N] (still in ticks: the caller converts),
 * UINT64_MAX for a CPU without a line (offline).  Returns -ENOBUFS when
 * the buffer ended inside the cpu lines, -EPROTO when malformed.
 */
static int pc_parse_sysstat(const char *buf, size_t n, bool full, uint64_t *busy, uint64_t *idle,
                            unsigned *ncpus, pa_sysread *s)
{
    const char *p = buf, *end = buf + n;
    unsigned cpus = 0, top = 0;
    bool agg = false;

    while (p < end && !strncmp(p, "cpu", 3)) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            return full ? -ENOBUFS : -EPROTO;
        if (p[3] == ' ') {
            if (agg || pc_parse_cpu_fields(p + 3, busy, idle) < 0)
                return -EPROTO;
            agg = true;
        } else if (p[3] >= '0' && p[3] <= '9') {
            const char *q = p + 3;
            uint64_t cpu, b, i;
            if (pa__parse_u64(&q, &cpu) || *q != ' ' || pc_parse_cpu_fields(q, &b, &i) < 0)
                return -EPROTO;
            if (s && cpu < PA_MAX_CPUS) {
                for (unsigned k = top; k < cpu; k++)
                    s->cpu_busy_ns[k] = s->cpu_idle_ns[k] = UINT64_MAX;
                s->cpu_busy_ns[cpu] = b;
                s->cpu_idle_ns[cpu] = i;
                if (cpu + 1 > top)
                    top = (unsigned)cpu + 1;
            }
            cpus++;
        } else {
            return -EPROTO;
        }
        p = eol + 1;
    }
    if (p >= end && full)
        return -ENOBUFS; /* the cpuN lines may go on */
    if (!agg || cpus == 0)
        return -EPROTO;
    *ncpus = cpus;
    if (s)
        s->ncpu_time = top;
    return 0;
}

/* "289.46 549.65": seconds since boot, 2 decimals. */
static int pc_parse_uptime(const char *buf, uint64_t *ns)
{
    const char *p = buf;
    uint64_t s, frac = 0, scale = 1000000000ull;
    if (*p < '0' || *p > '9' || pa__parse_u64(&p, &s))
        return -EPROTO;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;
            p++;
        }
    }
    if (*p != ' ' && *p != '\n')
        return -EPROTO;
    *ns = s * 1000000000ull + frac;
    return 0;
}

/* ------------------------------------------------------------------ */
/* System readings                                                     */
/* ------------------------------------------------------------------ */

static int pc_read_sysstat(pc_state *p, const char *procfs, uint64_t *busy, uint64_t *idle,
                           unsigned *ncpus, pa_sysread *s)
{
    for (;;) {
        ssize_t n = pc_pread(p->statfd, p->sysbuf, p->sysbuf_cap);
        bool full = false;
        if (n == -EFBIG) {
            n = (ssize_t)p->sysbuf_cap - 1;
            p->sysbuf[n] = '\0';
            full = true;
        }
        if (n < 0)
            return pa__err((int)n,
                           "procfs-cpu: cannot read %s/stat: %s; point the "
                           "procfs root at a mounted procfs (--procfs)",
                           procfs, strerror((int)-n));
        int rc = pc_parse_sysstat(p->sysbuf, (size_t)n, full, busy, idle, ncpus, s);
        if (rc == -ENOBUFS && p->sysbuf_cap < (64u << 20)) {
            /* one byte more than it holds: its size doubles */
            if (PA__GROW(p->sysbuf, p->sysbuf_cap, p->sysbuf_cap + 1, 4096) < 0)
                return pa__err(-ENOMEM, "procfs-cpu: out of memory");
            continue;
        }
        if (rc < 0)
            return pa__err(-EPROTO,
                           "procfs-cpu: %s/stat is malformed (no 'cpu' and "
                           "'cpuN' lines as in proc(5)); point the procfs "
                           "root at a mounted procfs (--procfs)",
                           procfs);
        return 0;
    }
}

/* Counts the CPUs of a list such as "0 1 2 3" (affected_cpus). */
static unsigned pc_count_cpus(const char *s)
{
    unsigned n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\n' || *s == '\t')
            s++;
        if (*s < '0' || *s > '9')
            break;
        while (*s >= '0' && *s <= '9')
            s++;
        n++;
    }
    return n;
}

static void pc_freq_clear(pc_state *p)
{
    for (size_t i = 0; i < p->nfreq; i++) {
        free(p->freq[i].path);
        if (p->freq[i].fd >= 0)
            close(p->freq[i].fd);
    }
    free(p->freq);
    p->freq = NULL;
    p->nfreq = 0;
}

static int pc_freq_add(pc_state *p, const char *path, unsigned weight)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* no stats for this policy (e.g. intel_pstate) */
    if (!p->keep_sysfs) {
        close(fd);
        fd = -1;
    }
    pc_freqsrc *nv = realloc(p->freq, (p->nfreq + 1) * sizeof(*nv));
    char *dup = strdup(path);
    if (!nv || !dup) {
        free(dup);
        if (nv)
            p->freq = nv;
        if (fd >= 0)
            close(fd);
        return -ENOMEM;
    }
    p->freq = nv;
    p->freq[p->nfreq++] = (pc_freqsrc){.path = dup, .fd = fd, .weight = weight ? weight : 1};
    return 0;
}

static int pc_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Finds the time_in_state files: one per cpufreq policy
 * (<sysfs>/devices/system/cpu/cpufreq/policyN/stats/time_in_state, which
 * counts the policy's time, so it stands for each of its affected_cpus),
 * else the per-CPU layout of older kernels (cpuN/cpufreq/stats/...).
 * None (VMs, intel_pstate) is not an error: no PA_HAVE_FREQ, and the
 * formula uses the nominal frequency: intel_pstate's base_frequency when
 * there is one (cpuinfo's "cpu MHz" is then only the current frequency
 * of one CPU), else cpuinfo's "cpu MHz" (fixed in a VM).
 */
static int pc_freq_discover(pc_state *p, const char *sysfs)
{
    char path[PA_PATH_MAX], buf[1024];
    const char *layouts[2] = {"devices/system/cpu/cpufreq", "devices/system/cpu"};
    int rc = 0;

    pc_freq_clear(p);
    for (int l = 0; l < 2 && p->nfreq == 0 && rc == 0; l++) {
        if (pa__path(path, sizeof(path), sysfs, "%s", layouts[l]) < 0)
            return 0;
        DIR *d = opendir(path);
        if (!d)
            continue;
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const char *pre = l == 0 ? "policy" : "cpu";
            size_t pl = strlen(pre);
            if (strncmp(e->d_name, pre, pl) || e->d_name[pl] < '0' || e->d_name[pl] > '9')
                continue;
            char **nv = realloc(names, (nn + 1) * sizeof(*nv));
            if (!nv || !(nv[nn] = strdup(e->d_name))) {
                names = nv ? nv : names;
                rc = -ENOMEM;
                break;
            }
            names = nv;
            nn++;
        }
        closedir(d);
        if (nn > 1)
            qsort(names, nn, sizeof(*names), pc_name_cmp);
        for (size_t i = 0; i < nn && rc == 0; i++) {
            unsigned weight = 1;
            if (l == 0 && p->base_mhz == 0) {
                /* intel_pstate keeps no time_in_state but names the
                 * base (nominal) frequency, in kHz */
                char rel[512];
                uint64_t khz;
                const char *q = buf;
                snprintf(rel, sizeof(rel), "%s/%s/base_frequency", layouts[l], names[i]);
                if (pa__read_file(sysfs, rel, buf, sizeof(buf)) > 0 &&
                    pa__parse_u64(&q, &khz) == 0 && khz > 0)
                    p->base_mhz = (double)khz / 1000.0;
            }
            if (l == 0) {
                const char *wf[2] = {"affected_cpus", "related_cpus"};
                for (int w = 0; w < 2; w++) {
                    char rel[512];
                    snprintf(rel, sizeof(rel), "%s/%s/%s", layouts[l], names[i], wf[w]);
                    if (pa__read_file(sysfs, rel, buf, sizeof(buf)) > 0 &&
                        (weight = pc_count_cpus(buf)) > 0)
                        break;
                    weight = 1;
                }
            }
            if (pa__path(path, sizeof(path), sysfs, "%s/%s/%s", layouts[l], names[i],
                         l == 0 ? "stats/time_in_state" : "cpufreq/stats/time_in_state") == 0)
                rc = pc_freq_add(p, path, weight);
        }
        for (size_t i = 0; i < nn; i++)
            free(names[i]);
        free(names);
    }
    return rc;
}

/* Adds t ns at khz to the frame's sorted frequency table. */
static void pc_freq_put(pa_sysread *s, uint32_t khz, uint64_t t)
{
    unsigned i = 0;
    while (i < s->nfreq && s->freq[i].khz < khz)
        i++;
    if (i < s->nfreq && s->freq[i].khz == khz) {
        s->freq[i].time_ns += t;
        return;
    }
    if (s->nfreq == PA_MAX_FREQ)
        return; /* more distinct P-states than any known CPU: dropped */
    memmove(&s->freq[i + 1], &s->freq[i], (s->nfreq - i) * sizeof(s->freq[0]));
    s->freq[i] = (pa_freq_time){.khz = khz, .time_ns = t};
    s->nfreq++;
}

/* "<khz> <10 ms units>\n" per line (Documentation/cpu-freq/cpufreq-stats). */
static int pc_read_freq(pc_state *p, pa_sysread *s)
{
    s->nfreq = 0;
    for (size_t i = 0; i < p->nfreq; i++) {
        pc_freqsrc *f = &p->freq[i];
        ssize_t n = f->fd >= 0 ? pc_pread(f->fd, p->aux, sizeof(p->aux))
                               : pc_read_at(AT_FDCWD, f->path, p->aux, sizeof(p->aux));
        if (n < 0)
            return (int)n;
        const char *q = p->aux, *end = p->aux + n;
        while (q < end) {
            uint64_t khz, units;
            if (*q < '0' || *q > '9' || pa__parse_u64(&q, &khz) || *q != ' ' ||
                pa__parse_u64(&q, &units) || *q != '\n' || khz > UINT32_MAX)
                return -EPROTO;
            q++;
            pc_freq_put(s, (uint32_t)khz, units * PC_TIS_UNIT_NS * f->weight);
        }
    }
    return s->nfreq > 0 ? 0 : -ENODATA;
}

/* Off a real procfs, files are opened again each tick (see the top). */
static int pc_reopen_system(pc_state *p, const char *procfs)
{
    if (p->keep_fds)
        return 0;
    if (p->statfd >= 0)
        close(p->statfd);
    if (p->uptimefd >= 0)
        close(p->uptimefd);
    p->uptimefd = pc_openat(p->procfd, "uptime");
    if (p->uptimefd < 0)
        p->uptimefd = -1;
    p->statfd = pc_openat(p->procfd, "stat");
    if (p->statfd < 0) {
        int rc = p->statfd;
        p->statfd = -1;
        return pa__err(rc,
                       "procfs-cpu: cannot read %s/stat: %s; point the "
                       "procfs root at a mounted procfs (--procfs)",
                       procfs, strerror(-rc));
    }
    return 0;
}

/* In a container, /proc/stat counts the host's CPUs while the cgroup's
 * cpu.max (cgroup v2, "<quota> <period>" or "max <period>"; the
 * container's own cgroup is the root of its namespace) may allow fewer.
 * Shares stay of the CPUs /proc/stat counts (the package's power is
 * spread over them whatever the container may use); the report says so.
 * Read each tick: `docker update --cpus` changes it at run time. */
static void pc_note_cpu_max(const char *sysfs, unsigned ncpus, pa_sysread *s)
{
    char buf[64];
    unsigned long long quota, period;
    if (pa__read_file(sysfs, "fs/cgroup/cpu.max", buf, sizeof(buf)) <= 0 ||
        sscanf(buf, "%llu %llu", &quota, &period) != 2 || !period)
        return; /* absent, or "max": no limit */
    double cpus = (double)quota / (double)period;
    if (cpus >= (double)ncpus)
        return;
    char note[200];
    snprintf(note, sizeof(note),
             "cgroup: cpu.max limits these processes to %.2f CPUs; "
             "/proc/stat shows %u: shares are of the %u CPUs /proc/stat "
             "counts",
             cpus, ncpus, ncpus);
    pa__assume(s->notes, sizeof(s->notes), note);
}

static int pc_sample_system(pc_state *p, pa_ctx *ctx, pa_sysread *s)
{
    uint64_t busy, idle, up;
    unsigned ncpus;
    int rc = pc_reopen_system(p, ctx->env.procfs);
    if (rc < 0)
        return rc;
    rc = pc_read_sysstat(p, ctx->env.procfs, &busy, &idle, &ncpus, s);
    if (rc < 0)
        return rc;
    s->busy_ns = pc_ticks_ns(p, busy);
    s->idle_ns = pc_ticks_ns(p, idle);
    for (unsigned k = 0; k < s->ncpu_time; k++) {
        if (s->cpu_busy_ns[k] == UINT64_MAX)
            continue;
        s->cpu_busy_ns[k] = pc_ticks_ns(p, s->cpu_busy_ns[k]);
        s->cpu_idle_ns[k] = pc_ticks_ns(p, s->cpu_idle_ns[k]);
    }
    s->ncpus = ncpus;
    s->have |= PA_HAVE_CPU;
    if (p->uptimefd >= 0 && pc_pread(p->uptimefd, p->aux, sizeof(p->aux)) > 0 &&
        pc_parse_uptime(p->aux, &up) == 0)
        s->uptime_ns = up;
    memcpy(s->cpu_model, p->cpu_model, sizeof(s->cpu_model));
    pa__assume(s->notes, sizeof(s->notes), p->note);
    pc_note_cpu_max(ctx->env.sysfs, ncpus, s);

    /* A policy that stopped reading (CPU hotplug) is looked for again. */
    if (p->nfreq > 0 && pc_read_freq(p, s) < 0 &&
        (pc_freq_discover(p, ctx->env.sysfs) < 0 || pc_read_freq(p, s) < 0))
        s->nfreq = 0;
    if (p->nfreq > 0 && s->nfreq > 0) {
        s->have |= PA_HAVE_FREQ;
        s->nominal_mhz = 0;
    } else {
        s->nfreq = 0;
        s->have &= ~(unsigned)PA_HAVE_FREQ;
        s->nominal_mhz = p->base_mhz > 0 ? p->base_mhz : p->cpuinfo_mhz;
    }
    return 0;
}

/* "model name" and "cpu MHz" of the first processor in cpuinfo. */
static void pc_read_cpuinfo(pc_state *p, const char *procfs)
{
    size_t len = 65536;
    char *buf = malloc(len);
    if (!buf)
        return;
    ssize_t n = pa__read_file(procfs, "cpuinfo", buf, len);
    for (const char *l = buf; n > 0 && l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t ll = eol ? (size_t)(eol - l) : strlen(l);
        const char *colon = memchr(l, ':', ll);
        if (colon) {
            size_t kl = (size_t)(colon - l);
            while (kl > 0 && (l[kl - 1] == ' ' || l[kl - 1] == '\t'))
                kl--;
            const char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vl = (size_t)(l + ll - v);
            if (kl == 10 && !strncmp(l, "model name", 10) && !p->cpu_model[0]) {
                if (vl >= sizeof(p->cpu_model))
                    vl = sizeof(p->cpu_model) - 1;
                memcpy(p->cpu_model, v, vl);
                p->cpu_model[vl] = '\0';
            } else if (kl == 7 && !strncmp(l, "cpu MHz", 7) && p->cpuinfo_mhz == 0) {
                p->cpuinfo_mhz = strtod(v, NULL);
            }
        }
        if (p->cpu_model[0] && p->cpuinfo_mhz > 0)
            break;
        l = eol ? eol + 1 : NULL;
    }
    free(buf);
}

/* ------------------------------------------------------------------ */
/* Tasks                                                               */
/* ------------------------------------------------------------------ */

/* Counts the kept fds of a task seen this tick (for the fd budget). */
static void pc_count_fds(pc_state *p, const pa_task *t)
{
    p->fds_count += (t->fd[PA_TASK_FD_STAT] >= 0) + (t->fd[PA_TASK_FD_SCHED] >= 0);
}

/* The cgroup of <procfs>/<pid>/cgroup (pa__cgroup_pick: the v2 path, or
 * on a hybrid host the v1 tree a container lives in).  Read once, when the
 * process is first seen. */
static int pc_read_cgroup(pc_state *p, pa_ctx *ctx, pa_task *t)
{
    char rel[32], path[4096];
    snprintf(rel, sizeof(rel), "%d/cgroup", (int)t->pid);
    ssize_t n = pc_read_at(p->procfd, rel, p->aux, sizeof(p->aux));
    if (n <= 0 || pa__cgroup_pick(p->aux, (size_t)n, path, sizeof(path)) < 0)
        return 0; /* gone, unreadable, or no cgroup support */
    int idx = pa__cgroup_intern(ctx, path);
    if (idx < 0)
        return -ENOMEM;
    t->cgroup = idx;
    return 0;
}

/* Fills a process task from a parsed record and registers it. */
static int pc_put_process(pc_state *p, pa_frame *f, const pc_rec *r, int fresh, pa_task **out)
{
    pa_task *t = pa__task_seen(f, PA_TARGET_PROCESS, r->pid, 0, r->start_ticks);
    if (!t) {
        if (fresh >= 0) {
            close(fresh);
            p->fds_new--;
        }
        return pa__err(-ENOMEM, "procfs-cpu: out of memory");
    }
    pc_adopt(p, &t->fd[PA_TASK_FD_STAT], fresh);
    memcpy(t->comm, r->comm, sizeof(t->comm));
    t->ppid = r->ppid;
    t->last_cpu = r->last_cpu;
    t->cur.cpu_ns = pc_ticks_ns(p, r->utime + r->stime);
    t->cur.child_cpu_ns = pc_ticks_ns(p, r->cutime + r->cstime);
    t->cur.have |= PA_RD_CPU | PA_RD_CHILD;
    t->watched = true;
    if (t->cgroup < 0 && t->first_tick == f->tick && pc_read_cgroup(p, f->ctx, t) < 0)
        return pa__err(-ENOMEM, "procfs-cpu: out of memory");
    pc_count_fds(p, t);
    *out = t;
    return 0;
}

/* The PA_WATCH_* flags of a watched pid, -1 if it is not watched. */
static int pc_watch_flags(const pa_ctx *ctx, pid_t pid)
{
    for (size_t i = 0; i < ctx->nwatches; i++)
        if (ctx->watches[i].pid == pid)
            return (int)ctx->watches[i].flags;
    return -1;
}

/*
 * The flags of a watched pid whose current process is still the one
 * watched: once the pid was seen with another starttime (the watched
 * process exited and the pid was reused), the new process is not the
 * target, and the engine, not seeing the old one, reports it exited and
 * drops the watch.  A tree's root is checked against the tree's record,
 * which outlives the root process.
 */
static int pc_watched(pa_ctx *ctx, pid_t pid, uint64_t start_ticks)
{
    int wf = pc_watch_flags(ctx, pid);
    if (wf < 0)
        return -1;
    pa_task *t = pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    if (!t && (wf & PA_WATCH_CHILDREN))
        t = pa__task_find(ctx, PA_TARGET_TREE, pid);
    if (t && t->start_ticks && t->start_ticks != start_ticks)
        return -1;
    return wf;
}

/*
 * Reads <pid>/stat (through the task's kept fd when it has one).
 * Returns 0 with *r filled, or a negative errno: -ENOENT/-ESRCH gone,
 * -EACCES unreadable, -EPROTO malformed; the caller skips the pid.
 */
static int pc_read_process(pc_state *p, pa_ctx *ctx, pid_t pid, bool keep, pc_rec *r, int *fresh)
{
    char rel[32];
    pa_task *t = pa__task_find(ctx, PA_TARGET_PROCESS, pid);
    snprintf(rel, sizeof(rel), "%d/stat", (int)pid);
    ssize_t n = pc_read_task(p, t ? &t->fd[PA_TASK_FD_STAT] : NULL, rel, p->rec, sizeof(p->rec),
                             keep, fresh);
    int rc = n < 0 ? (int)n : pc_parse_stat(p->rec, (size_t)n, pid, r);
    if (rc < 0 && *fresh >= 0) {
        close(*fresh);
        *fresh = -1;
        p->fds_new--;
    }
    return rc;
}

/* Reads and registers one process; a pid that cannot be read (gone,
 * unreadable, malformed), or that watched is another process now, is
 * skipped.  Errors: only -ENOMEM. */
static int pc_do_process(pc_state *p, pa_frame *f, pid_t pid, bool watched)
{
    pc_rec r;
    pa_task *t;
    int fresh;
    if (pc_read_process(p, f->ctx, pid, true, &r, &fresh) < 0)
        return 0;
    if (watched && pc_watched(f->ctx, pid, r.start_ticks) < 0) {
        if (fresh >= 0) {
            close(fresh);
            p->fds_new--;
        }
        return 0;
    }
    return pc_put_process(p, f, &r, fresh, &t);
}

/* Threads of a process watched with PA_WATCH_THREADS. */
static int pc_do_threads(pc_state *p, pa_frame *f, pa_task *proc)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "%d/task", (int)proc->pid);
    int dfd = openat(p->procfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0; /* exited since its stat was read */
    int rc = 0;
    for (;;) {
        ssize_t nb = getdents64(dfd, p->tdents, sizeof(p->tdents));
        if (nb <= 0)
            break;
        for (ssize_t off = 0; off < nb && rc == 0;) {
            struct dirent64 *e = (struct dirent64 *)(p->tdents + off);
            off += e->d_reclen;
            const char *s = e->d_name;
            uint64_t tidv;
            if (*s < '0' || *s > '9' || pa__parse_u64(&s, &tidv) || *s || tidv > INT32_MAX)
                continue;
            pid_t tid = (pid_t)tidv;
            pa_task *old = pa__task_find(f->ctx, PA_TARGET_THREAD, tid);
            pc_rec r;
            int fresh, fresh_sched = -1;
            /* the thread's stat: comm, starttime, and utime+stime */
            snprintf(rel, sizeof(rel), "%d/task/%d/stat", (int)proc->pid, (int)tid);
            ssize_t n = pc_read_task(p, old ? &old->fd[PA_TASK_FD_STAT] : NULL, rel, p->rec,
                                     sizeof(p->rec), true, &fresh);
            if (n < 0 || pc_parse_stat(p->rec, (size_t)n, tid, &r) < 0) {
                if (fresh >= 0) {
                    close(fresh);
                    p->fds_new--;
                }
                continue;
            }
            uint64_t cpu_ns = pc_ticks_ns(p, r.utime + r.stime);
            /* schedstat: the thread's run time in ns, where the kernel
             * has CONFIG_SCHED_INFO */
            snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", (int)proc->pid, (int)tid);
            bool same = old && old->start_ticks == r.start_ticks;
            n = pc_read_task(p, same ? &old->fd[PA_TASK_FD_SCHED] : NULL, rel, p->aux,
                             sizeof(p->aux), true, &fresh_sched);
            uint64_t sns;
            if (n > 0 && pc_parse_schedstat(p->aux, &sns) == 0)
                cpu_ns = sns;
            pa_task *t = pa__task_seen(f, PA_TARGET_THREAD, proc->pid, tid, r.start_ticks);
            if (!t) {
                if (fresh >= 0)
                    close(fresh);
                if (fresh_sched >= 0)
                    close(fresh_sched);
                rc = pa__err(-ENOMEM, "procfs-cpu: out of memory");
                break;
            }
            pc_adopt(p, &t->fd[PA_TASK_FD_STAT], fresh);
            pc_adopt(p, &t->fd[PA_TASK_FD_SCHED], fresh_sched);
            t->proc = proc;
            t->ppid = proc->pid;
            memcpy(t->comm, r.comm, sizeof(t->comm));
            t->last_cpu = r.last_cpu;
            t->cur.cpu_ns = cpu_ns;
            t->cur.have |= PA_RD_CPU;
            t->watched = true;
            t->cgroup = proc->cgroup;
            pc_count_fds(p, t);
        }
        if (rc < 0)
            break;
    }
    close(dfd);
    return rc;
}

/* ---- PA_WATCH_CHILDREN: every process, then the watched trees ---- */

static int pc_scan_push(pc_state *p, const pc_rec *r)
{
    if (PA__GROW(p->scan, p->scan_cap, p->nscan + 1, 512) < 0)
        return pa__err(-ENOMEM, "procfs-cpu: out of memory");
    p->scan[p->nscan++] = (pc_scan){.rec = *r, .mark = 0};
    return 0;
}

static size_t pc_hash_slot(const pc_state *p, pid_t pid)
{
    return pa__hash_u64((uint32_t)pid) & (p->hash_cap - 1);
}

static int pc_hash_build(pc_state *p)
{
    /* at most half full */
    if (PA__GROW(p->hash, p->hash_cap, p->nscan ? p->nscan * 2 : 1, 16) < 0)
        return pa__err(-ENOMEM, "procfs-cpu: out of memory");
    memset(p->hash, 0xff, p->hash_cap * sizeof(*p->hash));
    for (size_t i = 0; i < p->nscan; i++) {
        size_t s = pc_hash_slot(p, p->scan[i].rec.pid);
        while (p->hash[s] >= 0)
            s = (s + 1) & (p->hash_cap - 1);
        p->hash[s] = (int32_t)i;
    }
    return 0;
}

static pc_scan *pc_hash_find(pc_state *p, pid_t pid)
{
    size_t s = pc_hash_slot(p, pid);
    while (p->hash[s] >= 0) {
        pc_scan *e = &p->scan[p->hash[s]];
        if (e->rec.pid == pid)
            return e;
        s = (s + 1) & (p->hash_cap - 1);
    }
    return NULL;
}

/*
 * Is e in a tree watched with PA_WATCH_CHILDREN (the root or one of its
 * descendants)?  -1 no, 1 yes, 2 yes and the tree is watched with
 * PA_WATCH_THREADS too (the innermost watched root decides).  Walks the
 * ppid chain up to a known answer, a watched root or the top, then marks
 * every process passed on the way.
 */
static signed char pc_in_tree(pc_state *p, pa_ctx *ctx, pc_scan *e)
{
    pc_scan *q = e;
    signed char ans = -1;
    size_t steps = 0;
    for (; q && steps <= p->nscan; steps++) {
        if (q->mark) {
            ans = q->mark;
            break;
        }
        int wf = pc_watched(ctx, q->rec.pid, q->rec.start_ticks);
        if (wf >= 0 && (wf & PA_WATCH_CHILDREN)) {
            ans = (wf & PA_WATCH_THREADS) ? 2 : 1;
            q->mark = ans;
            break;
        }
        if (q->rec.ppid <= 0 || q->rec.ppid == q->rec.pid) {
            q->mark = -1;
            break;
        }
        q = pc_hash_find(p, q->rec.ppid);
    }
    /* q is where the answer was found (NULL: the parent is not listed,
     * or a ppid cycle in a malformed tree) */
    for (steps = 0; e && e != q && !e->mark && steps <= p->nscan; steps++) {
        e->mark = ans;
        e = pc_hash_find(p, e->rec.ppid);
    }
    return ans;
}

/* Lists the numeric entries of the procfs root.  all (watch_all): every
 * process is registered.  Else (PA_WATCH_CHILDREN) every process is read
 * into the scratch table and only watched pids and the descendants of
 * watched trees are registered. */
static int pc_scan_pids(pc_state *p, pa_frame *f, bool all)
{
    int rc = 0;
    p->nscan = 0;
    if (lseek(p->procfd, 0, SEEK_SET) < 0)
        return pa__err(-errno, "procfs-cpu: cannot list %s: %s", f->ctx->env.procfs,
                       strerror(errno));
    for (;;) {
        ssize_t nb = getdents64(p->procfd, p->dents, sizeof(p->dents));
        if (nb < 0)
            return pa__err(-errno, "procfs-cpu: cannot list %s: %s", f->ctx->env.procfs,
                           strerror(errno));
        if (nb == 0)
            break;
        for (ssize_t off = 0; off < nb && rc == 0;) {
            struct dirent64 *e = (struct dirent64 *)(p->dents + off);
            off += e->d_reclen;
            const char *s = e->d_name;
            uint64_t v;
            if (*s < '0' || *s > '9' || pa__parse_u64(&s, &v) || *s || v == 0 || v > INT32_MAX)
                continue;
            if (all) {
                rc = pc_do_process(p, f, (pid_t)v, false);
            } else {
                pc_rec r;
                int fresh;
                if (pc_read_process(p, f->ctx, (pid_t)v, false, &r, &fresh) == 0)
                    rc = pc_scan_push(p, &r);
            }
        }
        if (rc < 0)
            return rc;
    }
    if (all)
        return 0;

    rc = pc_hash_build(p);
    for (size_t i = 0; i < p->nscan && rc == 0; i++) {
        pc_scan *e = &p->scan[i];
        signed char tree = pc_in_tree(p, f->ctx, e);
        int wf = pc_watched(f->ctx, e->rec.pid, e->rec.start_ticks);
        if (tree < 0 && wf < 0)
            continue;
        /* keep an fd for the next ticks' reads of a registered process */
        int fresh = -1;
        pa_task *t = pa__task_find(f->ctx, PA_TARGET_PROCESS, e->rec.pid);
        if ((!t || t->fd[PA_TASK_FD_STAT] < 0) && pc_may_keep(p)) {
            char rel[32];
            snprintf(rel, sizeof(rel), "%d/stat", (int)e->rec.pid);
            if ((fresh = pc_openat(p->procfd, rel)) >= 0)
                p->fds_new++;
        }
        rc = pc_put_process(p, f, &e->rec, fresh, &t);
        if (rc == 0 && (tree == 2 || (wf >= 0 && (wf & PA_WATCH_THREADS))))
            rc = pc_do_threads(p, f, t);
    }
    return rc;
}

/* An exit file (tests: a faithful stand-in for the kernel's records):
 * one exited task a line, "TID PID PPID CPU_NS COMM". */
static int pc_exit_file(pc_state *p, pa_frame *f)
{
    FILE *in = fopen(p->exitfile, "re");
    if (!in)
        return errno == ENOENT
                   ? pa_frame_exits_source(f, "file", 0)
                   : pa__err(-errno, "procfs-cpu: exitfile %s: %s", p->exitfile, strerror(errno));
    char line[256];
    int rc = 0;
    for (unsigned no = 1; rc == 0 && fgets(line, sizeof(line), in); no++) {
        pa_task_exit e;
        long tid, pid, ppid;
        unsigned long long ns;
        memset(&e, 0, sizeof(e));
        if (sscanf(line, "%ld %ld %ld %llu %15s", &tid, &pid, &ppid, &ns, e.comm) != 5 ||
            tid <= 0 || pid <= 0) {
            /* one bad line costs its record, not the window */
            char note[200];
            snprintf(note, sizeof(note),
                     "procfs-cpu: exitfile line %u is not 'TID PID PPID CPU_NS COMM' (skipped)",
                     no);
            pa__assume(f->sys->notes, sizeof(f->sys->notes), note);
            continue;
        }
        e.tid = (pid_t)tid;
        e.pid = (pid_t)pid;
        e.ppid = (pid_t)ppid;
        e.cpu_ns = ns;
        rc = pa_frame_task_exit(f, &e);
    }
    fclose(in);
    return rc < 0 ? rc : pa_frame_exits_source(f, "file", 0);
}

/* After the scan, so that a process it no longer saw has its exit record
 * among those drained (the kernel sends it before the process leaves
 * procfs).  Only while every process is watched: the records of the
 * whole machine are of no use to a context watching a few. */
static int pc_exits(pc_state *p, pa_frame *f)
{
    if (p->exitfile)
        return pc_exit_file(p, f);
    if (p->exits_off || !f->ctx->watch_all || !p->keep_fds) {
        pa__taskstats_close(p->ts);
        p->ts = NULL;
        return 0;
    }
    if (!p->ts && !p->ts_tried) {
        char why[160];
        p->ts_tried = true;
        if (pa__taskstats_open(&p->ts, why, sizeof(why)) < 0)
            snprintf(p->ts_why, sizeof(p->ts_why),
                     "exits: %s, so processes that exit inside a window are estimated from their "
                     "parents' cutime/cstime (children-time)",
                     why);
    }
    if (!p->ts) {
        pa__assume(f->sys->notes, sizeof(f->sys->notes), p->ts_why);
        return 0;
    }
    int rc = pa__taskstats_drain(p->ts, f);
    if (rc == -ENOMEM)
        return pa__err(rc, "procfs-cpu: out of memory keeping exit records");
    if (rc < 0) { /* the socket failed: the estimate from now on */
        snprintf(p->ts_why, sizeof(p->ts_why),
                 "exits: the taskstats socket failed (%s), so processes that exit inside a "
                 "window are estimated from their parents' cutime/cstime (children-time)",
                 strerror(-rc));
        pa__taskstats_close(p->ts);
        p->ts = NULL;
        pa__assume(f->sys->notes, sizeof(f->sys->notes), p->ts_why);
    }
    return 0;
}

static int pc_sample(pa_module *m, pa_frame *f)
{
    pc_state *p = pa_module_priv(m);
    pa_ctx *ctx = f->ctx;
    int rc = pc_sample_system(p, ctx, f->sys);
    if (rc < 0)
        return rc;

    p->fds_new = 0;
    p->fds_count = 0;
    bool children = false;
    for (size_t i = 0; i < ctx->nwatches; i++)
        children |= (ctx->watches[i].flags & PA_WATCH_CHILDREN) != 0;

    if (ctx->watch_all || children) {
        rc = pc_scan_pids(p, f, ctx->watch_all);
    } else {
        for (size_t i = 0; i < ctx->nwatches && rc == 0; i++)
            rc = pc_do_process(p, f, ctx->watches[i].pid, true);
    }
    /* every thread of every process (pa_watch_all, PA_WATCH_ALL_THREADS) */
    if (ctx->watch_all_threads && ctx->watch_all)
        for (size_t i = 0; i < ctx->procs.n && rc == 0; i++) {
            pa_task *t = ctx->procs.v[i];
            if (t->seen_tick == f->tick)
                rc = pc_do_threads(p, f, t);
        }
    /* threads of watched pids (a tree scan did its own) */
    for (size_t i = 0; i < ctx->nwatches && rc == 0 && !(ctx->watch_all_threads && ctx->watch_all);
         i++) {
        if (!(ctx->watches[i].flags & PA_WATCH_THREADS) || (children && !ctx->watch_all))
            continue;
        pa_task *t = pa__task_find(ctx, PA_TARGET_PROCESS, ctx->watches[i].pid);
        if (t && t->seen_tick == f->tick)
            rc = pc_do_threads(p, f, t);
    }
    /* fds of tasks not seen this tick are closed when the engine frees
     * them; until then they still count */
    p->fds_held = p->fds_count;
    if (rc == 0)
        rc = pc_exits(p, f);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

static int pc_probe(const pa_env *env, char *why, size_t why_len)
{
    char buf[8192];
    uint64_t busy, idle;
    unsigned ncpus;
    ssize_t n = pa__read_file(env->procfs, "stat", buf, sizeof(buf));
    if (n < 0) {
        snprintf(why, why_len,
                 "procfs-cpu: cannot read %s/stat (%s); point the procfs "
                 "root at a mounted procfs (--procfs)",
                 env->procfs, strerror((int)-n));
        return (int)n;
    }
    int rc =
        pc_parse_sysstat(buf, (size_t)n, (size_t)n == sizeof(buf) - 1, &busy, &idle, &ncpus, NULL);
    if (rc < 0 && rc != -ENOBUFS) {
        snprintf(why, why_len,
                 "procfs-cpu: %s/stat is malformed (no 'cpu' and 'cpuN' "
                 "lines as in proc(5)); point the procfs root at a mounted "
                 "procfs (--procfs)",
                 env->procfs);
        return -EPROTO;
    }
    return 0;
}

static bool pc_is_fs(int fd, long magic)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && (long)sf.f_type == magic;
}

static void pc_stop(pa_module *m)
{
    pc_state *p = pa_module_priv(m);
    if (!p)
        return;
    if (p->procfd >= 0)
        close(p->procfd);
    if (p->statfd >= 0)
        close(p->statfd);
    if (p->uptimefd >= 0)
        close(p->uptimefd);
    pc_freq_clear(p);
    pa__taskstats_close(p->ts);
    free(p->exitfile);
    free(p->sysbuf);
    free(p->scan);
    free(p->hash);
    free(p);
    pa_module_set_priv(m, NULL);
}

static int pc_start(pa_module *m, const pa_options *opts)
{
    const char *procfs = pa_env_procfs(pa_module_env(m));
    pc_state *p = calloc(1, sizeof(*p));
    int rc;
    if (!p)
        return pa__err(-ENOMEM, "procfs-cpu: out of memory");
    p->procfd = p->statfd = p->uptimefd = -1;
    pa_module_set_priv(m, p);

    p->clk_tck = sysconf(_SC_CLK_TCK);
    if (p->clk_tck <= 0)
        p->clk_tck = 100;
    p->procfd = open(procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p->procfd < 0) {
        rc = pa__err(-errno,
                     "procfs-cpu: cannot open %s: %s; point the procfs root "
                     "at a mounted procfs (--procfs)",
                     procfs, strerror(errno));
        goto fail;
    }
    p->statfd = pc_openat(p->procfd, "stat");
    if (p->statfd < 0) {
        rc = pa__err(p->statfd,
                     "procfs-cpu: cannot open %s/stat: %s; point the procfs "
                     "root at a mounted procfs (--procfs)",
                     procfs, strerror(-p->statfd));
        p->statfd = -1;
        goto fail;
    }
    p->uptimefd = pc_openat(p->procfd, "uptime");
    if (p->uptimefd < 0)
        p->uptimefd = -1;
    p->keep_fds = pc_is_fs(p->procfd, PC_PROC_SUPER_MAGIC);
    char hp[40];
    if (pa__procfs_hidepid(procfs, hp, sizeof(hp)))
        snprintf(p->note, sizeof(p->note),
                 "procfs: %s is mounted with %s: other users' processes are "
                 "hidden from uid %u and not counted (run as root or as a "
                 "member of the mount's gid= group)",
                 procfs, hp, (unsigned)geteuid());
    int sfd = open(pa_env_sysfs(pa_module_env(m)), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd >= 0) {
        p->keep_sysfs = pc_is_fs(sfd, PC_SYSFS_MAGIC);
        close(sfd);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        p->fd_budget = (size_t)rl.rlim_cur / 2;
    else
        p->fd_budget = 512;

    p->sysbuf_cap = PC_SYSSTAT_INIT;
    p->sysbuf = malloc(p->sysbuf_cap);
    if (!p->sysbuf) {
        rc = pa__err(-ENOMEM, "procfs-cpu: out of memory");
        goto fail;
    }
    const char *ex = pa_options_get(opts, "exits");
    if (ex && strcmp(ex, "auto") && strcmp(ex, "off")) {
        rc = pa__err(-EINVAL,
                     "procfs-cpu: exits=%s is not known; use exits=auto (the kernel's "
                     "taskstats records while every process is watched, else an estimate) or "
                     "exits=off (the estimate only)",
                     ex);
        goto fail;
    }
    p->exits_off = ex && !strcmp(ex, "off");
    const char *xf = pa_options_get(opts, "exitfile");
    if (xf && !(p->exitfile = strdup(xf))) {
        rc = pa__err(-ENOMEM, "procfs-cpu: out of memory");
        goto fail;
    }
    uint64_t busy, idle;
    unsigned ncpus;
    if ((rc = pc_read_sysstat(p, procfs, &busy, &idle, &ncpus, NULL)) < 0)
        goto fail;
    pc_read_cpuinfo(p, procfs);
    if ((rc = pc_freq_discover(p, pa_env_sysfs(pa_module_env(m)))) < 0) {
        rc = pa__err(rc, "procfs-cpu: out of memory");
        goto fail;
    }
    return 0;
fail:
    pc_stop(m);
    return rc;
}

static const char *const pc_options[] = {"exits", "exitfile", NULL};

const pa_module_ops pa__mod_procfs_cpu = {
    .abi = PA_MODULE_ABI,
    .name = "procfs-cpu",
    .kind = PA_SENSOR,
    .component = PA_COMP_NONE,
    .description = "CPU time per process and thread (procfs), system "
                   "busy/idle and time per frequency (cpufreq)",
    .options = pc_options,
    .probe = pc_probe,
    .start = pc_start,
    .sample = pc_sample,
    .configure = NULL,
    .stop = pc_stop,
    .flags = PA_MOD_DISCOVERS_TASKS,
};
