/*
 * test_nic.c - the nic sensor and nic-linear on the net-server fixture.
 *
 * tests/fixtures/net-server is a host with an 82559 on eth0 (e100, 100
 * Mb/s), an 82599 port on enp5s0f0 (ixgbe, 10 Gb/s), loopback, a docker
 * bridge and a veth.  Its socket table comes from a sockfile (the text form
 * of the sock_diag dump) so that per-process bytes are exact; processes are
 * created by a scripted sensor (the engine's contract: a task-discovering
 * sensor runs first).  The hwdb is the shipped data/hwdb.txt: e100 draws
 * 0.58 W in every state (8255x manual, Table 6); ixgbe falls back to the
 * "default" record (0.58 W, labelled assumed).
 *
 * Window 1 -> 3 s (d = 2 s):
 *   eth0      5,000,000 B at 100 Mb/s   t = 0.4 s   P = 0.4*0.58/2 = 0.116 W
 *   enp5s0f0 25,000,000 B at 10 Gb/s    t = 0.02 s  P = 0.0058 W
 *   physical total 0.1218 W over 30,000,000 B (sockets: 25,000,000 B)
 *   curl   4,000,000 B physical  ->  0.1218 * 4/30  = 0.01624 W
 *   rsync 20,000,000 B physical  ->  0.1218 * 20/30 = 0.0812 W
 *   redis-cli / redis-server: loopback and docker0 only -> 0 W
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a scripted sensor that discovers the fixture's processes ---- */
typedef struct fake_proc {
    pid_t pid;
    uint64_t start;
    const char *comm;
    bool alive;
} fake_proc;

static fake_proc fprocs[] = {
    {2001, 500100, "curl", true},
    {2002, 500200, "redis-cli", true},
    {2003, 400000, "redis-server", true},
    {2004, 500400, "rsync", true},
};
#define NFAKE (sizeof fprocs / sizeof fprocs[0])
static pid_t fake_thread_of_2004; /* a thread to report, 0 = none */

static int fake_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    f->sys->have |= PA_HAVE_CPU;
    f->sys->ncpus = 2;
    for (size_t i = 0; i < NFAKE; i++) {
        if (!fprocs[i].alive)
            continue;
        pa_task *t = pa__task_seen(f, PA_TARGET_PROCESS, fprocs[i].pid, 0, fprocs[i].start);
        ck_assert_ptr_nonnull(t);
        snprintf(t->comm, sizeof t->comm, "%s", fprocs[i].comm);
        t->ppid = 1;
        t->cur.have |= PA_RD_CPU;
        if (fprocs[i].pid == 2004 && fake_thread_of_2004) {
            pa_task *th =
                pa__task_seen(f, PA_TARGET_THREAD, 2004, fake_thread_of_2004, fprocs[i].start);
            ck_assert_ptr_nonnull(th);
            th->proc = t;
            th->cur.have |= PA_RD_CPU;
        }
    }
    f->scanned = true;
    return 0;
}

static const pa_module_ops fake_procs = {
    .abi = PA_MODULE_ABI,
    .name = "fake-procs",
    .kind = PA_SENSOR,
    .description = "the fixture's processes",
    .sample = fake_sample,
};

static char *root;

static void set_if(const char *name, unsigned long long rx, unsigned long long tx)
{
    char rel[128];
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/rx_bytes", name);
    pa_test_write(root, rel, "%llu\n", rx);
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/tx_bytes", name);
    pa_test_write(root, rel, "%llu\n", tx);
}

/* Interface counters of tick 2 (t = 3 s): see the header's arithmetic. */
static void tick2_interfaces(void)
{
    set_if("lo", 81234567ull + 3000000, 81234567ull + 3000000);
    set_if("eth0", 1876543210ull + 3000000, 987654321ull + 2000000);
    set_if("enp5s0f0", 912345678901ull + 20000000, 45678901234ull + 5000000);
    set_if("veth3a1f", 5566778ull + 500000, 6677889ull + 500000);
    set_if("docker0", 4455667ull + 500000, 5566778ull + 500000);
}

static void tick2_sockets(void)
{
    pa_test_write(root, "sockets.txt",
                  "tcp 11 50001 10.0.0.5:40000 93.184.216.34:443 3001000 "
                  "1000500\n"
                  "tcp 12 50002 127.0.0.1:50000 127.0.0.1:6379 520000 "
                  "1510000\n"
                  "tcp 13 50003 127.0.0.1:6379 127.0.0.1:50000 1510000 "
                  "520000\n"
                  "tcp 14 50004 172.17.0.1:41000 172.17.0.2:5432 300300 "
                  "300200\n"
                  "tcp 16 50006 [2001:db8::5]:50000 [2001:db8:1::9]:873 100 "
                  "22000000\n"
                  "tcp 17 40999 10.0.0.5:22 192.0.2.7:51000 505000 509000\n");
}

