/*
 * vms.c - the virtual machines running on this host, named (DESIGN.md
 * section 18): a table kept between scans, the way the container names
 * are kept per cgroup (cgnames.c, section 14).
 *
 * A scan lists procfs and reads each process's comm (proc(5)
 * /proc/PID/comm); a process named like a hypervisor ("qemu-*", "kvm",
 * "firecracker", "cloud-hyperviso", comm being cut at 15 bytes) is named
 * once, when first seen with that comm: its command line (vmparse.c), its
 * cgroup (libvirt's and Proxmox's scopes), Proxmox's VMID.conf and, for
 * KubeVirt, the container runtime's state of its pod (cgnames.c), all
 * under the table's roots.  Its threads are listed at every scan, since
 * vCPUs come and go (hotplug).  The name's source wins in this order:
 * KubeVirt's pod, Proxmox's VMID.conf (the name a rename changes), the
 * command line, libvirt's cgroup (libvirt drops characters from it).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies src into dst (len bytes), cut to fit. */
static void cpy(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}
#define CP(dst, src) cpy((dst), sizeof(dst), (src))

typedef struct vm_entry {
    pid_t pid;
    char comm[16];
    int is_vm; /* 0: a process named like a hypervisor that is none */
    pa_vm_info info;
    int (*thr)[2]; /* the last scan's threads: tid, vCPU index or -1 */
    unsigned nthr;
} vm_entry;

struct pa_vms {
    char *procfs, *rootfs;
    vm_entry *e; /* the candidates of the last scan, by pid */
    size_t n, cap;
    pa_vm_info *vms; /* the VMs of the last scan, by pid */
    size_t nvms;
};

int pa_vms_new(pa_vms **out, const char *procfs, const char *rootfs)
{
    pa_vms *v = calloc(1, sizeof(*v));
    if (!v || !(v->procfs = strdup(procfs ? procfs : "/proc")) ||
        !(v->rootfs = strdup(rootfs ? rootfs : "/"))) {
        pa_vms_free(v);
        return pa__err(-ENOMEM, "pa_vms_new: out of memory");
    }
    *out = v;
    return 0;
}

/* Frees n entries (their thread lists) and the array. */
static void free_entries(vm_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].thr);
    free(e);
}

void pa_vms_free(pa_vms *v)
{
    if (!v)
        return;
    free(v->procfs);
    free(v->rootfs);
    free_entries(v->e, v->n);
    free(v->vms);
    free(v);
}

size_t pa_vms_count(const pa_vms *v)
{
    return v ? v->nvms : 0;
}

const pa_vm_info *pa_vms_get(const pa_vms *v, size_t i)
{
    return v && i < v->nvms ? &v->vms[i] : NULL;
}

/* Whether path is dir or below it. */
static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return n && !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

const pa_vm_info *pa_vms_of_process(const pa_vms *v, pid_t pid, const char *cgroup)
{
    if (!v)
        return NULL;
    size_t lo = 0, hi = v->nvms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v->vms[mid].pid == pid)
            return &v->vms[mid];
        if (v->vms[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = 0; cgroup && *cgroup && i < v->nvms; i++)
        if (under(cgroup, v->vms[i].cgroup))
            return &v->vms[i];
    return NULL;
}

/* Whether comm names a hypervisor's process. */
static int candidate(const char *comm)
{
    return !strncmp(comm, "qemu", 4) || !strcmp(comm, "kvm") || !strcmp(comm, "firecracker") ||
           !strncmp(comm, "cloud-hyperviso", 15);
}

/* Reads <procfs>/<rel> into buf without its trailing newline; its length
 * or -errno. */
static ssize_t read_line(const char *root, const char *rel, char *buf, size_t len)
{
    ssize_t n = pa__read_file(root, rel, buf, len);
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return n;
}

/* Proxmox's etc/pve/qemu-server/VMID.conf under rootfs: "name: NAME" and
 * "smbios1: uuid=UUID,..." of its first section (a "[snapshot]" section
 * keeps the VM's earlier settings). */
