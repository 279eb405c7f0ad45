/*
 * rapl.c - the "rapl" sensor: cumulative RAPL energy per socket and domain.
 *
 * Three ways to read the same hardware counters, tried in order of cost
 * (bench/bench_rapl.c measures them) unless `path=` forces one:
 *
 *   perf      the perf "power" PMU (bus/event_source/devices/power): one
 *             64-bit counter per domain, opened on one CPU per socket
 *             (cpumask); scale and unit from the event's sysfs files.
 *             Needs root or CAP_PERFMON.
 *   msr       /dev/cpu/N/msr, pread at the MSR number: 32-bit counters
 *             (reserved high bits masked) in the unit of
 *             MSR_RAPL_POWER_UNIT.  Needs root and the msr module.
 *   powercap  class/powercap/intel-rapl:* zones (energy_uj, decimal µJ,
 *             wrapping at max_energy_range_uj).  Readable by root only
 *             since Linux 5.10 (CVE-2020-8694).
 *
 * Every path unfolds wraparound into a 64-bit accumulator of raw units
 * per domain, so the frame's energy_uj (pa_frame_rapl_set) only ever
 * grows.  A counter can wrap at most once between two ticks without being
 * noticed: the sampling period must stay under the wrap time (minutes at
 * full power).
 * A counter that goes back without wrapping (a reset, a package plugged
 * in again, a driver reloaded) or jumps forward by more than a domain can
 * draw is not unfolded: a step counts (as a wrap or not) only when the
 * energy it implies is at most MAX_DOMAIN_W over the time since the last
 * reading; otherwise the domain adds nothing for
 * that window, which is marked (pa_frame_rapl_reset, the report's
 * PA_POWER_RAPL_RESET and a note in its assumed list).
 *
 * Domains that overlap (package includes core and uncore) are reported
 * with their kind; consumers never sum them.
 */
#include "powerapi_module.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RAPL_PATH_MAX 4096

#define MSR_RAPL_POWER_UNIT 0x606
#define MSR_PKG_ENERGY_STATUS 0x611
#define MSR_DRAM_ENERGY_STATUS 0x619
#define MSR_PP0_ENERGY_STATUS 0x639
#define MSR_PP1_ENERGY_STATUS 0x641
#define MSR_PLATFORM_ENERGY_STATUS 0x64d
/* AMD family 17h+ (AMD PPR): same layout, package counter per socket */
#define MSR_AMD_RAPL_POWER_UNIT 0xc0010299
#define MSR_AMD_PKG_ENERGY_STATUS 0xc001029b
#define MAX_CPUS 4096
/* No RAPL domain draws this much (server packages: a few hundred W):
 * a step implying more is a reset or a jump, not energy. */
#define MAX_DOMAIN_W 2000.0

enum rapl_path { PATH_NONE = 0, PATH_POWERCAP, PATH_PERF, PATH_MSR };

static const char *const path_names[] = {"none", "powercap", "perf", "msr"};

typedef struct rapl_dom {
    int socket;
    pa_rapl_kind kind;
    char label[48]; /* zone name or event, for messages */
    int fd;
    off_t msr;      /* msr path: register */
    double unit_uj; /* µJ per raw unit */
    uint64_t range; /* raw units at which the counter wraps; 0 = never */
    uint64_t mask;  /* msr: valid counter bits */
    uint64_t last;  /* last raw reading */
    uint64_t acc;   /* unfolded raw units since start */
    unsigned wraps;
    unsigned resets; /* steps not counted (reset, jump) */
} rapl_dom;

typedef struct rapl_state {
    enum rapl_path path;
    size_t n;
    rapl_dom dom[PA_MAX_RAPL];
    unsigned ncpu_socket;            /* 0: topology unknown */
    int16_t cpu_socket[PA_MAX_CPUS]; /* CPU -> physical_package_id, -1 */
    uint64_t last_ns;                /* time of the last sample, 0 none */
} rapl_state;

static const char *kind_name(pa_rapl_kind k)
{
    switch (k) {
    case PA_RAPL_PKG:
        return "package";
    case PA_RAPL_CORE:
        return "core";
    case PA_RAPL_UNCORE:
        return "uncore";
    case PA_RAPL_DRAM:
        return "dram";
    case PA_RAPL_PSYS:
        return "psys";
    }
    return "?";
}

static void state_close(rapl_state *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->dom[i].fd >= 0)
            close(st->dom[i].fd);
    st->n = 0;
    st->path = PATH_NONE;
}

