/*
 * vmexport.c - each VM's energy written for its guest (DESIGN.md section
 * 18.1): `powerapi daemon --export-vms DIR`.
 *
 * Per VM, DIR/NAME/ holds:
 *   intel-rapl:0/{name,energy_uj,max_energy_range_uj}   "package-0"
 *   intel-rapl:0:0/{name,energy_uj,max_energy_range_uj} "dram", where the
 *                                                        host measures one
 *   intel-rapl:0:1/{name,energy_uj,max_energy_range_uj} "gpu", where a GPU
 *                                                        formula of the host
 *                                                        gave the VM energy
 *   powerapi-vm   what powercap cannot say, version 1: the host's window
 *                 (seq, time_ns, interval_ns), the counters of that window,
 *                 the host's boot id and host id, measured or modelled and
 *                 by which formula, the VM's share of the host's power.
 * The VM's package counter grows by its record's CPU power times the
 * window (what the host attributed to its processes and threads); its DRAM
 * counter by the host's DRAM power times the VM's part of the host's CPU
 * power; its GPU counter by its record's "gpu" component (its processes'
 * share of the host's GPUs, as the host's gpu formula split them).  All
 * wrap at the range, as the kernel's do.  Every file is
 * written to a temporary name and renamed, the powercap files first and
 * powerapi-vm last, so that a reader of powerapi-vm alone gets one
 * window's consistent snapshot, and a reader of energy_uj can tell its
 * window by finding its value in powerapi-vm.
 */
#include "vmexport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct vm_slot {
    char name[256];
    double pkg_uj, dram_uj, gpu_uj; /* cumulative, unwrapped */
    bool seen;                      /* in this window */
    bool made, dram_made, gpu_made; /* its folders and their fixed files written */
    bool gpu;                       /* its GPU counter is exported (sticky) */
    pid_t pid;                      /* its hypervisor, when its cid was read */
    unsigned cid;                   /* its guest CID (vhost-vsock), 0 none */
    char text[2048];                /* its last powerapi-vm, for rp_vmexport_send */
} vm_slot;

struct rp_vmexport {
    char dir[4096], procfs[4096];
    pthread_mutex_t lock; /* the slots, against rp_vmexport_send */
    char boot_id[48], host_id[80], host[64];
    uint64_t range_uj, seq;
    vm_slot *v;
    size_t n, cap;
};

/* The first word of root/rel into buf ("" when unreadable). */
static void read_word(const char *root, const char *rel, char *buf, size_t len)
{
    char path[4096], tmp[256] = "";
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(tmp, sizeof(tmp), f))
            tmp[0] = 0;
        fclose(f);
    }
    tmp[strcspn(tmp, " \t\r\n")] = 0;
    snprintf(buf, len, "%s", tmp);
}

int rp_vmexport_new(rp_vmexport **out, const char *dir, const char *procfs, const char *rootfs,
                    uint64_t range_uj, char *why, size_t wl)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        int e = errno;
        snprintf(why, wl, "--export-vms %s: %s (give a folder this user may write)", dir,
                 strerror(e));
        return -e;
    }
    rp_vmexport *x = calloc(1, sizeof(*x));
    if (!x)
        return snprintf(why, wl, "out of memory"), -ENOMEM;
    snprintf(x->dir, sizeof(x->dir), "%s", dir);
    snprintf(x->procfs, sizeof(x->procfs), "%s", procfs ? procfs : "/proc");
    pthread_mutex_init(&x->lock, NULL);
    read_word(procfs ? procfs : "/proc", "sys/kernel/random/boot_id", x->boot_id,
              sizeof(x->boot_id));
    read_word(rootfs ? rootfs : "/", "etc/machine-id", x->host_id, sizeof(x->host_id));
    if (gethostname(x->host, sizeof(x->host) - 1) < 0)
        snprintf(x->host, sizeof(x->host), "unknown");
    if (!x->host_id[0])
        snprintf(x->host_id, sizeof(x->host_id), "%s", x->host);
    if (!x->boot_id[0])
        snprintf(x->boot_id, sizeof(x->boot_id), "unknown");
    x->range_uj = range_uj ? range_uj : RP_VMEXPORT_RANGE_UJ;
    *out = x;
    return 0;
}

void rp_vmexport_free(rp_vmexport *x)
{
    if (!x)
        return;
    pthread_mutex_destroy(&x->lock);
    free(x->v);
    free(x);
}