static void proxmox_conf(const pa_vms *v, pa_vm_info *vm)
{
    char rel[128], buf[16384];
    snprintf(rel, sizeof(rel), "etc/pve/qemu-server/%s.conf", vm->id);
    if (pa__read_file(v->rootfs, rel, buf, sizeof(buf)) <= 0)
        return;
    for (char *l = buf, *eol; l && *l && *l != '['; l = eol ? eol + 1 : NULL) {
        if ((eol = strchr(l, '\n')))
            *eol = '\0';
        if (!strncmp(l, "name:", 5)) {
            char *s = l + 5;
            while (*s == ' ')
                s++;
            if (*s) {
                CP(vm->name, s);
                CP(vm->source, "proxmox VMID.conf");
            }
        } else if (!strncmp(l, "smbios1:", 8)) {
            char *u = strstr(l, "uuid=");
            if (u && strspn(u + 5, "0123456789abcdefABCDEF-") == 36) {
                memcpy(vm->uuid, u + 5, 36);
                vm->uuid[36] = '\0';
            }
        }
    }
}

/* A KubeVirt VM: the process's cgroup is the "compute" container of a
 * pod named virt-launcher-VMI-XXXXX (KubeVirt's generateName). */
static void kubevirt_pod(const pa_vms *v, const char *cgroup, pa_vm_info *vm)
{
    pa_cgroup_names nm;
    static const char pre[] = "virt-launcher-";
    if (pa_cgroup_names_resolve(v->rootfs, cgroup, &nm) < 0 ||
        strncmp(nm.pod_name, pre, sizeof(pre) - 1) ||
        (nm.container_name[0] && strcmp(nm.container_name, "compute")))
        return;
    char name[128];
    CP(name, nm.pod_name + sizeof(pre) - 1);
    char *dash = strrchr(name, '-');
    if (dash && strlen(dash + 1) == 5)
        *dash = '\0'; /* the pod's random suffix */
    CP(vm->manager, "kubevirt");
    CP(vm->id, nm.pod_uid);
    CP(vm->cgroup, cgroup);
    char full[256];
    if (nm.pod_namespace[0])
        snprintf(full, sizeof(full), "%s/%s", nm.pod_namespace, name);
    else
        CP(full, name);
    CP(vm->name, full);
    CP(vm->source, "kubevirt pod");
}

/* Names the VM of process pid from its command line, cgroup and its
 * manager's files.  0, or -ENOENT when it is no VM or vanished. */
static int name_vm(const pa_vms *v, pid_t pid, pa_vm_info *vm)
{
    char rel[64], buf[65536], cg[4096];
    snprintf(rel, sizeof(rel), "%d/cmdline", (int)pid);
    ssize_t n = pa__read_file(v->procfs, rel, buf, sizeof(buf));
    if (n <= 0 || pa_vm_parse_cmdline(buf, (size_t)n, vm) < 0)
        return -ENOENT;
    vm->pid = pid;
    snprintf(rel, sizeof(rel), "%d/cgroup", (int)pid);
    n = pa__read_file(v->procfs, rel, buf, sizeof(buf));
    if (n <= 0 || pa__cgroup_pick(buf, (size_t)n, cg, sizeof(cg)) < 0)
        return 0;
    pa_vm_info c;
    if (pa_vm_parse_cgroup(cg, &c) == 0) {
        CP(vm->manager, c.manager);
        CP(vm->id, c.id);
        CP(vm->cgroup, c.cgroup);
        if (!vm->name[0] && c.name[0]) {
            CP(vm->name, c.name);
            CP(vm->source, c.source);
        }
        if (!strcmp(c.manager, "proxmox"))
            proxmox_conf(v, vm);
    } else {
        kubevirt_pod(v, cg, vm);
    }
    return 0;
}

static int cmp_vcpu(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The vCPU index of thread tid (its name read once: QEMU, Firecracker
 * and cloud-hypervisor name a thread when they start it), from the last
 * scan's list when it is there. */
static int thread_vcpu(const pa_vms *v, const vm_entry *e, pid_t tid)
{
    for (unsigned i = 0; i < e->nthr; i++)
        if (e->thr[i][0] == tid)
            return e->thr[i][1];
    char rel[64], comm[64];
    snprintf(rel, sizeof(rel), "%d/task/%d/comm", (int)e->pid, (int)tid);
    return read_line(v->procfs, rel, comm, sizeof(comm)) > 0 ? pa_vm_vcpu_index(comm) : -1;
}

/* Lists the threads of e's process: the vCPUs by index, the count. */
static void list_threads(const pa_vms *v, vm_entry *e)
{
    char rel[4200];
    snprintf(rel, sizeof(rel), "%s/%d/task", v->procfs, (int)e->pid);
    DIR *d = opendir(rel);
    int(*thr)[2] = NULL, pairs[PA_VM_MAX_VCPUS][2];
    unsigned nv = 0, nt = 0, cap = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        int k = thread_vcpu(v, e, tid);
        if (nt == cap) {
            cap = cap ? 2 * cap : 16;
            int(*p)[2] = realloc(thr, cap * sizeof(*thr));
            if (!p)
                break; /* listed again at the next scan */
            thr = p;
        }
        thr[nt][0] = tid;
        thr[nt++][1] = k;
        if (k >= 0 && nv < PA_VM_MAX_VCPUS) {
            pairs[nv][0] = k;
            pairs[nv++][1] = tid;
        }
    }
    if (d)
        closedir(d);
    qsort(pairs, nv, sizeof(pairs[0]), cmp_vcpu);
    free(e->thr);
    e->thr = thr;
    e->nthr = nt;
    e->info.nthreads = nt;
    e->info.nvcpus = nv;
    for (unsigned i = 0; i < nv; i++)
        e->info.vcpu_tids[i] = pairs[i][1];
}