static int dom_cmp(const void *a, const void *b)
{
    const rapl_dom *x = a, *y = b;
    if (x->socket != y->socket)
        return x->socket < y->socket ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->label, y->label);
}

/* snprintf for messages, where truncation is acceptable. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

/* Reads one raw value of a domain (µJ text, perf count or MSR). */
static int dom_read_raw(const rapl_dom *d, enum rapl_path path, uint64_t *out)
{
    if (path == PATH_POWERCAP) {
        char buf[32];
        ssize_t n = pa_fd_read(d->fd, buf, sizeof(buf));
        if (n < 0)
            return (int)n;
        const char *p = buf;
        return pa_u64_parse(&p, out);
    }
    if (path == PATH_PERF) {
        uint64_t v;
        ssize_t n = read(d->fd, &v, sizeof(v));
        if (n < 0)
            return -errno;
        if (n != sizeof(v))
            return -EIO;
        *out = v;
        return 0;
    }
    uint64_t v;
    ssize_t n = pread(d->fd, &v, sizeof(v), d->msr);
    if (n < 0)
        return -errno;
    if (n != sizeof(v))
        return -EIO; /* register beyond the device (absent) */
    *out = v & d->mask;
    return 0;
}

/* Could the domain have used `units` in dt_ns?  (dt_ns 0: unknown.) */
static bool dom_plausible(const rapl_dom *d, uint64_t units, uint64_t dt_ns)
{
    if (!dt_ns)
        return true;
    double j = (double)units * d->unit_uj / 1e6;
    return j <= MAX_DOMAIN_W * (double)dt_ns / 1e9;
}

/* Unfolds one new raw reading into the accumulator; false when the step
 * was not counted (a reset or a jump). */
static bool dom_update(rapl_dom *d, uint64_t raw, uint64_t dt_ns)
{
    bool ok = true;
    if (raw >= d->last) {
        if (dom_plausible(d, raw - d->last, dt_ns))
            d->acc += raw - d->last;
        else
            ok = false; /* jumped forward: another counter now */
    } else if (d->range > raw && d->range >= d->last &&
               dom_plausible(d, raw + (d->range - d->last), dt_ns)) {
        /* wrapped once: up to range, then from 0 */
        d->acc += raw + (d->range - d->last);
        d->wraps++;
    } else {
        ok = false; /* went back without wrapping: restart from raw */
    }
    if (!ok)
        d->resets++;
    d->last = raw;
    return ok;
}

/* ---------------------------------------------------------------- */
/* powercap                                                          */
/* ---------------------------------------------------------------- */

/* Parses "package-3" or "package-0-die-1" into the socket number. */
static int package_socket(const char *name)
{
    if (strncmp(name, "package-", 8) != 0 || !isdigit((unsigned char)name[8]))
        return -1;
    return atoi(name + 8);
}

typedef struct zone {
    char dir[64];   /* "intel-rapl:0:1" */
    char name[48];  /* "dram" */
    bool secondary; /* intel-rapl-mmio: or intel-rapl-tpmi: */
    bool known;     /* kind and socket found */
    pa_rapl_kind kind;
    int socket;
} zone;

static int zone_cmp(const void *a, const void *b)
{
    return strcmp(((const zone *)a)->dir, ((const zone *)b)->dir);
}

/* The intel-rapl zones of <sysfs>/class/powercap (path) with their names,
 * sorted by folder; -ENODEV (why) when there is none. */
static int powercap_zones(const pa_env *env, const char *path, zone *zones, size_t *nzones,
                          char *why, size_t wl)
{
    DIR *dir = opendir(path);
    if (!dir) {
        int rc = -errno;
        if (rc == -ENOENT)
            say(why, wl, "rapl: %s not present (no RAPL in this VM)", path);
        else
            say(why, wl, "rapl: cannot open %s: %s", path, strerror(-rc));
        return rc == -ENOENT ? -ENODEV : rc;
    }
    size_t nz = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL && nz < PA_MAX_RAPL * 2) {
        /* intel-rapl: is the MSR driver's; intel-rapl-mmio: (client
         * parts) and intel-rapl-tpmi: (Granite Rapids and later) may
         * repeat its domains through another interface */
        bool secondary = !strncmp(de->d_name, "intel-rapl-mmio:", 16) ||
                         !strncmp(de->d_name, "intel-rapl-tpmi:", 16);
        if (!secondary && strncmp(de->d_name, "intel-rapl:", 11) != 0)
            continue;
        if (strlen(de->d_name) >= sizeof(zones[0].dir))
            continue;
        zone *z = &zones[nz];
        memset(z, 0, sizeof(*z));
        say(z->dir, sizeof(z->dir), "%s", de->d_name);
        z->secondary = secondary;
        char rel[128];
        say(rel, sizeof(rel), "class/powercap/%s/name", z->dir);
        if (pa_file_read(pa_env_sysfs(env), rel, z->name, sizeof(z->name)) <= 0)
            continue;
        trim(z->name);
        nz++;
    }
    closedir(dir);
    if (nz == 0) {
        say(why, wl, "rapl: %s has no intel-rapl zone (no RAPL in this VM)", path);
        return -ENODEV;
    }
    qsort(zones, nz, sizeof(zones[0]), zone_cmp);
    *nzones = nz;
    return 0;
}