void rp_vmexport_dirname(const pa_vm_info *vm, char *buf, size_t len)
{
    if (vm->name[0])
        snprintf(buf, len, "%s", vm->name);
    else if (vm->uuid[0])
        snprintf(buf, len, "%s", vm->uuid);
    else
        snprintf(buf, len, "pid-%d", (int)vm->pid);
    for (char *p = buf; *p; p++)
        if (*p == '/' || (p == buf && *p == '.'))
            *p = '_';
}

/* Writes text into dir/name through a temporary name: 0 or -errno. */
static int write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[4352], path[4352];
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return -e;
        }
        off += (size_t)w;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return -e;
    }
    return 0;
}

/* One powercap zone: dir/zone/{name,energy_uj,max_energy_range_uj}; the
 * folder and its fixed files only when *made is false (then true). */
static int write_zone(const rp_vmexport *x, const char *vmdir, const char *zone, const char *name,
                      uint64_t uj, bool *made)
{
    char d[4352], buf[64];
    snprintf(d, sizeof(d), "%s/%s", vmdir, zone);
    int rc = 0;
    if (!*made) {
        if (mkdir(d, 0755) < 0 && errno != EEXIST)
            return -errno;
        snprintf(buf, sizeof(buf), "%s\n", name);
        rc = write_atomic(d, "name", buf);
        snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)x->range_uj);
        if (rc == 0)
            rc = write_atomic(d, "max_energy_range_uj", buf);
        *made = rc == 0;
    }
    snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)uj);
    return rc ? rc : write_atomic(d, "energy_uj", buf);
}

