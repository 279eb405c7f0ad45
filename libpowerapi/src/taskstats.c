/*
 * taskstats.c - the kernel's exit accounting over generic netlink
 * (Documentation/accounting/taskstats.rst): a listener registered on every
 * CPU receives, for each task that exits, its pid, thread group, parent,
 * command name and lifetime CPU time.  procfs-cpu drains it after each
 * scan, so a process absent from the scan has its record here
 * (DESIGN.md section 2, "Exits").
 *
 * Registering needs CAP_NET_ADMIN in the initial user and pid namespaces;
 * otherwise the kernel refuses (EPERM, EINVAL) and the context falls back
 * to an estimate.  A listener that does not read in time loses records:
 * the socket then fails with ENOBUFS, which is counted.
 */
#include "taskstats.h"
#include "internal.h"

#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pa__taskstats {
    int fd;
    uint16_t family;
    uint32_t seq;
    uint64_t lost; /* overflows of the socket */
    char cpus[32]; /* the registered cpumask */
    char buf[1 << 16];
};

#define TS_ATTR(nla) ((struct nlattr *)((char *)(nla) + NLA_HDRLEN))
#define TS_NEXT(nla) ((struct nlattr *)((char *)(nla) + NLA_ALIGN((nla)->nla_len)))

/* A generic netlink request with one string attribute. */
static int ts_send(pa__taskstats *t, uint16_t type, uint8_t cmd, uint16_t attr, const char *val)
{
    struct {
        struct nlmsghdr n;
        struct genlmsghdr g;
        char body[64];
    } req;
    size_t vlen = strlen(val) + 1;
    if (vlen > sizeof(req.body) - NLA_HDRLEN)
        return -EINVAL;
    memset(&req, 0, sizeof(req));
    req.n.nlmsg_type = type;
    req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    req.n.nlmsg_seq = ++t->seq;
    req.g.cmd = cmd;
    req.g.version = 1;
    struct nlattr *a = (struct nlattr *)req.body;
    a->nla_type = attr;
    a->nla_len = (uint16_t)(NLA_HDRLEN + vlen);
    memcpy((char *)a + NLA_HDRLEN, val, vlen);
    req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(a->nla_len);
    return send(t->fd, &req, req.n.nlmsg_len, 0) < 0 ? -errno : 0;
}

/* The reply to request seq: its error (0 for an ack), and the family id
 * when it is CTRL_CMD_GETFAMILY's. */
static int ts_reply(pa__taskstats *t, uint32_t seq, uint16_t *family)
{
    for (int tries = 0; tries < 64; tries++) {
        ssize_t n = recv(t->fd, t->buf, sizeof(t->buf), 0);
        if (n < 0)
            return errno == EINTR ? 0 : -errno;
        for (struct nlmsghdr *h = (struct nlmsghdr *)t->buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != seq)
                continue; /* an exit record: the drain reads them */
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                if (e->error || !family)
                    return e->error;
                continue;
            }
            int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(GENL_HDRLEN);
            struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
            for (; left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left;
                 left -= NLA_ALIGN(a->nla_len), a = TS_NEXT(a))
                if (a->nla_type == CTRL_ATTR_FAMILY_ID && family) {
                    memcpy(family, TS_ATTR(a), sizeof(*family));
                    return 0;
                }
        }
    }
    return -EPROTO;
}

