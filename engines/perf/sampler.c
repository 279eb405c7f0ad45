/*
 * sampler.c - the perf_event engine's sampling: per-thread (inherited) or
 * per-CPU events with the CPU-clock software event (no PMU on the
 * machines this was built on; task-clock or cycles where one exists).
 * Each sample carries IP, TID, time, CPU, period and the call chain the
 * kernel walked with frame pointers (--call-graph fp), or the user
 * registers and a stack copy unwound by unwind.c (dwarf).  MMAP2, COMM
 * (exec), FORK and EXIT records keep each process's maps, so that a
 * process that execs, loads a library or exits keeps its symbols; a
 * process is symbolised through the maps of the generation (exec) that
 * was running when the sample was taken.  Names, exits and the processes
 * known go to the core's task table (pc_tasks), which splits the energy.
 */
#include "perf.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A process generation: an exec starts a new one with its own maps. */
typedef struct proc {
    pid_t pid;
    bool replaced; /* an exec made a newer generation */
    pf_maps maps;
    bool maps_read;
    pf_unwinder *uw;      /* --call-graph dwarf */
    bool fault_in_failed; /* its memory cannot be read: not tried again */
    bool gone;            /* replaced by an exec, or its main thread exited:
                             its maps and resolved frames are freed at the
                             end of the window (forget_gone) */
} proc;

/* In a stored stack, where the user stack's walk ended before its root
 * (values no address takes: the kernel's are below them): past its copy,
 * or at the frames kept per sample */
#define STACK_CUT ((uint64_t)-1)
#define STACK_DEEP ((uint64_t)-2)
/* under kernel frames: no byte of the user stack could be read (in
 * execve, the program being replaced: its stack is gone) */
#define STACK_NO_USER ((uint64_t)-3)

typedef struct ring {
    int fd;
    void *base;
    size_t pages;
} ring;

typedef struct rec_ref {
    uint64_t time;
    size_t off;
} rec_ref;

struct pf_engine {
    pf_engine_cfg cfg;
    pc_tasks *tasks;
    ring *rings;
    size_t nrings;
    int *fds; /* every event, mapped or not */
    size_t nfds;
    int ncpus;
    int *cpu_ring; /* ring index of each CPU, -1 none yet */
    bool kernel;
    proc *procs;
    size_t nprocs, capprocs;
    /* pid -> its latest generation + 1 (open addressing, at most half
     * full): a whole machine's processes come and go */
    struct gen_slot {
        pid_t pid;
        int at;
    } * gens;
    size_t gencap, ngens;
    int *gone; /* generations gone since the last window's end */
    size_t ngone, capgone;
    size_t gone_since_rebuild;
    uint64_t *wbuf; /* window samples: proc, tid, period, n, scope, ips[n] */
    size_t wn, wcap;
    uint64_t scopes_keep; /* the scope trace's events kept from (ns) */
    char *rec;            /* records of one drain, all rings */
    size_t recn, reccap;
    rec_ref *refs;
    size_t refcap;
    pf_frame *pool; /* resolved frames */
    size_t npool, cappool;
    uint64_t *ckeys; /* cache: (proc << 1 | ret, ip) -> pool range */
    uint32_t *cvals;
    size_t ccap, cn;
    uint64_t samples, lost, idle_samples;
    uint64_t truncated; /* stacks ended before their root, marked */
};

int pf_paranoid(const char *procfs)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/sys/kernel/perf_event_paranoid", procfs);
    FILE *f = fopen(path, "re");
    int v = 2;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 2;
        fclose(f);
    }
    return v;
}

int pf_engine_new(pf_engine **out, const pf_engine_cfg *cfg)
{
    pf_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->cfg = *cfg;
    e->tasks = cfg->tasks;
    e->kernel = true;
    e->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
    if (e->ncpus < 1)
        e->ncpus = 1;
    e->cpu_ring = malloc((size_t)e->ncpus * sizeof(int));
    if (!e->cpu_ring) {
        free(e);
        return -ENOMEM;
    }
    for (int i = 0; i < e->ncpus; i++)
        e->cpu_ring[i] = -1;
    *out = e;
    return 0;
}

void pf_engine_free(pf_engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nrings; i++)
        munmap(e->rings[i].base, (1 + e->rings[i].pages) * (size_t)sysconf(_SC_PAGESIZE));
    for (size_t i = 0; i < e->nfds; i++)
        close(e->fds[i]);
    free(e->rings);
    free(e->fds);
    free(e->cpu_ring);
    for (size_t i = 0; i < e->nprocs; i++) {
        pf_maps_free(&e->procs[i].maps);
        pf_unwinder_free(e->procs[i].uw);
    }
    free(e->procs);
    free(e->gens);
    free(e->gone);
    free(e->wbuf);
    free(e->rec);
    free(e->refs);
    free(e->pool);
    free(e->ckeys);
    free(e->cvals);
    free(e);
}

