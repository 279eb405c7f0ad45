/*
 * host.c - the "host" sensor: inside a virtual machine, the energy the
 * host attributed to this VM, read per window from the folder the host's
 * `powerapi daemon --export-vms DIR` writes and the hypervisor shares into
 * the guest (DESIGN.md section 18.2).
 *
 * The folder holds a powercap tree in the kernel's layout (intel-rapl:0,
 * for readers of powercap) and the file powerapi-vm, which this sensor
 * reads: one atomic snapshot (the host writes it to a temporary name and
 * renames it) of the host's window seq, the VM's cumulative energy
 * counters, their wrap point, the host's boot id and host id.  Each tick
 * the counters' step since the last new window goes to the frame as a RAPL
 * package (and DRAM) reading from source "host", which the formula
 * host-share splits as rapl-share splits RAPL's; where the host exports
 * the VM's GPU energy (gpu_energy_uj), its counted steps go to the frame
 * key "host-gpu" (pa_host_gpu, sensors/gpu.h) for host-gpu-share.
 *
 * Faults never become joules: a step across a new boot id (the host
 * restarted), a new host id (a live migration) or a seq that went back
 * (the exporter restarted) restarts the count from the new value and adds
 * nothing (pa_frame_rapl_reset); a counter below the last one in the next
 * windows wrapped at max_energy_range_uj; a folder gone or unreadable, or
 * a file not updated for stale= host windows (3 by default), gives no
 * reading, so that the formula models the window, and the first such tick
 * says why.  Every tick's note names the host windows it covered.
 *
 * Options: path=DIR (the folder; else the first of the usual mount points
 * under the context's rootfs holding powerapi-vm: run/powerapi-host,
 * mnt/powerapi-host, var/lib/powerapi/host), vsock=PORT (instead of a
 * folder: the host's `daemon --export-vsock PORT` answers each connection
 * to CID 2 with the same text), stale=N.
 */
#include "gpu.h"
#include "powerapi_module.h"

#include <errno.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HOST_FILE "powerapi-vm"
#define HOST_VERSION 1

/* The mount points probed without path=, under the context's rootfs. */
static const char *const host_mounts[] = {"run/powerapi-host", "mnt/powerapi-host",
                                          "var/lib/powerapi/host", NULL};

static const char *const host_options[] = {"path", "vsock", "stale", NULL};

/* One powerapi-vm file (DESIGN.md section 18.1). */
typedef struct host_export {
    unsigned version;
    uint64_t seq;
    char boot_id[48], host_id[80], vm[128], source[16], formula[64];
    uint64_t interval_ns;
    uint64_t pkg_uj, dram_uj, gpu_uj, range_uj;
    bool have_dram, have_gpu;
} host_export;

typedef struct host_state {
    char dir[4096]; /* the folder, or "vsock port N" */
    unsigned vsock; /* vsock=PORT, else 0 */
    uint64_t stale_windows;
    bool have; /* last is a reading counted from */
    bool seen; /* last is the newest reading (counted or not) */
    host_export last;
    uint64_t last_new_ns;                 /* frame time when last's seq was first seen */
    uint64_t first_seq;                   /* the first host window of this tick's step */
    uint64_t pkg_total_uj, dram_total_uj; /* unfolded, for the frame */
    uint64_t gpu_total_uj;                /* the same, for host-gpu-share */
    bool in_fault;                        /* the last tick gave no reading */
    unsigned long gone, restarts, migrations, stale, wraps;
} host_state;

/* Copies a value into dst[len]: 0, or -EINVAL when empty or too long. */
static int copy_word(char *dst, size_t len, const char *v)
{
    size_t n = strcspn(v, " \t");
    if (n == 0 || n >= len || v[n])
        return -EINVAL;
    memcpy(dst, v, n + 1);
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    const char *p = v;
    return pa_u64_parse(&p, out) < 0 || *p ? -EINVAL : 0;
}

/* Key k's value v into x: 0; -EINVAL a value that does not parse; an
 * unknown key is left for a later version (0). */
