/*
 * groups.c - `--group-by container|pod|unit|cgroup` and `--containers`
 * (issue 27; DESIGN.md section 14): a report's cgroup records summed into
 * one record per container, pod, systemd unit or cgroup.
 *
 * A cgroup record's energy is cumulative and counts the processes that
 * came and went between windows (the library keeps it per cgroup), so a
 * group's energy is the sum of its cgroups' records; power, CPU time,
 * bytes and counters are summed too (multiplexing: the lowest).  The
 * cgroups that are in no group of the kind are one record, "[not in a
 * container]" and the like, so that the groups and it add up to the
 * cgroups' total.
 */
#include "groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"", "container", "pod", "unit", "cgroup", "vm"};

int rp_group_parse(const char *s, rp_group *out)
{
    for (int k = RP_GROUP_CONTAINER; k <= RP_GROUP_VM; k++)
        if (!strcmp(s, kinds[k])) {
            *out = (rp_group)k;
            return 0;
        }
    return -EINVAL;
}

const char *rp_group_name(rp_group g)
{
    return g > RP_GROUP_NONE && g <= RP_GROUP_VM ? kinds[g] : "";
}

/* The key of cgroup record t for grouping by; "" when t is in no group
 * of that kind.  Written to key (len bytes). */
static void group_key(const pa_target_info *t, rp_group by, char *key, size_t len)
{
    const pa_cgroup_names *n = t->names;
    key[0] = '\0';
    if (by == RP_GROUP_CGROUP)
        snprintf(key, len, "%s", t->cgroup ? t->cgroup : "");
    else if (!n)
        return;
    else if (by == RP_GROUP_CONTAINER)
        snprintf(key, len, "%s", n->container_id[0] ? n->container_id : n->container_name);
    else if (by == RP_GROUP_POD)
        snprintf(key, len, "%s", n->pod_uid);
    else if (by == RP_GROUP_UNIT && !n->container_id[0] && !n->container_name[0])
        snprintf(key, len, "%s", n->unit); /* a container's cgroup is no unit */
}

/* The names a group record keeps of its first member: those of its kind. */
static void group_names(pa_cgroup_names *g, const pa_cgroup_names *n, rp_group by)
{
    memset(g, 0, sizeof(*g));
    if (!n)
        return;
    if (by == RP_GROUP_CONTAINER || by == RP_GROUP_CGROUP) {
        *g = *n;
        return;
    }
    memcpy(g->pod_name, n->pod_name, sizeof(g->pod_name));
    memcpy(g->pod_namespace, n->pod_namespace, sizeof(g->pod_namespace));
    memcpy(g->pod_uid, n->pod_uid, sizeof(g->pod_uid));
    memcpy(g->source, n->source, sizeof(g->source));
    if (by == RP_GROUP_UNIT) {
        memset(g->pod_uid, 0, sizeof(g->pod_uid));
        memcpy(g->unit, n->unit, sizeof(g->unit));
    }
}

static void add_into(pa_target_info *g, const pa_target_info *t, size_t nc, double *ctr)
{
    pa_power *p = &g->power;
    const pa_power *q = &t->power;
    p->cpu_w += q->cpu_w;
    p->nic_w += q->nic_w;
    p->total_w += q->total_w;
    p->cpu_j += q->cpu_j;
    p->nic_j += q->nic_j;
    p->total_j += q->total_j;
    p->cpu_time_s += q->cpu_time_s;
    if (q->interval_s > p->interval_s)
        p->interval_s = q->interval_s;
    if (q->time_ns > p->time_ns)
        p->time_ns = q->time_ns;
    p->flags |= q->flags & PA_POWER_MEASURED;
    g->net_rx_bytes += t->net_rx_bytes;
    g->net_tx_bytes += t->net_tx_bytes;
    g->has_net |= t->has_net;
    if (t->counters && nc) {
        for (size_t e = 0; e < nc; e++)
            ctr[e] += t->counters[e];
        g->counters = ctr;
        if (t->multiplex < g->multiplex)
            g->multiplex = t->multiplex;
    }
}

typedef struct grouped {
    pa_report r;
    pa_target_info *t;
    pa_cgroup_names *names;
    char (*label)[160];
    char (*key)[128];
    double *ctr;
} grouped;

static void grouped_free(grouped *g)
{
    if (!g)
        return;
    free(g->t);
    free(g->names);
    free(g->label);
    free(g->key);
    free(g->ctr);
    free(g);
}

void rp_group_free(pa_report *r)
{
    grouped_free((grouped *)r); /* r is the first member */
}

/* The group of key in g (n so far), made when new. */
static size_t group_of(grouped *g, size_t *n, const char *key, const pa_target_info *t, rp_group by)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(g->key[i], key))
            return i;
    size_t i = (*n)++;
    snprintf(g->key[i], sizeof(g->key[i]), "%s", key);
    memset(&g->t[i], 0, sizeof(g->t[i]));
    g->t[i].type = PA_TARGET_CGROUP;
    g->t[i].multiplex = 1;
    if (*key) {
        group_names(&g->names[i], t->names, by);
        g->t[i].names = &g->names[i];
        g->t[i].cgroup = "";
        rp_out_cgroup_label(&g->t[i], g->label[i], sizeof(g->label[i]));
        if (by == RP_GROUP_CGROUP)
            snprintf(g->label[i], sizeof(g->label[i]), "%s", t->cgroup);
    } else {
        snprintf(g->label[i], sizeof(g->label[i]), "[not in a %s]", rp_group_name(by));
    }
    g->t[i].cgroup = g->label[i];
    return i;
}

int rp_group_report(const pa_report *r, rp_group by, pa_report **out)
{
    size_t m = r->ntargets + 1, nc = r->ncounters, n = 0;
    grouped *g = calloc(1, sizeof(*g));
    if (!g || !(g->t = calloc(m, sizeof(*g->t))) || !(g->names = calloc(m, sizeof(*g->names))) ||
        !(g->label = calloc(m, sizeof(*g->label))) || !(g->key = calloc(m, sizeof(*g->key))) ||
        !(g->ctr = calloc(m * (nc ? nc : 1), sizeof(double)))) {
        grouped_free(g);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->type != PA_TARGET_CGROUP)
            continue;
        char key[128];
        group_key(t, by, key, sizeof(key));
        size_t k = group_of(g, &n, key, t, by);
        add_into(&g->t[k], t, nc, g->ctr + k * nc);
    }
    g->r = *r;
    g->r.targets = g->t;
    g->r.ntargets = n;
    *out = &g->r;
    return 0;
}
