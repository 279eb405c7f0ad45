/*
 * bench_nic.c - cost of one nic sensor tick with many TCP sockets.
 *
 * Opens N loopback TCP sockets in this process (N/2 connected pairs, each
 * having moved a few bytes), then times:
 *   floor      the bare netlink sock_diag dump of IPv4 TCP sockets with
 *              INET_DIAG_INFO (no parsing beyond counting, no mapping)
 *   first      the sensor's first sample (dump + interfaces + reading the
 *              fd folder of this process: every inode is new)
 *   steady     later samples (dump + socket table + accounting; no fd scan)
 *   new-50     a sample after 50 new connections (100 sockets): one
 *              incremental scan of this process's fd folder
 *   pa_tick    a whole engine tick with procfs-cpu + nic + nic-linear
 *
 * Usage: bench_nic [N] [ticks]   (default 10000 sockets, 50 ticks)
 * Target: steady <= 20 ms per tick at N = 10000.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const pa_module_ops *const bench_keep[] = {&pa__mod_procfs_cpu, &pa__mod_nic, &pa__mod_nic_linear};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    printf("%-10s median %8.3f ms   min %8.3f   max %8.3f   (%d runs)\n", what, v[n / 2], v[0],
           v[n - 1], n);
}

/* The floor: dump IPv4 TCP sockets with tcp_info and count them. */
static int bare_dump(int nl, unsigned char *buf, size_t len, size_t *count)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.req.sdiag_family = AF_INET;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_ext = 1u << (INET_DIAG_INFO - 1);
    msg.req.idiag_states = 0xfff & ~((1u << 3) | (1u << 6) | (1u << 10));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(nl, &msg, sizeof msg, 0, (struct sockaddr *)&sa, sizeof sa) < 0)
        return -errno;
    *count = 0;
    for (;;) {
        ssize_t n = recv(nl, buf, len, 0);
        if (n < 0)
            return -errno;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE)
                return 0;
            if (h->nlmsg_type == NLMSG_ERROR)
                return -EIO;
            (*count)++;
        }
    }
}