/* The kind and socket of each zone: a sub-zone ("intel-rapl:0:1") is on
 * the socket of its parent ("intel-rapl:0"). */
static void zones_classify(zone *zones, size_t nz)
{
    for (size_t i = 0; i < nz; i++) {
        zone *z = &zones[i];
        const char *colon2 = strchr(strchr(z->dir, ':') + 1, ':');
        z->known = true;
        if (!colon2) {
            if (!strcmp(z->name, "psys"))
                z->kind = PA_RAPL_PSYS;
            else if ((z->socket = package_socket(z->name)) >= 0)
                z->kind = PA_RAPL_PKG;
            else
                z->known = false; /* unknown top-level zone */
            continue;
        }
        if (!strcmp(z->name, "core"))
            z->kind = PA_RAPL_CORE;
        else if (!strcmp(z->name, "uncore"))
            z->kind = PA_RAPL_UNCORE;
        else if (!strcmp(z->name, "dram"))
            z->kind = PA_RAPL_DRAM;
        else
            z->known = false;
        size_t plen = (size_t)(colon2 - z->dir);
        for (size_t j = 0; j < nz; j++)
            if (strlen(zones[j].dir) == plen && !strncmp(zones[j].dir, z->dir, plen)) {
                int sk = package_socket(zones[j].name);
                z->socket = sk >= 0 ? sk : 0;
            }
    }
}

/* Opens zone z as the next domain of st, its energy_uj's path in path;
 * -EACCES or -EPERM when it is not readable, another error when it
 * cannot be used, 0 when it is a domain (st->n counts it). */
static int powercap_open_zone(const pa_env *env, rapl_state *st, const zone *z, char *path,
                              size_t plen)
{
    rapl_dom *d = &st->dom[st->n];
    memset(d, 0, sizeof(*d));
    d->fd = -1;
    d->socket = z->socket;
    d->kind = z->kind;
    say(d->label, sizeof(d->label), "%s", z->dir);
    d->unit_uj = 1.0;
    d->mask = UINT64_MAX;
    char rel[128], buf[64];
    say(rel, sizeof(rel), "class/powercap/%s/max_energy_range_uj", z->dir);
    const char *p = buf;
    if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) <= 0 ||
        pa_u64_parse(&p, &d->range) < 0)
        d->range = 0;
    int rc = pa_path_join(path, plen, pa_env_sysfs(env), "class/powercap/%s/energy_uj", z->dir);
    if (rc < 0)
        return rc;
    d->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (d->fd < 0)
        return -errno;
    /* open() of a 0400 sysfs file may succeed for root only; the
     * read is what tells. */
    rc = dom_read_raw(d, PATH_POWERCAP, &d->last);
    if (rc < 0) {
        close(d->fd);
        d->fd = -1;
        return rc;
    }
    st->n++;
    return 0;
}

static int open_powercap(const pa_env *env, rapl_state *st, char *why, size_t wl)
{
    char path[RAPL_PATH_MAX];
    int rc = pa_path_join(path, sizeof(path), pa_env_sysfs(env), "class/powercap");
    if (rc < 0)
        return rc;
    zone zones[PA_MAX_RAPL * 2];
    size_t nz = 0;
    rc = powercap_zones(env, path, zones, &nz, why, wl);
    if (rc < 0)
        return rc;
    zones_classify(zones, nz);

    int denied = 0;
    for (size_t i = 0; i < nz; i++) {
        zone *z = &zones[i];
        if (!z->known)
            continue;
        /* a domain the MSR driver gives too is read once */
        bool dup = false;
        for (size_t j = 0; j < nz && z->secondary; j++)
            if (!zones[j].secondary && zones[j].known && zones[j].kind == z->kind &&
                zones[j].socket == z->socket)
                dup = true;
        if (dup)
            continue;
        if (st->n >= PA_MAX_RAPL)
            break;
        rc = powercap_open_zone(env, st, z, path, sizeof(path));
        if (rc == -EACCES || rc == -EPERM)
            denied++;
    }
    if (st->n == 0 || denied) {
        state_close(st);
        if (denied) {
            say(why, wl,
                "rapl: energy_uj is readable by root only since Linux "
                "5.10; join the group powerapi (the powerapi package's "
                "udev rule makes it readable by that group), run as root, "
                "or use the perf power PMU with CAP_PERFMON");
            return -EACCES;
        }
        say(why, wl,
            "rapl: %s has no readable package, core, "
            "uncore, dram or psys zone",
            path);
        return -ENODEV;
    }
    st->path = PATH_POWERCAP;
    return 0;
}

