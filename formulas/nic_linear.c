/*
 * nic_linear.c - the "nic-linear" formula (E-Surgeon's network model;
 * DESIGN.md section 6.3).
 *
 * A NIC transmitting in state i (its link speed) draws P_i watts, from its
 * data sheet (hwdb record of the driver) or the options.  Over a window of
 * d seconds an interface that moved B bytes (rx + tx) was busy
 *
 *     t_i = 8 B / rate_i          (capped at d)
 *
 * and the network power is P_net = sum_i t_i P_i / d.
 *
 * Per process, the power of each class of interface (physical, virtual,
 * loopback) is split by the process's share of that class's bytes: the
 * nic sensor classes every TCP socket by the route of its peer, so bytes a
 * process moves over loopback are never charged to the Ethernet card.  The
 * share's denominator is the larger of the interfaces' bytes and all the
 * sockets' bytes of that class, so header bytes, UDP and traffic of other
 * network namespaces stay unattributed (in the system figure only) rather
 * than being pinned on the TCP users.
 *
 * Within a class the interfaces are pooled: a process's physical bytes are
 * priced at the average cost per byte of all physical NICs in the window
 * (the socket's class comes from its route, but its bytes are not split
 * per interface).
 *
 * Loopback and virtual interfaces (veth, bridges, tunnels) move no bits
 * over a wire: they cost nothing by default.  loopback=on prices them as a
 * physical 1 Gb/s NIC, to test and demonstrate on machines without one.
 *
 * Threads keep nic 0: sockets belong to processes, and the kernel does not
 * say which thread moved the bytes (the jalen agent splits a process's
 * network energy per method from its own byte counts).  A tree
 * (PA_WATCH_CHILDREN) gets the sum of its member processes.
 *
 * Options:
 *   loopback=on|off  price loopback and virtual interfaces (default off)
 *   power=W          transmit power of every priced interface, overriding
 *                    the hwdb
 *   speed=MBPS       link speed of physical interfaces whose speed is
 *                    unknown (default 1000, labelled assumed)
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NL_LOOPBACK_MBPS 1000.0
#define NL_DEFAULT_MBPS 1000.0

typedef struct nl_rec {
    char driver[32];
    int found; /* 1 record, 0 none */
    pa_hwdb_nic nic;
} nl_rec;

typedef struct nl_priv {
    bool loopback;
    double power_w;    /* < 0: from the hwdb */
    double speed_mbps; /* 0: not given */
    nl_rec cache[2 * PA_MAX_IFACES];
    size_t ncache;
    bool looked_default;
    int have_default;
    pa_hwdb_nic def;
} nl_priv;

static const char *const nl_options[] = {"loopback", "power", "speed", NULL};

