/*
 * vmexport.h - each VM's energy written for its guest (`powerapi daemon
 * --export-vms DIR`; report/vmexport.c; DESIGN.md section 18.1): per VM a
 * folder DIR/NAME/ with a powercap tree in the kernel's layout and the
 * file powerapi-vm that the guest's host sensor reads.
 */
#ifndef PA_REPORT_VMEXPORT_H
#define PA_REPORT_VMEXPORT_H

#include "powerapi.h"

#include <stdint.h>

typedef struct rp_vmexport rp_vmexport;

/* The wrap point of the exported counters: the kernel's RAPL package
 * zones give 262143328850 on Intel parts; a reader of powercap handles it
 * as it handles theirs. */
#define RP_VMEXPORT_RANGE_UJ 262143328850ull

/* An exporter into dir (made when missing), the host's boot id read under
 * procfs (sys/kernel/random/boot_id) and its id under rootfs
 * (etc/machine-id, else the host name); NULL roots are "/proc" and "/".
 * range_uj is the counters' wrap point (0: RP_VMEXPORT_RANGE_UJ).  0;
 * -errno when dir cannot be made or written, with the message in
 * pa_last_error's words in why. */
int rp_vmexport_new(rp_vmexport **out, const char *dir, const char *procfs, const char *rootfs,
                    uint64_t range_uj, char *why, size_t wl);
void rp_vmexport_free(rp_vmexport *x);

/* One window: r's PA_TARGET_VM records that name a VM (rp_vmgroups_report
 * or _merge) each add power.cpu_w x interval_s to their VM's counters and
 * write its folder (every file to a temporary name, then renamed: a
 * reader never sees a torn file); a VM of an earlier window not in r loses
 * its folder.  0, or the first -errno (the other VMs are still written;
 * why names the file). */
int rp_vmexport_window(rp_vmexport *x, const pa_report *r, char *why, size_t wl);

/* The same data over AF_VSOCK, for guests without a file share (DESIGN.md
 * section 18.1): a guest connects to the host (CID 2) on the daemon's
 * port, the daemon answers with that guest's powerapi-vm text of the last
 * window and closes.  The guest's CID is read from its QEMU command line
 * (-device vhost-vsock-pci,guest-cid=N, or vhost-vsock-device), when its
 * VM is first seen.
 *
 * Writes the last window's powerapi-vm text of the VM whose guest CID is
 * cid into fd (a connected socket).  0; -ENOENT no VM has that CID;
 * -errno from write.  Thread-safe: a server thread calls it while the
 * sampler writes windows. */
int rp_vmexport_send(rp_vmexport *x, int fd, unsigned cid);

/* The guest CID of a hypervisor's command line (NUL-separated arguments,
 * len bytes): QEMU's guest-cid= of a vhost-vsock device, or
 * cloud-hypervisor's cid= of --vsock; 0 when none (CIDs 0-2 are
 * reserved: never a guest's).  Thread-safe (no state). */
unsigned rp_vmexport_cid_parse(const char *cmdline, size_t len);

/* The guest CID of a Firecracker configuration file's text (JSON): its
 * "vsock" object's "guest_cid", 0 when none or reserved.  The daemon reads
 * the file a Firecracker process names with --config-file, through that
 * process's root under procfs (the jailer's chroot).  Thread-safe. */
unsigned rp_vmexport_cid_config(const char *json);

/* A VM's folder name: its name with '/' and a leading '.' made '_' (a
 * KubeVirt "ns/vmi"), else its uuid, else "pid-N". */
void rp_vmexport_dirname(const pa_vm_info *vm, char *buf, size_t len);

#endif /* PA_REPORT_VMEXPORT_H */