/* ---------------------------------------------------------------- */
/* CPU topology (perf and msr paths)                                 */
/* ---------------------------------------------------------------- */

/* The CPU -> package map of the online CPUs, read once at start, given
 * with every reading (pa_frame_cpu_packages_set) for per-socket
 * attribution.  Left empty (ncpu_socket 0) when no CPU's package is known. */
static void topo_read(const pa_env *env, rapl_state *st)
{
    st->ncpu_socket = pa_env_cpu_packages(env, st->cpu_socket, PA_MAX_CPUS);
}

/* ---------------------------------------------------------------- */
/* perf power PMU                                                    */
/* ---------------------------------------------------------------- */

static const struct {
    const char *event;
    pa_rapl_kind kind;
} perf_events[] = {
    {"energy-pkg", PA_RAPL_PKG},  {"energy-cores", PA_RAPL_CORE}, {"energy-gpu", PA_RAPL_UNCORE},
    {"energy-ram", PA_RAPL_DRAM}, {"energy-psys", PA_RAPL_PSYS},
};

/* "event=0x02,umask=0x1" -> config (only event= and umask= exist). */
static int parse_perf_config(const char *s, uint64_t *config)
{
    uint64_t c = 0;
    bool any = false;
    while (*s) {
        while (*s == ',' || isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        const char *eq = strchr(s, '=');
        if (!eq)
            return -EINVAL;
        char *end;
        unsigned long long v = strtoull(eq + 1, &end, 0);
        if (!strncmp(s, "event=", 6))
            c |= v & 0xff;
        else if (!strncmp(s, "umask=", 6))
            c |= (v & 0xff) << 8;
        else
            return -EINVAL;
        any = true;
        s = end;
    }
    if (!any)
        return -EINVAL;
    *config = c;
    return 0;
}

static int open_perf(const pa_env *env, rapl_state *st, char *why, size_t wl)
{
    char buf[256];
    const char *pmu = "bus/event_source/devices/power";
    char rel[160];
    snprintf(rel, sizeof(rel), "%s/type", pmu);
    if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) <= 0) {
        say(why, wl, "rapl: no perf power PMU");
        return -ENODEV;
    }
    uint32_t type = (uint32_t)strtoul(buf, NULL, 10);
    int cpus[256];
    snprintf(rel, sizeof(rel), "%s/cpumask", pmu);
    int ncpu = 0;
    if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) > 0)
        ncpu = pa_cpulist_parse(buf, cpus, 256);
    if (ncpu == 0) {
        cpus[0] = 0;
        ncpu = 1;
    }
    int last_err = 0;
    size_t found = 0;
    for (size_t e = 0; e < sizeof(perf_events) / sizeof(perf_events[0]); e++) {
        uint64_t config;
        snprintf(rel, sizeof(rel), "%s/events/%s", pmu, perf_events[e].event);
        if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) <= 0 ||
            parse_perf_config(buf, &config) < 0)
            continue;
        found++;
        double scale = 1.0;
        snprintf(rel, sizeof(rel), "%s/events/%s.scale", pmu, perf_events[e].event);
        if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) > 0)
            scale = strtod(buf, NULL);
        snprintf(rel, sizeof(rel), "%s/events/%s.unit", pmu, perf_events[e].event);
        double to_uj = 1e6; /* unit "Joules" */
        if (pa_file_read(pa_env_sysfs(env), rel, buf, sizeof(buf)) > 0) {
            trim(buf);
            if (strcmp(buf, "Joules") != 0)
                continue; /* no other unit has ever been used */
        }
        if (!(scale > 0))
            continue;
        /* psys is one counter for the platform: open it once */
        int nc = perf_events[e].kind == PA_RAPL_PSYS ? 1 : ncpu;
        for (int c = 0; c < nc && st->n < PA_MAX_RAPL; c++) {
            struct perf_event_attr a;
            memset(&a, 0, sizeof(a));
            a.size = sizeof(a);
            a.type = type;
            a.config = config;
            int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) {
                last_err = errno;
                continue;
            }
            rapl_dom *d = &st->dom[st->n];
            memset(d, 0, sizeof(*d));
            d->fd = fd;
            d->kind = perf_events[e].kind;
            int s = pa_env_cpu_package(env, cpus[c]);
            d->socket = s >= 0 ? s : c;
            snprintf(d->label, sizeof(d->label), "%s/cpu%d", perf_events[e].event, cpus[c]);
            d->unit_uj = scale * to_uj;
            d->mask = UINT64_MAX;
            d->range = 0;
            int rr = dom_read_raw(d, PATH_PERF, &d->last);
            if (rr < 0) {
                last_err = -rr;
                close(fd);
                continue;
            }
            st->n++;
        }
    }
    if (st->n == 0) {
        if (!found)
            say(why, wl,
                "rapl: the perf power PMU has no energy "
                "event");
        else if (last_err == EACCES || last_err == EPERM)
            say(why, wl,
                "rapl: perf power PMU: perf_event_open refused (%s); "
                "it needs root or CAP_PERFMON (or "
                "kernel.perf_event_paranoid <= 0)",
                strerror(last_err));
        else
            say(why, wl,
                "rapl: perf power PMU: perf_event_open "
                "failed: %s",
                strerror(last_err ? last_err : ENODEV));
        return last_err == EACCES || last_err == EPERM ? -EACCES : -ENODEV;
    }
    st->path = PATH_PERF;
    return 0;
}

