/*
 * uprobe.c - `powerapi profile --count FUNC[,FUNC...]`: every call of the
 * functions named is counted by the kernel's uprobe PMU (DESIGN.md 13.7).
 *
 * A FUNC is a symbol of the profiled program, or LIB:SYMBOL (LIB a path,
 * or a library's name: libc, libm.so.6), with shell wildcards.  Each
 * symbol found (ELF .symtab, else .dynsym; one probe per address) gets a
 * perf event of type uprobe (its PMU type from sysfs) on the file's offset
 * of its first instruction, on every CPU, that writes a record per call
 * (its process and thread) into that CPU's ring; the records of the
 * target processes are counted, the others dropped.  Not one event per
 * target task with inherit: on Linux 6.18 such an event counted the main
 * thread's calls alone, the threads' were lost (likely: the inherited
 * event reads uprobe_path, a pointer into our memory, in the memory of the
 * task starting the thread; DESIGN.md 13.7).  The first event of each CPU
 * also gives the FORK records, so that the targets' new processes are
 * counted too.
 */
#include "perf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PF_COUNT_MAX 256 /* functions counted */

typedef struct pf_counted {
    char *name, *path; /* symbol, file probed ("[kernel]" for a kprobe) */
    int kernel;        /* a kernel function: the kprobe PMU's */
    uint64_t offset;
    int *fds;           /* one event per CPU, and its return probe's with timing */
    uint64_t *ids;      /* their ids (the records' PERF_SAMPLE_IDENTIFIER) */
    unsigned char *ret; /* whether each is a return probe */
    size_t nfds;
    uint64_t returns, sum_entry_ns, sum_return_ns;
    uint64_t calls;
    pf_cthread *threads;
    size_t nthreads;
} pf_counted;

typedef struct pf_cring {
    int fd;
    void *base;
    size_t size;
} pf_cring;

struct pf_count {
    pf_counted v[PF_COUNT_MAX];
    size_t n;
    int type;  /* the uprobe PMU's */
    int ktype; /* the kprobe PMU's, -1 none */
    int timed; /* return probes too (pf_count_time): each call's time */
    int ncpus;
    pf_cring *rings; /* per CPU: every function's events write there */
    pid_t *targets;  /* the processes counted: the root and its children */
    size_t ntargets;
    uint64_t lost; /* records the rings lost (calls not counted) */
};

static int pmu_type(const char *sysfs, const char *pmu, char *err, size_t len)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/bus/event_source/devices/%s/type", sysfs ? sysfs : "/sys", pmu);
    FILE *f = fopen(p, "re");
    int t = -1;
    if (f && fscanf(f, "%d", &t) != 1)
        t = -1;
    if (f)
        fclose(f);
    if (t < 0)
        snprintf(err, len,
                 "--count: this kernel has no %s PMU (%s unreadable; it needs "
                 "CONFIG_%s_EVENTS)",
                 pmu, p, pmu[0] == 'u' ? "UPROBE" : "KPROBE");
    return t < 0 ? -ENOENT : t;
}

/* A library's file: lib itself when it names a file, else the first
 * LIB.so.*, LIB-*.so, LIB or LIB.so in the system's library folders. */
static int find_lib(const char *lib, char *out, size_t len)
{
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib64", "/usr/lib", "/lib"};
    static const char *const forms[] = {"%s/%s.so.[0-9]*", "%s/%s-*.so", "%s/%s",
                                        "%s/%s.so"}; /* libc.so: a linker script */
    if (strchr(lib, '/')) {
        snprintf(out, len, "%s", lib);
        return access(out, R_OK) == 0 ? 0 : -errno;
    }
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++)
        for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
            char pat[1024];
            snprintf(pat, sizeof(pat), forms[k], dirs[d], lib);
            if (!strpbrk(pat, "*[")) {
                if (access(pat, R_OK) == 0) {
                    snprintf(out, len, "%s", pat);
                    return 0;
                }
                continue;
            }
            const char *base = strrchr(pat, '/') + 1; /* a version's wildcard */
            DIR *dd = opendir(dirs[d]);
            struct dirent *e;
            while (dd && (e = readdir(dd)))
                if (fnmatch(base, e->d_name, 0) == 0) {
                    snprintf(out, len, "%s/%s", dirs[d], e->d_name);
                    closedir(dd);
                    return 0;
                }
            if (dd)
                closedir(dd);
        }
    return -ENOENT;
}

/* The file offset of virtual address v (its PT_LOAD segment). */
static int vaddr_offset(Elf *e, uint64_t v, uint64_t *off)
{
    size_t n;
    if (elf_getphdrnum(e, &n) != 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && v >= ph.p_vaddr &&
            v < ph.p_vaddr + ph.p_filesz) {
            *off = v - ph.p_vaddr + ph.p_offset;
            return 0;
        }
    }
    return -EINVAL;
}