static int parse_field(host_export *x, const char *k, const char *v, unsigned *seen)
{
    static const char *const keys[] = {"version",
                                       "seq",
                                       "boot_id",
                                       "host_id",
                                       "interval_ns",
                                       "package_energy_uj",
                                       "max_energy_range_uj"};
    for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strcmp(k, keys[i]))
            *seen |= 1u << i;
    uint64_t u = 0;
    if (!strcmp(k, "version"))
        return parse_u64(v, &u) < 0 || u > 1000 ? -EINVAL : (x->version = (unsigned)u, 0);
    if (!strcmp(k, "seq"))
        return parse_u64(v, &x->seq);
    if (!strcmp(k, "boot_id"))
        return copy_word(x->boot_id, sizeof(x->boot_id), v);
    if (!strcmp(k, "host_id"))
        return copy_word(x->host_id, sizeof(x->host_id), v);
    if (!strcmp(k, "interval_ns"))
        return parse_u64(v, &x->interval_ns);
    if (!strcmp(k, "package_energy_uj"))
        return parse_u64(v, &x->pkg_uj);
    if (!strcmp(k, "max_energy_range_uj"))
        return parse_u64(v, &x->range_uj);
    if (!strcmp(k, "dram_energy_uj"))
        return (x->have_dram = true, parse_u64(v, &x->dram_uj));
    if (!strcmp(k, "gpu_energy_uj"))
        return (x->have_gpu = true, parse_u64(v, &x->gpu_uj));
    if (!strcmp(k, "source"))
        return copy_word(x->source, sizeof(x->source), v);
    if (!strcmp(k, "formula"))
        return copy_word(x->formula, sizeof(x->formula), v);
    if (!strcmp(k, "vm"))
        return snprintf(x->vm, sizeof(x->vm), "%s", v) >= (int)sizeof(x->vm) ? -EINVAL : 0;
    return 0;
}

/* Parses a powerapi-vm file (NUL-terminated; "key value" lines, '#'
 * comments): 0, or -EINVAL with the reason in why (a required key
 * missing, a value that does not parse, a counter past its wrap point, a
 * version this reader does not know). */
static int host_parse(const char *buf, host_export *x, char *why, size_t wl)
{
    memset(x, 0, sizeof(*x));
    unsigned seen = 0;
    int line = 0;
    for (const char *p = buf; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char l[512];
        line++;
        if (n >= sizeof(l))
            return snprintf(why, wl, "line %d is too long", line), -EINVAL;
        memcpy(l, p, n);
        l[n] = 0;
        p += n + (e != NULL);
        if (!l[0] || l[0] == '#')
            continue;
        char *v = strchr(l, ' ');
        if (!v || parse_field(x, l, (*v = 0, v + 1), &seen) < 0)
            return snprintf(why, wl, "line %d ('%.120s') does not parse", line, l), -EINVAL;
    }
    if (seen != 0x7f)
        return snprintf(why, wl,
                        "a required key is missing (version, seq, boot_id, host_id, "
                        "interval_ns, package_energy_uj, max_energy_range_uj)"),
               -EINVAL;
    if (x->version != HOST_VERSION)
        return snprintf(why, wl, "version %u, this reader knows %d", x->version, HOST_VERSION),
               -EINVAL;
    if (x->range_uj == 0 || x->pkg_uj > x->range_uj || (x->have_dram && x->dram_uj > x->range_uj) ||
        (x->have_gpu && x->gpu_uj > x->range_uj))
        return snprintf(why, wl, "a counter is past max_energy_range_uj %llu",
                        (unsigned long long)x->range_uj),
               -EINVAL;
    return 0;
}

/* vsock=PORT: the host's answer to a connection to its CID (2) on port,
 * read whole into buf (NUL-terminated): the bytes, or -errno. */