/* ---------------------------------------------------------------- */
/* MSR                                                               */
/* ---------------------------------------------------------------- */

/* Server parts whose DRAM domain counts in a fixed 15.3 µJ unit instead
 * of MSR_RAPL_POWER_UNIT's (Linux drivers/powercap/intel_rapl_common.c,
 * rapl_defaults_hsw_server; Intel SDM vol. 4, DRAM RAPL domain). */
static const int dram_fixed_models[] = {
    0x3f, /* Haswell-X */ 0x4f,         /* Broadwell-X */
    0x56, /* Broadwell-D */ 0x55,       /* Skylake-X, Cascade Lake */
    0x6a, /* Ice Lake-X */ 0x6c,        /* Ice Lake-D */
    0x8f, /* Sapphire Rapids-X */ 0xcf, /* Emerald Rapids-X */
    0x57, /* Xeon Phi KNL */ 0x85,      /* Xeon Phi KNM */
};

/* Vendor and model of the first CPU in cpuinfo ("model : 85"); the
 * model is -1 when unknown. */
static int cpuinfo_model(const pa_env *env, bool *amd)
{
    *amd = false;
    char *buf = malloc(65536);
    if (!buf)
        return -1;
    int model = -1;
    if (pa_file_read(pa_env_procfs(env), "cpuinfo", buf, 65536) > 0) {
        *amd = strstr(buf, "AuthenticAMD") || strstr(buf, "HygonGenuine");
        const char *p = strstr(buf, "\nmodel\t");
        if (p && (p = strchr(p, ':')) != NULL)
            model = atoi(p + 1);
    }
    free(buf);
    return model;
}

/* One CPU per socket, the lowest numbered, as (socket << 16) | cpu in
 * sock_cpu[64]; false when there is no msr device at all. */
static bool msr_sockets(const pa_env *env, int *sock_cpu, int *nsock)
{
    char path[RAPL_PATH_MAX];
    bool any_dev = false;
    for (int cpu = 0; cpu < MAX_CPUS; cpu++) {
        if (pa_path_join(path, sizeof(path), pa_env_devfs(env), "cpu/%d/msr", cpu) < 0)
            break;
        struct stat sb;
        if (stat(path, &sb) < 0) {
            if (cpu > 0 && pa_env_cpu_package(env, cpu) < 0)
                break;
            continue;
        }
        any_dev = true;
        int s = pa_env_cpu_package(env, cpu);
        if (s < 0)
            s = 0;
        bool have = false;
        for (int i = 0; i < *nsock; i++)
            if (sock_cpu[i] >> 16 == s)
                have = true;
        if (!have && *nsock < 64)
            sock_cpu[(*nsock)++] = (s << 16) | cpu;
    }
    return any_dev;
}