/* The entry of pid in the previous scan's table, or NULL. */
static vm_entry *old_entry(vm_entry *e, size_t n, pid_t pid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e[mid].pid == pid)
            return &e[mid];
        if (e[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
    const vm_entry *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Adds the candidate pid (comm) to the new table ne (*nn, *cap). */
static int add_entry(pa_vms *v, vm_entry **ne, size_t *nn, size_t *cap, pid_t pid, const char *comm)
{
    if (*nn == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        vm_entry *p = realloc(*ne, c * sizeof(*p));
        if (!p)
            return -ENOMEM;
        *ne = p;
        *cap = c;
    }
    vm_entry *e = &(*ne)[*nn];
    vm_entry *o = old_entry(v->e, v->n, pid);
    if (o && !strcmp(o->comm, comm)) {
        *e = *o;
        o->thr = NULL; /* moved */
    } else {
        memset(e, 0, sizeof(*e));
        e->pid = pid;
        CP(e->comm, comm);
        e->is_vm = name_vm(v, pid, &e->info) == 0;
    }
    if (e->is_vm)
        list_threads(v, e);
    (*nn)++;
    return 0;
}

/* The VMs of the new table, by pid. */
static int publish(pa_vms *v)
{
    if (v->n)
        qsort(v->e, v->n, sizeof(*v->e), cmp_entry);
    size_t m = 0;
    for (size_t i = 0; i < v->n; i++)
        m += v->e[i].is_vm;
    pa_vm_info *vms = m ? malloc(m * sizeof(*vms)) : NULL;
    if (m && !vms)
        return -ENOMEM;
    for (size_t i = 0, k = 0; i < v->n; i++)
        if (v->e[i].is_vm)
            vms[k++] = v->e[i].info;
    free(v->vms);
    v->vms = vms;
    v->nvms = m;
    return 0;
}

int pa_vms_scan(pa_vms *v)
{
    if (!v)
        return pa__err(-EINVAL, "pa_vms_scan: NULL table");
    DIR *d = opendir(v->procfs);
    if (!d)
        return pa__err(-errno, "vms: cannot list %s (%s); give the procfs root of this host",
                       v->procfs, strerror(errno));
    vm_entry *ne = NULL;
    size_t nn = 0, cap = 0;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char rel[64], comm[64];
        snprintf(rel, sizeof(rel), "%.20s/comm", de->d_name);
        if (read_line(v->procfs, rel, comm, sizeof(comm)) <= 0 || !candidate(comm))
            continue;
        rc = add_entry(v, &ne, &nn, &cap, (pid_t)atoi(de->d_name), comm);
    }
    closedir(d);
    if (rc < 0) {
        free_entries(ne, nn);
        return pa__err(rc, "vms: out of memory");
    }
    free_entries(v->e, v->n);
    v->e = ne;
    v->n = nn;
    if (publish(v) < 0)
        return pa__err(-ENOMEM, "vms: out of memory");
    return 0;
}

int pa_vm_list(const char *procfs, const char *rootfs, pa_vm_info **out, size_t *n)
{
    pa_vms *v = NULL;
    int rc = pa_vms_new(&v, procfs, rootfs);
    if (rc == 0)
        rc = pa_vms_scan(v);
    if (rc == 0) {
        *out = v->vms;
        *n = v->nvms;
        v->vms = NULL;
    }
    pa_vms_free(v);
    return rc;
}