static int add(pf_count *c, const char *name, const char *path, uint64_t off)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].offset == off && !strcmp(c->v[i].path, path) &&
            (!c->v[i].kernel || !strcmp(c->v[i].name, name)))
            return 0; /* an alias of a symbol already counted */
    if (c->n == PF_COUNT_MAX)
        return -E2BIG;
    pf_counted *k = &c->v[c->n];
    if (!(k->name = strdup(name)) || !(k->path = strdup(path))) {
        free(k->name);
        return -ENOMEM;
    }
    k->offset = off;
    c->n++;
    return 1;
}

/* Adds the functions of path matching pat (a symbol table: .symtab,
 * else .dynsym).  The count added, or -errno. */
static int add_matches(pf_count *c, const char *path, const char *pat)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    int added = 0, rc = 0;
    for (int pass = 0; e && pass < 2 && added == 0 && rc >= 0; pass++) {
        Elf_Scn *s = NULL;
        while (rc >= 0 && (s = elf_nextscn(e, s))) {
            GElf_Shdr sh;
            if (!gelf_getshdr(s, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB))
                continue;
            Elf_Data *d = elf_getdata(s, NULL);
            size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
            for (size_t i = 0; d && i < n && rc >= 0; i++) {
                GElf_Sym sym;
                uint64_t off;
                if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
                    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
                     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
                    continue;
                const char *nm = elf_strptr(e, sh.sh_link, sym.st_name);
                if (!nm || fnmatch(pat, nm, 0) || vaddr_offset(e, sym.st_value, &off) < 0)
                    continue;
                rc = add(c, nm, path, off);
                added += rc >= 0; /* an alias of one counted matched too */
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return rc < 0 ? rc : added;
}

/* kernel:FUNC: a kprobe on the kernel function FUNC (no wildcards: the
 * kernel resolves the name), where this kernel has a kprobe PMU. */
static int add_kernel(pf_count *c, const char *sysfs, const char *sym, char *err, size_t len)
{
    char e2[512];
    if (!c->ktype)
        c->ktype = pmu_type(sysfs, "kprobe", e2, sizeof(e2));
    if (c->ktype < 0) {
        snprintf(err, len, "--count kernel:%s: %s; kernel functions cannot be counted here", sym,
                 e2 + strlen("--count: "));
        return -ENOENT;
    }
    if (strpbrk(sym, "*?[") || !*sym) {
        snprintf(err, len, "--count kernel:%s: name one kernel function, without wildcards", sym);
        return -EINVAL;
    }
    int rc = add(c, sym, "[kernel]", 0);
    if (rc > 0)
        c->v[c->n - 1].kernel = 1;
    return rc < 0 ? rc : 0;
}

int pf_count_new(pf_count **out, const char *sysfs, const char *spec, const char *exe, char *err,
                 size_t len)
{
    pf_count *c = calloc(1, sizeof(*c));
    char *dup = strdup(spec), *save = NULL;
    int rc = c && dup ? 0 : -ENOMEM;
    if (rc == 0 && (c->type = pmu_type(sysfs, "uprobe", err, len)) < 0)
        rc = c->type;
    for (char *f = rc ? NULL : strtok_r(dup, ",", &save); f && rc == 0;
         f = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(f, ':'), path[4096];
        const char *sym = colon ? colon + 1 : f;
        if (colon)
            *colon = '\0';
        if (colon && !strcmp(f, "kernel")) {
            rc = add_kernel(c, sysfs, sym, err, len);
        } else if (!*sym || (colon && !*f)) {
            snprintf(err, len, "--count: '%s%s%s' is not FUNC or LIB:FUNC", f, colon ? ":" : "",
                     sym);
            rc = -EINVAL;
        } else if (colon && find_lib(f, path, sizeof(path)) < 0) {
            snprintf(err, len, "--count: no library '%s' (give its path: /usr/lib/.../%s.so:%s)", f,
                     f, sym);
            rc = -ENOENT;
        } else if (!colon && !exe) {
            snprintf(err, len, "--count %s: name its file (FILE:%s) when profiling pids", sym, sym);
            rc = -EINVAL;
        } else {
            if (!colon)
                snprintf(path, sizeof(path), "%s", exe);
            int n = add_matches(c, path, sym);
            const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            if (n == 0 && !strcmp(base, "java"))
                snprintf(err, len,
                         "--count: no function '%s' in %s: a JVM's methods are JIT-compiled "
                         "code, with no symbol in a file to probe; count Java methods with "
                         "jalen's trace=CLASS.METHOD",
                         sym, path);
            else if (n == 0)
                snprintf(err, len,
                         "--count: no function '%s' in %s (stripped? counting needs its symbol "
                         "table: build with symbols, or give LIB:FUNC of a library that exports "
                         "it)",
                         sym, path);
            else if (n < 0)
                snprintf(err, len, "--count: %s: %s", path, strerror(-n));
            rc = n == 0 ? -ENOENT : n < 0 ? n : 0;
        }
    }
    free(dup);
    if (rc < 0) {
        pf_count_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Per-CPU rings: a record per call, kept when its process is a target */
/* ------------------------------------------------------------------ */

#define RING_PAGES 64 /* 256 KiB per CPU, drained every 100 ms */

static int open_one(pf_count *c, pf_counted *k, int cpu, int task, int ret, char *err, size_t len)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = (uint32_t)(k->kernel ? c->ktype : c->type);
    /* uprobe_path and probe_offset, or kprobe_func (offset 0) */
    a.config1 = (uint64_t)(uintptr_t)(k->kernel ? k->name : k->path);
    a.config2 = k->offset;
    a.config = ret ? 1 : 0; /* format/retprobe: config:0 */
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | (c->timed ? PERF_SAMPLE_TIME : 0);
    a.sample_id_all = 1;
    a.task = task; /* FORK and EXIT records: the targets' new processes */
    a.wakeup_events = 1u << 30;
    int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, len,
                 e == EACCES || e == EPERM
                     ? "--count %s: uprobes refused (%s): they need root (CAP_SYS_ADMIN and "
                       "CAP_PERFMON); run powerapi profile as root"
                     : "--count %s: the uprobe on %s did not open (%s)",
                 k->name, e == EACCES || e == EPERM ? strerror(e) : k->path, strerror(e));
        return -e;
    }
    return fd;
}

/* Keeps event fd of function k (its id; ret: a return probe). */
static int keep(pf_counted *k, int fd, int ret)
{
    int *v = realloc(k->fds, (k->nfds + 1) * sizeof(*v));
    if (v)
        k->fds = v;
    uint64_t *ids = v ? realloc(k->ids, (k->nfds + 1) * sizeof(*ids)) : NULL;
    if (ids)
        k->ids = ids;
    unsigned char *r = ids ? realloc(k->ret, k->nfds + 1) : NULL;
    if (r)
        k->ret = r;
    if (!r) {
        close(fd);
        return -ENOMEM;
    }
    k->fds[k->nfds] = fd;
    k->ret[k->nfds] = (unsigned char)ret;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &k->ids[k->nfds]) < 0) {
        close(fd);
        return -errno;
    }
    k->nfds++;
    return 0;
}