static ssize_t vsock_read(unsigned port, char *buf, size_t len)
{
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval tv = {0, 200000}; /* a tick waits 200 ms at most */
    setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_vm a = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST, .svm_port = port};
    ssize_t n = 0, r = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        r = -errno;
    while (r == 0 && (size_t)n < len - 1) {
        ssize_t k = read(fd, buf + n, len - 1 - (size_t)n);
        if (k < 0)
            r = -errno;
        if (k <= 0)
            break;
        n += k;
    }
    close(fd);
    buf[n] = 0;
    return r < 0 ? r : n;
}

/* Reads and parses dir's powerapi-vm (or, with a port, the host's answer
 * over vsock): 0, or -errno with why. */
static int host_read_from(const char *dir, unsigned port, host_export *x, char *why, size_t wl)
{
    char buf[4096];
    ssize_t n =
        port ? vsock_read(port, buf, sizeof(buf)) : pa_file_read(dir, HOST_FILE, buf, sizeof(buf));
    char what[880];
    if (port)
        snprintf(what, sizeof(what), "vsock port %u of the host (CID 2)", port);
    else
        snprintf(what, sizeof(what), "%.800s/" HOST_FILE, dir);
    if (n < 0 && port)
        return snprintf(why, wl,
                        "%.60s: %.60s (run 'powerapi daemon --export-vms DIR --export-vsock %u' on "
                        "the host, and give this VM a vhost-vsock device)",
                        what, strerror((int)-n), port),
               (int)n;
    if (n < 0)
        return snprintf(why, wl, "%s: %.100s", what, strerror((int)-n)), (int)n;
    char bad[256];
    int rc = host_parse(buf, x, bad, sizeof(bad));
    if (rc < 0)
        snprintf(why, wl, "%s: %.140s", what, bad);
    return rc;
}

static int host_read(const char *dir, host_export *x, char *why, size_t wl)
{
    return host_read_from(dir, 0, x, why, wl);
}

/* The folder: path=, else the first usual mount point with a file that
 * parses.  0, or -ENODEV with why. */
static int host_find(const pa_env *env, const pa_options *opts, char *dir, size_t len, char *why,
                     size_t wl)
{
    const char *path = opts ? pa_options_get(opts, "path") : NULL;
    host_export x;
    if (path) {
        snprintf(dir, len, "%s", path);
        int rc = host_read(dir, &x, why, wl);
        return rc < 0 ? (rc == -EINVAL ? rc : -ENODEV) : 0;
    }
    for (const char *const *m = host_mounts; *m; m++) {
        if (pa_path_join(dir, len, pa_env_rootfs(env), "%s", *m) == 0 &&
            host_read(dir, &x, why, wl) == 0)
            return 0;
    }
    snprintf(why, wl,
             "host: no export of the host at %s{run/powerapi-host,mnt/powerapi-host,"
             "var/lib/powerapi/host}; mount the folder the host's 'powerapi daemon "
             "--export-vms DIR' writes for this VM there, or give path=DIR",
             pa_env_rootfs(env));
    return -ENODEV;
}

static int host_probe(const pa_env *env, char *why, size_t wl)
{
    char dir[4096], tmp[1024];
    int rc = host_find(env, NULL, dir, sizeof(dir), tmp, sizeof(tmp));
    if (rc == 0)
        snprintf(why, wl, "host: the host's export at %s", dir);
    else
        snprintf(why, wl, "%s", tmp);
    return rc;
}

int pa_host_gpu_exported(const pa_env *env, char *why, size_t len)
{
    char dir[4096], tmp[1024];
    host_export x;
    if (host_find(env, NULL, dir, sizeof(dir), tmp, sizeof(tmp)) < 0 ||
        host_read(dir, &x, tmp, sizeof(tmp)) < 0)
        return snprintf(why, len, "%s", tmp), 0;
    if (!x.have_gpu)
        return snprintf(why, len, "host: the host's export at %.900s has no GPU zone", dir), 0;
    snprintf(why, len, "host: the host's export at %.900s has a GPU zone", dir);
    return 1;
}

