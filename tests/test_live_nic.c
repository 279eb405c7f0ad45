/*
 * test_live_nic.c - the nic sensor on the running kernel (netlink
 * sock_diag, /proc/<pid>/fd, /sys/class/net).
 *
 *  - Two processes send at paced rates over loopback TCP (8 MB/s and
 *    2 MB/s) to a sink process: their tx bytes per second must be within 5%
 *    of the pace; with loopback=on their NIC watts must be in ratio 4
 *    within 10%, and by default 0.
 *  - Across two network namespaces joined by a veth pair (ip netns): a
 *    sender in this namespace, a sink in the other.  Its socket is classed
 *    virtual: bytes counted, 0 W by default.  Skipped, with the reason, when
 *    the machine does not allow namespaces or has no iproute2.
 */
#include "internal.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_S 3.0

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Child: accepts connections on fd and discards what arrives, one child
 * per connection, all in the sink's process group. */
static void sink_loop(int lfd)
{
    setpgid(0, 0);
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            _exit(1);
        if (fork() == 0) {
            char buf[65536];
            while (read(c, buf, sizeof buf) > 0)
                ;
            _exit(0);
        }
        close(c);
    }
}

/* Child: connects to addr and sends rate bytes/s in 16 KiB chunks, paced
 * against an absolute clock so that the average rate is exact. */
/* Connects, says so on ready (0, or the errno of the failure), then sends
 * at rate bytes a second. */
static void sender_loop(const struct sockaddr *sa, socklen_t len, double rate, int ready)
{
    int fd = socket(sa->sa_family, SOCK_STREAM, 0);
    int err = fd < 0 || connect(fd, sa, len) < 0 ? errno : 0;
    if (write(ready, &err, sizeof err) != sizeof err || err)
        _exit(2);
    close(ready);
    static char chunk[16384];
    memset(chunk, 'x', sizeof chunk);
    uint64_t t0 = now_ns();
    uint64_t sent = 0;
    for (;;) {
        ssize_t n = write(fd, chunk, sizeof chunk);
        if (n <= 0)
            _exit(3);
        sent += (uint64_t)n;
        uint64_t due = t0 + (uint64_t)((double)sent / rate * 1e9);
        struct timespec ts = {.tv_sec = (time_t)(due / NS_PER_S),
                              .tv_nsec = (long)(due % NS_PER_S)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

/* Children to kill if an assertion ends the test early (their groups:
 * sinks lead one). */
static pid_t children[8];
static size_t nchildren;

static void kill_children(void)
{
    for (size_t i = 0; i < nchildren; i++)
        if (children[i] > 0) {
            kill(-children[i], SIGKILL);
            kill(children[i], SIGKILL);
        }
    nchildren = 0;
}

static void track(pid_t p)
{
    if (!nchildren)
        atexit(kill_children);
    if (nchildren < sizeof children / sizeof children[0])
        children[nchildren++] = p;
}

static int listen_any(struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    socklen_t len = sizeof *sa;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, len), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sa, &len), 0);
    return fd;
}

/* Returns once the sender has connected: its first window has bytes even
 * when the connection takes a SYN retransmission (a veth just set up, a
 * slow sanitizer build). */
static pid_t spawn_sender(const void *sa, socklen_t len, double rate)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        close(pfd[0]);
        sender_loop(sa, len, rate, pfd[1]);
    }
    track(p);
    close(pfd[1]);
    struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
    int err = -1;
    ck_assert_msg(poll(&pf, 1, 20000) == 1, "the sender did not connect in "
                                            "20 s");
    ck_assert_int_eq(read(pfd[0], &err, sizeof err), (ssize_t)sizeof err);
    close(pfd[0]);
    ck_assert_msg(err == 0, "the sender could not connect: %s", strerror(err));
    return p;
}

static void untrack(pid_t p)
{
    for (size_t i = 0; i < nchildren; i++)
        if (children[i] == p)
            children[i] = 0; /* reaped: its pid may be reused */
}

