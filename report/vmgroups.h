/*
 * vmgroups.h - a report's records summed per virtual machine (`monitor
 * --vms`, `--group-by vm`, top's VM view; report/vmgroups.c; DESIGN.md
 * section 18).
 */
#ifndef PA_REPORT_VMGROUPS_H
#define PA_REPORT_VMGROUPS_H

#include "powerapi.h"

typedef struct rp_vmgroups rp_vmgroups;

/* A grouping over the VMs of procfs and rootfs (pa_vms_new's roots; NULL
 * for "/proc" and "/").  0, -ENOMEM. */
int rp_vmgroups_new(rp_vmgroups **out, const char *procfs, const char *rootfs);
void rp_vmgroups_free(rp_vmgroups *g);

/* Lists the VMs again (pa_vms_scan; the table stays the last one on
 * failure) and, when ctx is not NULL, watches each VM's hypervisor with
 * its threads (PA_WATCH_THREADS: its vCPUs apart from the next window on;
 * a VM gone in between is no error).  Call it before the first tick and
 * before each report.  0 or pa_vms_scan's error. */
int rp_vmgroups_scan(rp_vmgroups *g, pa_ctx *ctx);
/* The VMs of the last scan (to watch their threads). */
const pa_vms *rp_vmgroups_vms(const rp_vmgroups *g);

/* The report of r grouped by VM: r's system record, one PA_TARGET_VM
 * record per VM of the last scan (its hypervisor's process and the
 * processes of its own cgroup summed, its vCPU threads' part in
 * vcpu_w/vcpu_j), then one record "[not in a VM]" (vm NULL: the other
 * processes, the exited and the unaccounted records), so that the records
 * add up to the system's power less its idle part.  Energies are summed
 * over the windows each VM was seen in.  Every component of r (its
 * target_component_w/_j: "gpu" ...) is summed the same way into the
 * grouping's arrays (NULL when r has none).  r's process records must carry
 * their cgroup (pa_report_cgroups on).  *out is the grouping's, valid
 * until its next call or its free.  0, -ENOMEM. */
int rp_vmgroups_report(rp_vmgroups *g, const pa_report *r, const pa_report **out);

/* r with the VM records of rp_vmgroups_report appended to its targets
 * (their components their processes' sums, as rp_vmgroups_report's), for
 * a daemon to publish both into its ring
 * (version 5 carries VM records).  *out is the grouping's, valid until
 * its next call or its free.  0, -ENOMEM. */
int rp_vmgroups_merge(rp_vmgroups *g, const pa_report *r, const pa_report **out);

#endif /* PA_REPORT_VMGROUPS_H */
