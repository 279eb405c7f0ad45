/* fuzz_vms.c - the VMs of a host by name (issue 41; DESIGN.md section 18):
 * a hypervisor's command line (pa_vm_parse_cmdline), a cgroup path
 * (pa_vm_parse_cgroup), a thread's name (pa_vm_vcpu_index), then all of
 * them as files of one process of a procfs tree with a Proxmox VMID.conf,
 * listed by pa_vm_list; the guest CID of the command line
 * (rp_vmexport_cid_parse) and of the 100.conf piece read as a Firecracker
 * configuration (rp_vmexport_cid_config): 0 or a guest's, never a
 * reserved one.  Pieces: the command line (NUL-separated), the
 * cgroup path, the thread's comm, the /proc/PID/cgroup text, the
 * etc/pve/qemu-server/100.conf text. */
#include "fuzz.h"

#include "internal.h"
#include "vmexport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS 7

/* Every string of v NUL-terminated, its counts in bounds. */
static void check(const pa_vm_info *v)
{
    const char *f[FIELDS] = {v->name, v->uuid,   v->hypervisor, v->manager,
                             v->id,   v->source, v->cgroup};
    const size_t sz[FIELDS] = {sizeof(v->name),    sizeof(v->uuid), sizeof(v->hypervisor),
                               sizeof(v->manager), sizeof(v->id),   sizeof(v->source),
                               sizeof(v->cgroup)};
    for (size_t i = 0; i < FIELDS; i++)
        if (!memchr(f[i], '\0', sz[i]))
            fz_fail("vms: field %zu not terminated", i);
    if (v->nvcpus > PA_VM_MAX_VCPUS || v->nvcpus > v->nthreads)
        fz_fail("vms: %u vCPUs of %u threads", v->nvcpus, v->nthreads);
    if (v->uuid[0] && strlen(v->uuid) != 36)
        fz_fail("vms: uuid '%s' is not 36 characters", v->uuid);
}

static void list_tree(const fz_piece *pc, size_t n)
{
    const char *root = fz_root(NULL);
    fz_write(root, "proc/4242/comm", "kvm\n", 4);
    fz_write(root, "proc/4242/cmdline", pc[0].p, pc[0].n);
    fz_write(root, "proc/4242/task/4242/comm", pc[2].p, pc[2].n);
    fz_write(root, "proc/4242/task/4243/comm", "CPU 0/KVM\n", 10);
    fz_write(root, "proc/4242/cgroup", pc[3].p, pc[3].n);
    fz_write(root, "rootfs/etc/pve/qemu-server/100.conf", n > 4 ? pc[4].p : NULL,
             n > 4 ? pc[4].n : 0);
    char proc[4096], rootfs[4096];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", root);
    pa_vm_info *vms = NULL;
    size_t nv = 0;
    int rc = pa_vm_list(proc, rootfs, &vms, &nv);
    if (rc < 0)
        fz_fail("vms: pa_vm_list gave %d (%s)", rc, pa_last_error());
    if (nv > 1 || (nv == 1 && vms[0].pid != 4242))
        fz_fail("vms: %zu VMs from one process", nv);
    for (size_t i = 0; i < nv; i++)
        check(&vms[i]);
    free(vms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[5];
    size_t n = fz_split(data, size, pc, 5);
    unsigned cid = rp_vmexport_cid_parse((const char *)pc[0].p, pc[0].n);
    if (cid && cid < 3)
        fz_fail("vms: the reserved CID %u taken for a guest's", cid);
    if (n > 4) {
        char *json = fz_strdup(&pc[4]);
        cid = rp_vmexport_cid_config(json);
        if (cid && cid < 3)
            fz_fail("vms: the reserved CID %u taken from a configuration", cid);
        free(json);
    }
    pa_vm_info v;
    int rc = pa_vm_parse_cmdline((const char *)pc[0].p, pc[0].n, &v);
    if (rc != 0 && rc != -ENOENT)
        fz_fail("vms: parse_cmdline gave %d", rc);
    check(&v);
    if (n > 1) {
        char *path = fz_strdup(&pc[1]);
        rc = pa_vm_parse_cgroup(path, &v);
        if (rc != 0 && rc != -ENOENT)
            fz_fail("vms: parse_cgroup gave %d", rc);
        check(&v);
        if (rc == 0 && strncmp(path, v.cgroup, strlen(v.cgroup)))
            fz_fail("vms: the VM's cgroup '%s' is not a start of '%s'", v.cgroup, path);
        free(path);
    }
    if (n > 2) {
        char *comm = fz_strdup(&pc[2]);
        int k = pa_vm_vcpu_index(comm);
        if (k < -1 || k > 1000000)
            fz_fail("vms: vCPU index %d", k);
        free(comm);
    }
    if (n > 3)
        list_tree(pc, n);
    return 0;
}