static void kill_wait(pid_t p)
{
    if (p > 0) {
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        untrack(p);
    }
}

/* The sink and its per-connection children. */
static void kill_sink(pid_t p)
{
    kill(-p, SIGKILL);
    kill_wait(p);
}

static pa_ctx *live_ctx(const char *nic_linear_opts)
{
    pa_ctx *ctx;
    pa_ctx_opts o = {.hwdb = PA_TEST_HWDB};
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    ck_assert_msg(pa_module_enable(ctx, "procfs-cpu", NULL) == 0, "%s", pa_last_error());
    ck_assert_msg(pa_module_enable(ctx, "nic", "sockdiag=on") == 0, "%s", pa_last_error());
    ck_assert_msg(pa_module_enable(ctx, "nic-linear", nic_linear_opts) == 0, "%s", pa_last_error());
    return ctx;
}

/* Ticks at the start and after WINDOW_S; returns the report. */
static pa_report *one_window(pa_ctx *ctx)
{
    ck_assert_msg(pa_tick(ctx) == 0, "%s", pa_last_error());
    struct timespec ts = {.tv_sec = (time_t)WINDOW_S,
                          .tv_nsec = (long)((WINDOW_S - (int)WINDOW_S) * 1e9)};
    nanosleep(&ts, NULL);
    ck_assert_msg(pa_tick(ctx) == 0, "%s", pa_last_error());
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    return r;
}

START_TEST(loopback_rates_and_watts)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int lfd = listen_any(&sa);
    pid_t sink = fork();
    ck_assert_int_ge(sink, 0);
    if (sink == 0)
        sink_loop(lfd);
    setpgid(sink, sink);
    track(sink);
    close(lfd);
    pid_t fast = spawn_sender(&sa, sizeof sa, 8e6), slow = spawn_sender(&sa, sizeof sa, 2e6);

    for (int pass = 0; pass < 2; pass++) {
        pa_ctx *ctx = live_ctx(pass ? "loopback=on" : NULL);
        ck_assert_int_eq(pa_watch_pid(ctx, fast, 0), 0);
        ck_assert_int_eq(pa_watch_pid(ctx, slow, 0), 0);
        /* let the connections settle and the sensor learn the sockets */
        ck_assert_int_eq(pa_tick(ctx), 0);
        usleep(200000);
        pa_report *r = one_window(ctx);
        const pa_target_info *f = pa_test_target(r, PA_TARGET_PROCESS, fast);
        const pa_target_info *s = pa_test_target(r, PA_TARGET_PROCESS, slow);
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(f->has_net, 1);
        double d = r->interval_s;
        double frate = (double)f->net_tx_bytes / d;
        double srate = (double)s->net_tx_bytes / d;
        fprintf(stderr,
                "loopback pass %d: window %.3f s, fast %.0f B/s, slow %.0f "
                "B/s, nic_w %.6g / %.6g (system %.6g)\n",
                pass, d, frate, srate, f->power.nic_w, s->power.nic_w, r->system.nic_w);
        ck_assert_msg(frate > 8e6 * 0.95 && frate < 8e6 * 1.05, "fast sender: %.0f B/s", frate);
        ck_assert_msg(srate > 2e6 * 0.95 && srate < 2e6 * 1.05, "slow sender: %.0f B/s", srate);
        ck_assert_uint_lt(f->net_rx_bytes, 4096); /* it only sends */
        if (pass == 0) {
            ck_assert_double_eq_tol(f->power.nic_w, 0.0, 1e-15);
            ck_assert_double_eq_tol(s->power.nic_w, 0.0, 1e-15);
        } else {
            ck_assert_double_gt(s->power.nic_w, 0.0);
            double ratio = f->power.nic_w / s->power.nic_w;
            ck_assert_msg(ratio > 4 * 0.9 && ratio < 4 * 1.1, "ratio %.3f", ratio);
        }
        pa_report_free(r);
        pa_ctx_free(ctx);
    }
    kill_wait(fast);
    kill_wait(slow);
    kill_sink(sink);
}
END_TEST