int pa__taskstats_open(pa__taskstats **out, char *why, size_t len)
{
    pa__taskstats *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(why, len, "out of memory");
        return -ENOMEM;
    }
    int rc;
    t->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (t->fd < 0) {
        rc = -errno;
        snprintf(why, len, "no generic netlink socket (%s)", strerror(-rc));
        goto fail;
    }
    /* room for a burst of exits between two ticks (about 400 bytes
     * each); SO_RCVBUFFORCE passes the system's limit with CAP_NET_ADMIN */
    int sz = 8 << 20;
    if (setsockopt(t->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
        (void)setsockopt(t->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (bind(t->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        rc = -errno;
        snprintf(why, len, "cannot bind a netlink socket (%s)", strerror(-rc));
        goto fail;
    }
    rc = ts_send(t, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME);
    if (rc == 0)
        rc = ts_reply(t, t->seq, &t->family);
    if (rc < 0) {
        snprintf(why, len, "the kernel has no taskstats (%s; CONFIG_TASKSTATS)", strerror(-rc));
        goto fail;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    snprintf(t->cpus, sizeof(t->cpus), "0-%ld", ncpu > 1 ? ncpu - 1 : 0);
    rc = ts_send(t, t->family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, t->cpus);
    if (rc == 0)
        rc = ts_reply(t, t->seq, NULL);
    if (rc < 0) {
        snprintf(why, len,
                 "taskstats refused the exit listener (%s: it needs CAP_NET_ADMIN, in the "
                 "host's user and pid namespaces)",
                 strerror(-rc));
        goto fail;
    }
    *out = t;
    return 0;
fail:
    pa__taskstats_close(t);
    return rc;
}

/* One TASKSTATS_TYPE_AGGR_PID message's record, or 0 when it is another. */
static int ts_parse(const struct nlmsghdr *h, pa_task_exit *e)
{
    int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(GENL_HDRLEN);
    const struct nlattr *a = (const struct nlattr *)((const char *)NLMSG_DATA(h) + GENL_HDRLEN);
    for (; left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left;
         left -= NLA_ALIGN(a->nla_len), a = TS_NEXT(a)) {
        if (a->nla_type != TASKSTATS_TYPE_AGGR_PID)
            continue; /* a thread group's aggregate holds no CPU times */
        int l2 = a->nla_len - NLA_HDRLEN;
        const struct nlattr *b = TS_ATTR(a);
        for (; l2 >= NLA_HDRLEN && b->nla_len >= NLA_HDRLEN && b->nla_len <= l2;
             l2 -= NLA_ALIGN(b->nla_len), b = TS_NEXT(b)) {
            /* the structure only grows at its end: older kernels send
             * less, and ac_tgid is there since version 8 */
            if (b->nla_type != TASKSTATS_TYPE_STATS ||
                b->nla_len < NLA_HDRLEN + offsetof(struct taskstats, ac_tgid) + sizeof(__u32))
                continue;
            struct taskstats st;
            size_t n = b->nla_len - NLA_HDRLEN;
            memset(&st, 0, sizeof(st));
            memcpy(&st, TS_ATTR(b), n < sizeof(st) ? n : sizeof(st));
            memset(e, 0, sizeof(*e));
            e->tid = (pid_t)st.ac_pid;
            e->pid = st.ac_tgid ? (pid_t)st.ac_tgid : (pid_t)st.ac_pid;
            e->ppid = (pid_t)st.ac_ppid;
            memcpy(e->comm, st.ac_comm, sizeof(e->comm) - 1);
            /* the scheduler's own ns where delay accounting fills them
             * (kernel.task_delayacct=1), else the tick-sampled times */
            e->cpu_ns = st.cpu_run_virtual_total ? st.cpu_run_virtual_total
                                                 : ((uint64_t)st.ac_utime + st.ac_stime) * 1000;
            return e->tid > 0 && e->pid > 0;
        }
    }
    return 0;
}

int pa__taskstats_drain(pa__taskstats *t, pa_frame *f)
{
    int count = 0;
    for (;;) {
        ssize_t n = recv(t->fd, t->buf, sizeof(t->buf), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS) { /* the kernel dropped records */
                t->lost++;
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return -errno;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)t->buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            pa_task_exit e;
            if (h->nlmsg_type != t->family || !ts_parse(h, &e))
                continue;
            int rc = pa_frame_task_exit(f, &e);
            if (rc < 0)
                return rc;
            count++;
        }
    }
    int rc = pa_frame_exits_source(f, "taskstats", t->lost);
    return rc < 0 ? rc : count;
}

void pa__taskstats_close(pa__taskstats *t)
{
    if (!t)
        return;
    if (t->fd >= 0) {
        if (t->family)
            (void)ts_send(t, t->family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK,
                          t->cpus);
        close(t->fd);
    }
    free(t);
}
