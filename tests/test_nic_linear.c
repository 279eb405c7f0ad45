/*
 * test_nic_linear.c - the nic-linear formula on hand-made deltas.
 *
 * The formula's compute() is called directly with a frame delta built here,
 * so each case isolates one rule: state choice, the busy-time cap, the
 * share denominators, loopback pricing, threads and trees, sensors without
 * classes, a hwdb without records.  A small hwdb written by the test holds
 * a record for a driver named "testnic": its values are test values, not
 * a data sheet (the shipped hwdb is exercised by test_nic).
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const pa_module_ops *const pa_test_keep_nic_linear[] = {&pa__mod_nic_linear};

static char *root;
static pa_ctx *ctx;
static pa_module mod;
static pa_options *opts;
static pa_sysread cur, prev;
static pa_frame_delta d;
static pa_power_table tab;
static pa_task tasks[4];
static pa_task *tptr[4];

static void start(const char *hwdb_text, const char *o)
{
    root = pa_test_tmpdir();
    pa_test_write(root, "proc/stat", "cpu  1 0 0 0 0 0 0 0 0 0\n");
    pa_test_write(root, "hwdb.txt", "%s", hwdb_text);
    char proc[4096], sys[4096], hwdb[4096];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(sys, sizeof sys, "%s/proc", root);
    snprintf(hwdb, sizeof hwdb, "%s/hwdb.txt", root);
    pa_ctx_opts co = {.procfs = proc, .sysfs = sys, .devfs = proc, .hwdb = hwdb};
    ck_assert_int_eq(pa_ctx_new(&ctx, &co), 0);
    memset(&mod, 0, sizeof mod);
    mod.ops = &pa__mod_nic_linear;
    mod.ctx = ctx;
    ck_assert_msg(pa__options_parse("nic-linear", o, pa__mod_nic_linear.options, &opts) == 0, "%s",
                  pa_last_error());
    ck_assert_msg(pa__mod_nic_linear.start(&mod, opts) == 0, "%s", pa_last_error());
    memset(&cur, 0, sizeof cur);
    memset(&prev, 0, sizeof prev);
    memset(&d, 0, sizeof d);
    memset(&tab, 0, sizeof tab);
    memset(tasks, 0, sizeof tasks);
    for (int i = 0; i < 4; i++) {
        tasks[i].type = PA_TARGET_PROCESS;
        tasks[i].pid = 100 + i;
        tasks[i].cur.have = tasks[i].prev.have = PA_RD_NET;
        tptr[i] = &tasks[i];
    }
    d.ctx = ctx;
    d.interval_s = 1.0;
    d.have = PA_HAVE_NIC | PA_HAVE_SOCK;
    d.cur = &cur;
    d.prev = &prev;
    d.tasks = tptr;
    d.ntasks = 4;
    tab.component = PA_COMP_NIC;
    tab.tasks = tptr;
    tab.ntasks = 4;
}

static void finish(void)
{
    pa__mod_nic_linear.stop(&mod);
    pa__options_free(opts);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}

/* Adds an interface that moved bytes (rx + tx) in the window. */
static void add_if(const char *name, pa_nic_kind kind, uint32_t mbps, const char *driver,
                   uint64_t rx, uint64_t tx)
{
    pa_nic_reading *n = &cur.nic[cur.nnic++];
    snprintf(n->name, sizeof n->name, "%s", name);
    n->kind = kind;
    n->speed_mbps = mbps;
    snprintf(n->driver, sizeof n->driver, "%s", driver);
    pa_nic_delta *nd = &d.nic[d.nnic++];
    nd->nic = n;
    nd->rx_bytes = rx;
    nd->tx_bytes = tx;
}

static void task_bytes(int i, uint64_t phys, uint64_t virt, uint64_t lo)
{
    tasks[i].cur.net_kind[PA_NIC_PHYSICAL] = 1000 + phys;
    tasks[i].prev.net_kind[PA_NIC_PHYSICAL] = 1000;
    tasks[i].cur.net_kind[PA_NIC_VIRTUAL] = virt;
    tasks[i].cur.net_kind[PA_NIC_LOOPBACK] = lo;
    tasks[i].d_rx = phys + virt + lo;
}

static void sock_total(pa_nic_kind k, uint64_t bytes)
{
    prev.sock_bytes[k] = 5;
    cur.sock_bytes[k] = 5 + bytes;
}