/* The slot of the VM named name, added when new; NULL on ENOMEM. */
static vm_slot *slot_of(rp_vmexport *x, const char *name)
{
    for (size_t i = 0; i < x->n; i++)
        if (!strcmp(x->v[i].name, name))
            return &x->v[i];
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        vm_slot *v = realloc(x->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        x->v = v;
        x->cap = cap;
    }
    vm_slot *s = &x->v[x->n++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    return s;
}

/* The powerapi-vm file of one VM in window r (uj: its package, DRAM and
 * GPU counters; the zones it has). */
static void info_text(const rp_vmexport *x, const pa_report *r, const pa_target_info *t,
                      const uint64_t uj[3], bool dram, bool gpu, char *buf, size_t len)
{
    const char *src = r->cpu_source ? r->cpu_source : "model";
    double total = r->system.total_w;
    char dram_line[128] = "";
    if (dram)
        snprintf(dram_line, sizeof(dram_line), "dram_energy_uj %llu\n", (unsigned long long)uj[1]);
    if (gpu) /* a key a reader of version 1 ignores (DESIGN.md 18.1) */
        snprintf(dram_line + strlen(dram_line), sizeof(dram_line) - strlen(dram_line),
                 "gpu_energy_uj %llu\n", (unsigned long long)uj[2]);
    snprintf(buf, len,
             "# powerapi-vm: this VM's energy as its host attributed it (DESIGN.md 18.1)\n"
             "version 1\nseq %llu\nboot_id %s\nhost_id %s\nhost %s\nvm %s\nuuid %s\n"
             "hypervisor %s\nsource %s\nformula %s\ncomponents %s\ntime_ns %llu\n"
             "interval_ns %llu\nshare %.6f\npower_w %.6f\npackage_energy_uj %llu\n"
             "%smax_energy_range_uj %llu\n",
             (unsigned long long)x->seq, x->boot_id, x->host_id, x->host, t->vm->name,
             t->vm->uuid[0] ? t->vm->uuid : "-", t->vm->hypervisor[0] ? t->vm->hypervisor : "-",
             strcmp(src, "model") ? "measured" : "modelled",
             r->formula && *r->formula ? r->formula : "-",
             dram  ? (gpu ? "package,dram,gpu" : "package,dram")
             : gpu ? "package,gpu"
                   : "package",
             (unsigned long long)r->time_ns, (unsigned long long)(r->interval_s * 1e9 + 0.5),
             total > 0 ? t->power.total_w / total : 0, t->power.cpu_w, (unsigned long long)uj[0],
             dram_line, (unsigned long long)x->range_uj);
}

/* A guest CID as written at p (decimal, ended by ',', NUL or end): the
 * CID, or 0 (malformed, or reserved: 0-2 are never a guest's). */
static unsigned cid_at(const char *p)
{
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    return end != p && (*end == ',' || !*end) && v > 2 && v < 0xffffffffu ? (unsigned)v : 0;
}

/* The "cid=" key of a cloud-hypervisor --vsock value ("cid=3,socket=..."
 * or "socket=...,cid=3"), 0 when none. */
static unsigned ch_cid(const char *v)
{
    for (const char *k = v; k && *k; k = strchr(k, ',') ? strchr(k, ',') + 1 : NULL)
        if (!strncmp(k, "cid=", 4))
            return cid_at(k + 4);
    return 0;
}

unsigned rp_vmexport_cid_parse(const char *cmdline, size_t len)
{
    const char *prev = "";
    for (size_t i = 0; i < len;) {
        const char *a = cmdline + i;
        size_t n = strnlen(a, len - i);
        if (n == len - i) /* not NUL-terminated: the buffer's end */
            break;
        const char *c = strstr(a, "guest-cid=");
        unsigned cid = 0;
        if (strncmp(a, "vhost-vsock", 11) == 0 && c) /* QEMU */
            cid = cid_at(c + 10);
        else if (!strcmp(prev, "--vsock")) /* cloud-hypervisor */
            cid = ch_cid(a);
        else if (!strncmp(a, "--vsock=", 8))
            cid = ch_cid(a + 8);
        if (cid)
            return cid;
        prev = a;
        i += n + 1;
    }
    return 0;
}

unsigned rp_vmexport_cid_config(const char *json)
{
    /* the "vsock" object's "guest_cid" (Firecracker's configuration file;
     * a scan, not a JSON parser: the key is Firecracker's own and unique) */
    const char *v = json ? strstr(json, "\"vsock\"") : NULL;
    const char *k = v ? strstr(v, "\"guest_cid\"") : NULL;
    if (!k)
        return 0;
    k += strlen("\"guest_cid\"");
    while (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r')
        k++;
    if (*k++ != ':')
        return 0;
    while (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r')
        k++;
    char *end;
    unsigned long cid = strtoul(k, &end, 10);
    return end != k && strchr(",} \t\r\n", *end) && cid > 2 && cid < 0xffffffffu ? (unsigned)cid
                                                                                 : 0;
}

/* File path's text into buf (NUL-terminated, size bytes at most): its
 * length, or -1. */
static ssize_t read_text(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* Firecracker's guest CID: the file its --config-file PATH names (in
 * cmdline), read through the process's own root or working folder under
 * procfs (the jailer's chroot), 0 when none. */
static unsigned firecracker_cid(const rp_vmexport *x, pid_t pid, const char *cmdline, size_t len)
{
    const char *prev = "", *cfg = NULL;
    for (size_t i = 0; i < len && !cfg;) {
        const char *a = cmdline + i;
        size_t n = strnlen(a, len - i);
        if (n == len - i)
            break;
        if (!strcmp(prev, "--config-file"))
            cfg = a;
        prev = a;
        i += n + 1;
    }
    if (!cfg || !*cfg)
        return 0;
    char path[8400], buf[65536];
    snprintf(path, sizeof(path), "%s/%d/%s/%s", x->procfs, (int)pid, cfg[0] == '/' ? "root" : "cwd",
             cfg);
    return read_text(path, buf, sizeof(buf)) > 0 ? rp_vmexport_cid_config(buf) : 0;
}

/* The guest CID of VM pid (its command line under procfs, or the
 * configuration file it names), 0 none. */
static unsigned read_cid(const rp_vmexport *x, pid_t pid)
{
    char path[4200], buf[16384];
    snprintf(path, sizeof(path), "%s/%d/cmdline", x->procfs, (int)pid);
    ssize_t n = read_text(path, buf, sizeof(buf));
    if (n <= 0)
        return 0;
    unsigned cid = rp_vmexport_cid_parse(buf, (size_t)n);
    return cid ? cid : firecracker_cid(x, pid, buf, (size_t)n);
}

int rp_vmexport_send(rp_vmexport *x, int fd, unsigned cid)
{
    char text[sizeof(((vm_slot *)0)->text)] = "";
    pthread_mutex_lock(&x->lock);
    for (size_t i = 0; cid && i < x->n && !text[0]; i++)
        if (x->v[i].cid == cid)
            snprintf(text, sizeof(text), "%s", x->v[i].text);
    pthread_mutex_unlock(&x->lock);
    if (!text[0])
        return -ENOENT;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0)
            return -errno;
        off += (size_t)w;
    }
    return 0;
}

/* Removes dir's files and folders, one level of zones deep. */
static void remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4352];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) < 0 && errno == EISDIR && depth > 0)
            remove_tree(p, depth - 1);
    }
    closedir(d);
    rmdir(dir);
}

/* The column of component "gpu" in r's target arrays, -1 when no GPU
 * formula ran (or r carries no per-target components). */