typedef struct msr_reg {
    off_t msr;
    pa_rapl_kind kind;
    const char *name;
} msr_reg;

static const msr_reg amd_regs[] = {
    {MSR_AMD_PKG_ENERGY_STATUS, PA_RAPL_PKG, "MSR_AMD_PKG_ENERGY_STATUS"},
};
static const msr_reg intel_regs[] = {
    {MSR_PKG_ENERGY_STATUS, PA_RAPL_PKG, "MSR_PKG_ENERGY_STATUS"},
    {MSR_PP0_ENERGY_STATUS, PA_RAPL_CORE, "MSR_PP0_ENERGY_STATUS"},
    {MSR_PP1_ENERGY_STATUS, PA_RAPL_UNCORE, "MSR_PP1_ENERGY_STATUS"},
    {MSR_DRAM_ENERGY_STATUS, PA_RAPL_DRAM, "MSR_DRAM_ENERGY_STATUS"},
    {MSR_PLATFORM_ENERGY_STATUS, PA_RAPL_PSYS, "MSR_PLATFORM_ENERGY_STATUS"},
};

/* The energy registers of this CPU's vendor, its unit register, and
 * whether its DRAM domain counts in the fixed unit. */
typedef struct msr_set {
    const msr_reg *regs;
    size_t nregs;
    off_t unit_reg;
    bool dram_fixed;
} msr_set;

static msr_set msr_set_of(const pa_env *env)
{
    bool amd;
    int model = cpuinfo_model(env, &amd);
    bool dram_fixed = false;
    for (size_t i = 0; i < sizeof(dram_fixed_models) / sizeof(int); i++)
        if (!amd && model == dram_fixed_models[i])
            dram_fixed = true;
    return (msr_set){
        .regs = amd ? amd_regs : intel_regs,
        .nregs = amd ? sizeof(amd_regs) / sizeof(amd_regs[0])
                     : sizeof(intel_regs) / sizeof(intel_regs[0]),
        .unit_reg = amd ? MSR_AMD_RAPL_POWER_UNIT : MSR_RAPL_POWER_UNIT,
        .dram_fixed = dram_fixed,
    };
}

/* The domains of socket s read on cpu (the i-th socket: the psys domain
 * is the first's), added to st; errno of a failure in *last_err. */
static void msr_open_cpu(const pa_env *env, rapl_state *st, const msr_set *set, int i, int s,
                         int cpu, int *last_err)
{
    char path[RAPL_PATH_MAX];
    if (pa_path_join(path, sizeof(path), pa_env_devfs(env), "cpu/%d/msr", cpu) < 0)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *last_err = errno;
        return;
    }
    uint64_t unit;
    ssize_t got = pread(fd, &unit, sizeof(unit), set->unit_reg);
    if (got != (ssize_t)sizeof(unit)) {
        *last_err = got < 0 ? errno : EIO;
        close(fd);
        return;
    }
    /* bits 12:8: energy status unit, 1/2^ESU joules */
    double unit_uj = 1e6 / (double)(1ull << ((unit >> 8) & 0x1f));
    bool used = false;
    for (size_t r = 0; r < set->nregs; r++) {
        const msr_reg *reg = &set->regs[r];
        if (st->n >= PA_MAX_RAPL)
            break;
        if (reg->kind == PA_RAPL_PSYS && i > 0)
            continue;
        rapl_dom *d = &st->dom[st->n];
        memset(d, 0, sizeof(*d));
        d->fd = fd;
        d->msr = reg->msr;
        d->mask = 0xffffffffull; /* bits 63:32 reserved */
        d->range = 1ull << 32;
        d->unit_uj = reg->kind == PA_RAPL_DRAM && set->dram_fixed ? 15.3 : unit_uj;
        d->socket = s;
        d->kind = reg->kind;
        snprintf(d->label, sizeof(d->label), "%s/cpu%d", reg->name, cpu);
        /* an absent register fails with EIO; one that reads 0 at
         * start does not exist on this CPU model: skip the domain */
        if (dom_read_raw(d, PATH_MSR, &d->last) < 0 || d->last == 0)
            continue;
        if (used) {
            /* several domains share the CPU's fd: own a dup so that
             * closing is per domain */
            d->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (d->fd < 0)
                continue;
        }
        used = true;
        st->n++;
    }
    if (!used)
        close(fd);
}