static pa_ctx *setup(const char *nic_opts, const char *formula_opts)
{
    root = pa_test_fixture_copy("net-server");
    pa_ctx *ctx = pa_test_ctx(root);
    for (size_t i = 0; i < NFAKE; i++)
        fprocs[i].alive = true;
    fake_thread_of_2004 = 0;
    char opts[512];
    snprintf(opts, sizeof opts, "sockfile=%s/sockets.txt%s%s", root,
             nic_opts && *nic_opts ? "," : "", nic_opts ? nic_opts : "");
    ck_assert_int_eq(pa_module_register(ctx, &fake_procs), 0);
    /* exactly these modules: auto would add procfs-cpu + cpu-tdp */
    ck_assert_int_eq(pa_module_disable(ctx, "auto"), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "fake-procs", NULL), 0);
    ck_assert_msg(pa_module_enable(ctx, "nic", opts) == 0, "%s", pa_last_error());
    ck_assert_msg(pa_module_enable(ctx, "nic-linear", formula_opts) == 0, "%s", pa_last_error());
    for (size_t i = 0; i < NFAKE; i++)
        ck_assert_int_eq(pa_watch_pid(ctx, fprocs[i].pid, 0), 0);
    return ctx;
}

static void teardown(pa_ctx *ctx)
{
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
    root = NULL;
}

/* The frame of the last tick (internal). */
static const pa_sysread *last_frame(pa_ctx *ctx)
{
    return &ctx->sys[!ctx->sys_cur];
}

static const pa_nic_reading *find_if(const pa_sysread *s, const char *name)
{
    for (unsigned i = 0; i < s->nnic; i++)
        if (!strcmp(s->nic[i].name, name))
            return &s->nic[i];
    return NULL;
}

static double pid_nic_w(pa_ctx *ctx, pid_t pid)
{
    pa_power p;
    ck_assert_msg(pa_pid_power(ctx, pid, &p) == 0, "pid %d: %s", (int)pid, pa_last_error());
    return p.nic_w;
}

START_TEST(interfaces_from_sysfs)
{
    pa_ctx *ctx = setup(NULL, NULL);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    const pa_sysread *s = last_frame(ctx);
    ck_assert(s->have & PA_HAVE_NIC);
    ck_assert_uint_eq(s->nnic, 5);
    /* physical first, then loopback, then virtual */
    ck_assert_str_eq(s->nic[0].name, "enp5s0f0");
    ck_assert_str_eq(s->nic[1].name, "eth0");
    ck_assert_str_eq(s->nic[2].name, "lo");
    ck_assert_str_eq(s->nic[3].name, "docker0");
    ck_assert_str_eq(s->nic[4].name, "veth3a1f");

    const pa_nic_reading *e = find_if(s, "eth0");
    ck_assert_int_eq(e->kind, PA_NIC_PHYSICAL);
    ck_assert_uint_eq(e->speed_mbps, 100);
    ck_assert_str_eq(e->driver, "e100");
    ck_assert_uint_eq(e->rx_bytes, 1876543210ull);
    ck_assert_uint_eq(e->tx_bytes, 987654321ull);
    ck_assert_uint_eq(e->rx_packets, 2100456);
    ck_assert_uint_eq(e->tx_packets, 1500321);

    const pa_nic_reading *x = find_if(s, "enp5s0f0");
    ck_assert_int_eq(x->kind, PA_NIC_PHYSICAL);
    ck_assert_uint_eq(x->speed_mbps, 10000);
    ck_assert_str_eq(x->driver, "ixgbe");
    ck_assert_uint_eq(x->rx_bytes, 912345678901ull);

    const pa_nic_reading *lo = find_if(s, "lo");
    ck_assert_int_eq(lo->kind, PA_NIC_LOOPBACK);
    ck_assert_uint_eq(lo->speed_mbps, 0); /* no speed file */
    ck_assert_str_eq(lo->driver, "");

    const pa_nic_reading *br = find_if(s, "docker0");
    ck_assert_int_eq(br->kind, PA_NIC_VIRTUAL);
    ck_assert_uint_eq(br->speed_mbps, 0); /* "-1" */
    const pa_nic_reading *v = find_if(s, "veth3a1f");
    ck_assert_int_eq(v->kind, PA_NIC_VIRTUAL);
    ck_assert_uint_eq(v->speed_mbps, 10000);
    ck_assert_str_eq(v->driver, "");
    teardown(ctx);
}
END_TEST