/* Every function's events on cpu, writing into the first one's ring. */
static int open_cpu(pf_count *c, int cpu, size_t ring, char *err, size_t len)
{
    c->rings[cpu].fd = -1;
    for (size_t i = 0; i < c->n; i++) {
        pf_counted *k = &c->v[i];
        for (int ret = 0; ret <= (c->timed && !k->kernel); ret++) {
            int fd = open_one(c, k, cpu, i == 0 && !ret, ret, err, len), rc;
            if (fd < 0)
                return fd;
            if ((rc = keep(k, fd, ret)) < 0)
                return rc;
            if (c->rings[cpu].fd < 0) {
                void *m = mmap(NULL, ring, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED) {
                    snprintf(err, len, "--count: mmap of CPU %d's ring: %s", cpu, strerror(errno));
                    return -errno;
                }
                c->rings[cpu] = (pf_cring){.fd = fd, .base = m, .size = ring};
            } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, c->rings[cpu].fd) < 0) {
                return -errno;
            }
        }
    }
    return 0;
}

int pf_count_open(pf_count *c, pid_t root, char *err, size_t len)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->ncpus = n > 0 ? (int)n : 1;
    c->rings = calloc((size_t)c->ncpus, sizeof(*c->rings));
    if (!c->rings || pf_count_target_add(c, root) < 0)
        return -ENOMEM;
    size_t ring = (size_t)(RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
    for (int cpu = 0; cpu < c->ncpus; cpu++) {
        int rc = open_cpu(c, cpu, ring, err, len);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void pf_count_time(pf_count *c, int on)
{
    c->timed = on;
}

int pf_count_target_add(pf_count *c, pid_t pid)
{
    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i] == pid)
            return 0;
    pid_t *v = realloc(c->targets, (c->ntargets + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    c->targets = v;
    c->targets[c->ntargets++] = pid;
    return 0;
}

static int is_target(const pf_count *c, pid_t pid)
{
    for (size_t i = c->ntargets; i-- > 0;)
        if (c->targets[i] == pid)
            return 1;
    return 0;
}

/* One call of function k on thread tid of process pid (ret: its return),
 * at t ns.  The records of a thread's call and return may be read in
 * either order (two CPUs' rings): the time in calls is the sum of the
 * returns' times less the sum of the calls' (whatever their pairing), kept
 * where every call returned. */
static void count_call(pf_counted *k, pid_t pid, pid_t tid, int ret, uint64_t t)
{
    if (ret) {
        k->returns++;
        k->sum_return_ns += t;
    } else {
        k->calls++;
        k->sum_entry_ns += t;
    }
    pf_cthread *th = NULL;
    for (size_t i = k->nthreads; i-- > 0 && !th;)
        if (k->threads[i].tid == tid)
            th = &k->threads[i];
    if (!th) {
        pf_cthread *v = realloc(k->threads, (k->nthreads + 1) * sizeof(*v));
        if (!v)
            return; /* counted in the total, not by thread */
        k->threads = v;
        th = &k->threads[k->nthreads++];
        *th = (pf_cthread){.pid = pid, .tid = tid};
    }
    if (ret) {
        th->returns++;
        th->sum_return_ns += t;
    } else {
        th->calls++;
        th->sum_entry_ns += t;
    }
}

static pf_counted *by_id(pf_count *c, uint64_t id, int *ret)
{
    for (size_t i = 0; i < c->n; i++)
        for (size_t j = 0; j < c->v[i].nfds; j++)
            if (c->v[i].ids[j] == id) {
                *ret = c->v[i].ret[j];
                return &c->v[i];
            }
    return NULL;
}

/* One record of a ring (copied out of it, header first). */
static void record(pf_count *c, const struct perf_event_header *h, const uint64_t *body)
{
    if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 16) {
        pid_t pid = (pid_t)(uint32_t)body[1], tid = (pid_t)(body[1] >> 32);
        int ret = 0;
        pf_counted *k = is_target(c, pid) ? by_id(c, body[0], &ret) : NULL;
        uint64_t t = c->timed && h->size >= sizeof(*h) + 24 ? body[2] : 0;
        if (k)
            count_call(k, pid, tid, ret, t);
    } else if (h->type == PERF_RECORD_FORK && h->size >= sizeof(*h) + 8) {
        const uint32_t *f = (const uint32_t *)body; /* pid, ppid, tid, ptid */
        if (f[0] != f[1] && is_target(c, (pid_t)f[1]))
            pf_count_target_add(c, (pid_t)f[0]);
    } else if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
        c->lost += body[1];
    }
}

