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
#include "powerapi_module.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NL_LOOPBACK_MBPS 1000.0
#define NL_DEFAULT_MBPS 1000.0
#define NL_MAX_IFACES 32 /* the nic sensor's limit */

typedef struct nl_rec {
    char driver[32];
    int found; /* 1 record, 0 none */
    pa_hwdb_nic nic;
} nl_rec;

typedef struct nl_priv {
    bool loopback;
    double power_w;    /* < 0: from the hwdb */
    double speed_mbps; /* 0: not given */
    nl_rec cache[2 * NL_MAX_IFACES];
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
        return pa_error_set(-EINVAL, "nic-linear: loopback=%s: expected on or off", v);
    double w, s;
    int rc = pa_options_get_double(o, "power", -1.0, &w);
    if (rc < 0)
        return rc;
    if (pa_options_get(o, "power") && !(w >= 0 && isfinite(w)))
        return pa_error_set(-EINVAL, "nic-linear: power=%s: expected watts >= 0",
                            pa_options_get(o, "power"));
    rc = pa_options_get_double(o, "speed", 0.0, &s);
    if (rc < 0)
        return rc;
    if (pa_options_get(o, "speed") && !(s > 0 && isfinite(s)))
        return pa_error_set(-EINVAL, "nic-linear: speed=%s: expected Mb/s > 0",
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
    const char *hwdb = pa_env_hwdb(pa_module_env(m));
    if (!drv[0] || !strcmp(drv, "default")) {
        if (!p->looked_default) {
            p->looked_default = true;
            p->have_default = pa_hwdb_nic_find(hwdb, "default", &p->def) == 0;
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
    r->found = pa_hwdb_nic_find(hwdb, drv, &r->nic) == 0;
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
static void price(pa_module *m, nl_priv *p, const pa_nic_window *nic, pa_power_table *t,
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
            pa_table_assume(t, "%s", text);
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
        pa_table_assume(t, "%s", text);
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
        pa_table_assume(t, "%s", text);
    }
}

/* The share of the priced power pw of each class that target i's bytes
 * of that class over the class's bytes denom give it. */
static double task_w(const pa_frame_delta *d, size_t i, const double pw[3], const double denom[3])
{
    uint64_t kind[3], rxtx;
    if (pa_delta_type(d, i) != PA_TARGET_PROCESS || pa_delta_net_bytes(d, i, kind, &rxtx) < 0)
        return 0;
    double b[3], sum = 0;
    for (int k = 0; k < 3; k++) {
        b[k] = (double)kind[k];
        sum += b[k];
    }
    /* a sensor without classes: take its bytes as physical */
    if (sum == 0 && rxtx > 0)
        b[PA_NIC_PHYSICAL] = (double)rxtx;
    double w = 0;
    for (int k = 0; k < 3; k++)
        if (denom[k] > 0)
            w += pw[k] * (b[k] > denom[k] ? denom[k] : b[k]) / denom[k];
    return w;
}

/* Labels what the per-process split could not see. */
static void note_blind(const pa_frame_delta *d, pa_power_table *t, bool sock)
{
    size_t n = pa_delta_count(d);
    uint64_t kind[3], rxtx;
    if (sock) {
        pa_table_assume(t, "nic per process: TCP only (no per-socket UDP counters)");
        /* the sensor gives every process it could read a reading: those
         * without one had an unreadable fd folder */
        size_t blind = 0;
        for (size_t i = 0; i < n; i++)
            blind += pa_delta_type(d, i) == PA_TARGET_PROCESS &&
                     pa_delta_net_bytes(d, i, kind, &rxtx) == -ENOENT;
        if (blind)
            pa_table_assume(t,
                            "nic: %zu processes without per-process bytes (fd "
                            "folder unreadable: run as root)",
                            blind);
    } else {
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = pa_delta_net_bytes(d, i, kind, &rxtx) != -ENOENT;
        if (n && !any)
            pa_table_assume(t, "nic: interface totals only (no sock_diag: no "
                               "per-process bytes)");
    }
}

static int nl_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    nl_priv *p = pa_module_priv(m);
    size_t n = pa_delta_count(d);
    double interval_s = pa_delta_interval_s(d);
    for (size_t i = 0; i < n; i++)
        pa_table_set_target_w(t, i, 0);
    pa_table_set_system_w(t, 0, 0);
    if (!(pa_delta_have(d) & PA_HAVE_NIC) || interval_s <= 0)
        return 0;

    double pw[3] = {0}, ifbytes[3] = {0};
    pa_nic_window nic;
    for (size_t i = 0; pa_delta_nic(d, i, &nic) == 0; i++) {
        unsigned k = nic.kind <= PA_NIC_LOOPBACK ? nic.kind : PA_NIC_VIRTUAL;
        double bytes = (double)nic.rx_bytes + (double)nic.tx_bytes;
        ifbytes[k] += bytes;
        /* unpriced, or idle in the window: nothing to price (and no
         * label: a host with many idle veths keeps a short list) */
        if ((k != PA_NIC_PHYSICAL && !p->loopback) || bytes == 0)
            continue;
        double rate, watts;
        price(m, p, &nic, t, &rate, &watts);
        double busy = bytes * 8.0 / (rate * 1e6);
        if (busy > interval_s)
            busy = interval_s; /* a link cannot be busier than the window */
        pw[k] += busy * watts / interval_s;
    }
    pa_table_set_system_w(t, pw[0] + pw[1] + pw[2], 0);

    double denom[3];
    uint64_t sock_bytes[3] = {0};
    bool sock = pa_delta_sock_bytes(d, sock_bytes) == 0;
    for (int k = 0; k < 3; k++) {
        double sk = (double)sock_bytes[k];
        denom[k] = ifbytes[k] > sk ? ifbytes[k] : sk;
    }
    note_blind(d, t, sock);

    for (size_t i = 0; i < n; i++)
        if (pa_delta_type(d, i) == PA_TARGET_PROCESS)
            pa_table_set_target_w(t, i, task_w(d, i, pw, denom));
    for (size_t i = 0; i < n; i++) {
        if (pa_delta_type(d, i) != PA_TARGET_TREE)
            continue;
        double w = 0;
        for (size_t j = 0; j < n; j++)
            if (pa_delta_in_tree(d, j, pa_delta_pid(d, i)))
                w += task_w(d, j, pw, denom);
        pa_table_set_target_w(t, i, w);
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