static int open_msr(const pa_env *env, rapl_state *st, char *why, size_t wl)
{
    int sock_cpu[64];
    int nsock = 0;
    int last_err = 0;
    if (!msr_sockets(env, sock_cpu, &nsock)) {
        say(why, wl, "rapl: no %s/cpu/0/msr (modprobe msr)", pa_env_devfs(env));
        return -ENODEV;
    }
    msr_set set = msr_set_of(env);
    for (int i = 0; i < nsock; i++)
        msr_open_cpu(env, st, &set, i, sock_cpu[i] >> 16, sock_cpu[i] & 0xffff, &last_err);
    if (st->n == 0) {
        if (last_err == EACCES || last_err == EPERM)
            say(why, wl,
                "rapl: %s/cpu/N/msr: %s; reading MSRs needs "
                "root (CAP_SYS_RAWIO)",
                pa_env_devfs(env), strerror(last_err));
        else
            say(why, wl,
                "rapl: %s/cpu/N/msr has no RAPL energy "
                "register",
                pa_env_devfs(env));
        return last_err == EACCES || last_err == EPERM ? -EACCES : -ENODEV;
    }
    st->path = PATH_MSR;
    return 0;
}

/* ---------------------------------------------------------------- */
/* Choosing a path                                                   */
/* ---------------------------------------------------------------- */

static int parse_path(const char *s, enum rapl_path *out)
{
    if (!s || !strcmp(s, "auto"))
        *out = PATH_NONE;
    else if (!strcmp(s, "powercap"))
        *out = PATH_POWERCAP;
    else if (!strcmp(s, "perf"))
        *out = PATH_PERF;
    else if (!strcmp(s, "msr"))
        *out = PATH_MSR;
    else
        return pa_error_set(-EINVAL,
                            "rapl: path must be auto, perf, msr or "
                            "powercap, not '%s'",
                            s);
    return 0;
}

/* Opens the forced path, or the cheapest that works: perf, msr,
 * powercap.  The message of a failure names every path's reason, the
 * powercap one first (the path users know). */
/* Opens one path; a path without a package counter (a VM's power PMU
 * with only energy-psys, which reads 0) cannot give CPU power: refused. */
static int open_one(const pa_env *env, enum rapl_path path, rapl_state *st, char *why, size_t wl)
{
    memset(st, 0, sizeof(*st));
    int rc = path == PATH_PERF  ? open_perf(env, st, why, wl)
             : path == PATH_MSR ? open_msr(env, st, why, wl)
                                : open_powercap(env, st, why, wl);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < st->n; i++)
        if (st->dom[i].kind == PA_RAPL_PKG) {
            qsort(st->dom, st->n, sizeof(st->dom[0]), dom_cmp);
            return 0;
        }
    say(why, wl, "rapl: %s gives no package counter (only %s: a VM?)",
        path == PATH_PERF ? "the perf power PMU" : path_names[path], st->dom[0].label);
    state_close(st);
    return -ENODEV;
}

static int rapl_open(const pa_env *env, enum rapl_path want, rapl_state *st, char *why, size_t wl)
{
    if (want != PATH_NONE)
        return open_one(env, want, st, why, wl);
    char w_perf[512], w_msr[512], w_pc[768];
    int rp = open_one(env, PATH_PERF, st, w_perf, sizeof(w_perf));
    if (rp == 0)
        return 0;
    int rm = open_one(env, PATH_MSR, st, w_msr, sizeof(w_msr));
    if (rm == 0)
        return 0;
    int rc = open_one(env, PATH_POWERCAP, st, w_pc, sizeof(w_pc));
    if (rc == 0)
        return 0;
    /* the refusal (and its remedies) first; drop the repeated "rapl: " */
    if (rp == -EACCES && rc != -EACCES)
        say(why, wl, "%s; %s; %s", w_perf, w_pc + 6, w_msr + 6);
    else if (rm == -EACCES && rc != -EACCES)
        say(why, wl, "%s; %s; %s", w_msr, w_pc + 6, w_perf + 6);
    else
        say(why, wl, "%s; %s; %s", w_pc, w_perf + 6, w_msr + 6);
    if (rc == -EACCES || rp == -EACCES || rm == -EACCES)
        return -EACCES;
    return -ENODEV;
}

/* ---------------------------------------------------------------- */
/* Module                                                            */
/* ---------------------------------------------------------------- */

static const char *const rapl_options[] = {"path", NULL};