bool pf_engine_kernel(const pf_engine *e)
{
    return e->kernel;
}

void pf_engine_counts(const pf_engine *e, uint64_t *samples, uint64_t *lost, uint64_t *truncated)
{
    *samples = e->samples;
    *lost = e->lost;
    if (truncated)
        *truncated = e->truncated;
}

/* ------------------------------------------------------------------ */
/* Process generations                                                 */
/* ------------------------------------------------------------------ */

static size_t gen_slot_of(const pf_engine *p, pid_t pid)
{
    size_t q = pa__hash_u64((uint64_t)(uint32_t)pid) & (p->gencap - 1);
    while (p->gens[q].at && p->gens[q].pid != pid)
        q = (q + 1) & (p->gencap - 1);
    return q;
}

/* The current generation of pid, or -1. */
static int proc_find(pf_engine *p, pid_t pid)
{
    if (!p->gencap)
        return -1;
    int at = p->gens[gen_slot_of(p, pid)].at - 1;
    return at >= 0 && !p->procs[at].replaced && !p->procs[at].gone ? at : -1;
}

/* Makes generation i pid's latest in the index. */
static int gen_set(pf_engine *p, pid_t pid, int i)
{
    if ((p->ngens + 1) * 2 > p->gencap) {
        size_t ncap = p->gencap ? p->gencap * 2 : 256;
        struct gen_slot *nv = calloc(ncap, sizeof(*nv)), *old = p->gens;
        if (!nv)
            return -ENOMEM;
        size_t ocap = p->gencap;
        p->gens = nv;
        p->gencap = ncap;
        for (size_t k = 0; k < ocap; k++)
            if (old[k].at)
                p->gens[gen_slot_of(p, old[k].pid)] = old[k];
        free(old);
    }
    struct gen_slot *g = &p->gens[gen_slot_of(p, pid)];
    p->ngens += !g->at;
    *g = (struct gen_slot){pid, i + 1};
    return 0;
}

/* Generation i's memory is freed at the end of the window. */
static void mark_gone(pf_engine *p, int i)
{
    if (p->procs[i].gone || PA__GROW(p->gone, p->capgone, p->ngone + 1, 64) < 0)
        return;
    p->procs[i].gone = true;
    p->gone[p->ngone++] = i;
}

/* A new generation of pid: a process first seen, an exec (the older
 * generation is replaced), or a fork (copy_from: the parent's maps and
 * name). */
static int proc_new(pf_engine *p, pid_t pid, int copy_from)
{
    if (PA__GROW(p->procs, p->capprocs, p->nprocs + 1, 16) < 0 || !pc_tasks_proc(p->tasks, pid))
        return -ENOMEM;
    int old = proc_find(p, pid);
    proc *n = &p->procs[p->nprocs];
    memset(n, 0, sizeof(*n));
    n->pid = pid;
    if (old >= 0) {
        p->procs[old].replaced = true; /* its name stays the pid's */
        mark_gone(p, old);
    }
    if (copy_from >= 0) {
        proc *src = &p->procs[copy_from];
        pc_tasks_set_comm(p->tasks, pid, pc_tasks_comm(p->tasks, src->pid));
        for (size_t i = 0; i < src->maps.n; i++)
            if (pf_maps_add(&n->maps, src->maps.v[i].start,
                            src->maps.v[i].end - src->maps.v[i].start, src->maps.v[i].pgoff,
                            src->maps.v[i].path) < 0)
                return -ENOMEM;
        n->maps_read = true;
    }
    if (gen_set(p, pid, (int)p->nprocs) < 0)
        return -ENOMEM;
    return (int)p->nprocs++;
}

/* The current generation of pid, created (maps from procfs) if unknown. */
static int proc_get(pf_engine *p, pid_t pid)
{
    int i = proc_find(p, pid);
    if (i >= 0)
        return i;
    i = proc_new(p, pid, -1);
    if (i < 0)
        return i;
    proc *pr = &p->procs[i];
    pf_maps_read(&pr->maps, p->cfg.procfs, pid);
    pr->maps_read = true;
    char path[4200], comm[64];
    snprintf(path, sizeof(path), "%s/%d/comm", p->cfg.procfs, (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fgets(comm, sizeof(comm), f)) {
            comm[strcspn(comm, "\n")] = '\0';
            pc_tasks_set_comm(p->tasks, pid, comm);
        }
        fclose(f);
    }
    return i;
}

void pf_engine_touch(pf_engine *e, pid_t pid)
{
    proc_get(e, pid);
}

/* ------------------------------------------------------------------ */
/* perf_event_open                                                     */
/* ------------------------------------------------------------------ */