static int host_start(pa_module *m, const pa_options *opts)
{
    uint64_t stale = 3;
    const char *s = pa_options_get(opts, "stale");
    if (s && (parse_u64(s, &stale) < 0 || stale == 0 || stale > 1000000))
        return pa_error_set(-EINVAL, "host: stale=%s: give a number of host windows (1 or more)",
                            s);
    host_state *st = calloc(1, sizeof(*st));
    if (!st)
        return pa_error_set(-ENOMEM, "host: out of memory");
    char why[1024];
    const char *vs = pa_options_get(opts, "vsock");
    uint64_t port = 0;
    int rc;
    if (vs && (parse_u64(vs, &port) < 0 || port == 0 || port > 0xfffffffeu)) {
        free(st);
        return pa_error_set(-EINVAL,
                            "host: vsock=%s: give the port of the host's 'powerapi "
                            "daemon --export-vsock PORT'",
                            vs);
    }
    st->vsock = (unsigned)port;
    if (vs) {
        snprintf(st->dir, sizeof(st->dir), "vsock port %u", st->vsock);
        host_export x;
        rc = host_read_from(st->dir, st->vsock, &x, why, sizeof(why)) < 0 ? -ENODEV : 0;
    } else {
        rc = host_find(pa_module_env(m), opts, st->dir, sizeof(st->dir), why, sizeof(why));
    }
    if (rc < 0) {
        free(st);
        return pa_error_set(rc, "%s%s", strncmp(why, "host:", 5) ? "host: " : "", why);
    }
    st->stale_windows = stale;
    pa_module_set_priv(m, st);
    return 0;
}

static void host_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* The step of a counter from a to b in the next windows (wrapped at
 * range when it went back). */
static uint64_t step_uj(uint64_t a, uint64_t b, uint64_t range, bool *wrapped)
{
    *wrapped = b < a;
    return b >= a ? b - a : range - a + b;
}

/* A tick without a reading: said on the first one of a run. */
static void host_fault(host_state *st, pa_frame *f, const char *what)
{
    if (!st->in_fault)
        pa_frame_note(f,
                      "host: %s: no reading of the host, the window is modelled (gone %lu, "
                      "stale %lu so far)",
                      what, st->gone, st->stale);
    st->in_fault = true;
    st->have = false; /* counted again from the next reading */
}

/* Why a new reading x cannot be counted from the last one, or NULL. */
static const char *discontinuity(host_state *st, const host_export *x)
{
    if (strcmp(x->boot_id, st->last.boot_id) != 0)
        return st->restarts++, "the host restarted (new boot id)";
    if (strcmp(x->host_id, st->last.host_id) != 0)
        return st->migrations++, "the VM moved to another host (new host id)";
    if (x->seq < st->last.seq || x->range_uj != st->last.range_uj)
        return st->restarts++, "the host's exporter restarted (its window number went back)";
    return NULL;
}

/* Counts x against the last reading into the unfolded totals. */
static void host_count(host_state *st, pa_frame *f, const host_export *x)
{
    const char *reset = st->have ? discontinuity(st, x) : NULL;
    if (reset) {
        pa_frame_rapl_reset(f);
        pa_frame_note(f, "host: %s: counted from its new value, nothing added this window", reset);
        st->first_seq = x->seq + 1;
    } else if (st->have && x->seq > st->last.seq) {
        bool w1, w2 = false;
        st->pkg_total_uj += step_uj(st->last.pkg_uj, x->pkg_uj, x->range_uj, &w1);
        if (x->have_dram && st->last.have_dram)
            st->dram_total_uj += step_uj(st->last.dram_uj, x->dram_uj, x->range_uj, &w2);
        bool w3 = false;
        if (x->have_gpu && st->last.have_gpu)
            st->gpu_total_uj += step_uj(st->last.gpu_uj, x->gpu_uj, x->range_uj, &w3);
        w2 |= w3;
        if (w1 || w2) {
            st->wraps++;
            pa_frame_note(f, "host: counter wrapped at max_energy_range_uj %llu (%lu so far)",
                          (unsigned long long)x->range_uj, st->wraps);
        }
    } else if (!st->have) {
        st->first_seq = x->seq + 1;
    }
}

