/*
 * ring.c - the shared-memory ring of tumbling windows (pa_ring_*;
 * DESIGN.md section 10).
 *
 * One writer (powerapi daemon) publishes reports; readers in other
 * processes map the ring read-only.  Layout (all little-endian host
 * words, version PA_RING_VERSION):
 *
 *   [ header: RING_HDR_BYTES ][ slot 0 ][ slot 1 ] ... [ slot cap-1 ]
 *   slot = [ struct ring_window ][ max_targets x struct ring_target ]
 *          [ max_targets x PA_MAX_COUNTERS doubles of perf counters ]
 *          [ max_targets x 2 x PA_MAX_COMPONENTS doubles of components ]
 *          [ pool_bytes of NUL-terminated cgroup paths and counter names ]
 *
 * Counters are packed: the i-th stored target's counters are doubles
 * i*nc .. i*nc+nc-1 of the counter area (nc = the window's ncounters), so
 * a window without counters copies none.  The counter names are stored
 * once per window, in the pool.  Components (version 3) are packed the
 * same way: the i-th stored target's watts are doubles i*2k .. i*2k+k-1
 * of the component area and its joules the next k (k = the window's
 * ncomponents); their names are in the window.  The report's devices (the
 * GPUs, version 4) are in the window too, whole records.  A VM record
 * (version 5) keeps its names' offsets into the pool and its vCPU part in
 * its struct ring_target.
 *
 * Window s (1, 2, ...) lives in slot (s - 1) % capacity.  Each slot starts
 * with a sequence word (a seqlock): 2s-1 while the writer fills window s,
 * 2s once complete.  The writer never waits; a reader copies the slot and
 * keeps the copy only if the word was 2s before and after the copy.  All
 * shared words are accessed with atomic builtins (relaxed for the data,
 * acquire/release around it), so the copy is race-free in the C11 sense.
 *
 * The magic word is stored last (release) when the ring is created, so a
 * reader never trusts a half-initialised header; the version sits right
 * after it so any future layout can be recognised and refused.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RING_MAGIC 0x474e495241504150ull /* "PAPARING" */
#define RING_HDR_BYTES 4096u
#define RING_NAME_MAX 200
#define RING_MAX_CAPACITY 100000u
#define RING_MAX_TARGETS (1u << 20)
#define RING_MAX_BYTES (4ull << 30)
#define RING_VM_STRINGS 7 /* name, uuid, hypervisor, manager, id, source, cgroup */

enum { RING_RUNNING = 1, RING_STOPPED = 2 };

/* Fixed-size mirror of pa_power. */
struct ring_power {
    double cpu_w, nic_w, total_w, idle_w;
    double cpu_j, nic_j, total_j;
    double interval_s, cpu_time_s;
    uint64_t time_ns;
    uint32_t flags, pad;
};

struct ring_hdr {
    uint64_t magic; /* stored last */
    uint32_t version;
    uint32_t hdr_bytes;
    uint64_t slot_bytes;
    uint32_t capacity;
    uint32_t max_targets;
    uint32_t pool_bytes;
    uint32_t mode;
    int32_t writer_pid;
    uint32_t state; /* RING_*, atomic */
    uint64_t interval_ns;
    uint64_t created_ns;   /* CLOCK_MONOTONIC */
    uint64_t head;         /* newest complete window, atomic */
    uint64_t heartbeat_ns; /* CLOCK_MONOTONIC, atomic */
};

struct ring_window {
    uint64_t seq; /* seqlock word */
    uint64_t tick;
    uint64_t time_ns;
    double interval_s;
    struct ring_power system;
    uint32_t ntargets;       /* stored */
    uint32_t ntargets_total; /* in the report */
    uint32_t pool_used;
    uint32_t ncounters;                    /* <= PA_MAX_COUNTERS */
    uint32_t counter_off[PA_MAX_COUNTERS]; /* names, into the pool */
    char formula[128];
    char sensors[128];
    char cpu_source[16];
    char assumed[PA_MAX_ASSUMED];
    uint32_t ncomponents;  /* <= PA_MAX_COMPONENTS: the report's */
    uint32_t exits_source; /* the report's, as ring_exits[] numbers it
                              (in what was padding: no new version) */
    char comp_names[PA_MAX_COMPONENTS][16];
    double sys_comp_w[PA_MAX_COMPONENTS], sys_comp_j[PA_MAX_COMPONENTS];
    uint32_t ndevices;   /* <= PA_MAX_DEVICES (version 4) */
    uint32_t exits_lost; /* the report's, at most UINT32_MAX (was padding) */
    pa_device_info devices[PA_MAX_DEVICES];
};

struct ring_target {
    uint32_t type;
    int32_t pid, tid, ppid;
    char comm[PA_COMM_MAX];
    uint32_t cgroup_off; /* into the slot's pool; 0 is "" */
    uint32_t has_net;
    uint64_t net_rx, net_tx;
    struct ring_power power;
    uint32_t has_counters; /* its counters are in the counter area */
    uint32_t processes;    /* PA_TARGET_EXITED's (was padding) */
    double multiplex;
    /* version 5: a PA_TARGET_VM record (DESIGN.md section 18) */
    uint32_t has_vm;                  /* its pa_vm_info follows */
    uint32_t vm_off[RING_VM_STRINGS]; /* ring_vm_strings in the pool, 0 "" */
    uint32_t vm_threads, vm_vcpus;
    double vcpu_w, emulator_w, vcpu_j, emulator_j;
};

/* The strings of a VM record, in the order of vm_off. */
static char *vm_string(pa_vm_info *v, int k, size_t *len)
{
    char *const f[RING_VM_STRINGS] = {v->name, v->uuid,   v->hypervisor, v->manager,
                                      v->id,   v->source, v->cgroup};
    const size_t sz[RING_VM_STRINGS] = {sizeof(v->name),    sizeof(v->uuid), sizeof(v->hypervisor),
                                        sizeof(v->manager), sizeof(v->id),   sizeof(v->source),
                                        sizeof(v->cgroup)};
    *len = sz[k];
    return f[k];
}

/* pa_report.exits_source in a window: its index here, 0 for any other. */
static const char *const ring_exits[] = {"none", "taskstats", "children-time", "file"};

_Static_assert(sizeof(struct ring_hdr) <= RING_HDR_BYTES, "header fits");
_Static_assert(sizeof(struct ring_window) % 8 == 0, "window words");
_Static_assert(sizeof(struct ring_target) % 8 == 0, "target words");
_Static_assert(PA_MAX_COUNTERS <= 32, "counter_map's bit set");