static const char *test_hwdb =
    "# test values, not a data sheet\n"
    "nic \"testnic\" state=10:0.3,100:0.5,1000:1.2 source=\"test values\"\n"
    "nic \"default\" state=1000:0.8 source=\"test default\"\n";

static void compute(void)
{
    ck_assert_msg(pa__mod_nic_linear.compute(&mod, &d, &tab) == 0, "%s", pa_last_error());
}

START_TEST(state_of_the_link_speed)
{
    start(test_hwdb, NULL);
    /* 100 Mb/s: 6,250,000 B = 0.5 s busy at 0.5 W -> 0.25 W */
    add_if("eth0", PA_NIC_PHYSICAL, 100, "testnic", 6000000, 250000);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.25, 1e-12);
    /* an exact state of a record: nothing assumed about the NIC */
    ck_assert_str_eq(tab.assumed, "nic per process: TCP only (no per-socket UDP counters)");
    finish();

    /* 40 Mb/s has no state: the slowest state at least as fast (100) */
    start(test_hwdb, NULL);
    add_if("eth0", PA_NIC_PHYSICAL, 40, "testnic", 2500000, 0); /* 0.5 s */
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.25, 1e-12);
    ck_assert_ptr_nonnull(strstr(tab.assumed, "nic eth0=0.5W@40Mb/s (hwdb testnic@100Mb/s)"));
    finish();

    /* 2500 Mb/s is faster than every state: the fastest (1000, 1.2 W) */
    start(test_hwdb, NULL);
    add_if("eth0", PA_NIC_PHYSICAL, 2500, "testnic", 156250000, 0); /* 0.5 s */
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.6, 1e-12);
    ck_assert_ptr_nonnull(strstr(tab.assumed, "testnic@1000Mb/s"));
    finish();
}
END_TEST

START_TEST(unknown_driver_uses_default_record)
{
    start(test_hwdb, NULL);
    add_if("eno1", PA_NIC_PHYSICAL, 1000, "igb", 62500000, 0); /* 0.5 s */
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.4, 1e-12);
    ck_assert_ptr_nonnull(strstr(tab.assumed, "nic eno1=0.8W@1000Mb/s (no record for driver 'igb': "
                                              "hwdb default@1000Mb/s)"));
    finish();
}
END_TEST

START_TEST(no_record_at_all_is_zero_and_labelled)
{
    start("# empty\n", NULL);
    add_if("eno1", PA_NIC_PHYSICAL, 1000, "igb", 62500000, 0);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.0, 1e-15);
    ck_assert_ptr_nonnull(strstr(tab.assumed, "set power="));
    finish();
    /* power= needs no record */
    start("# empty\n", "power=3");
    add_if("eno1", PA_NIC_PHYSICAL, 1000, "igb", 62500000, 0);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 1.5, 1e-12);
    finish();
}
END_TEST

START_TEST(busy_time_is_capped_at_the_window)
{
    start(test_hwdb, NULL);
    /* 100 Mb/s for 1 s is 12,500,000 B; twice that (full duplex) still
     * makes the NIC busy 1 s at most */
    add_if("eth0", PA_NIC_PHYSICAL, 100, "testnic", 12500000, 12500000);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.5, 1e-12);
    finish();
}
END_TEST