static int nl_apply(nl_priv *p, const pa_options *o)
{
    const char *v = pa_options_get(o, "loopback");
    bool lb = false;
    if (v && (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes")))
        lb = true;
    else if (v && strcmp(v, "off") && strcmp(v, "0") && strcmp(v, "no"))
        return pa__err(-EINVAL, "nic-linear: loopback=%s: expected on or off", v);
    double w, s;
    int rc = pa_options_get_double(o, "power", -1.0, &w);
    if (rc < 0)
        return rc;
    if (pa_options_get(o, "power") && !(w >= 0 && isfinite(w)))
        return pa__err(-EINVAL, "nic-linear: power=%s: expected watts >= 0",
                       pa_options_get(o, "power"));
    rc = pa_options_get_double(o, "speed", 0.0, &s);
    if (rc < 0)
        return rc;
    if (pa_options_get(o, "speed") && !(s > 0 && isfinite(s)))
        return pa__err(-EINVAL, "nic-linear: speed=%s: expected Mb/s > 0",
                       pa_options_get(o, "speed"));
    p->loopback = lb;
    p->power_w = w;
    p->speed_mbps = s;
    return 0;
}

static int nl_start(pa_module *m, const pa_options *o)
{
    nl_priv *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    int rc = nl_apply(p, o);
    if (rc < 0) {
        free(p);
        return rc;
    }
    pa_module_set_priv(m, p);
    return 0;
}

static int nl_configure(pa_module *m, const pa_options *o)
{
    return nl_apply(pa_module_priv(m), o);
}

static void nl_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

/* hwdb records are read once per driver (the file is parsed whole at each
 * lookup), never per tick. */
static const pa_hwdb_nic *lookup(pa_module *m, nl_priv *p, const char *drv)
{
    const char *hwdb = m->ctx->env.hwdb;
    if (!drv[0] || !strcmp(drv, "default")) {
        if (!p->looked_default) {
            p->looked_default = true;
            p->have_default = pa__hwdb_nic(hwdb, "default", &p->def) == 0;
        }
        return p->have_default ? &p->def : NULL;
    }
    for (size_t i = 0; i < p->ncache; i++)
        if (!strcmp(p->cache[i].driver, drv))
            return p->cache[i].found ? &p->cache[i].nic : NULL;
    if (p->ncache == sizeof p->cache / sizeof p->cache[0])
        return NULL;
    nl_rec *r = &p->cache[p->ncache++];
    snprintf(r->driver, sizeof r->driver, "%s", drv);
    r->found = pa__hwdb_nic(hwdb, drv, &r->nic) == 0;
    return r->found ? &r->nic : NULL;
}

/* The state for a link speed: exact, else the slowest state at least as
 * fast, else the fastest; *state_mbps tells which. */
static double state_w(const pa_hwdb_nic *n, double mbps, double *state_mbps)
{
    size_t best = n->nstates;
    for (size_t i = 0; i < n->nstates; i++)
        if (n->state[i].mbps >= mbps &&
            (best == n->nstates || n->state[i].mbps < n->state[best].mbps))
            best = i;
    if (best == n->nstates)
        for (size_t i = 0; i < n->nstates; i++)
            if (best == n->nstates || n->state[i].mbps > n->state[best].mbps)
                best = i;
    if (best == n->nstates) {
        *state_mbps = 0;
        return 0;
    }
    *state_mbps = n->state[best].mbps;
    return n->state[best].watts;
}

/* Rate (Mb/s) and transmit power (W) of one priced interface; labels what
 * was not read from the machine. */
static void price(pa_module *m, nl_priv *p, const pa_nic_reading *nic, pa_power_table *t,
                  double *rate, double *watts)
{
    char text[160];
    bool phys = nic->kind == PA_NIC_PHYSICAL;
    if (!phys) {
        *rate = NL_LOOPBACK_MBPS;
    } else if (nic->speed_mbps) {
        *rate = nic->speed_mbps;
    } else {
        *rate = p->speed_mbps > 0 ? p->speed_mbps : NL_DEFAULT_MBPS;
        if (p->speed_mbps <= 0) {
            snprintf(text, sizeof text, "nic %s speed=%gMb/s (unknown)", nic->name, *rate);
            pa__assume(t->assumed, sizeof t->assumed, text);
        }
    }
    if (p->power_w >= 0) {
        *watts = p->power_w;
        return;
    }
    const pa_hwdb_nic *rec = phys ? lookup(m, p, nic->driver) : NULL;
    char why[64] = "";
    if (!rec) {
        rec = lookup(m, p, "default");
        if (phys)
            snprintf(why, sizeof why, "no record for driver '%s'",
                     nic->driver[0] ? nic->driver : "?");
        else
            snprintf(why, sizeof why, "loopback=on");
    }
    if (!rec) {
        *watts = 0;
        snprintf(text, sizeof text, "nic %s=0W (no hwdb record nor default; set power=)",
                 nic->name);
        pa__assume(t->assumed, sizeof t->assumed, text);
        return;
    }
    double smbps;
    *watts = state_w(rec, *rate, &smbps);
    if (why[0] || smbps != *rate) {
        /* names are bounded (16 + 64 + 32 bytes): truncation is harmless */
        int n = snprintf(text, sizeof text, "nic %s=%gW@%gMb/s (%s%shwdb ", nic->name, *watts,
                         *rate, why, why[0] ? ": " : "");
        if (n > 0 && (size_t)n < sizeof text)
            snprintf(text + n, sizeof text - (size_t)n, "%.32s@%gMb/s)", rec->match, smbps);
        pa__assume(t->assumed, sizeof t->assumed, text);
    }
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static bool in_tree(const pa_ctx *ctx, const pa_task *t, pid_t root)
{
    for (int depth = 0; t && depth < 4096; depth++) {
        if (t->pid == root)
            return true;
        if (t->ppid <= 0 || t->ppid == t->pid)
            return false;
        t = pa__tasktab_get(&ctx->procs, t->ppid);
    }
    return false;
}

static int nl_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    nl_priv *p = pa_module_priv(m);
    for (size_t i = 0; i < d->ntasks; i++)
        d->tasks[i]->nic_w = 0;
    t->nic_w = 0;
    if (!(d->have & PA_HAVE_NIC) || d->interval_s <= 0)
        return 0;

    double pw[3] = {0}, ifbytes[3] = {0};
    for (unsigned i = 0; i < d->nnic; i++) {
        const pa_nic_reading *nic = d->nic[i].nic;
        unsigned k = nic->kind <= PA_NIC_LOOPBACK ? nic->kind : PA_NIC_VIRTUAL;
        double bytes = (double)d->nic[i].rx_bytes + (double)d->nic[i].tx_bytes;
        ifbytes[k] += bytes;
        /* unpriced, or idle in the window: nothing to price (and no
         * label: a host with many idle veths keeps a short list) */
        if ((k != PA_NIC_PHYSICAL && !p->loopback) || bytes == 0)
            continue;
        double rate, watts;
        price(m, p, nic, t, &rate, &watts);
        double busy = bytes * 8.0 / (rate * 1e6);
        if (busy > d->interval_s)
            busy = d->interval_s; /* a link cannot be busier than the window */
        pw[k] += busy * watts / d->interval_s;
    }
    t->nic_w = pw[0] + pw[1] + pw[2];

    double denom[3];
    for (int k = 0; k < 3; k++) {
        double sock = 0;
        if (d->have & PA_HAVE_SOCK)
            sock = (double)sub0(d->cur->sock_bytes[k], d->prev->sock_bytes[k]);
        denom[k] = ifbytes[k] > sock ? ifbytes[k] : sock;
    }
    if (d->have & PA_HAVE_SOCK) {
        pa__assume(t->assumed, sizeof t->assumed,
                   "nic per process: TCP only (no per-socket UDP counters)");
        /* the sensor gives every process it could read a reading: those
         * without one had an unreadable fd folder */
        size_t blind = 0;
        for (size_t i = 0; i < d->ntasks; i++)
            blind += d->tasks[i]->type == PA_TARGET_PROCESS && !(d->tasks[i]->cur.have & PA_RD_NET);
        if (blind) {
            char text[160];
            snprintf(text, sizeof text,
                     "nic: %zu processes without per-process bytes (fd "
                     "folder unreadable: run as root)",
                     blind);
            pa__assume(t->assumed, sizeof t->assumed, text);
        }
    } else {
        bool any = false;
        for (size_t i = 0; i < d->ntasks && !any; i++)
            any = (d->tasks[i]->cur.have & PA_RD_NET) != 0;
        if (d->ntasks && !any)
            pa__assume(t->assumed, sizeof t->assumed,
                       "nic: interface totals only (no sock_diag: no "
                       "per-process bytes)");
    }

    for (size_t i = 0; i < d->ntasks; i++) {
        pa_task *task = d->tasks[i];
        if (task->type != PA_TARGET_PROCESS || !(task->cur.have & PA_RD_NET) ||
            !(task->prev.have & PA_RD_NET))
            continue;
        double b[3], sum = 0;
        for (int k = 0; k < 3; k++) {
            b[k] = (double)sub0(task->cur.net_kind[k], task->prev.net_kind[k]);
            sum += b[k];
        }
        /* a sensor without classes: take its bytes as physical */
        if (sum == 0 && task->d_rx + task->d_tx > 0)
            b[PA_NIC_PHYSICAL] = (double)(task->d_rx + task->d_tx);
        double w = 0;
        for (int k = 0; k < 3; k++)
            if (denom[k] > 0)
                w += pw[k] * (b[k] > denom[k] ? denom[k] : b[k]) / denom[k];
        task->nic_w = w;
    }
    for (size_t i = 0; i < d->ntasks; i++) {
        pa_task *tree = d->tasks[i];
        if (tree->type != PA_TARGET_TREE)
            continue;
        double w = 0;
        for (size_t j = 0; j < d->ntasks; j++)
            if (d->tasks[j]->type == PA_TARGET_PROCESS && in_tree(d->ctx, d->tasks[j], tree->pid))
                w += d->tasks[j]->nic_w;
        tree->nic_w = w;
    }
    return 0;
}

/* interface and per-socket bytes from nic; the per-process split needs
 * the processes procfs-cpu discovers (any task-discovering sensor will
 * do, so it is used, not required: the system figure stands alone) */
static const char *const nl_requires[] = {"nic", NULL};
static const char *const nl_uses[] = {"procfs-cpu", NULL};

const pa_module_ops pa__mod_nic_linear = {
    .abi = PA_MODULE_ABI,
    .name = "nic-linear",
    .kind = PA_FORMULA,
    .component = PA_COMP_NIC,
    .description = "NIC power from data-sheet state powers: sum of "
                   "busy time x state power, split by byte share",
    .options = nl_options,
    .start = nl_start,
    .compute = nl_compute,
    .configure = nl_configure,
    .stop = nl_stop,
    .requires = nl_requires,
    .uses = nl_uses,
    .component_name = "nic",
    .auto_rank = 100,
};