static int rapl_probe(const pa_env *env, char *why, size_t wl)
{
    rapl_state *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    char tmp[1024];
    int rc = rapl_open(env, PATH_NONE, st, tmp, sizeof(tmp));
    if (rc == 0) {
        size_t np = 0;
        for (size_t i = 0; i < st->n; i++)
            np += st->dom[i].kind == PA_RAPL_PKG;
        say(why, wl, "rapl: %s, %zu domains (%zu packages)", path_names[st->path], st->n, np);
        state_close(st);
    } else {
        say(why, wl, "%s", tmp);
    }
    free(st);
    return rc;
}

/* A state opened on the path the options ask for (path=), with the CPU
 * topology: what start and configure both do. */
static int rapl_state_open(pa_module *m, const pa_options *opts, rapl_state **out)
{
    enum rapl_path want = PATH_NONE;
    int rc = parse_path(pa_options_get(opts, "path"), &want);
    if (rc < 0)
        return rc;
    rapl_state *st = malloc(sizeof(*st));
    if (!st)
        return pa_error_set(-ENOMEM, "rapl: out of memory");
    char why[1024];
    rc = rapl_open(pa_module_env(m), want, st, why, sizeof(why));
    if (rc < 0) {
        free(st);
        return pa_error_set(rc, "%s", why);
    }
    topo_read(pa_module_env(m), st);
    *out = st;
    return 0;
}

static int rapl_start(pa_module *m, const pa_options *opts)
{
    rapl_state *st;
    int rc = rapl_state_open(m, opts, &st);
    if (rc < 0)
        return rc;
    pa_module_set_priv(m, st);
    return 0;
}

static int rapl_sample(pa_module *m, pa_frame *f)
{
    rapl_state *st = pa_module_priv(m);
    uint64_t now_ns = pa_frame_time_ns(f);
    uint64_t dt_ns = st->last_ns && now_ns > st->last_ns ? now_ns - st->last_ns : 0;
    for (size_t i = 0; i < st->n; i++) {
        rapl_dom *d = &st->dom[i];
        uint64_t raw;
        int rc = dom_read_raw(d, st->path, &raw);
        if (rc < 0)
            return pa_error_set(rc,
                                "rapl: reading %s (%s, socket %d) failed: "
                                "%s",
                                d->label, kind_name(d->kind), d->socket, strerror(-rc));
        if (!dom_update(d, raw, dt_ns)) {
            char note[200];
            say(note, sizeof(note),
                "rapl: %s (%s, socket %d) went back or jumped without "
                "wrapping (reset, package plugged in again): its energy in "
                "this window is not counted",
                d->label, kind_name(d->kind), d->socket);
            pa_frame_note(f, "%s", note);
            pa_frame_rapl_reset(f);
        }
    }
    st->last_ns = now_ns;
    pa_rapl_reading r[PA_MAX_RAPL];
    for (size_t i = 0; i < st->n; i++) {
        rapl_dom *d = &st->dom[i];
        r[i].socket = d->socket;
        r[i].kind = d->kind;
        r[i].energy_uj = (uint64_t)llround((double)d->acc * d->unit_uj);
    }
    pa_frame_cpu_packages_set(f, st->cpu_socket, st->ncpu_socket);
    return pa_frame_rapl_set(f, r, st->n, path_names[st->path]);
}

static int rapl_configure(pa_module *m, const pa_options *opts)
{
    rapl_state *st;
    int rc = rapl_state_open(m, opts, &st);
    if (rc < 0)
        return rc;
    /* The accumulators restart from the new path's counters; carry the
     * energy already counted so readings keep growing. */
    rapl_state *old = pa_module_priv(m);
    for (size_t i = 0; i < st->n && old; i++)
        for (size_t j = 0; j < old->n; j++)
            if (old->dom[j].socket == st->dom[i].socket && old->dom[j].kind == st->dom[i].kind) {
                double uj = (double)old->dom[j].acc * old->dom[j].unit_uj;
                st->dom[i].acc = (uint64_t)llround(uj / st->dom[i].unit_uj);
            }
    if (old) {
        state_close(old);
        free(old);
    }
    pa_module_set_priv(m, st);
    return 0;
}

static void rapl_stop(pa_module *m)
{
    rapl_state *st = pa_module_priv(m);
    if (!st)
        return;
    state_close(st);
    free(st);
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_rapl = {
    .abi = PA_MODULE_ABI,
    .name = "rapl",
    .kind = PA_SENSOR,
    .component = PA_COMP_NONE,
    .description = "RAPL energy per socket and domain (perf power PMU, "
                   "MSRs or powercap sysfs)",
    .options = rapl_options,
    .probe = rapl_probe,
    .start = rapl_start,
    .sample = rapl_sample,
    .configure = rapl_configure,
    .stop = rapl_stop,
};