static void fill_attr(const pf_engine *p, struct perf_event_attr *a, bool cmd)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    if (!strcmp(p->cfg.event, "cycles")) {
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_CPU_CYCLES;
    } else {
        a->type = PERF_TYPE_SOFTWARE;
        a->config = !strcmp(p->cfg.event, "task-clock") ? PERF_COUNT_SW_TASK_CLOCK
                                                        : PERF_COUNT_SW_CPU_CLOCK;
    }
    if (p->cfg.freq) {
        a->freq = 1;
        a->sample_freq = p->cfg.freq;
    } else {
        a->sample_period = p->cfg.period_ns;
        if (a->type == PERF_TYPE_HARDWARE) /* cycles: ns at ~2 GHz */
            a->sample_period = p->cfg.period_ns * 2;
    }
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
    a->mmap = 1; /* exec mappings; mmap2 selects the MMAP2 format */
    a->mmap2 = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->sample_id_all = 1;
    if (p->cfg.scopes) { /* the samples' times on the scope trace's clock */
        a->use_clockid = 1;
        a->clockid = CLOCK_MONOTONIC;
    }
    a->inherit = 1;
    a->exclude_hv = 1;
    a->exclude_kernel = !p->kernel;
    a->exclude_callchain_kernel = !p->kernel;
    if (p->cfg.dwarf) {
        /* the kernel's call chain for kernel frames; the user stack from
         * a copy, unwound here */
        a->exclude_callchain_user = 1;
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = PF_UNWIND_REGS_MASK;
        a->sample_stack_user = PF_UNWIND_STACK;
    }
    a->disabled = cmd;
    a->enable_on_exec = cmd;
    a->wakeup_events = 0;
}

static int event_open(pf_engine *p, pid_t tid, int cpu, bool cmd)
{
    struct perf_event_attr a;
    fill_attr(p, &a, cmd);
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && p->kernel) {
        /* kernel samples not allowed: user space only, and say so */
        p->kernel = false;
        fill_attr(p, &a, cmd);
        fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0 && errno == EINVAL && p->cfg.scopes) {
        /* a kernel without use_clockid (before 4.1): the samples on perf's
         * own clock, which the scope trace's times cannot be put beside,
         * so no [scope NAME] frames */
        p->cfg.scopes = NULL;
        fill_attr(p, &a, cmd);
        fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    return fd < 0 ? -errno : fd;
}

/* Keeps an event's fd (closed by pf_engine_free); on failure closes it. */
static int keep_fd(pf_engine *p, int fd)
{
    int *nf = realloc(p->fds, (p->nfds + 1) * sizeof(*nf));
    if (!nf) {
        close(fd);
        return -ENOMEM;
    }
    p->fds = nf;
    p->fds[p->nfds++] = fd;
    return 0;
}

/* Maps fd's ring of pages data pages as CPU cpu's ring, halved down to
 * min_pages while the locked-memory limit of unprivileged users
 * (perf_event_mlock_kb) refuses it (EPERM).  0 or -errno (*map_failed:
 * mmap's). */
static int ring_map(pf_engine *p, int cpu, int fd, size_t pages, size_t min_pages, bool *map_failed)
{
    size_t len = 0, np = pages;
    void *base = MAP_FAILED;
    *map_failed = false;
    for (; np >= min_pages; np /= 2) {
        len = (1 + np) * (size_t)sysconf(_SC_PAGESIZE);
        base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base != MAP_FAILED || errno != EPERM)
            break;
    }
    if (base == MAP_FAILED) {
        *map_failed = true;
        return -errno;
    }
    ring *nv = realloc(p->rings, (p->nrings + 1) * sizeof(*nv));
    if (!nv) {
        munmap(base, len);
        return -ENOMEM;
    }
    p->rings = nv;
    p->cpu_ring[cpu] = (int)p->nrings;
    p->rings[p->nrings++] = (ring){fd, base, np};
    return 0;
}

/* Samples thread tid (and, inherited, what it starts) on every CPU: the
 * kernel refuses to map the ring of an inherited per-task event, so there
 * is one event per CPU, and one ring per CPU that the events of the other
 * threads on that CPU write into (PERF_EVENT_IOC_SET_OUTPUT). */
static int ring_open(pf_engine *p, pid_t tid, bool cmd, size_t pages)
{
    int opened = 0, first_err = 0;
    for (int cpu = 0; cpu < p->ncpus; cpu++) {
        int fd = event_open(p, tid, cpu, cmd);
        if (fd < 0) {
            if (fd != -ENODEV && !first_err) /* ENODEV: CPU offline */
                first_err = fd;
            continue;
        }
        if (keep_fd(p, fd) < 0)
            return -ENOMEM;
        if (p->cpu_ring[cpu] >= 0) {
            if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[p->cpu_ring[cpu]].fd) < 0)
                return -errno;
            opened++;
            continue;
        }
        bool map_failed;
        int rc = ring_map(p, cpu, fd, pages, 8, &map_failed);
        if (rc < 0)
            return rc;
        opened++;
    }
    return opened ? 0 : first_err ? first_err : -ENODEV;
}