START_TEST(interfaces_from_proc_net_dev)
{
    pa_ctx *ctx = setup("sockdiag=off", NULL);
    pa_test_remove(root, "sys/class");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    const pa_sysread *s = last_frame(ctx);
    ck_assert_uint_eq(s->nnic, 5);
    const pa_nic_reading *x = find_if(s, "enp5s0f0");
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(x->kind, PA_NIC_PHYSICAL); /* by name */
    ck_assert_uint_eq(x->rx_bytes, 912345678901ull);
    ck_assert_uint_eq(x->rx_packets, 623456789);
    ck_assert_uint_eq(x->tx_bytes, 45678901234ull);
    ck_assert_uint_eq(x->tx_packets, 98765432);
    ck_assert_int_eq(find_if(s, "lo")->kind, PA_NIC_LOOPBACK);
    ck_assert_int_eq(find_if(s, "docker0")->kind, PA_NIC_VIRTUAL);
    ck_assert_int_eq(find_if(s, "veth3a1f")->kind, PA_NIC_VIRTUAL);
    ck_assert_uint_eq(find_if(s, "eth0")->speed_mbps, 0);
    teardown(ctx);
}
END_TEST

START_TEST(exact_watts_physical_only)
{
    pa_ctx *ctx = setup(NULL, NULL);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    tick2_sockets();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);

    pa_power sys;
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, 0.1218, 1e-12);
    ck_assert_double_eq_tol(sys.nic_j, 0.2436, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2001), 0.1218 * 4 / 30, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2004), 0.1218 * 20 / 30, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2002), 0.0, 1e-15);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2003), 0.0, 1e-15);

    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *curl = pa_test_target(r, PA_TARGET_PROCESS, 2001);
    ck_assert_ptr_nonnull(curl);
    ck_assert_int_eq(curl->has_net, 1);
    ck_assert_uint_eq(curl->net_rx_bytes, 3000000);
    ck_assert_uint_eq(curl->net_tx_bytes, 1000000);
    const pa_target_info *cli = pa_test_target(r, PA_TARGET_PROCESS, 2002);
    /* loopback 500,000 + 1,500,000 and docker0 300,000 + 300,000 */
    ck_assert_uint_eq(cli->net_rx_bytes, 500000 + 300000);
    ck_assert_uint_eq(cli->net_tx_bytes, 1500000 + 300000);
    const pa_target_info *rs = pa_test_target(r, PA_TARGET_PROCESS, 2004);
    ck_assert_uint_eq(rs->net_rx_bytes, 0);
    ck_assert_uint_eq(rs->net_tx_bytes, 20000000);
    ck_assert_str_eq(r->sensors, "fake-procs+nic");
    ck_assert_ptr_nonnull(strstr(r->formula, "nic-linear"));
    /* ixgbe has no record: the default is used and labelled */
    ck_assert_msg(strstr(r->assumed, "nic enp5s0f0=0.58W@10000Mb/s") != NULL, "assumed: %s",
                  r->assumed);
    ck_assert_msg(strstr(r->assumed, "eth0") == NULL, "assumed: %s", r->assumed);
    ck_assert_ptr_nonnull(strstr(r->assumed, "TCP only"));
    pa_report_free(r);

    /* the classes the sensor gave */
    const pa_task *t = pa__task_find(ctx, PA_TARGET_PROCESS, 2002);
    ck_assert_uint_eq(t->prev.net_kind[PA_NIC_LOOPBACK], 2000000);
    ck_assert_uint_eq(t->prev.net_kind[PA_NIC_VIRTUAL], 600000);
    ck_assert_uint_eq(t->prev.net_kind[PA_NIC_PHYSICAL], 0);
    const pa_sysread *s = last_frame(ctx);
    ck_assert(s->have & PA_HAVE_SOCK);
    /* curl 4e6 + rsync 2e7 + the unwatched ssh session 1e6 */
    ck_assert_uint_eq(s->sock_bytes[PA_NIC_PHYSICAL], 25000000);
    ck_assert_uint_eq(s->sock_bytes[PA_NIC_LOOPBACK], 4000000);
    ck_assert_uint_eq(s->sock_bytes[PA_NIC_VIRTUAL], 600000);
    teardown(ctx);
}
END_TEST