static int open_pairs(int lfd, const struct sockaddr_in *sa, int pairs)
{
    static const char hello[100] = "hello";
    char buf[128];
    for (int i = 0; i < pairs; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (const struct sockaddr *)sa, sizeof *sa) < 0)
            return -errno;
        int s = accept(lfd, NULL, NULL);
        if (s < 0)
            return -errno;
        if (write(c, hello, sizeof hello) != sizeof hello || read(s, buf, sizeof buf) <= 0)
            return -EIO;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int nsock = argc > 1 ? atoi(argv[1]) : 10000;
    int ticks = argc > 2 ? atoi(argv[2]) : 50;
    if (nsock < 2 || ticks < 1) {
        fprintf(stderr, "usage: bench_nic [sockets] [ticks]\n");
        return 2;
    }
    struct rlimit rl = {.rlim_cur = (rlim_t)nsock + 4096, .rlim_max = (rlim_t)nsock + 4096};
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < (rlim_t)nsock + 512) {
            fprintf(stderr,
                    "bench_nic: RLIMIT_NOFILE %llu too low for %d "
                    "sockets (run as root or lower N)\n",
                    (unsigned long long)rl.rlim_cur, nsock);
            return 1;
        }
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof sa;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, slen) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &slen) < 0) {
        perror("bench_nic: listen");
        return 1;
    }
    double t0 = now_ms();
    if (open_pairs(lfd, &sa, nsock / 2) < 0) {
        perror("bench_nic: opening sockets");
        return 1;
    }
    printf("bench_nic: %d loopback TCP sockets in pid %d (opened in %.0f ms)\n", nsock / 2 * 2,
           (int)getpid(), now_ms() - t0);

    /* floor */
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    size_t blen = 64 * 1024;
    unsigned char *buf = malloc(blen);
    double *v = malloc(sizeof(double) * (size_t)ticks);
    if (nl < 0 || !buf || !v) {
        perror("bench_nic: netlink");
        return 1;
    }
    size_t count = 0;
    for (int i = 0; i < ticks; i++) {
        double a = now_ms();
        if (bare_dump(nl, buf, blen, &count) < 0) {
            perror("bench_nic: dump");
            return 1;
        }
        v[i] = now_ms() - a;
    }
    printf("floor: bare sock_diag dump returns %zu sockets\n", count);
    report("floor", v, ticks);

    /* the sensor alone, driven like the engine does */
    pa_ctx *ctx;
    if (pa_ctx_new(&ctx, NULL) < 0) {
        fprintf(stderr, "bench_nic: %s\n", pa_last_error());
        return 1;
    }
    pa_options *opts;
    pa_module m = {.ops = &pa__mod_nic, .ctx = ctx};
    if (pa__options_parse("nic", "sockdiag=on", pa__mod_nic.options, &opts) < 0 ||
        pa__mod_nic.start(&m, opts) < 0) {
        fprintf(stderr, "bench_nic: %s\n", pa_last_error());
        return 1;
    }
    pa_sysread sys;
    uint64_t tick = 0;
    double first = 0;
    for (int i = 0; i <= ticks; i++) {
        memset(&sys, 0, sizeof sys);
        pa_frame f = {.ctx = ctx, .tick = ++tick, .sys = &sys};
        pa_task *t = pa__task_seen(&f, PA_TARGET_PROCESS, getpid(), 0, 1);
        if (!t)
            return 1;
        double a = now_ms();
        if (pa__mod_nic.sample(&m, &f) < 0) {
            fprintf(stderr, "bench_nic: %s\n", pa_last_error());
            return 1;
        }
        double dt = now_ms() - a;
        if (i == 0)
            first = dt;
        else
            v[i - 1] = dt;
        if (!(t->cur.have & PA_RD_NET)) {
            fprintf(stderr, "bench_nic: no per-process reading\n");
            return 1;
        }
    }
    printf("first      %8.3f ms   (every inode new: reads %d fds)\n", first, nsock);
    report("steady", v, ticks);
    int nnew = ticks < 10 ? ticks : 10;
    for (int i = 0; i < nnew; i++) {
        if (open_pairs(lfd, &sa, 50) < 0) {
            fprintf(stderr, "bench_nic: out of fds for new sockets\n");
            break;
        }
        memset(&sys, 0, sizeof sys);
        pa_frame f = {.ctx = ctx, .tick = ++tick, .sys = &sys};
        pa__task_seen(&f, PA_TARGET_PROCESS, getpid(), 0, 1);
        double a = now_ms();
        pa__mod_nic.sample(&m, &f);
        v[i] = now_ms() - a;
    }
    report("new-50", v, nnew);
    pa__mod_nic.stop(&m);
    pa__options_free(opts);
    pa_ctx_free(ctx);

    /* a whole tick through the engine */
    if (pa_ctx_new(&ctx, NULL) < 0 ||
        pa_module_disable(ctx, "auto") < 0 || /* no cpu formula from auto */
        pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
        pa_module_enable(ctx, "nic", "sockdiag=on") < 0 ||
        pa_module_enable(ctx, "nic-linear", NULL) < 0 || pa_watch_pid(ctx, getpid(), 0) < 0) {
        fprintf(stderr, "bench_nic: %s\n", pa_last_error());
        return 1;
    }
    pa_tick(ctx);
    for (int i = 0; i < ticks; i++) {
        double a = now_ms();
        if (pa_tick(ctx) < 0) {
            fprintf(stderr, "bench_nic: %s\n", pa_last_error());
            return 1;
        }
        v[i] = now_ms() - a;
    }
    report("pa_tick", v, ticks);
    pa_ctx_free(ctx);
    free(v);
    free(buf);
    close(nl);
    return 0;
}