int pf_engine_open_task(pf_engine *e, pid_t tid, bool cmd)
{
    return ring_open(e, tid, cmd, e->cfg.dwarf ? 512 : 64);
}

int pf_engine_open_pid(pf_engine *p, pid_t pid)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%d/task", p->cfg.procfs, (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? -ESRCH : -errno;
    struct dirent *e;
    int opened = 0, first_err = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        int rc = pf_engine_open_task(p, tid, false);
        if (rc == 0)
            opened++;
        else if (rc != -ESRCH && !first_err)
            first_err = rc; /* a thread that just exited is fine */
    }
    closedir(d);
    if (!opened)
        return first_err ? first_err : -ESRCH;
    int pi = proc_get(p, pid);
    return pi < 0 ? pi : 0;
}

int pf_engine_open_all(pf_engine *p, int *mmap_cpu)
{
    int opened = 0, first_err = 0;
    *mmap_cpu = -1;
    for (int cpu = 0; cpu < p->ncpus; cpu++) {
        struct perf_event_attr a;
        fill_attr(p, &a, false);
        a.inherit = 0; /* per CPU: every task already */
        int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno != ENODEV && !first_err)
                first_err = -errno;
            continue;
        }
        if (keep_fd(p, fd) < 0)
            return -ENOMEM;
        size_t pages = p->cfg.dwarf ? 512 : 128;
        bool map_failed = false;
        int rc = ring_map(p, cpu, fd, pages, pages, &map_failed);
        if (rc < 0) {
            if (map_failed)
                *mmap_cpu = cpu;
            return rc;
        }
        opened++;
    }
    return opened ? 0 : first_err ? first_err : -ENODEV;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static int wbuf_push(pf_engine *p, const uint64_t *v, size_t n)
{
    if (PA__GROW(p->wbuf, p->wcap, p->wn + n, 65536) < 0)
        return -ENOMEM;
    memcpy(p->wbuf + p->wn, v, n * sizeof(*v));
    p->wn += n;
    return 0;
}

/* --call-graph dwarf: after the call chain (at o), REGS_USER {abi,
 * regs[17]} and STACK_USER {size, data[size], dyn_size}; the user stack
 * unwound after the kernel's n frames in chain.  A walk that wanted stack
 * past a copy the kernel cut short (a page not in memory) ends with
 * STACK_CUT, and those pages are made present for the next samples
 * (unwind.c).  The new count. */
static size_t unwind_user(pf_engine *p, int pi, uint32_t pid, uint32_t tid, const char *r,
                          size_t len, size_t o, uint64_t *chain, size_t n)
{
    uint64_t abi = 0, regs[17], ssize = 0, dyn = 0;
    if (o + 8 <= len)
        memcpy(&abi, r + o, 8);
    o += 8;
    if (abi && o + sizeof(regs) <= len) {
        memcpy(regs, r + o, sizeof(regs));
        o += sizeof(regs);
    } else {
        abi = 0; /* a kernel thread: no user registers */
    }
    if (o + 8 <= len)
        memcpy(&ssize, r + o, 8);
    o += 8;
    if (ssize && o + ssize + 8 <= len)
        memcpy(&dyn, r + o + ssize, 8);
    if (!abi || n + 1 >= PF_MAX_DEPTH)
        return n;
    uint64_t beyond = 0, copied = dyn < ssize ? dyn : ssize;
    if (!copied && n > 0) {
        chain[n++] = STACK_NO_USER;
        return n;
    }
    proc *pr = &p->procs[pi];
    int room = (int)(PF_MAX_DEPTH - n - 1);
    int got = pf_unwind(&pr->uw, (pid_t)pid, (pid_t)tid, &pr->maps, regs, r + o, copied, chain + n,
                        room, &beyond);
    if (got > 0)
        n += (size_t)got;
    else
        chain[n++] = regs[8]; /* IP alone */
    if (got == room)
        chain[n++] = STACK_DEEP;
    else if (beyond && copied) {
        chain[n++] = STACK_CUT;
        uint64_t sp = regs[7];
        if (copied < ssize && !pr->fault_in_failed &&
            pf_unwind_fault_in((pid_t)tid, sp + copied, sp + ssize) == -EPERM)
            pr->fault_in_failed = true;
    }
    return n;
}