START_TEST(exact_watts_loopback_on)
{
    pa_ctx *ctx = setup(NULL, "loopback=on");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    tick2_sockets();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    /* lo: 6,000,000 B at 1 Gb/s -> t = 0.048 s -> 0.048*0.58/2 = 0.01392 W
     * veth + docker0: 2,000,000 B -> t = 0.016 s -> 0.00464 W */
    double lo_w = 0.01392, virt_w = 0.00464;
    pa_power sys;
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, 0.1218 + lo_w + virt_w, 1e-12);
    /* loopback share: 2,000,000 of max(6,000,000 lo, 4,000,000 sockets);
     * virtual share: 600,000 of max(2,000,000, 600,000) */
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2002), lo_w * 2.0 / 6.0 + virt_w * 0.3, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2003), lo_w * 2.0 / 6.0, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2001), 0.1218 * 4 / 30, 1e-12);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_msg(strstr(r->assumed, "nic lo=0.58W@1000Mb/s (loopback=on") != NULL, "assumed: %s",
                  r->assumed);
    pa_report_free(r);
    teardown(ctx);
}
END_TEST

START_TEST(closed_new_and_draining_sockets)
{
    pa_ctx *ctx = setup(NULL, "power=1");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    tick2_sockets();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    /* tick 3 (d = 1 s): curl closed socket 11 and opened 19 (fd 3 reused);
     * rsync closed its socket, still draining (inode 0, same cookie);
     * a new socket of redis-server appears on a new fd */
    pa_test_remove(root, "proc/2001/fd/3");
    char path[4096];
    snprintf(path, sizeof path, "%s/proc/2001/fd/3", root);
    ck_assert_int_eq(symlink("socket:[50019]", path), 0);
    snprintf(path, sizeof path, "%s/proc/2003/fd/6", root);
    ck_assert_int_eq(symlink("socket:[50020]", path), 0);
    pa_test_remove(root, "proc/2004/fd/3");
    pa_test_write(root, "sockets.txt",
                  "tcp 19 50019 10.0.0.5:40002 93.184.216.34:443 100000 0\n"
                  "tcp 12 50002 127.0.0.1:50000 127.0.0.1:6379 520000 "
                  "1510000\n"
                  "tcp 13 50003 127.0.0.1:6379 127.0.0.1:50000 1510000 "
                  "520000\n"
                  "tcp 20 50020 10.0.0.5:6379 10.0.0.9:43000 7000 3000\n"
                  "tcp 16 0 [2001:db8::5]:50000 [2001:db8:1::9]:873 100 "
                  "23000000\n");
    /* eth0 carried 1,000,000 B: t = 0.08 s at 100 Mb/s -> 0.08 W with
     * power=1; enp5s0f0 1,250,000 B: t = 0.001 s -> 0.001 W */
    set_if("eth0", 1876543210ull + 3000000 + 600000, 987654321ull + 2000000 + 400000);
    set_if("enp5s0f0", 912345678901ull + 20000000 + 250000, 45678901234ull + 5000000 + 1000000);
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);

    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *curl = pa_test_target(r, PA_TARGET_PROCESS, 2001);
    ck_assert_uint_eq(curl->net_rx_bytes, 100000); /* the new socket, whole */
    ck_assert_uint_eq(curl->net_tx_bytes, 0);
    const pa_target_info *rs = pa_test_target(r, PA_TARGET_PROCESS, 2004);
    ck_assert_uint_eq(rs->net_tx_bytes, 1000000); /* drained after close */
    const pa_target_info *srv = pa_test_target(r, PA_TARGET_PROCESS, 2003);
    ck_assert_uint_eq(srv->net_rx_bytes, 7000);
    ck_assert_uint_eq(srv->net_tx_bytes, 3000);
    pa_report_free(r);

    /* physical: 0.081 W over max(2,250,000 B, 1,110,000 B of sockets) */
    double pw = 0.08 + 0.001;
    pa_power sys;
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, pw, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2001), pw * 100000 / 2250000, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2004), pw * 1000000 / 2250000, 1e-12);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2003), pw * 10000 / 2250000, 1e-12);
    /* curl's energy: window 2 at 0.01624 W (power=1: 0.21 W * 4/30) ... */
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 2001, &p), 0);
    double w2 = (0.4 * 1 / 2 + 0.02 * 1 / 2) * 4 / 30;
    ck_assert_double_eq_tol(p.nic_j, w2 * 2 + pw * 100000 / 2250000, 1e-12);
    teardown(ctx);
}
END_TEST

