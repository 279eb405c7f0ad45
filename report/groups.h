/*
 * groups.h - a report's cgroup records summed per container, pod, systemd
 * unit or cgroup (`--group-by`, `--containers` of monitor and top;
 * report/groups.c; the names keep their cli_ prefix of cli/).
 */
#ifndef PA_REPORT_GROUPS_H
#define PA_REPORT_GROUPS_H

#include "output.h"
#include "powerapi.h"

typedef enum rp_group {
    RP_GROUP_NONE = 0,
    RP_GROUP_CONTAINER,
    RP_GROUP_POD,
    RP_GROUP_UNIT,
    RP_GROUP_CGROUP,
    RP_GROUP_VM, /* made of process and thread records: vmgroups.h */
} rp_group;

/* "container", "pod", "unit", "cgroup" or "vm".  0 or -EINVAL. */
int rp_group_parse(const char *s, rp_group *out);
/* The name of g ("container"), "" for none. */
const char *rp_group_name(rp_group g);

/* A report of r's system record and one cgroup record per group of kind
 * by (the sum of its cgroup records, named after the group: a container's
 * name or short ID, "pod NS/NAME", a unit, a path), and one record of the
 * cgroups in no such group ("[not in a container]").  r's process and
 * thread records are left out.  *out points into r (its strings): it is
 * valid while r is, and freed with rp_group_free.  0 or -ENOMEM. */
int rp_group_report(const pa_report *r, rp_group by, pa_report **out);
void rp_group_free(pa_report *r);

#endif /* PA_REPORT_GROUPS_H */