static void on_sample(pf_engine *p, const char *r, size_t len)
{
    /* PERF_SAMPLE_IP, TID, TIME, CPU, PERIOD, CALLCHAIN in this order */
    if (len < 8 * 6)
        return;
    uint64_t ip, time, period, nr;
    uint32_t pid, tid;
    memcpy(&ip, r, 8);
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 12, 4);
    memcpy(&time, r + 16, 8);
    memcpy(&period, r + 32, 8);
    memcpy(&nr, r + 40, 8);
    if (48 + nr * 8 > len)
        nr = (len - 48) / 8;
    if (pid == 0) { /* --all: an idle CPU (the swapper), no process */
        p->idle_samples++;
        return;
    }
    int pi = proc_get(p, (pid_t)pid);
    if (pi < 0)
        return;
    uint64_t chain[PF_MAX_DEPTH + 4];
    size_t n = 0;
    const char *ips = r + 48;
    for (uint64_t i = 0; i < nr && n < PF_MAX_DEPTH; i++) {
        uint64_t a;
        memcpy(&a, ips + i * 8, 8);
        if (a >= (uint64_t)-4095) { /* PERF_CONTEXT_* marker */
            if (a == PERF_CONTEXT_USER || a == PERF_CONTEXT_KERNEL)
                continue;
            break; /* guest, hv: not walked */
        }
        chain[n++] = a;
    }
    if (p->cfg.dwarf)
        n = unwind_user(p, pi, pid, tid, r, len, 48 + nr * 8, chain, n);
    /* the C scope the thread was in (the command's scope trace): its root
     * frame's interned name, 0 none */
    const char *scope = pf_strace_at(p->cfg.scopes, (pid_t)tid, time);
    uint64_t head[5] = {(uint64_t)pi, tid, period, n, (uint64_t)(uintptr_t)scope};
    if (wbuf_push(p, head, 5) < 0 || wbuf_push(p, chain, n) < 0) {
        p->lost++;
        return;
    }
    p->samples++;
}

/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation (or build
 * id), prot, flags, filename */
static void on_mmap2(pf_engine *p, const char *r, size_t len)
{
    if (len < 8 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2 + 1)
        return;
    uint32_t pid, prot;
    uint64_t addr, mlen, pgoff;
    memcpy(&pid, r, 4);
    memcpy(&addr, r + 8, 8);
    memcpy(&mlen, r + 16, 8);
    memcpy(&pgoff, r + 24, 8);
    memcpy(&prot, r + 56, 4);
    const char *name = r + 64;
    if (!memchr(name, '\0', len - 64))
        return;
    if (!(prot & PROT_EXEC))
        return;
    int pi = proc_find(p, (pid_t)pid);
    if (pi < 0) {
        pi = proc_new(p, (pid_t)pid, -1);
        if (pi < 0)
            return;
        p->procs[pi].maps_read = true; /* records describe it */
    }
    pf_maps_add(&p->procs[pi].maps, addr, mlen, pgoff, name);
}

static void on_comm(pf_engine *p, const char *r, size_t len, bool exec)
{
    uint32_t pid, tid;
    if (len < 9)
        return;
    memcpy(&pid, r, 4);
    memcpy(&tid, r + 4, 4);
    const char *comm = r + 8;
    if (exec) {
        /* a new generation, maps from the MMAP2 records that follow */
        int pi = proc_new(p, (pid_t)pid, -1);
        if (pi < 0)
            return;
        p->procs[pi].maps_read = true;
        pc_tasks_set_comm(p->tasks, (pid_t)pid, comm);
        /* a new program: its stack made present before it goes deep
         * (unwind.c); --all leaves the machine's processes alone */
        if (p->cfg.dwarf && !p->cfg.all)
            pf_unwind_fault_in_stack(p->cfg.procfs, (pid_t)pid);
    } else if (pid == tid && proc_find(p, (pid_t)pid) >= 0) {
        pc_tasks_set_comm(p->tasks, (pid_t)pid, comm);
    }
    pc_thr *t = pc_tasks_thr(p->tasks, (pid_t)pid, (pid_t)tid);
    if (t)
        snprintf(t->comm, sizeof(t->comm), "%.15s", comm);
}

/* Two u32 fields of a record, at 0 and at off (FORK: pid, ppid; EXIT:
 * pid, tid); false when the record is too short. */
static bool rec_pair(const char *r, size_t len, size_t off, uint32_t *a, uint32_t *b)
{
    if (len < 16)
        return false;
    memcpy(a, r, 4);
    memcpy(b, r + off, 4);
    return true;
}