START_TEST(sockdiag_off_keeps_interface_totals)
{
    pa_ctx *ctx = setup("sockdiag=off", NULL);
    /* without sockfile the sensor would use netlink: drop it */
    ck_assert_int_eq(pa_module_configure(ctx, "nic", "sockfile="), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_power sys;
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, 0.1218, 1e-12);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *curl = pa_test_target(r, PA_TARGET_PROCESS, 2001);
    ck_assert_int_eq(curl->has_net, 0);
    ck_assert_double_eq_tol(curl->power.nic_w, 0.0, 1e-15);
    ck_assert_ptr_null(strstr(r->assumed, "TCP only"));
    ck_assert_msg(strstr(r->assumed, "nic: interface totals only (no "
                                     "sock_diag: no per-process bytes)"),
                  "assumed: %s", r->assumed);
    pa_report_free(r);
    ck_assert(!(last_frame(ctx)->have & PA_HAVE_SOCK));
    teardown(ctx);
}
END_TEST

START_TEST(unknown_speed_and_options)
{
    pa_ctx *ctx = setup(NULL, NULL);
    pa_test_write(root, "sys/class/net/eth0/speed", "-1\n");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    tick2_sockets();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    /* eth0 now at an assumed 1000 Mb/s: t = 0.04 s -> 0.0116 W */
    pa_power sys;
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, 0.0116 + 0.0058, 1e-12);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_msg(strstr(r->assumed, "nic eth0 speed=1000Mb/s (unknown)"), "assumed: %s",
                  r->assumed);
    pa_report_free(r);

    /* speed= and power= override: eth0 at 100 Mb/s, every NIC 2 W */
    ck_assert_int_eq(pa_module_configure(ctx, "nic-linear", "speed=100,power=2"), 0);
    set_if("eth0", 1876543210ull + 3000000 + 1250000, 987654321ull + 2000000);
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);
    /* 1,250,000 B at 100 Mb/s: t = 0.1 s of 1 s at 2 W */
    ck_assert_int_eq(pa_system_power(ctx, &sys), 0);
    ck_assert_double_eq_tol(sys.nic_w, 0.2, 1e-12);

    ck_assert_int_eq(pa_module_configure(ctx, "nic-linear", "power=-1"), -EINVAL);
    ck_assert_int_eq(pa_module_configure(ctx, "nic-linear", "loopback=maybe"), -EINVAL);
    ck_assert_int_eq(pa_module_configure(ctx, "nic", "sockdiag=sometimes"), -EINVAL);
    ck_assert_int_eq(pa_module_configure(ctx, "nic-linear", "loopbak=on"), -EINVAL);
    teardown(ctx);
}
END_TEST

START_TEST(threads_keep_zero_trees_sum)
{
    pa_ctx *ctx = setup(NULL, NULL);
    fake_thread_of_2004 = 2005;
    ck_assert_int_eq(pa_watch_pid(ctx, 2004, PA_WATCH_THREADS), 0);
    ck_assert_int_eq(pa_watch_pid(ctx, 2001, PA_WATCH_CHILDREN), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    tick2_interfaces();
    tick2_sockets();
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_power p;
    ck_assert_int_eq(pa_tid_power(ctx, 2005, &p), 0);
    ck_assert_double_eq_tol(p.nic_w, 0.0, 1e-15);
    ck_assert_double_eq_tol(pid_nic_w(ctx, 2004), 0.1218 * 20 / 30, 1e-12);
    ck_assert_int_eq(pa_tree_power(ctx, 2001, &p), 0);
    ck_assert_double_eq_tol(p.nic_w, 0.1218 * 4 / 30, 1e-12);
    teardown(ctx);
}
END_TEST

START_TEST(bad_sockfile_fails_the_tick_not_the_context)
{
    pa_ctx *ctx = setup(NULL, NULL);
    pa_test_write(root, "sockets.txt", "tcp 1 2 nonsense 1.2.3.4:5 6 7\n");
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    pa_module_info info[8];
    int n = pa_module_list(ctx, info, 8);
    ck_assert_int_gt(n, 0);
    bool seen = false;
    for (int i = 0; i < n && i < 8; i++)
        if (!strcmp(info[i].name, "nic")) {
            seen = true;
            ck_assert_int_eq(info[i].failing, 1);
            ck_assert_msg(strstr(info[i].why, "sockets.txt line 1"), "why: %s", info[i].why);
        }
    ck_assert(seen);
    teardown(ctx);
}
END_TEST

START_TEST(probe_says_why)
{
    char *dir = pa_test_tmpdir();
    pa_test_write(dir, "proc/stat", "cpu  1 0 0 0 0 0 0 0 0 0\n");
    pa_ctx *ctx = pa_test_ctx(dir);
    ck_assert_int_eq(pa_module_enable(ctx, "nic", NULL), -ENODEV);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "class/net"));
    pa_ctx_free(ctx);
    pa_test_rmtree(dir);
}
END_TEST