/* IPv6 loopback: the AF_INET6 dump, classed loopback by ::1. */
#ifndef PA_SANITIZE_BUILD /* the plain run only (main below) */
START_TEST(ipv6_loopback_sender)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    socklen_t len = sizeof sa;
    int lfd = socket(AF_INET6, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, len) < 0) {
        fprintf(stderr, "SKIP ipv6_loopback_sender: no IPv6 loopback (%s)\n", strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return;
    }
    ck_assert_int_eq(listen(lfd, 4), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    pid_t sink = fork();
    ck_assert_int_ge(sink, 0);
    if (sink == 0)
        sink_loop(lfd);
    setpgid(sink, sink);
    track(sink);
    close(lfd);
    pid_t snd = spawn_sender(&sa, sizeof sa, 3e6);

    pa_ctx *ctx = live_ctx(NULL);
    ck_assert_int_eq(pa_watch_pid(ctx, snd, 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    usleep(200000);
    pa_report *r = one_window(ctx);
    const pa_target_info *t = pa_test_target(r, PA_TARGET_PROCESS, snd);
    ck_assert_ptr_nonnull(t);
    double rate = (double)t->net_tx_bytes / r->interval_s;
    const pa_task *task = pa__task_find(ctx, PA_TARGET_PROCESS, snd);
    fprintf(stderr, "ipv6: sender %.0f B/s\n", rate);
    ck_assert_msg(rate > 3e6 * 0.95 && rate < 3e6 * 1.05, "rate %.0f", rate);
    ck_assert_uint_gt(task->prev.net_kind[PA_NIC_LOOPBACK], 0);
    ck_assert_uint_eq(task->prev.net_kind[PA_NIC_PHYSICAL], 0);
    ck_assert_uint_eq(task->prev.net_kind[PA_NIC_VIRTUAL], 0);
    pa_report_free(r);
    pa_ctx_free(ctx);
    kill_wait(snd);
    kill_sink(sink);
}
END_TEST
#endif

/* ---- two namespaces joined by a veth pair ---- */

#ifndef PA_SANITIZE_BUILD /* the plain run only (main below) */
static char ns_name[32], veth_a[16], veth_b[16];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = pa_test_run(cmd, &out);
    free(out);
    return rc;
}

static pid_t veth_sink, veth_sender;

/* Also run at exit, so that a failed assertion leaves no namespace, veth
 * or child behind. */
static void netns_cleanup(void)
{
    if (veth_sender > 0)
        kill(veth_sender, SIGKILL);
    if (veth_sink > 0)
        kill(-veth_sink, SIGKILL);
    veth_sender = veth_sink = 0;
    if (!ns_name[0])
        return;
    sh("ip link del %s >/dev/null 2>&1", veth_a);
    sh("ip netns del %s >/dev/null 2>&1", ns_name);
    ns_name[0] = '\0';
}

START_TEST(veth_between_namespaces)
{
    int id = (int)getpid() % 200 + 20;
    snprintf(ns_name, sizeof ns_name, "pa-nic-%d", (int)getpid());
    snprintf(veth_a, sizeof veth_a, "panic%da", (int)getpid() % 100000);
    snprintf(veth_b, sizeof veth_b, "panic%db", (int)getpid() % 100000);
    if (sh("command -v ip >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP veth_between_namespaces: no 'ip' (iproute2)\n");
        return;
    }
    if (sh("ip netns add %s 2>/dev/null", ns_name) != 0) {
        fprintf(stderr, "SKIP veth_between_namespaces: 'ip netns add' "
                        "refused (needs root / CAP_SYS_ADMIN)\n");
        ns_name[0] = '\0';
        return;
    }
    atexit(netns_cleanup);
    if (sh("ip link add %s type veth peer name %s netns %s 2>/dev/null", veth_a, veth_b, ns_name) !=
            0 ||
        sh("ip addr add 10.213.%d.1/30 dev %s && ip link set %s up", id, veth_a, veth_a) != 0 ||
        sh("ip -n %s addr add 10.213.%d.2/30 dev %s && ip -n %s link set %s "
           "up && ip -n %s link set lo up",
           ns_name, id, veth_b, ns_name, veth_b, ns_name) != 0) {
        netns_cleanup();
        fprintf(stderr, "SKIP veth_between_namespaces: cannot create a veth "
                        "pair (no veth driver?)\n");
        return;
    }
    /* the sink: a child that enters the other namespace */
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t sink = fork();
    ck_assert_int_ge(sink, 0);
    veth_sink = sink;
    if (sink == 0) {
        char path[128];
        snprintf(path, sizeof path, "/run/netns/%s", ns_name);
        int nfd = open(path, O_RDONLY | O_CLOEXEC);
        if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
            _exit(4);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(5001)};
        sa.sin_addr.s_addr = INADDR_ANY;
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 4) < 0)
            _exit(5);
        if (write(pfd[1], "k", 1) != 1)
            _exit(6);
        sink_loop(lfd);
    }
    setpgid(sink, sink);
    close(pfd[1]);
    char k;
    ck_assert_int_eq(read(pfd[0], &k, 1), 1);
    close(pfd[0]);

    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(5001)};
    char addr[32];
    snprintf(addr, sizeof addr, "10.213.%d.2", id);
    inet_pton(AF_INET, addr, &peer.sin_addr);
    pid_t snd = spawn_sender(&peer, sizeof peer, 4e6);
    veth_sender = snd;

    pa_ctx *ctx = live_ctx(NULL);
    ck_assert_int_eq(pa_watch_pid(ctx, snd, 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    usleep(200000);
    pa_report *r = one_window(ctx);
    const pa_target_info *t = pa_test_target(r, PA_TARGET_PROCESS, snd);
    ck_assert_ptr_nonnull(t);
    double rate = (double)t->net_tx_bytes / r->interval_s;
    const pa_sysread *s = &ctx->sys[!ctx->sys_cur];
    const pa_sysread *s0 = &ctx->sys[ctx->sys_cur];
    uint64_t veth_tx = 0;
    for (unsigned i = 0; i < s->nnic; i++)
        for (unsigned j = 0; j < s0->nnic; j++)
            if (!strcmp(s->nic[i].name, veth_a) && !strcmp(s0->nic[j].name, veth_a)) {
                ck_assert_int_eq(s->nic[i].kind, PA_NIC_VIRTUAL);
                veth_tx = s->nic[i].tx_bytes - s0->nic[j].tx_bytes;
            }
    const pa_task *task = pa__task_find(ctx, PA_TARGET_PROCESS, snd);
    uint64_t virt = task->prev.net_kind[PA_NIC_VIRTUAL];
    fprintf(stderr, "veth: sender %.0f B/s, %s tx %llu B in %.3f s, nic_w %.3g\n", rate, veth_a,
            (unsigned long long)veth_tx, r->interval_s, t->power.nic_w);
    ck_assert_msg(rate > 4e6 * 0.95 && rate < 4e6 * 1.05, "rate %.0f", rate);
    /* the payload crossed the veth (plus headers) */
    ck_assert_uint_ge(veth_tx, t->net_tx_bytes);
    ck_assert_uint_gt(virt, 0);
    ck_assert_uint_eq(task->prev.net_kind[PA_NIC_PHYSICAL], 0);
    ck_assert_double_eq_tol(t->power.nic_w, 0.0, 1e-15);
    pa_report_free(r);

    /* priced like a 1 Gb/s NIC when asked */
    ck_assert_int_eq(pa_module_configure(ctx, "nic-linear", "loopback=on"), 0);
    r = one_window(ctx);
    t = pa_test_target(r, PA_TARGET_PROCESS, snd);
    ck_assert_double_gt(t->power.nic_w, 0.0);
    ck_assert_double_le(t->power.nic_w, r->system.nic_w + 1e-12);
    pa_report_free(r);
    pa_ctx_free(ctx);
    kill_wait(snd);
    kill_sink(sink);
    veth_sender = veth_sink = 0;
    netns_cleanup();
}
END_TEST
#endif

START_TEST(degrades_without_sockdiag_once)
{
    /* sockdiag=off: interface totals only, no per-process bytes, no error */
    pa_ctx *ctx;
    ck_assert_int_eq(pa_ctx_new(&ctx, NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "nic", "sockdiag=off"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "nic-linear", NULL), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, getpid(), 0), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    ck_assert_int_eq(pa_tick(ctx), 0);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *me = pa_test_target(r, PA_TARGET_PROCESS, getpid());
    ck_assert_ptr_nonnull(me);
    ck_assert_int_eq(me->has_net, 0);
    pa_report_free(r);
    pa_ctx_free(ctx);
}
END_TEST

/* As an unprivileged user, other users' fd folders are unreadable: those
 * processes get no per-process bytes, the tick does not fail, and the
 * report says so. */
START_TEST(unreadable_fd_folders_degrade)
{
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP unreadable_fd_folders_degrade: needs root to "
                        "become another user\n");
        return;
    }
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        if (setgid(65534) < 0 || setuid(65534) < 0)
            _exit(10);
        pa_ctx *ctx;
        pa_ctx_opts o = {.hwdb = PA_TEST_HWDB};
        if (pa_ctx_new(&ctx, &o) < 0 || pa_module_enable(ctx, "procfs-cpu", NULL) < 0 ||
            pa_module_enable(ctx, "nic", NULL) < 0 ||
            pa_module_enable(ctx, "nic-linear", NULL) < 0 || pa_watch_pid(ctx, 1, 0) < 0 ||
            pa_watch_pid(ctx, getpid(), 0) < 0)
            _exit(11);
        for (int i = 0; i < 3; i++)
            if (pa_tick(ctx) < 0)
                _exit(12);
        pa_report *r;
        if (pa_report_get(ctx, &r) < 0)
            _exit(13);
        const pa_target_info *init = pa_test_target(r, PA_TARGET_PROCESS, 1);
        const pa_target_info *me = pa_test_target(r, PA_TARGET_PROCESS, getpid());
        fprintf(stderr, "as nobody: assumed: %s\n", r->assumed);
        if (!init || !me)
            _exit(14);
        if (init->has_net || !me->has_net)
            _exit(15);
        if (!strstr(r->assumed, "nic: 1 processes without per-process bytes"))
            _exit(16);
        pa_module_info mi[16];
        int n = pa_module_list(ctx, mi, 16);
        for (int i = 0; i < n && i < 16; i++)
            if (!strcmp(mi[i].name, "nic") && mi[i].failing)
                _exit(17);
        pa_report_free(r);
        pa_ctx_free(ctx);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged child failed with status %d",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("live-nic");
    TCase *tc = tcase_create("live");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, loopback_rates_and_watts);
#ifndef PA_SANITIZE_BUILD
    /* the same sensor and formula code as the IPv4 case, over other
     * sockets and namespaces: in the plain run only (the suite's time;
     * the parsers are fuzzed) */
    tcase_add_test(tc, ipv6_loopback_sender);
    tcase_add_test(tc, veth_between_namespaces);
#endif
    tcase_add_test(tc, degrades_without_sockdiag_once);
    tcase_add_test(tc, unreadable_fd_folders_degrade);
    suite_add_tcase(s, tc);
    return s;
}

/* The built-in table references modules weakly, which does not pull them
 * out of libpowerapi.a: name them here so that they are linked. */
const pa_module_ops *const pa_test_keep_live_nic[] = {&pa__mod_procfs_cpu, &pa__mod_nic,
                                                      &pa__mod_nic_linear};

int main(void)
{
    return pa_test_main(suite());
}