static void on_fork(pf_engine *p, const char *r, size_t len)
{
    uint32_t pid, ppid;
    if (!rec_pair(r, len, 4, &pid, &ppid) || pid == ppid || proc_find(p, (pid_t)pid) >= 0)
        return;
    int parent = proc_find(p, (pid_t)ppid);
    /* --all: a parent never sampled (one that waits for its children) is
     * read now, so that children gone before their first sample is read
     * still get its name and maps */
    if (parent < 0 && p->cfg.all) {
        parent = proc_get(p, (pid_t)ppid);
        if (parent >= 0 && !p->procs[parent].maps.n)
            parent = -1; /* gone too */
    }
    proc_new(p, (pid_t)pid, parent); /* fork copies the maps */
}

/* pid, ppid, tid, ptid, time: the thread stays known for its samples;
 * its CPU time since the last tick is in no report */
static void on_exit_rec(pf_engine *p, const char *r, size_t len)
{
    uint32_t pid, tid;
    if (!rec_pair(r, len, 8, &pid, &tid))
        return;
    pc_thr *t = pc_tasks_thr(p->tasks, (pid_t)pid, (pid_t)tid);
    if (t)
        t->w_exited = true;
    int gen = pid == tid ? proc_find(p, (pid_t)pid) : -1;
    if (gen >= 0) /* the process is gone (its leader's exit is its last) */
        mark_gone(p, gen);
}