static int gpu_column(const pa_report *r)
{
    for (size_t k = 0; r->target_component_w && k < r->ncomponents; k++)
        if (r->component_names[k] && !strcmp(r->component_names[k], "gpu"))
            return (int)k;
    return -1;
}

/* VM record t's GPU counter: its "gpu" watts of window r added; the zone
 * is exported from its first window with GPU energy on, while the host
 * has a GPU formula (gone with it: its folder removed). */
static void count_gpu(vm_slot *s, const pa_report *r, const pa_target_info *t, const char *vmdir)
{
    int k = gpu_column(r);
    if (k < 0) {
        if (s->gpu_made) {
            char d[4400];
            snprintf(d, sizeof(d), "%s/intel-rapl:0:1", vmdir);
            remove_tree(d, 0);
        }
        s->gpu = s->gpu_made = false;
        return;
    }
    double w = r->target_component_w[(size_t)(t - r->targets) * r->ncomponents + (size_t)k];
    if (w > 0)
        s->gpu_uj += w * r->interval_s * 1e6;
    s->gpu |= s->gpu_uj > 0;
}

/* Adds VM record t's window to its counters and writes its folder. */
static int export_vm(rp_vmexport *x, const pa_report *r, const pa_target_info *t, char *why,
                     size_t wl)
{
    char name[256], vmdir[4352], text[2048];
    rp_vmexport_dirname(t->vm, name, sizeof(name));
    vm_slot *s = slot_of(x, name);
    if (!s)
        return snprintf(why, wl, "out of memory"), -ENOMEM;
    s->seen = true;
    bool dram = r->dram_w > 0;
    double cpu = r->system.cpu_w - r->system.idle_w;
    s->pkg_uj += t->power.cpu_w * r->interval_s * 1e6;
    if (dram && cpu > 0)
        s->dram_uj += r->dram_w * (t->power.cpu_w / cpu) * r->interval_s * 1e6;
    snprintf(vmdir, sizeof(vmdir), "%s/%s", x->dir, name);
    count_gpu(s, r, t, vmdir);
    uint64_t uj[3] = {(uint64_t)llround(s->pkg_uj) % x->range_uj,
                      (uint64_t)llround(s->dram_uj) % x->range_uj,
                      (uint64_t)llround(s->gpu_uj) % x->range_uj};
    int rc = !s->made && mkdir(vmdir, 0755) < 0 && errno != EEXIST ? -errno : 0;
    if (rc == 0)
        rc = write_zone(x, vmdir, "intel-rapl:0", "package-0", uj[0], &s->made);
    if (rc == 0 && dram)
        rc = write_zone(x, vmdir, "intel-rapl:0:0", "dram", uj[1], &s->dram_made);
    if (rc == 0 && s->gpu)
        rc = write_zone(x, vmdir, "intel-rapl:0:1", "gpu", uj[2], &s->gpu_made);
    info_text(x, r, t, uj, dram, s->gpu, text, sizeof(text));
    if (rc == 0)
        rc = write_atomic(vmdir, "powerapi-vm", text);
    if (s->pid != t->vm->pid) {
        s->pid = t->vm->pid;
        s->cid = read_cid(x, s->pid);
    }
    snprintf(s->text, sizeof(s->text), "%s", text);
    if (rc < 0) {
        snprintf(why, wl, "--export-vms: %s: %s", vmdir, strerror(-rc));
        s->made = s->dram_made = s->gpu_made = false; /* removed under us: made again */
    }
    return rc;
}

static int export_all(rp_vmexport *x, const pa_report *r, char *why, size_t wl);

int rp_vmexport_window(rp_vmexport *x, const pa_report *r, char *why, size_t wl)
{
    pthread_mutex_lock(&x->lock);
    int rc = export_all(x, r, why, wl);
    pthread_mutex_unlock(&x->lock);
    return rc;
}

/* rp_vmexport_window with the slots locked. */
static int export_all(rp_vmexport *x, const pa_report *r, char *why, size_t wl)
{
    int first = 0;
    x->seq++;
    for (size_t i = 0; i < x->n; i++)
        x->v[i].seen = false;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != PA_TARGET_VM || !t->vm)
            continue;
        int rc = export_vm(x, r, t, why, wl);
        if (rc < 0 && first == 0)
            first = rc;
    }
    for (size_t i = 0; i < x->n;) {
        if (x->v[i].seen) {
            i++;
            continue;
        }
        char vmdir[4352];
        snprintf(vmdir, sizeof(vmdir), "%s/%s", x->dir, x->v[i].name);
        remove_tree(vmdir, 1);
        x->v[i] = x->v[--x->n];
    }
    return first;
}