/* The CLI on the same fixture: a process record carries net_bytes and the
 * NIC watts of the window (DESIGN.md section 8). */
START_TEST(cli_json_has_net_bytes)
{
    root = pa_test_fixture_copy("net-server");
    char *states = pa_test_tmpdir();
    /* the socket table, relative to the procfs root so that the replay's
     * overlays can change it */
    char *text = NULL, path[4096];
    snprintf(path, sizeof path, "%s/sockets.txt", root);
    text = pa_test_slurp(path);
    ck_assert_ptr_nonnull(text);
    pa_test_write(root, "proc/sockets.txt", "%s", text);
    free(text);
    pa_test_write(states, "1/proc/sockets.txt",
                  "tcp 11 50001 10.0.0.5:40000 93.184.216.34:443 3001000 "
                  "1000500\n"
                  "tcp 16 50006 [2001:db8::5]:50000 [2001:db8:1::9]:873 100 "
                  "22000000\n"
                  "tcp 17 40999 10.0.0.5:22 192.0.2.7:51000 505000 509000\n");
    const char *eth0 = "1/sys/devices/pci0000:00/0000:00:19.0/net/eth0";
    const char *x = "1/sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0/net/"
                    "enp5s0f0";
    char rel[256];
    snprintf(rel, sizeof rel, "%s/statistics/rx_bytes", eth0);
    pa_test_write(states, rel, "%llu\n", 1876543210ull + 3000000);
    snprintf(rel, sizeof rel, "%s/statistics/tx_bytes", eth0);
    pa_test_write(states, rel, "%llu\n", 987654321ull + 2000000);
    snprintf(rel, sizeof rel, "%s/statistics/rx_bytes", x);
    pa_test_write(states, rel, "%llu\n", 912345678901ull + 20000000);
    snprintf(rel, sizeof rel, "%s/statistics/tx_bytes", x);
    pa_test_write(states, rel, "%llu\n", 45678901234ull + 5000000);

    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' monitor --procfs '%s/proc' --sysfs '%s/sys' --hwdb '%s' "
             "--pid 2001 --format json --clock-step 2s --count 1 "
             "--fixture-states '%s' --sensor procfs-cpu "
             "--sensor nic:sockfile=sockets.txt --formula nic-linear 2>&1",
             CLI_PATH, root, root, PA_TEST_HWDB, states);
    char *out = NULL;
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"pid\":2001,\"comm\":\"curl\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"net_bytes\":{\"rx\":3000000,\"tx\":1000000}"), "%s", out);
    /* 0.1218 W * 4/30 */
    ck_assert_msg(strstr(out, "\"nic\":0.01624"), "%s", out);
    ck_assert_msg(strstr(out, "\"nic\":0.1218"), "%s", out);
    free(out);
    pa_test_rmtree(states);
    pa_test_rmtree(root);
    root = NULL;
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nic");
    TCase *tc = tcase_create("fixture");
    tcase_add_test(tc, interfaces_from_sysfs);
    tcase_add_test(tc, interfaces_from_proc_net_dev);
    tcase_add_test(tc, exact_watts_physical_only);
    tcase_add_test(tc, exact_watts_loopback_on);
    tcase_add_test(tc, closed_new_and_draining_sockets);
    tcase_add_test(tc, sockdiag_off_keeps_interface_totals);
    tcase_add_test(tc, unknown_speed_and_options);
    tcase_add_test(tc, threads_keep_zero_trees_sum);
    tcase_add_test(tc, bad_sockfile_fails_the_tick_not_the_context);
    tcase_add_test(tc, probe_says_why);
    tcase_add_test(tc, cli_json_has_net_bytes);
    suite_add_tcase(s, tc);
    return s;
}

/* The built-in table references modules weakly, which does not pull them
 * out of libpowerapi.a: name them here so that they are linked. */
const pa_module_ops *const pa_test_keep_nic[] = {&pa__mod_nic, &pa__mod_nic_linear};

int main(void)
{
    return pa_test_main(suite());
}