static void on_record(pf_engine *p, const struct perf_event_header *h)
{
    const char *r = (const char *)(h + 1);
    size_t len = h->size - sizeof(*h);
    uint64_t lost;
    switch (h->type) {
    case PERF_RECORD_SAMPLE:
        on_sample(p, r, len);
        break;
    case PERF_RECORD_MMAP2:
        on_mmap2(p, r, len);
        break;
    case PERF_RECORD_COMM:
        on_comm(p, r, len, (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0);
        break;
    case PERF_RECORD_FORK:
        on_fork(p, r, len);
        break;
    case PERF_RECORD_LOST:
        if (len >= 16) {
            memcpy(&lost, r + 8, 8);
            p->lost += lost;
        }
        break;
    case PERF_RECORD_EXIT:
        on_exit_rec(p, r, len);
        break;
    default:
        break;
    }
}

/* Copies the records of a ring into p->rec (the ring is freed at once). */
static void drain_ring(pf_engine *p, ring *rg)
{
    struct perf_event_mmap_page *mp = rg->base;
    size_t psz = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = rg->pages * psz;
    const char *data = (const char *)rg->base + psz;
    uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = mp->data_tail;
    while (tail + sizeof(struct perf_event_header) <= head) {
        size_t off = tail % size;
        struct perf_event_header hdr;
        if (off + sizeof(hdr) <= size) {
            memcpy(&hdr, data + off, sizeof(hdr));
        } else {
            size_t a = size - off;
            memcpy(&hdr, data + off, a);
            memcpy((char *)&hdr + a, data, sizeof(hdr) - a);
        }
        if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
            break;
        /* 8-byte aligned copies: records are multiples of 8 */
        if (PA__GROW(p->rec, p->reccap, p->recn + hdr.size, 1u << 20) < 0)
            break;
        if (off + hdr.size <= size) {
            memcpy(p->rec + p->recn, data + off, hdr.size);
        } else {
            size_t a = size - off;
            memcpy(p->rec + p->recn, data + off, a);
            memcpy(p->rec + p->recn + a, data, hdr.size - a);
        }
        p->recn += hdr.size;
        tail += hdr.size;
    }
    __atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

static int rec_cmp(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The time of a record: in the sample itself, or (sample_id_all) in the
 * trailer {pid, tid, time, cpu, res} of the others. */
static uint64_t rec_time(const struct perf_event_header *h)
{
    uint64_t t = 0;
    const char *r = (const char *)h;
    if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24)
        memcpy(&t, r + sizeof(*h) + 16, 8);
    else if (h->size >= sizeof(*h) + 24)
        memcpy(&t, r + h->size - 16, 8);
    return t;
}

/* Reads every ring and handles the records in time order: the rings are
 * per CPU, and a process's exec (COMM), maps (MMAP2) and samples may sit
 * in different rings. */
void pf_engine_drain(pf_engine *p)
{
    p->recn = 0;
    for (size_t i = 0; i < p->nrings; i++)
        drain_ring(p, &p->rings[i]);
    /* the scope events, after the samples they precede: every sample read
     * above finds its thread's scope (strace.c) */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pf_strace_read(p->cfg.scopes);
    size_t n = 0;
    for (size_t o = 0; o < p->recn;) {
        const struct perf_event_header *h = (const void *)(p->rec + o);
        if (PA__GROW(p->refs, p->refcap, n + 1, 4096) < 0)
            break;
        p->refs[n++] = (rec_ref){rec_time(h), o};
        o += h->size;
    }
    if (n > 1) /* qsort's array may be NULL only for no element at all */
        qsort(p->refs, n, sizeof(*p->refs), rec_cmp);
    for (size_t i = 0; i < n; i++)
        on_record(p, (const void *)(p->rec + p->refs[i].off));
    /* a sample later read is at most a drain late (its ring was read just
     * before it was written): keep the events of a second more */
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    if (p->scopes_keep)
        pf_strace_trim(p->cfg.scopes, p->scopes_keep);
    p->scopes_keep = t > 1000000000ull ? t - 1000000000ull : 0;
}

/* ------------------------------------------------------------------ */
/* The window's samples and their frames                               */
/* ------------------------------------------------------------------ */

static int resolve_cached(pf_engine *p, int pi, uint64_t ip, int ret, const pf_frame **out)
{
    uint64_t k1 = ((uint64_t)pi << 1) | (uint64_t)ret;
    if ((p->cn + 1) * 2 > p->ccap) {
        size_t ncap = p->ccap ? p->ccap * 2 : 8192;
        uint64_t *nk = calloc(ncap * 2, sizeof(*nk));
        uint32_t *nv = calloc(ncap, sizeof(*nv) * 2);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -ENOMEM;
        }
        for (size_t i = 0; i < p->ccap; i++) {
            if (!p->cvals[2 * i + 1])
                continue;
            uint64_t h = pa__hash_pair(p->ckeys[2 * i], p->ckeys[2 * i + 1]);
            size_t q = h & (ncap - 1);
            while (nv[2 * q + 1])
                q = (q + 1) & (ncap - 1);
            nk[2 * q] = p->ckeys[2 * i];
            nk[2 * q + 1] = p->ckeys[2 * i + 1];
            nv[2 * q] = p->cvals[2 * i];
            nv[2 * q + 1] = p->cvals[2 * i + 1];
        }
        free(p->ckeys);
        free(p->cvals);
        p->ckeys = nk;
        p->cvals = nv;
        p->ccap = ncap;
    }
    size_t q = pa__hash_pair(k1, ip) & (p->ccap - 1);
    while (p->cvals[2 * q + 1]) {
        if (p->ckeys[2 * q] == k1 && p->ckeys[2 * q + 1] == ip) {
            *out = &p->pool[p->cvals[2 * q]];
            return (int)p->cvals[2 * q + 1];
        }
        q = (q + 1) & (p->ccap - 1);
    }
    pf_frame tmp[16];
    proc *pr = &p->procs[pi];
    int n = pf_sym_resolve(pr->pid, &pr->maps, ip, ret, tmp, 16);
    if (PA__GROW(p->pool, p->cappool, p->npool + (size_t)n, 4096) < 0)
        return -ENOMEM;
    memcpy(&p->pool[p->npool], tmp, (size_t)n * sizeof(*tmp));
    p->ckeys[2 * q] = k1;
    p->ckeys[2 * q + 1] = ip;
    p->cvals[2 * q] = (uint32_t)p->npool;
    p->cvals[2 * q + 1] = (uint32_t)n;
    p->npool += (size_t)n;
    p->cn++;
    *out = &p->pool[p->cvals[2 * q]];
    return n;
}

/* The window's samples, in wbuf: proc (generation), tid, period, n, the
 * scope's root frame name (0 none), ips[n]. */
static bool next_stack(void *self, size_t *at, pid_t *pid, pid_t *tid, uint64_t *weight)
{
    pf_engine *e = self;
    size_t o = *at;
    if (o >= e->wn)
        return false;
    *pid = e->procs[e->wbuf[o]].pid;
    *tid = (pid_t)e->wbuf[o + 1];
    *weight = e->wbuf[o + 2];
    *at = o + 5 + (size_t)e->wbuf[o + 3];
    return true;
}

static int stack_frames(void *self, size_t at, pf_frame *out, int max)
{
    pf_engine *e = self;
    int gen = (int)e->wbuf[at];
    size_t n = (size_t)e->wbuf[at + 3];
    const char *scope = (const char *)(uintptr_t)e->wbuf[at + 4];
    const uint64_t *ips = &e->wbuf[at + 5];
    pf_maps *maps = &e->procs[gen].maps;
    int nf = 0;
    bool execve = false;
    for (size_t k = 0; k < n && nf < max; k++) {
        const pf_frame *got;
        if (ips[k] == STACK_CUT || ips[k] == STACK_DEEP) {
            out[nf++] = pc_frame_pseudo(ips[k] == STACK_CUT ? "[stack ends: past the stack copy]"
                                                            : "[stack ends: frames kept]");
            e->truncated++;
            break;
        }
        /* the first user address under kernel frames */
        bool user_ip = k > 0 && (ips[k - 1] >> 63) && !(ips[k] >> 63);
        if (ips[k] == STACK_NO_USER || (user_ip && maps->n && !pf_maps_find(maps, ips[k]))) {
            /* in execve (the program being replaced) the kernel's frames
             * are the whole stack */
            if (!execve) {
                out[nf++] = pc_frame_pseudo("[stack ends: user stack not readable]");
                e->truncated++;
            }
            break;
        }
        if (pf_sym_kernel_dropped(ips[k]))
            continue; /* no kernel symbols: summary.json says so */
        /* a return address in no executable mapping is no frame (a
         * frame-pointer chain through code built without them reads
         * data): the stack ends there, marked (issue 31 item 3) */
        if (k > 0 && !user_ip && !(ips[k] >> 63) && maps->n && !pf_maps_find(maps, ips[k] - 1)) {
            out[nf++] = pc_frame_pseudo("[stack ends: return address outside code]");
            e->truncated++;
            break;
        }
        /* the user IP under kernel frames is where the thread was, not a
         * return address (a fault on the first byte of a mapping) */
        int m = resolve_cached(e, gen, ips[k], k > 0 && !user_ip, &got);
        if (m > 0 && (ips[k] >> 63) && strstr(got[0].name, "sys_execve"))
            execve = true;
        int j = 0;
        for (; j < m && nf < max; j++)
            out[nf++] = got[j];
        if (nf == max && (j < m || k + 1 < n)) {
            /* inlined frames filled what is kept: the outermost gives way */
            out[max - 1] = pc_frame_pseudo("[stack ends: frames kept]");
            e->truncated++;
            break;
        }
    }
    if (nf == 0 && n > 0)
        out[nf++] = pc_frame_pseudo("[kernel]"); /* a kernel thread's, all
                                                   frames dropped */
    if (scope && max > 0)                        /* the C scope, outermost (jalen's [scope NAME]) */
        out[nf < max ? nf++ : max - 1] = pc_frame_pseudo(scope);
    return nf;
}

bool pf_engine_window_has_stacks(const pf_engine *e)
{
    return e->wn > 0;
}

/* The cache of resolved frames without the entries of freed generations
 * (their frames moved into a new pool).  -ENOMEM: the old one kept. */
static int cache_rebuild(pf_engine *p)
{
    uint64_t *nk = calloc(p->ccap * 2, sizeof(*nk));
    uint32_t *nv = calloc(p->ccap, sizeof(*nv) * 2);
    pf_frame *pool = malloc((p->npool ? p->npool : 1) * sizeof(*pool));
    if (!nk || !nv || !pool) {
        free(nk);
        free(nv);
        free(pool);
        return -ENOMEM;
    }
    size_t npool = 0, cn = 0;
    for (size_t i = 0; i < p->ccap; i++) {
        if (!p->cvals[2 * i + 1] || p->procs[p->ckeys[2 * i] >> 1].gone)
            continue;
        uint64_t h = pa__hash_pair(p->ckeys[2 * i], p->ckeys[2 * i + 1]);
        size_t q = h & (p->ccap - 1);
        while (nv[2 * q + 1])
            q = (q + 1) & (p->ccap - 1);
        uint32_t n = p->cvals[2 * i + 1];
        memcpy(&pool[npool], &p->pool[p->cvals[2 * i]], n * sizeof(*pool));
        nk[2 * q] = p->ckeys[2 * i];
        nk[2 * q + 1] = p->ckeys[2 * i + 1];
        nv[2 * q] = (uint32_t)npool;
        nv[2 * q + 1] = n;
        npool += n;
        cn++;
    }
    free(p->ckeys);
    free(p->cvals);
    free(p->pool);
    p->ckeys = nk;
    p->cvals = nv;
    p->pool = pool;
    p->npool = npool;
    p->cappool = p->npool ? p->npool : 1;
    p->cn = cn;
    return 0;
}

/* The maps, unwinders and resolved frames of the generations gone before
 * this window's end: a whole machine's processes come and go, and a
 * continuous --all run must not keep them all.  No sample of theirs is
 * left (the window's are charged; a later sample of their pid finds the
 * newer generation). */
static void forget_gone(pf_engine *p)
{
    for (size_t k = 0; k < p->ngone; k++) {
        proc *pr = &p->procs[p->gone[k]];
        pf_maps_free(&pr->maps);
        pf_unwinder_free(pr->uw);
        pr->uw = NULL;
    }
    p->gone_since_rebuild += p->ngone;
    p->ngone = 0;
    /* the cache is rebuilt when enough entries may be dead, so that its
     * cost stays proportional to what it frees */
    if (p->gone_since_rebuild >= 64 && cache_rebuild(p) == 0)
        p->gone_since_rebuild = 0;
}

static void window_done(void *self)
{
    pf_engine *p = self;
    p->wn = 0;
    forget_gone(p);
}

pc_engine pf_engine_stacks(pf_engine *e)
{
    return (pc_engine){
        .self = e, .next = next_stack, .frames = stack_frames, .window_done = window_done};
}