START_TEST(shares_by_class_and_denominators)
{
    start(test_hwdb, "loopback=on");
    d.interval_s = 2.0;
    /* physical: 1000 Mb/s testnic, 25,000,000 B -> 0.2 s * 1.2 W / 2 s */
    add_if("eth0", PA_NIC_PHYSICAL, 1000, "testnic", 20000000, 5000000);
    /* loopback: priced at 1 Gb/s with the default (0.8 W):
     * 12,500,000 B -> 0.1 s * 0.8 / 2 = 0.04 W */
    add_if("lo", PA_NIC_LOOPBACK, 0, "", 6250000, 6250000);
    double pphys = 0.2 * 1.2 / 2, plo = 0.04;
    /* the sockets saw more physical bytes than the interface counted
     * (counters read at slightly different instants): the larger wins */
    sock_total(PA_NIC_PHYSICAL, 50000000);
    sock_total(PA_NIC_LOOPBACK, 10000000);
    task_bytes(0, 30000000, 0, 0);
    task_bytes(1, 20000000, 0, 5000000);
    task_bytes(2, 0, 0, 5000000);
    tasks[3].type = PA_TARGET_THREAD; /* threads keep 0 */
    task_bytes(3, 20000000, 0, 0);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, pphys + plo, 1e-12);
    ck_assert_double_eq_tol(tasks[0].nic_w, pphys * 30 / 50, 1e-12);
    ck_assert_double_eq_tol(tasks[1].nic_w, pphys * 20 / 50 + plo * 5 / 12.5, 1e-12);
    ck_assert_double_eq_tol(tasks[2].nic_w, plo * 5 / 12.5, 1e-12);
    ck_assert_double_eq_tol(tasks[3].nic_w, 0.0, 1e-15);
    /* conservation: the processes never get more than the system */
    double sum = tasks[0].nic_w + tasks[1].nic_w + tasks[2].nic_w;
    ck_assert_double_le(sum, tab.nic_w + 1e-12);
    ck_assert_ptr_nonnull(strstr(tab.assumed, "lo=0.8W@1000Mb/s (loopback=on"));
    finish();

    /* loopback off (default): loopback bytes cost nothing */
    start(test_hwdb, NULL);
    add_if("lo", PA_NIC_LOOPBACK, 0, "", 6250000, 6250000);
    add_if("veth0", PA_NIC_VIRTUAL, 10000, "", 6250000, 6250000);
    task_bytes(2, 0, 1000, 5000000);
    sock_total(PA_NIC_LOOPBACK, 10000000);
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.0, 1e-15);
    ck_assert_double_eq_tol(tasks[2].nic_w, 0.0, 1e-15);
    ck_assert_str_eq(tab.assumed, "nic per process: TCP only (no per-socket UDP counters)");
    finish();
}
END_TEST

START_TEST(sensor_without_classes_counts_as_physical)
{
    start(test_hwdb, NULL);
    d.have = PA_HAVE_NIC;                                        /* no socket totals either */
    add_if("eth0", PA_NIC_PHYSICAL, 100, "testnic", 6250000, 0); /* 0.5 s */
    tasks[0].d_rx = 1250000; /* a user sensor: rx/tx only, no net_kind */
    tasks[0].d_tx = 0;
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.25, 1e-12);
    ck_assert_double_eq_tol(tasks[0].nic_w, 0.25 * 0.2, 1e-12);
    ck_assert_ptr_null(strstr(tab.assumed, "TCP only"));
    finish();
}
END_TEST

START_TEST(no_reading_no_power)
{
    start(test_hwdb, NULL);
    add_if("eth0", PA_NIC_PHYSICAL, 100, "testnic", 6250000, 0);
    task_bytes(0, 6250000, 0, 0);
    tasks[0].prev.have = 0; /* first reading: no window */
    tasks[1].nic_w = 7;     /* stale value from another formula */
    compute();
    ck_assert_double_eq_tol(tasks[0].nic_w, 0.0, 1e-15);
    ck_assert_double_eq_tol(tasks[1].nic_w, 0.0, 1e-15);
    d.have = 0; /* no interfaces in both frames */
    compute();
    ck_assert_double_eq_tol(tab.nic_w, 0.0, 1e-15);
    finish();
}
END_TEST

START_TEST(options_are_checked)
{
    start(test_hwdb, NULL);
    pa_options *o;
    ck_assert_int_eq(pa__options_parse("nic-linear", "speed=0", pa__mod_nic_linear.options, &o), 0);
    ck_assert_int_eq(pa__mod_nic_linear.configure(&mod, o), -EINVAL);
    pa__options_free(o);
    ck_assert_int_eq(pa__options_parse("nic-linear", "power=abc", pa__mod_nic_linear.options, &o),
                     0);
    ck_assert_int_eq(pa__mod_nic_linear.configure(&mod, o), -EINVAL);
    pa__options_free(o);
    ck_assert_int_lt(pa__options_parse("nic-linear", "powr=1", pa__mod_nic_linear.options, &o), 0);
    finish();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nic-linear");
    TCase *tc = tcase_create("formula");
    tcase_add_test(tc, state_of_the_link_speed);
    tcase_add_test(tc, unknown_driver_uses_default_record);
    tcase_add_test(tc, no_record_at_all_is_zero_and_labelled);
    tcase_add_test(tc, busy_time_is_capped_at_the_window);
    tcase_add_test(tc, shares_by_class_and_denominators);
    tcase_add_test(tc, sensor_without_classes_counts_as_physical);
    tcase_add_test(tc, no_reading_no_power);
    tcase_add_test(tc, options_are_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