void pf_count_poll(pf_count *c)
{
    for (int cpu = 0; c && cpu < c->ncpus; cpu++) {
        pf_cring *r = &c->rings[cpu];
        if (!r->base)
            continue;
        struct perf_event_mmap_page *mp = r->base;
        const char *data = (const char *)r->base + mp->data_offset;
        uint64_t size = mp->data_size, head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = mp->data_tail;
        while (tail + sizeof(struct perf_event_header) <= head) {
            uint64_t rec[64];
            struct perf_event_header h;
            for (size_t b = 0; b < sizeof(h); b++)
                ((char *)&h)[b] = data[(tail + b) % size];
            if (h.size < sizeof(h) || tail + h.size > head)
                break;
            size_t n = h.size - sizeof(h) < sizeof(rec) ? h.size - sizeof(h) : sizeof(rec);
            for (size_t b = 0; b < n; b++)
                ((char *)rec)[b] = data[(tail + sizeof(h) + b) % size];
            record(c, &h, rec);
            tail += h.size;
        }
        __atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
    }
}

size_t pf_count_n(const pf_count *c)
{
    return c ? c->n : 0;
}

uint64_t pf_count_read(const pf_count *c, size_t i, const char **name, const char **path)
{
    *name = c->v[i].name;
    *path = c->v[i].path;
    return c->v[i].calls;
}

double pf_count_mean_ns(const pf_count *c, size_t i)
{
    const pf_counted *k = &c->v[i];
    if (!c->timed || !k->calls || k->returns != k->calls)
        return -1;
    return (double)(k->sum_return_ns - k->sum_entry_ns) / (double)k->calls;
}

size_t pf_count_threads(const pf_count *c, size_t i, const pf_cthread **out)
{
    *out = c->v[i].threads;
    return c->v[i].nthreads;
}

uint64_t pf_count_lost(const pf_count *c)
{
    return c ? c->lost : 0;
}

void pf_count_free(pf_count *c)
{
    if (!c)
        return;
    for (int cpu = 0; c->rings && cpu < c->ncpus; cpu++)
        if (c->rings[cpu].base)
            munmap(c->rings[cpu].base, c->rings[cpu].size);
    free(c->rings);
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = 0; j < c->v[i].nfds; j++)
            close(c->v[i].fds[j]);
        free(c->v[i].fds);
        free(c->v[i].ids);
        free(c->v[i].ret);
        free(c->v[i].threads);
        free(c->v[i].name);
        free(c->v[i].path);
    }
    free(c->targets);
    free(c);
}