/* The VM's GPU energy of reading x (counted by host_count) for
 * host-gpu-share, when the host exports it; its key appearing (counted
 * from the next host window) or gone (no GPU reading) is said. */
static void host_gpu(const host_state *st, pa_frame *f, const host_export *x)
{
    if (x->have_gpu && st->have && !st->last.have_gpu)
        pa_frame_note(f, "host: gpu_energy_uj appeared in the host's export: the VM's GPU "
                         "energy counted from the next host window");
    else if (!x->have_gpu && st->have && st->last.have_gpu)
        pa_frame_note(f, "host: gpu_energy_uj gone from the host's export (no GPU formula on "
                         "the host now): no GPU reading of the host");
    if (!x->have_gpu)
        return;
    pa_host_gpu g;
    memset(&g, 0, sizeof(g));
    g.energy_j = (double)st->gpu_total_uj / 1e6;
    snprintf(g.vm, sizeof(g.vm), "%s", x->vm);
    snprintf(g.host_id, sizeof(g.host_id), "%s", x->host_id);
    snprintf(g.formula, sizeof(g.formula), "%s", x->formula[0] ? x->formula : "unknown");
    (void)pa_frame_put(f, "host-gpu", &g, sizeof(g)); /* -ENOMEM: no reading this tick */
}

static int host_sample(pa_module *m, pa_frame *f)
{
    host_state *st = pa_module_priv(m);
    uint64_t now = pa_frame_time_ns(f);
    host_export x;
    char why[1024];
    int rc = host_read_from(st->dir, st->vsock, &x, why, sizeof(why));
    if (rc < 0) {
        if (!st->in_fault)
            st->gone++;
        host_fault(st, f, why);
        return 0;
    }
    bool fresh = !st->seen || x.seq != st->last.seq || strcmp(x.boot_id, st->last.boot_id) ||
                 strcmp(x.host_id, st->last.host_id);
    if (!fresh && now - st->last_new_ns > st->stale_windows * x.interval_ns) {
        char what[4400];
        snprintf(what, sizeof(what), "%s not updated for %llu host windows (seq %llu)", st->dir,
                 (unsigned long long)st->stale_windows, (unsigned long long)x.seq);
        if (!st->in_fault)
            st->stale++;
        host_fault(st, f, what);
        return 0;
    }
    if (st->in_fault)
        pa_frame_note(f, "host: the host's export at %s reads again (seq %llu)", st->dir,
                      (unsigned long long)x.seq);
    st->in_fault = false;
    host_count(st, f, &x);
    host_gpu(st, f, &x);
    if (fresh)
        st->last_new_ns = now;
    uint64_t first = st->first_seq;
    st->first_seq = x.seq + 1;
    st->last = x;
    st->have = st->seen = true;
    pa_rapl_reading r[2] = {{.socket = 0, .kind = PA_RAPL_PKG, .energy_uj = st->pkg_total_uj},
                            {.socket = 0, .kind = PA_RAPL_DRAM, .energy_uj = st->dram_total_uj}};
    pa_frame_rapl_set(f, r, x.have_dram ? 2 : 1, "host");
    char span[64];
    if (first > x.seq)
        snprintf(span, sizeof(span), "no new host window (last %llu)", (unsigned long long)x.seq);
    else
        snprintf(span, sizeof(span), "host windows %llu-%llu", (unsigned long long)first,
                 (unsigned long long)x.seq);
    pa_frame_note(f,
                  "host: measured (host): VM '%s' as host %s attributed it, %s (the host's "
                  "figure %s, %s)",
                  x.vm, x.host_id, span, x.source[0] ? x.source : "unknown",
                  x.formula[0] ? x.formula : "unknown");
    return 0;
}

const pa_module_ops pa__mod_host = {
    .abi = PA_MODULE_ABI,
    .name = "host",
    .kind = PA_SENSOR,
    .description = "in a VM: the energy the host attributed to it, from the folder its "
                   "'powerapi daemon --export-vms' shares into the guest",
    .options = host_options,
    .probe = host_probe,
    .start = host_start,
    .sample = host_sample,
    .stop = host_stop,
};