/* ------------------------------------------------------------------ */
/* Shared helpers                                                      */
/* ------------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "name" or "/name" -> "/name" (one path component, portable chars). */
static int ring_shm_name(const char *name, char *buf, size_t len)
{
    if (!name || !*name)
        name = PA_RING_DEFAULT_NAME;
    if (*name == '/')
        name++;
    size_t n = strlen(name);
    if (n == 0 || n > RING_NAME_MAX || n + 2 > len)
        return pa__err(-EINVAL, "ring: name '%s' must have 1 to %d characters", name,
                       RING_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return pa__err(-EINVAL,
                           "ring: name '%s' may only contain letters, digits, "
                           "'-', '_' and '.'",
                           name);
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return pa__err(-EINVAL, "ring: name '%s' is not allowed", name);
    buf[0] = '/';
    memcpy(buf + 1, name, n + 1);
    return 0;
}

static uint64_t counters_bytes_for(uint32_t max_targets)
{
    return (uint64_t)max_targets * PA_MAX_COUNTERS * sizeof(double);
}

static uint64_t comps_bytes_for(uint32_t max_targets)
{
    return (uint64_t)max_targets * 2 * PA_MAX_COMPONENTS * sizeof(double);
}

static uint64_t slot_bytes_for(uint32_t max_targets, uint32_t pool_bytes)
{
    uint64_t b = sizeof(struct ring_window) + (uint64_t)max_targets * sizeof(struct ring_target) +
                 counters_bytes_for(max_targets) + comps_bytes_for(max_targets) + pool_bytes;
    return (b + 63) & ~(uint64_t)63;
}

/* Offsets in a slot of the counter area and of the pool. */
static size_t counters_at(uint32_t max_targets)
{
    return sizeof(struct ring_window) + (size_t)max_targets * sizeof(struct ring_target);
}

static size_t comps_at(uint32_t max_targets)
{
    return counters_at(max_targets) + (size_t)counters_bytes_for(max_targets);
}

static size_t pool_at(uint32_t max_targets)
{
    return comps_at(max_targets) + (size_t)comps_bytes_for(max_targets);
}

static uint32_t pool_bytes_for(uint32_t max_targets)
{
    return 4096u + 64u * max_targets;
}

/* Relaxed word copies: the data half of the seqlock. */
static void words_store(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (size_t i = 0; i < bytes / 8; i++)
        __atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

static void words_load(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (size_t i = 0; i < bytes / 8; i++)
        d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static void power_to_ring(struct ring_power *d, const pa_power *s)
{
    d->cpu_w = s->cpu_w;
    d->nic_w = s->nic_w;
    d->total_w = s->total_w;
    d->idle_w = s->idle_w;
    d->cpu_j = s->cpu_j;
    d->nic_j = s->nic_j;
    d->total_j = s->total_j;
    d->interval_s = s->interval_s;
    d->cpu_time_s = s->cpu_time_s;
    d->time_ns = s->time_ns;
    d->flags = s->flags;
    d->pad = 0;
}

static void power_from_ring(pa_power *d, const struct ring_power *s)
{
    d->cpu_w = s->cpu_w;
    d->nic_w = s->nic_w;
    d->total_w = s->total_w;
    d->idle_w = s->idle_w;
    d->cpu_j = s->cpu_j;
    d->nic_j = s->nic_j;
    d->total_j = s->total_j;
    d->interval_s = s->interval_s;
    d->cpu_time_s = s->cpu_time_s;
    d->time_ns = s->time_ns;
    d->flags = s->flags;
}

static void copy_str(char *dst, size_t len, const char *src)
{
    if (!src)
        src = "";
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    memset(dst + n, 0, len - n);
}

/* Is the writer of a mapped header alive?  0 yes, else -EOWNERDEAD with
 * a message that names the ring, the pid and what to do. */
static int ring_check_alive(const char *name, const struct ring_hdr *h, uint64_t *age_out)
{
    uint32_t state = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
    pid_t pid = h->writer_pid;
    uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE);
    uint64_t now = mono_ns();
    uint64_t age = now > hb ? now - hb : 0;
    if (age_out)
        *age_out = age;
    if (state == RING_STOPPED)
        return pa__err(-EOWNERDEAD,
                       "ring '%s': its writer (pid %d) stopped; start "
                       "`powerapi daemon --ring %s` again",
                       name + 1, (int)pid, name + 1);
    if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
        return pa__err(-EOWNERDEAD,
                       "ring '%s': its writer (pid %d) is no longer running; "
                       "start `powerapi daemon --ring %s` again",
                       name + 1, (int)pid, name + 1);
    /* Three windows and two seconds of slack before calling it hung. */
    uint64_t limit = 3 * h->interval_ns + 2000000000ull;
    if (age > limit)
        return pa__err(-EOWNERDEAD,
                       "ring '%s': its writer (pid %d) has not published for "
                       "%.1f s (window %.3f s): it is stopped or hung; restart "
                       "`powerapi daemon --ring %s`",
                       name + 1, (int)pid, (double)age / 1e9, (double)h->interval_ns / 1e9,
                       name + 1);
    return 0;
}

/* Validates a mapped header of `size` bytes.  0, -EAGAIN (not ready) or
 * -EPROTO (not ours / other version / inconsistent sizes). */
static int ring_check_header(const char *name, const struct ring_hdr *h, size_t size)
{
    if (size < RING_HDR_BYTES)
        return pa__err(size == 0 ? -EAGAIN : -EPROTO, "ring '%s': %s (%zu bytes)", name + 1,
                       size == 0 ? "is being created" : "is not a powerapi ring", size);
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0)
        return pa__err(-EAGAIN, "ring '%s': is being created; retry", name + 1);
    if (magic != RING_MAGIC)
        return pa__err(-EPROTO, "ring '%s': /dev/shm%s is not a powerapi ring (bad magic)",
                       name + 1, name);
    if (h->version != PA_RING_VERSION)
        return pa__err(-EPROTO,
                       "ring '%s': layout version %u, but this powerapi (%s) "
                       "reads version %u: use the same powerapi version for "
                       "the daemon and its readers",
                       name + 1, h->version, PA_VERSION_STRING, PA_RING_VERSION);
    if (h->hdr_bytes != RING_HDR_BYTES || h->capacity == 0 || h->capacity > RING_MAX_CAPACITY ||
        h->max_targets > RING_MAX_TARGETS || h->pool_bytes != pool_bytes_for(h->max_targets) ||
        h->slot_bytes != slot_bytes_for(h->max_targets, h->pool_bytes) ||
        (uint64_t)h->hdr_bytes + (uint64_t)h->capacity * h->slot_bytes != size)
        return pa__err(-EPROTO, "ring '%s': inconsistent header (sizes)", name + 1);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writer                                                              */
/* ------------------------------------------------------------------ */

typedef struct rank {
    double w;
    uint32_t i;
} rank;

typedef struct cg_slot {
    uint64_t hash;
    uint32_t off;
    uint32_t gen;
} cg_slot;

struct pa_ring_writer {
    char name[RING_NAME_MAX + 2];
    int fd;
    unsigned char *map;
    size_t map_len;
    struct ring_hdr *hdr;
    uint32_t cap, max_targets, pool_bytes;
    uint64_t slot_bytes;
    unsigned char *buf; /* the window being prepared */
    rank *ranks;
    size_t ranks_cap;
    cg_slot *cg;   /* cgroup path -> pool offset, per window */
    size_t cg_cap; /* power of two */
    uint32_t gen;
};

static int ring_unlink_stale(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return errno == ENOENT ? 0
                               : pa__err(-errno,
                                         "ring '%s': cannot open "
                                         "/dev/shm%s: %s",
                                         name + 1, name, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        rc = pa__err(-errno, "ring '%s': fstat: %s", name + 1, strerror(errno));
        close(fd);
        return rc;
    }
    void *m = MAP_FAILED;
    if ((size_t)st.st_size >= RING_HDR_BYTES)
        m = mmap(NULL, RING_HDR_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return pa__err(-EEXIST,
                       "ring '%s': /dev/shm%s exists and is not a powerapi "
                       "ring; choose another name",
                       name + 1, name);
    const struct ring_hdr *h = m;
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic != RING_MAGIC) {
        munmap(m, RING_HDR_BYTES);
        return pa__err(-EEXIST,
                       "ring '%s': /dev/shm%s exists and is not a complete "
                       "powerapi ring; remove it or choose another name",
                       name + 1, name);
    }
    pid_t pid = h->writer_pid;
    rc = ring_check_alive(name, h, NULL);
    munmap(m, RING_HDR_BYTES);
    if (rc == 0)
        return pa__err(-EEXIST,
                       "ring '%s': already published by a running writer "
                       "(pid %d); stop it or choose another name",
                       name + 1, (int)pid);
    if (shm_unlink(name) < 0 && errno != ENOENT)
        return pa__err(-errno, "ring '%s': cannot remove the stale ring: %s", name + 1,
                       strerror(errno));
    return 0;
}

/* A ring's shape from the options, checked. */
typedef struct ring_shape {
    uint32_t cap, maxt, mode, pool;
    uint64_t interval, slot, total;
} ring_shape;

static int ring_shape_of(const pa_ring_opts *opts, ring_shape *sh)
{
    uint32_t cap = opts && opts->capacity ? opts->capacity : 100;
    uint32_t maxt = opts && opts->max_targets ? opts->max_targets : 1024;
    uint32_t mode = opts && opts->mode ? opts->mode : 0644;
    uint64_t interval = opts && opts->interval_ns ? opts->interval_ns : 1000000000ull;
    if (cap < 2 || cap > RING_MAX_CAPACITY)
        return pa__err(-EINVAL, "ring: capacity %u out of range [2, %u]", cap, RING_MAX_CAPACITY);
    if (maxt > RING_MAX_TARGETS)
        return pa__err(-EINVAL, "ring: max_targets %u out of range [1, %u]", maxt,
                       RING_MAX_TARGETS);
    if (mode & ~0777u)
        return pa__err(-EINVAL, "ring: mode %o has bits beyond 0777", mode);
    uint32_t pool = pool_bytes_for(maxt);
    uint64_t slot = slot_bytes_for(maxt, pool);
    uint64_t total = RING_HDR_BYTES + (uint64_t)cap * slot;
    if (total > RING_MAX_BYTES)
        return pa__err(-EINVAL,
                       "ring: %u windows of %u targets need %.1f GiB (limit 4); "
                       "lower the capacity or max_targets",
                       cap, maxt, (double)total / (1 << 30));
    *sh = (ring_shape){.cap = cap,
                       .maxt = maxt,
                       .mode = mode,
                       .pool = pool,
                       .interval = interval,
                       .slot = slot,
                       .total = total};
    return 0;
}

static void ring_hdr_init(struct ring_hdr *h, const ring_shape *sh)
{
    h->version = PA_RING_VERSION;
    h->hdr_bytes = RING_HDR_BYTES;
    h->slot_bytes = sh->slot;
    h->capacity = sh->cap;
    h->max_targets = sh->maxt;
    h->pool_bytes = sh->pool;
    h->mode = sh->mode;
    h->writer_pid = (int32_t)getpid();
    h->interval_ns = sh->interval;
    h->created_ns = mono_ns();
    __atomic_store_n(&h->head, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&h->heartbeat_ns, h->created_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&h->state, RING_RUNNING, __ATOMIC_RELAXED);
}

/* Creates, sizes, maps and fills the shared memory of w, in private mode
 * until complete, the magic last; on failure, unlinks what it created
 * (w's fd and map are the caller's to release). */
static int ring_shm_create(pa_ring_writer *w, const char *shm, const ring_shape *sh,
                           const pa_ring_opts *opts)
{
    int rc;
    w->fd = shm_open(shm, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        rc = -errno;
        return pa__err(rc, "ring '%s': cannot create /dev/shm%s: %s", shm + 1, shm,
                       strerror(errno));
    }
    if (ftruncate(w->fd, (off_t)sh->total) < 0) {
        rc = -errno;
        pa__err(rc, "ring '%s': cannot size it to %llu bytes: %s", shm + 1,
                (unsigned long long)sh->total, strerror(errno));
        goto fail_unlink;
    }
    w->map = mmap(NULL, sh->total, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    if (w->map == MAP_FAILED) {
        rc = -errno;
        pa__err(rc, "ring '%s': mmap: %s", shm + 1, strerror(errno));
        goto fail_unlink;
    }
    w->map_len = sh->total;
    w->hdr = (struct ring_hdr *)w->map;
    ring_hdr_init(w->hdr, sh);
    if (opts && opts->set_gid && fchown(w->fd, (uid_t)-1, opts->gid) < 0) {
        rc = -errno;
        pa__err(rc, "ring '%s': cannot give it to group %u: %s", shm + 1, (unsigned)opts->gid,
                strerror(errno));
        goto fail_unlink;
    }
    if (fchmod(w->fd, (mode_t)sh->mode) < 0) {
        rc = -errno;
        pa__err(rc, "ring '%s': cannot set mode %o: %s", shm + 1, sh->mode, strerror(errno));
        goto fail_unlink;
    }
    __atomic_store_n(&w->hdr->magic, RING_MAGIC, __ATOMIC_RELEASE);
    return 0;

fail_unlink:
    shm_unlink(shm);
    return rc;
}

int pa_ring_create(const char *name, const pa_ring_opts *opts, pa_ring_writer **out)
{
    char shm[RING_NAME_MAX + 2];
    int rc = ring_shm_name(name, shm, sizeof(shm));
    if (rc < 0)
        return rc;
    if (!out)
        return pa__err(-EINVAL, "ring: out is NULL");
    ring_shape sh = {0};
    rc = ring_shape_of(opts, &sh);
    if (rc < 0)
        return rc;

    rc = ring_unlink_stale(shm);
    if (rc < 0)
        return rc;

    pa_ring_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return pa__err(-ENOMEM, "ring: out of memory");
    w->fd = -1;
    w->map = MAP_FAILED;
    memcpy(w->name, shm, strlen(shm) + 1);
    w->cap = sh.cap;
    w->max_targets = sh.maxt;
    w->pool_bytes = sh.pool;
    w->slot_bytes = sh.slot;
    w->buf = calloc(1, sh.slot);
    w->cg_cap = 64;
    while (w->cg_cap < 2 * (size_t)sh.maxt + 2)
        w->cg_cap <<= 1;
    w->cg = calloc(w->cg_cap, sizeof(*w->cg));
    if (!w->buf || !w->cg) {
        rc = pa__err(-ENOMEM, "ring: out of memory");
        goto fail;
    }
    rc = ring_shm_create(w, shm, &sh, opts);
    if (rc < 0)
        goto fail;
    *out = w;
    return 0;

fail:
    if (w->map != MAP_FAILED)
        munmap(w->map, sh.total);
    if (w->fd >= 0)
        close(w->fd);
    free(w->buf);
    free(w->cg);
    free(w);
    return rc;
}

static int rank_cmp(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Pool offset of a cgroup path, each distinct path stored once per
 * window (reports may carry one copy of the path per target), or
 * UINT32_MAX when the pool is full. */
static uint32_t pool_put(pa_ring_writer *w, struct ring_window *win, char *pool, const char *s)
{
    if (!s || !*s)
        return 0;
    size_t n = strlen(s) + 1;
    uint64_t hsh = pa__hash_str(s);
    size_t mask = w->cg_cap - 1;
    for (size_t k = 0; k < w->cg_cap; k++) {
        cg_slot *c = &w->cg[(hsh + k) & mask];
        if (c->gen != w->gen) {
            if (win->pool_used + n > w->pool_bytes)
                return UINT32_MAX;
            uint32_t off = win->pool_used;
            memcpy(pool + off, s, n);
            win->pool_used += (uint32_t)n;
            c->gen = w->gen;
            c->hash = hsh;
            c->off = off;
            return off;
        }
        if (c->hash == hsh && strcmp(pool + c->off, s) == 0)
            return c->off;
    }
    return UINT32_MAX;
}

/* A VM record's names (into the pool: a string that does not fit is "")
 * and its vCPU part (version 5). */
static void vm_to_ring(pa_ring_writer *w, struct ring_window *win, char *pool,
                       struct ring_target *d, const pa_target_info *t)
{
    d->vcpu_w = t->vcpu_w;
    d->emulator_w = t->emulator_w;
    d->vcpu_j = t->vcpu_j;
    d->emulator_j = t->emulator_j;
    if (!t->vm)
        return;
    d->has_vm = 1;
    for (int k = 0; k < RING_VM_STRINGS; k++) {
        size_t len;
        const char *v = vm_string((pa_vm_info *)t->vm, k, &len);
        uint32_t off = memchr(v, '\0', len) ? pool_put(w, win, pool, v) : 0;
        d->vm_off[k] = off == UINT32_MAX ? 0 : off;
    }
    d->vm_threads = t->vm->nthreads;
    d->vm_vcpus = t->vm->nvcpus;
}

/* A copied window's devices made safe to read: a count within bounds,
 * every string terminated. */
static void device_sanitize(struct ring_window *win)
{
    if (win->ndevices > PA_MAX_DEVICES)
        win->ndevices = 0;
    for (uint32_t i = 0; i < win->ndevices; i++) {
        pa_device_info *d = &win->devices[i];
        char *strs[7] = {d->component, d->vendor, d->name, d->uuid, d->bus, d->source, NULL};
        size_t lens[6] = {sizeof(d->component), sizeof(d->vendor), sizeof(d->name),
                          sizeof(d->uuid),      sizeof(d->bus),    sizeof(d->source)};
        for (int k = 0; strs[k]; k++)
            strs[k][lens[k] - 1] = '\0';
    }
}

/* The report's components into the window: their names and the
 * system's watts and joules.  Returns how many (0: the report has none,
 * or more than a window holds). */
static uint32_t window_comps_set(struct ring_window *win, const pa_report *r)
{
    size_t nk = r->ncomponents;
    if (!nk || nk > PA_MAX_COMPONENTS || !r->component_names || !r->system_component_w ||
        !r->system_component_j ||
        (r->ntargets && (!r->target_component_w || !r->target_component_j)))
        return 0;
    for (size_t k = 0; k < nk; k++) {
        copy_str(win->comp_names[k], sizeof(win->comp_names[k]), r->component_names[k]);
        win->sys_comp_w[k] = r->system_component_w[k];
        win->sys_comp_j[k] = r->system_component_j[k];
    }
    win->ncomponents = (uint32_t)nk;
    return (uint32_t)nk;
}

/* Ranks the report's targets in w->ranks: the report's order, or the most
 * powerful first when they do not all fit; *keep: how many to store. */
static int publish_ranks(pa_ring_writer *w, const pa_report *r, size_t *keep)
{
    size_t n = r->ntargets;
    if (PA__GROW(w->ranks, w->ranks_cap, n, 256) < 0)
        return pa__err(-ENOMEM, "ring: out of memory");
    *keep = n;
    for (size_t i = 0; i < n; i++) {
        w->ranks[i].w = r->targets[i].power.total_w;
        w->ranks[i].i = (uint32_t)i;
    }
    if (n > w->max_targets) {
        qsort(w->ranks, n, sizeof(*w->ranks), rank_cmp);
        *keep = w->max_targets;
    }
    return 0;
}

/* The window's head from the report (system, components, devices, texts)
 * and an empty pool; returns the components stored. */
static uint32_t window_head_set(pa_ring_writer *w, struct ring_window *win, char *pool,
                                const pa_report *r)
{
    memset(win, 0, sizeof(*win));
    uint32_t nk = window_comps_set(win, r);
    win->ndevices = r->devices && r->ndevices <= PA_MAX_DEVICES ? (uint32_t)r->ndevices : 0;
    if (win->ndevices)
        memcpy(win->devices, r->devices, win->ndevices * sizeof(*win->devices));
    win->tick = r->tick;
    win->time_ns = r->time_ns;
    win->interval_s = r->interval_s;
    power_to_ring(&win->system, &r->system);
    copy_str(win->formula, sizeof(win->formula), r->formula);
    copy_str(win->sensors, sizeof(win->sensors), r->sensors);
    copy_str(win->cpu_source, sizeof(win->cpu_source), r->cpu_source);
    copy_str(win->assumed, sizeof(win->assumed), r->assumed);
    for (uint32_t e = 0; r->exits_source && e < sizeof(ring_exits) / sizeof(*ring_exits); e++)
        if (!strcmp(r->exits_source, ring_exits[e]))
            win->exits_source = e;
    win->exits_lost = r->exits_lost > UINT32_MAX ? UINT32_MAX : (uint32_t)r->exits_lost;
    win->ntargets_total = r->ntargets > UINT32_MAX ? UINT32_MAX : (uint32_t)r->ntargets;
    pool[0] = '\0';
    win->pool_used = 1;
    if (++w->gen == 0) { /* wrapped: forget every entry */
        memset(w->cg, 0, w->cg_cap * sizeof(*w->cg));
        w->gen = 1;
    }
    return nk;
}

/* The counters' names into the pool, first, so that cgroup paths cannot
 * crowd them out; a window whose names do not fit carries no counters.
 * Returns the counters stored. */
static uint32_t window_counters_set(pa_ring_writer *w, struct ring_window *win, char *pool,
                                    const pa_report *r)
{
    uint32_t nc = (uint32_t)r->ncounters;
    for (uint32_t e = 0; e < nc; e++) {
        uint32_t off = pool_put(w, win, pool, r->counter_names[e]);
        if (off == UINT32_MAX) {
            nc = 0;
            break;
        }
        win->counter_off[e] = off;
    }
    if (!nc)
        memset(win->counter_off, 0, sizeof(win->counter_off));
    win->ncounters = nc;
    return nc;
}

/* The first keep ranked targets into the window, with their counters (nc)
 * and components (nk); returns how many were stored. */
static uint32_t window_targets_set(pa_ring_writer *w, const pa_report *r, size_t keep, uint32_t nc,
                                   uint32_t nk)
{
    struct ring_window *win = (struct ring_window *)w->buf;
    struct ring_target *tg = (struct ring_target *)(win + 1);
    double *ctr = (double *)(w->buf + counters_at(w->max_targets));
    double *cmp = (double *)(w->buf + comps_at(w->max_targets));
    char *pool = (char *)w->buf + pool_at(w->max_targets);
    uint32_t stored = 0;
    for (size_t k = 0; k < keep; k++) {
        const pa_target_info *t = &r->targets[w->ranks[k].i];
        struct ring_target *d = &tg[stored];
        uint32_t off = pool_put(w, win, pool, t->cgroup);
        if (off == UINT32_MAX) {
            if (t->type == PA_TARGET_CGROUP)
                continue; /* a nameless cgroup means nothing */
            off = 0;
        }
        memset(d, 0, sizeof(*d));
        d->type = (uint32_t)t->type;
        d->pid = t->pid;
        d->tid = t->tid;
        d->ppid = t->ppid;
        copy_str(d->comm, sizeof(d->comm), t->comm);
        d->cgroup_off = off;
        d->has_net = t->has_net ? 1 : 0;
        d->net_rx = t->net_rx_bytes;
        d->net_tx = t->net_tx_bytes;
        power_to_ring(&d->power, &t->power);
        d->multiplex = t->multiplex > 0 && t->multiplex <= 1 ? t->multiplex : 1.0;
        d->processes = t->type == PA_TARGET_EXITED ? t->processes : 0;
        if (t->type == PA_TARGET_VM)
            vm_to_ring(w, win, pool, d, t);
        if (nc && t->counters) {
            d->has_counters = 1;
            memcpy(ctr + (size_t)stored * nc, t->counters, nc * sizeof(double));
        }
        if (nk) {
            double *c = cmp + (size_t)stored * 2 * nk;
            size_t src = (size_t)w->ranks[k].i * r->ncomponents;
            memcpy(c, r->target_component_w + src, nk * sizeof(double));
            memcpy(c + nk, r->target_component_j + src, nk * sizeof(double));
        }
        stored++;
    }
    win->ntargets = stored;
    return stored;
}

/* The window built in w->buf into the next slot, under its sequence
 * number (odd while written), then the head. */
static void window_store(pa_ring_writer *w, uint32_t stored, uint32_t nc, uint32_t nk)
{
    struct ring_window *win = (struct ring_window *)w->buf;
    struct ring_target *tg = (struct ring_target *)(win + 1);
    struct ring_hdr *h = w->hdr;
    uint64_t seq = __atomic_load_n(&h->head, __ATOMIC_RELAXED) + 1;
    unsigned char *slot = w->map + RING_HDR_BYTES + ((seq - 1) % w->cap) * w->slot_bytes;
    struct ring_window *sw = (struct ring_window *)slot;
    __atomic_store_n(&sw->seq, 2 * seq - 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    words_store(slot + 8, w->buf + 8, sizeof(*win) - 8);
    words_store(slot + sizeof(*win), tg, stored * sizeof(*tg));
    words_store(slot + counters_at(w->max_targets), w->buf + counters_at(w->max_targets),
                (size_t)stored * nc * sizeof(double));
    words_store(slot + comps_at(w->max_targets), w->buf + comps_at(w->max_targets),
                (size_t)stored * 2 * nk * sizeof(double));
    words_store(slot + pool_at(w->max_targets), w->buf + pool_at(w->max_targets),
                round8(win->pool_used));
    __atomic_store_n(&sw->seq, 2 * seq, __ATOMIC_RELEASE);
    __atomic_store_n(&h->head, seq, __ATOMIC_RELEASE);
    __atomic_store_n(&h->heartbeat_ns, mono_ns(), __ATOMIC_RELEASE);
}

int pa_ring_publish(pa_ring_writer *w, const pa_report *r)
{
    if (!w || !r || (r->ntargets && !r->targets))
        return pa__err(-EINVAL, "ring: publish of a NULL report");
    if (r->ncounters > PA_MAX_COUNTERS || (r->ncounters && !r->counter_names))
        return pa__err(-EINVAL, "ring: a report of %zu counters (at most %d, named)", r->ncounters,
                       PA_MAX_COUNTERS);
    size_t keep = 0;
    int rc = publish_ranks(w, r, &keep);
    if (rc < 0)
        return rc;
    struct ring_window *win = (struct ring_window *)w->buf;
    char *pool = (char *)w->buf + pool_at(w->max_targets);
    uint32_t nk = window_head_set(w, win, pool, r);
    uint32_t nc = window_counters_set(w, win, pool, r);
    uint32_t stored = window_targets_set(w, r, keep, nc, nk);
    window_store(w, stored, nc, nk);
    return 0;
}

void pa_ring_heartbeat(pa_ring_writer *w)
{
    if (w)
        __atomic_store_n(&w->hdr->heartbeat_ns, mono_ns(), __ATOMIC_RELEASE);
}

void pa_ring_destroy(pa_ring_writer *w)
{
    if (!w)
        return;
    __atomic_store_n(&w->hdr->state, RING_STOPPED, __ATOMIC_RELEASE);
    shm_unlink(w->name);
    munmap(w->map, w->map_len);
    close(w->fd);
    free(w->buf);
    free(w->ranks);
    free(w->cg);
    free(w);
}

/* ------------------------------------------------------------------ */
/* Reader                                                              */
/* ------------------------------------------------------------------ */

/* One aggregated target: its record plus energies over the span. */
typedef struct agg_target {
    pa_target_info info;
    size_t cgroup_off; /* into arena */
    double e_cpu, e_nic, e_total, e_idle;
    double e_comp[PA_MAX_COMPONENTS]; /* W x s, the report's components */
    double j_comp[PA_MAX_COMPONENTS]; /* the newest window's joules */
    int has_ctr;                      /* a window with the newest names had them */
    double ctr[PA_MAX_COUNTERS];      /* summed, in the newest window's order */
    long vm_slot;                     /* PA_TARGET_VM: its names in r->vms, -1 none */
    double e_vcpu, e_emu;             /* W x s of the windows whose vCPUs were told apart */
    int vcpu_known;
} agg_target;

struct pa_ring_reader {
    char name[RING_NAME_MAX + 2];
    unsigned char *map;
    size_t map_len;
    const struct ring_hdr *hdr;
    uint32_t cap, max_targets, pool_bytes;
    uint64_t slot_bytes;
    unsigned char *buf;  /* verified copy of one slot */
    unsigned char *copy; /* slot being copied; swapped with buf once
                            verified, so a failed copy never spoils the
                            report handed out */
    /* the report handed out */
    pa_report rep;
    pa_target_info *targets;
    size_t targets_cap;
    char formula[128], sensors[128], cpu_source[16], assumed[PA_MAX_ASSUMED];
    const char *cnames[PA_MAX_COUNTERS]; /* into cname_buf */
    char *cname_buf;
    size_t cname_cap;
    double *ctr;  /* targets_cap x PA_MAX_COUNTERS */
    double *comp; /* targets_cap x 2 x PA_MAX_COMPONENTS: watts, joules */
    char comp_names[PA_MAX_COMPONENTS][16];
    const char *cknames[PA_MAX_COMPONENTS]; /* into comp_names */
    double sys_comp[2 * PA_MAX_COMPONENTS];
    pa_device_info devices[PA_MAX_DEVICES]; /* the report's devices */
    pa_vm_info *vms;                        /* the VM records' names (version 5) */
    size_t vms_cap, nvms;
    /* aggregation */
    agg_target *agg;
    size_t nagg, agg_cap;
    int *idx;             /* hash: index into agg + 1, 0 empty */
    size_t idx_cap;       /* power of two */
    char *arena;          /* cgroup paths of the aggregate */
    pa__cgcache *cgcache; /* names of the cgroups (this machine's state) */
    size_t arena_len, arena_cap;
    /* statistics */
    uint64_t lost, windows, truncated;
};

int pa_ring_open(const char *name, pa_ring_reader **out)
{
    char shm[RING_NAME_MAX + 2];
    int rc = ring_shm_name(name, shm, sizeof(shm));
    if (rc < 0)
        return rc;
    if (!out)
        return pa__err(-EINVAL, "ring: out is NULL");
    int fd = shm_open(shm, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        if (rc == -ENOENT)
            return pa__err(rc,
                           "ring '%s': no such ring (/dev/shm%s); start "
                           "`powerapi daemon --ring %s` first",
                           shm + 1, shm, shm + 1);
        return pa__err(rc, "ring '%s': cannot open /dev/shm%s: %s%s", shm + 1, shm, strerror(errno),
                       rc == -EACCES ? " (the daemon's --group decides who "
                                       "may read it)"
                                     : "");
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = pa__err(-errno, "ring '%s': fstat: %s", shm + 1, strerror(errno));
        close(fd);
        return rc;
    }
    size_t size = (size_t)st.st_size;
    if (size < RING_HDR_BYTES) {
        close(fd);
        return ring_check_header(shm, NULL, size);
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return pa__err(-errno, "ring '%s': mmap: %s", shm + 1, strerror(errno));
    const struct ring_hdr *h = m;
    rc = ring_check_header(shm, h, size);
    if (rc == 0)
        rc = ring_check_alive(shm, h, NULL);
    if (rc < 0) {
        munmap(m, size);
        return rc;
    }
    pa_ring_reader *r = calloc(1, sizeof(*r));
    if (!r) {
        munmap(m, size);
        return pa__err(-ENOMEM, "ring: out of memory");
    }
    memcpy(r->name, shm, strlen(shm) + 1);
    r->map = m;
    r->map_len = size;
    r->hdr = h;
    r->cap = h->capacity;
    r->max_targets = h->max_targets;
    r->pool_bytes = h->pool_bytes;
    r->slot_bytes = h->slot_bytes;
    r->buf = malloc(r->slot_bytes);
    r->copy = malloc(r->slot_bytes);
    if (!r->buf || !r->copy) {
        pa_ring_close(r);
        return pa__err(-ENOMEM, "ring: out of memory");
    }
    *out = r;
    return 0;
}

void pa_ring_close(pa_ring_reader *r)
{
    if (!r)
        return;
    if (r->map)
        munmap(r->map, r->map_len);
    free(r->buf);
    free(r->copy);
    free(r->targets);
    free(r->ctr);
    free(r->comp);
    free(r->cname_buf);
    free(r->agg);
    free(r->idx);
    free(r->arena);
    free(r->vms);
    pa__cgcache_free(r->cgcache);
    free(r);
}

/* Copies window seq into r->buf (through r->copy).  0 ok; -ESTALE
 * overwritten (before or during the copy); -EAGAIN not published yet. */
static int copy_window(pa_ring_reader *r, uint64_t seq)
{
    const unsigned char *slot = r->map + RING_HDR_BYTES + ((seq - 1) % r->cap) * r->slot_bytes;
    const struct ring_window *sw = (const struct ring_window *)slot;
    uint64_t v1 = __atomic_load_n(&sw->seq, __ATOMIC_ACQUIRE);
    if (v1 < 2 * seq)
        return -EAGAIN;
    if (v1 != 2 * seq)
        return -ESTALE;
    struct ring_window *win = (struct ring_window *)r->copy;
    struct ring_target *tg = (struct ring_target *)(win + 1);
    size_t ctr_at = counters_at(r->max_targets);
    size_t pl_at = pool_at(r->max_targets);
    words_load(r->copy, slot, sizeof(*win));
    uint32_t nt = win->ntargets <= r->max_targets ? win->ntargets : r->max_targets;
    uint32_t pu = win->pool_used >= 1 && win->pool_used <= r->pool_bytes ? win->pool_used : 1;
    uint32_t nc = win->ncounters <= PA_MAX_COUNTERS ? win->ncounters : PA_MAX_COUNTERS;
    uint32_t nk = win->ncomponents <= PA_MAX_COMPONENTS ? win->ncomponents : 0;
    size_t cmp_at = comps_at(r->max_targets);
    words_load(tg, slot + sizeof(*win), nt * sizeof(*tg));
    words_load(r->copy + ctr_at, slot + ctr_at, (size_t)nt * nc * sizeof(double));
    words_load(r->copy + cmp_at, slot + cmp_at, (size_t)nt * 2 * nk * sizeof(double));
    size_t pbytes = round8(pu);
    if (pl_at + pbytes > r->slot_bytes)
        pbytes = r->slot_bytes - pl_at;
    words_load(r->copy + pl_at, slot + pl_at, pbytes);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t v2 = __atomic_load_n(&sw->seq, __ATOMIC_RELAXED);
    if (v2 != v1)
        return -ESTALE;
    /* A consistent copy; still never trust it blindly. */
    win->ntargets = nt;
    win->pool_used = pu;
    win->formula[sizeof(win->formula) - 1] = '\0';
    win->sensors[sizeof(win->sensors) - 1] = '\0';
    win->cpu_source[sizeof(win->cpu_source) - 1] = '\0';
    win->assumed[sizeof(win->assumed) - 1] = '\0';
    win->ncounters = nc;
    win->ncomponents = nk;
    for (uint32_t k = 0; k < nk; k++)
        win->comp_names[k][sizeof(win->comp_names[k]) - 1] = '\0';
    device_sanitize(win);
    char *pool = (char *)r->copy + pl_at;
    pool[pu - 1] = '\0';
    for (uint32_t e = 0; e < nc; e++)
        if (win->counter_off[e] >= pu)
            win->counter_off[e] = 0;
    for (uint32_t i = 0; i < nt; i++) {
        tg[i].comm[PA_COMM_MAX - 1] = '\0';
        if (tg[i].cgroup_off >= pu)
            tg[i].cgroup_off = 0;
        for (int k = 0; k < RING_VM_STRINGS; k++)
            if (tg[i].vm_off[k] >= pu)
                tg[i].vm_off[k] = 0;
        if (!(tg[i].multiplex > 0 && tg[i].multiplex <= 1))
            tg[i].multiplex = 1.0;
    }
    unsigned char *t = r->buf;
    r->buf = r->copy;
    r->copy = t;
    return 0;
}

static const char *window_pool(pa_ring_reader *r)
{
    return (const char *)r->buf + pool_at(r->max_targets);
}

/* The counters of the i-th target of the window in r->buf. */
static const double *window_counters(pa_ring_reader *r, uint32_t i)
{
    const struct ring_window *win = (const struct ring_window *)r->buf;
    return (const double *)(r->buf + counters_at(r->max_targets)) + (size_t)i * win->ncounters;
}

/* The report's views of the targets' components (valid until the next
 * read): the watts of every target, then their joules. */
static void comp_views(pa_ring_reader *r)
{
    bool on = r->rep.ncomponents && r->comp;
    r->rep.target_component_w = on ? r->comp : NULL;
    r->rep.target_component_j = on ? r->comp + r->targets_cap * PA_MAX_COMPONENTS : NULL;
}

/* The component watts and joules of the i-th target of the window in
 * r->buf (2 x its ncomponents doubles). */
static const double *window_comps(pa_ring_reader *r, uint32_t i)
{
    const struct ring_window *win = (const struct ring_window *)r->buf;
    return (const double *)(r->buf + comps_at(r->max_targets)) + (size_t)i * 2 * win->ncomponents;
}

static int ensure_targets(pa_ring_reader *r, size_t n)
{
    /* ctr holds PA_MAX_COUNTERS a target, comp 2 x PA_MAX_COMPONENTS (the
     * watts of every target, then their joules): capacities in doubles */
    size_t cap = r->targets_cap, ccap = cap * PA_MAX_COUNTERS;
    size_t kcap = cap * 2 * PA_MAX_COMPONENTS;
    if (PA__GROW(r->targets, cap, n, 64) < 0 ||
        PA__GROW(r->ctr, ccap, cap * PA_MAX_COUNTERS, 64 * PA_MAX_COUNTERS) < 0 ||
        PA__GROW(r->comp, kcap, cap * 2 * PA_MAX_COMPONENTS, 64 * 2 * PA_MAX_COMPONENTS) < 0)
        return pa__err(-ENOMEM, "ring: out of memory");
    r->targets_cap = cap;
    comp_views(r);
    return 0;
}

/* Target i's components of the report from a window's record of nk
 * (watts then joules) through map (the report's index of each, -1
 * none); NULL record: zeros. */
static void comps_put(pa_ring_reader *r, size_t i, const double *rec, uint32_t nk, const int *map)
{
    size_t n = r->rep.ncomponents;
    if (!n || !r->rep.target_component_w)
        return;
    double *w = (double *)r->rep.target_component_w + i * n;
    double *j = (double *)r->rep.target_component_j + i * n;
    memset(w, 0, n * sizeof(double));
    memset(j, 0, n * sizeof(double));
    for (uint32_t e = 0; rec && e < nk; e++)
        if (map[e] >= 0) {
            w[map[e]] = rec[e];
            j[map[e]] = rec[nk + e];
        }
}

static void target_from_ring(pa_target_info *d, const struct ring_target *s, const char *cgroup)
{
    memset(d, 0, sizeof(*d));
    d->type = (pa_target_type)s->type;
    d->pid = s->pid;
    d->tid = s->tid;
    d->ppid = s->ppid;
    memcpy(d->comm, s->comm, PA_COMM_MAX);
    d->cgroup = cgroup;
    power_from_ring(&d->power, &s->power);
    d->net_rx_bytes = s->net_rx;
    d->net_tx_bytes = s->net_tx;
    d->has_net = (int)s->has_net;
    d->counters = NULL;
    d->multiplex = s->multiplex;
    d->processes = s->type == PA_TARGET_EXITED ? s->processes : 0;
    if (s->type == PA_TARGET_VM) {
        d->vcpu_w = s->vcpu_w;
        d->emulator_w = s->emulator_w;
        d->vcpu_j = s->vcpu_j;
        d->emulator_j = s->emulator_j;
    }
}

/* The names of a window's VM record s into a new slot of r->vms (its
 * index), or -1 when it has none or on ENOMEM.  The report's pointers
 * into r->vms are set once every slot is made (they move as it grows). */
static long vm_from_ring(pa_ring_reader *r, const struct ring_target *s, const char *pool)
{
    if (s->type != PA_TARGET_VM || !s->has_vm || PA__GROW(r->vms, r->vms_cap, r->nvms + 1, 16) < 0)
        return -1;
    pa_vm_info *v = &r->vms[r->nvms];
    memset(v, 0, sizeof(*v));
    for (int k = 0; k < RING_VM_STRINGS; k++) {
        size_t len;
        char *dst = vm_string(v, k, &len);
        snprintf(dst, len, "%s", pool + s->vm_off[k]);
    }
    v->nthreads = s->vm_threads;
    v->nvcpus = s->vm_vcpus <= PA_VM_MAX_VCPUS ? s->vm_vcpus : PA_VM_MAX_VCPUS;
    return (long)r->nvms++; /* vcpu_tids are not carried */
}

/* The report's system part and strings from the window in r->buf.
 * -ENOMEM (counter names) leaves the report without counters. */
static int report_head_from_window(pa_ring_reader *r)
{
    const struct ring_window *win = (const struct ring_window *)r->buf;
    const char *pool = window_pool(r);
    size_t need = 0;
    for (uint32_t e = 0; e < win->ncounters; e++)
        need += strlen(pool + win->counter_off[e]) + 1;
    if (need > r->cname_cap) {
        char *b = realloc(r->cname_buf, need);
        if (!b)
            return pa__err(-ENOMEM, "ring: out of memory");
        r->cname_buf = b;
        r->cname_cap = need;
    }
    size_t off = 0;
    for (uint32_t e = 0; e < win->ncounters; e++) {
        const char *name = pool + win->counter_off[e];
        size_t n = strlen(name) + 1;
        memcpy(r->cname_buf + off, name, n);
        r->cnames[e] = r->cname_buf + off;
        off += n;
    }
    memcpy(r->formula, win->formula, sizeof(r->formula));
    memcpy(r->sensors, win->sensors, sizeof(r->sensors));
    memcpy(r->cpu_source, win->cpu_source, sizeof(r->cpu_source));
    memcpy(r->assumed, win->assumed, sizeof(r->assumed));
    memset(&r->rep, 0, sizeof(r->rep));
    r->rep.model_error = -1; /* not carried by the ring */
    r->rep.tick = win->tick;
    r->rep.time_ns = win->time_ns;
    r->rep.interval_s = win->interval_s;
    power_from_ring(&r->rep.system, &win->system);
    r->rep.formula = r->formula;
    r->rep.sensors = r->sensors;
    r->rep.cpu_source = r->cpu_source;
    r->rep.assumed = r->assumed;
    r->rep.exits_source =
        ring_exits[win->exits_source < sizeof(ring_exits) / sizeof(*ring_exits) ? win->exits_source
                                                                                : 0];
    r->rep.exits_lost = win->exits_lost;
    r->rep.ncounters = win->ncounters;
    r->rep.counter_names = win->ncounters ? r->cnames : NULL;
    uint32_t nk = win->ncomponents;
    for (uint32_t k = 0; k < nk; k++) {
        memcpy(r->comp_names[k], win->comp_names[k], sizeof(r->comp_names[k]));
        r->cknames[k] = r->comp_names[k];
        r->sys_comp[k] = win->sys_comp_w[k];
        r->sys_comp[PA_MAX_COMPONENTS + k] = win->sys_comp_j[k];
    }
    r->rep.ncomponents = nk;
    r->rep.component_names = nk ? r->cknames : NULL;
    r->rep.system_component_w = nk ? r->sys_comp : NULL;
    r->rep.system_component_j = nk ? r->sys_comp + PA_MAX_COMPONENTS : NULL;
    memcpy(r->devices, win->devices, win->ndevices * sizeof(*r->devices));
    r->rep.ndevices = win->ndevices;
    r->rep.devices = win->ndevices ? r->devices : NULL;
    comp_views(r);
    return 0;
}

/* Maps the components of the window in r->buf to the report's (the
 * newest window's) by name: map[e] = report index of the window's
 * component e, -1 when the report has none of that name. */
static void comp_map(const pa_ring_reader *r, const struct ring_window *win,
                     int map[PA_MAX_COMPONENTS])
{
    for (uint32_t e = 0; e < win->ncomponents; e++) {
        map[e] = -1;
        for (size_t k = 0; k < r->rep.ncomponents; k++)
            if (!strcmp(r->comp_names[k], win->comp_names[e])) {
                map[e] = (int)k;
                break;
            }
    }
}

/* No window to return: -EOWNERDEAD if the writer is gone, else -EAGAIN. */
static int nothing_new(pa_ring_reader *r)
{
    int rc = ring_check_alive(r->name, r->hdr, NULL);
    if (rc < 0)
        return rc;
    return pa__err(-EAGAIN, "ring '%s': no new window yet", r->name + 1);
}

/* Finds and copies the first window >= want that is still in the ring.
 * Returns its sequence (0 if none) and counts skipped windows as lost. */
static uint64_t fetch_from(pa_ring_reader *r, uint64_t want)
{
    for (unsigned tries = 0; tries < 64; tries++) {
        uint64_t newest = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
        if (want > newest || newest == 0)
            return 0;
        uint64_t oldest = newest >= r->cap ? newest - r->cap + 1 : 1;
        if (want < oldest) {
            r->lost += oldest - want;
            want = oldest;
        }
        int rc = copy_window(r, want);
        if (rc == 0)
            return want;
        if (rc == -EAGAIN)
            return 0;
        /* Overwritten under us: the writer lapped this slot. */
        r->lost++;
        want++;
    }
    return 0;
}

/* The names of the report's cgroups, from this machine's runtimes' state
 * (DESIGN.md section 14): the ring carries paths only. */
static void ring_names(pa_ring_reader *r)
{
    if (!r->cgcache)
        r->cgcache = pa__cgcache_new(NULL);
    for (size_t i = 0; i < r->rep.ntargets; i++) {
        pa_target_info *t = &r->targets[i];
        t->names = t->cgroup && *t->cgroup
                       ? pa__cgcache_get_path(r->cgcache, t->cgroup, r->rep.time_ns)
                       : NULL;
    }
}

int pa_ring_read(pa_ring_reader *r, uint64_t *seq_inout, const pa_report **out)
{
    if (!r || !seq_inout || !out)
        return pa__err(-EINVAL, "ring: NULL argument to pa_ring_read");
    uint64_t newest = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
    uint64_t want = *seq_inout ? *seq_inout + 1 : newest;
    if (want == 0 || want > newest)
        return nothing_new(r);
    uint64_t got = fetch_from(r, want);
    if (!got)
        return nothing_new(r);
    const struct ring_window *win = (const struct ring_window *)r->buf;
    const struct ring_target *tg = (const struct ring_target *)(win + 1);
    if (ensure_targets(r, win->ntargets) < 0 || report_head_from_window(r) < 0)
        return -ENOMEM;
    const char *pool = window_pool(r);
    size_t nc = win->ncounters;
    int map[PA_MAX_COMPONENTS];
    comp_map(r, win, map);
    r->nvms = 0;
    for (uint32_t i = 0; i < win->ntargets; i++) {
        pa_target_info *d = &r->targets[i];
        target_from_ring(d, &tg[i], pool + tg[i].cgroup_off);
        if (d->type == PA_TARGET_VM) /* its slot + 1 until every slot is made */
            d->processes = (unsigned)(vm_from_ring(r, &tg[i], pool) + 1);
        if (nc && tg[i].has_counters) {
            double *c = r->ctr + (size_t)i * nc;
            memcpy(c, window_counters(r, i), nc * sizeof(double));
            d->counters = c;
        }
        comps_put(r, i, window_comps(r, i), win->ncomponents, map);
    }
    for (uint32_t i = 0; i < win->ntargets; i++) {
        pa_target_info *d = &r->targets[i];
        if (d->type == PA_TARGET_VM) {
            d->vm = d->processes ? &r->vms[d->processes - 1] : NULL;
            d->processes = 0;
        }
    }
    r->rep.ntargets = win->ntargets;
    r->rep.targets = r->targets;
    r->windows = 1;
    r->truncated = win->ntargets_total > win->ntargets ? win->ntargets_total - win->ntargets : 0;
    *seq_inout = got;
    ring_names(r);
    *out = &r->rep;
    return 0;
}

/* ---- aggregation ---- */

static uint64_t key_hash(uint32_t type, int32_t pid, int32_t tid, const char *cg)
{
    uint64_t h =
        type == PA_TARGET_CGROUP ? pa__hash_str(cg) : pa__hash_pair((uint32_t)pid, (uint32_t)tid);
    return pa__hash_pair(h, type);
}

static uint64_t agg_hash_at(const void *user, size_t a)
{
    const pa_ring_reader *r = user;
    const agg_target *t = &r->agg[a];
    return key_hash(t->info.type, t->info.pid, t->info.tid, r->arena + t->cgroup_off);
}

/* Finds or adds the aggregate entry of s; NULL on ENOMEM. *fresh = 1 if
 * it was added. */
static agg_target *agg_find(pa_ring_reader *r, const struct ring_target *s, const char *cg,
                            int *fresh)
{
    if (pa__index_reserve(&r->idx, &r->idx_cap, 256, 0, r->nagg, agg_hash_at, r) < 0) {
        pa__err(-ENOMEM, "ring: out of memory");
        return NULL;
    }
    uint64_t h = key_hash(s->type, s->pid, s->tid, cg);
    size_t mask = r->idx_cap - 1;
    size_t k = h & mask;
    for (;;) {
        int a = r->idx[k];
        if (!a)
            break;
        agg_target *t = &r->agg[a - 1];
        if ((uint32_t)t->info.type == s->type &&
            (s->type == PA_TARGET_CGROUP ? strcmp(r->arena + t->cgroup_off, cg) == 0
                                         : (t->info.pid == s->pid && t->info.tid == s->tid))) {
            *fresh = 0;
            return t;
        }
        k = (k + 1) & mask;
    }
    size_t n = strlen(cg) + 1;
    if (PA__GROW(r->agg, r->agg_cap, r->nagg + 1, 256) < 0 ||
        PA__GROW(r->arena, r->arena_cap, r->arena_len + n, 4096) < 0) {
        pa__err(-ENOMEM, "ring: out of memory");
        return NULL;
    }
    agg_target *t = &r->agg[r->nagg];
    memset(t, 0, sizeof(*t));
    t->cgroup_off = r->arena_len;
    memcpy(r->arena + r->arena_len, cg, n);
    r->arena_len += n;
    r->idx[k] = (int)++r->nagg;
    *fresh = 1;
    return t;
}

/* Maps the counters of the window in r->buf to the report's (the newest
 * window's) names: 1 and map[e] = report index of the window's counter e
 * when both carry the same set of names (in any order), else 0. */
static int counter_map(const pa_ring_reader *r, const struct ring_window *win, const char *pool,
                       int map[PA_MAX_COUNTERS])
{
    size_t nc = r->rep.ncounters;
    if (nc == 0 || win->ncounters != nc)
        return 0;
    unsigned used = 0;
    for (uint32_t e = 0; e < nc; e++) {
        const char *name = pool + win->counter_off[e];
        map[e] = -1;
        for (size_t k = 0; k < nc; k++)
            if (!(used & (1u << k)) && strcmp(r->cnames[k], name) == 0) {
                map[e] = (int)k;
                used |= 1u << k;
                break;
            }
        if (map[e] < 0)
            return 0;
    }
    return 1;
}

/* A window's record of nk components (watts, then joules) of an
 * aggregated target: its energy over the span, in the report's order
 * (kmap), and the joules of the newest window it is in (fresh). */
static void agg_comps(agg_target *t, const double *rec, uint32_t nk, const int *kmap, double dt,
                      int fresh)
{
    for (uint32_t e = 0; e < nk; e++) {
        if (kmap[e] < 0)
            continue;
        t->e_comp[kmap[e]] += rec[e] * dt;
        if (fresh)
            t->j_comp[kmap[e]] = rec[nk + e];
    }
}

/* A device's power and idle part over an aggregate's windows. */
typedef struct dev_agg {
    double e, idle, t; /* W x s, W x s, s */
} dev_agg;

/* Adds window win's devices (of length dt) to acc, by the newest window's
 * device of the same component and bus (r->devices). */
static void agg_devices(pa_ring_reader *r, const struct ring_window *win, double dt, dev_agg *acc)
{
    for (uint32_t e = 0; e < win->ndevices; e++)
        for (size_t k = 0; k < r->rep.ndevices; k++)
            if (!strcmp(r->devices[k].bus, win->devices[e].bus) &&
                !strcmp(r->devices[k].component, win->devices[e].component)) {
                acc[k].e += win->devices[e].power_w * dt;
                acc[k].idle += win->devices[e].idle_w * dt;
                acc[k].t += dt;
                break;
            }
}

/* The aggregate's devices: the newest energy, power and idle averaged. */
static void agg_devices_end(pa_ring_reader *r, const dev_agg *acc)
{
    for (size_t k = 0; k < r->rep.ndevices; k++)
        if (acc[k].t > 0) {
            r->devices[k].power_w = acc[k].e / acc[k].t;
            r->devices[k].idle_w = acc[k].idle / acc[k].t;
        }
}

/* What the windows of a span add up to, newest first. */
typedef struct span_sums {
    uint64_t windows, truncated;
    double total_s, sys_cpu, sys_nic, sys_total, sys_idle; /* J, and s */
    double sys_cpu_time, sys_comp[PA_MAX_COMPONENTS];
    dev_agg dagg[PA_MAX_DEVICES];
} span_sums;

/* The system's and the devices' energy of one window of dt seconds. */
static void agg_window_system(pa_ring_reader *r, const struct ring_window *win, double dt,
                              const int *kmap, span_sums *sum)
{
    agg_devices(r, win, dt, sum->dagg);
    sum->windows++;
    if (win->ntargets_total > win->ntargets)
        sum->truncated += win->ntargets_total - win->ntargets;
    sum->total_s += dt;
    sum->sys_cpu += win->system.cpu_w * dt;
    sum->sys_nic += win->system.nic_w * dt;
    sum->sys_total += win->system.total_w * dt;
    sum->sys_idle += win->system.idle_w * dt;
    sum->sys_cpu_time += win->system.cpu_time_s;
    for (uint32_t e = 0; e < win->ncomponents; e++)
        if (kmap[e] >= 0)
            sum->sys_comp[kmap[e]] += win->sys_comp_w[e] * dt;
}

/* The targets' energy of one window of dt seconds; -ENOMEM. */
static int agg_window_targets(pa_ring_reader *r, const struct ring_window *win, double dt,
                              const int *kmap)
{
    const struct ring_target *tg = (const struct ring_target *)(win + 1);
    const char *pool = window_pool(r);
    int map[PA_MAX_COUNTERS];
    int same = counter_map(r, win, pool, map);
    for (uint32_t i = 0; i < win->ntargets; i++) {
        const struct ring_target *s = &tg[i];
        const char *cg = pool + s->cgroup_off;
        int fresh;
        agg_target *t = agg_find(r, s, cg, &fresh);
        if (!t)
            return -ENOMEM;
        if (fresh) {
            size_t off = t->cgroup_off;
            target_from_ring(&t->info, s, NULL);
            t->cgroup_off = off;
            t->vm_slot = vm_from_ring(r, s, pool);
            t->info.power.cpu_time_s = 0;
            t->info.processes = 0;
            t->info.net_rx_bytes = t->info.net_tx_bytes = 0;
            t->info.multiplex = 1.0;
        } else {
            /* Older window of a known target. */
            t->info.power.flags |= s->power.flags & ~PA_POWER_EXITED;
        }
        t->e_cpu += s->power.cpu_w * dt;
        t->e_nic += s->power.nic_w * dt;
        t->e_total += s->power.total_w * dt;
        t->e_idle += s->power.idle_w * dt;
        if (s->type == PA_TARGET_VM && s->vcpu_w >= 0) {
            t->e_vcpu += s->vcpu_w * dt;
            t->e_emu += s->emulator_w * dt;
            t->vcpu_known = 1;
        }
        agg_comps(t, window_comps(r, i), win->ncomponents, kmap, dt, fresh);
        t->info.power.cpu_time_s += s->power.cpu_time_s;
        t->info.processes += s->type == PA_TARGET_EXITED ? s->processes : 0;
        t->info.net_rx_bytes += s->net_rx;
        t->info.net_tx_bytes += s->net_tx;
        t->info.has_net |= (int)s->has_net;
        if (same && s->has_counters) {
            const double *c = window_counters(r, i);
            for (uint32_t e = 0; e < win->ncounters; e++)
                t->ctr[map[e]] += c[e];
            t->has_ctr = 1;
            if (s->multiplex < t->info.multiplex)
                t->info.multiplex = s->multiplex;
        }
    }
    return 0;
}

/* The aggregated report: energies over the span's seconds; -ENOMEM. */
static int agg_report(pa_ring_reader *r, const span_sums *sum)
{
    if (ensure_targets(r, r->nagg) < 0)
        return -ENOMEM;
    double total_s = sum->total_s;
    double inv = total_s > 0 ? 1.0 / total_s : 0;
    r->rep.interval_s = total_s;
    r->rep.system.cpu_w = sum->sys_cpu * inv;
    r->rep.system.nic_w = sum->sys_nic * inv;
    r->rep.system.total_w = sum->sys_total * inv;
    r->rep.system.idle_w = sum->sys_idle * inv;
    r->rep.system.cpu_time_s = sum->sys_cpu_time;
    r->rep.system.interval_s = total_s;
    for (size_t k = 0; k < r->rep.ncomponents; k++)
        r->sys_comp[k] = sum->sys_comp[k] * inv;
    agg_devices_end(r, sum->dagg);
    for (size_t a = 0; a < r->nagg; a++) {
        agg_target *t = &r->agg[a];
        pa_target_info *d = &r->targets[a];
        *d = t->info;
        d->cgroup = r->arena + t->cgroup_off;
        d->power.cpu_w = t->e_cpu * inv;
        d->power.nic_w = t->e_nic * inv;
        d->power.total_w = t->e_total * inv;
        d->power.idle_w = t->e_idle * inv;
        d->power.interval_s = total_s;
        d->counters = NULL;
        if (d->type == PA_TARGET_VM) {
            d->vm = t->vm_slot >= 0 ? &r->vms[t->vm_slot] : NULL;
            d->vcpu_w = t->vcpu_known ? t->e_vcpu * inv : -1;
            d->emulator_w = t->vcpu_known ? t->e_emu * inv : -1;
        }
        if (r->rep.ncomponents) {
            size_t nk = r->rep.ncomponents;
            double *cw = (double *)r->rep.target_component_w + a * nk;
            double *cj = (double *)r->rep.target_component_j + a * nk;
            for (size_t k = 0; k < nk; k++) {
                cw[k] = t->e_comp[k] * inv;
                cj[k] = t->j_comp[k];
            }
        }
        if (t->has_ctr) {
            double *c = r->ctr + a * r->rep.ncounters;
            memcpy(c, t->ctr, r->rep.ncounters * sizeof(double));
            d->counters = c;
        }
    }
    r->rep.ntargets = r->nagg;
    r->rep.targets = r->targets;
    r->windows = sum->windows;
    r->truncated = sum->truncated;
    return 0;
}

int pa_ring_aggregate(pa_ring_reader *r, uint64_t *seq_inout, uint64_t span_ns,
                      const pa_report **out)
{
    if (!r || !seq_inout || !out)
        return pa__err(-EINVAL, "ring: NULL argument to pa_ring_aggregate");
    uint64_t newest = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
    uint64_t lower = *seq_inout + 1;
    int follow = *seq_inout != 0 && span_ns == 0;
    if (newest == 0 || lower > newest)
        return nothing_new(r);
    /* Newest first: it fixes the span's end and the latest cumulative
     * energies; older windows only add energy. */
    r->nagg = 0;
    r->nvms = 0;
    r->arena_len = 0;
    if (r->idx)
        memset(r->idx, 0, r->idx_cap * sizeof(*r->idx));
    uint64_t first = 0, end_ns = 0;
    span_sums sum = {0};
    for (uint64_t seq = newest; seq >= lower && seq > 0; seq--) {
        uint64_t oldest = newest >= r->cap ? newest - r->cap + 1 : 1;
        int rc = seq < oldest ? -ESTALE : copy_window(r, seq);
        if (rc == -ESTALE) {
            /* Lapped: this window and every older one are gone.  Only a
             * reader following the ring (no span) counts them lost. */
            if (follow)
                r->lost += seq - lower + 1;
            break;
        }
        if (rc < 0)
            continue; /* not yet complete: cannot happen below head */
        const struct ring_window *win = (const struct ring_window *)r->buf;
        if (!first) {
            first = seq;
            end_ns = win->time_ns;
            if (report_head_from_window(r) < 0)
                return -ENOMEM;
        } else if (span_ns && (end_ns < win->time_ns || end_ns - win->time_ns >= span_ns)) {
            break;
        }
        double dt = win->interval_s > 0 ? win->interval_s : 0;
        int kmap[PA_MAX_COMPONENTS];
        comp_map(r, win, kmap);
        agg_window_system(r, win, dt, kmap, &sum);
        if (agg_window_targets(r, win, dt, kmap) < 0)
            return -ENOMEM;
    }
    if (!first)
        return nothing_new(r);
    if (agg_report(r, &sum) < 0)
        return -ENOMEM;
    *seq_inout = first;
    ring_names(r);
    *out = &r->rep;
    return 0;
}

int pa_ring_get_info(pa_ring_reader *r, pa_ring_info *out)
{
    if (!r || !out)
        return pa__err(-EINVAL, "ring: NULL argument to pa_ring_get_info");
    const struct ring_hdr *h = r->hdr;
    memset(out, 0, sizeof(*out));
    out->version = h->version;
    out->capacity = r->cap;
    out->max_targets = r->max_targets;
    out->mode = h->mode;
    out->writer_pid = h->writer_pid;
    out->interval_ns = h->interval_ns;
    out->newest = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
    out->oldest = out->newest == 0 ? 0 : out->newest >= r->cap ? out->newest - r->cap + 1 : 1;
    uint64_t age = 0;
    out->alive = ring_check_alive(r->name, h, &age) == 0;
    out->heartbeat_age_ns = age;
    out->lost = r->lost;
    out->windows = r->windows;
    out->truncated = r->truncated;
    return 0;
}
