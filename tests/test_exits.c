/*
 * test_exits.c - processes that exit between two ticks (DESIGN.md section
 * 2, "Exits") on the 4-CPU server fixture with an explicit clock and a
 * linear curve (cpu-curve points 0:40+100:100), so every watt is exact:
 * exit records (procfs-cpu's exitfile=, the stand-in for the kernel's
 * taskstats records) give a process that exited its last window and the
 * processes never seen alive their own share in the exited record; without
 * records, the survivors' cutime/cstime growth estimates them; what no
 * process accounts for is the unaccounted record; the survivors get only
 * their own share; processes + exited + unaccounted + idle = system.
 */
#include "internal.h"
#include "output.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9

/* proc(5) stat: utime (14), cutime (16) in ticks of 1/100 s */
static void write_pid(const char *root, int pid, int ppid, const char *comm, unsigned long utime,
                      unsigned long cutime)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) R %d %d %d 0 -1 4194560 100 0 0 0 %lu 0 %lu 0 20 0 "
                  "1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 "
                  "4096 0 0 0 0 17 1 0 0 0 0 0\n",
                  pid, comm, ppid, pid, pid, utime, cutime, 40000 + pid);
}

static void write_busy(const char *root, unsigned long busy, unsigned long idle)
{
    pa_test_write(root, "proc/stat",
                  "cpu  %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu0 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu1 0 0 0 0 0 0 0 0 0 0\n"
                  "cpu2 0 0 0 0 0 0 0 0 0 0\n"
                  "cpu3 0 0 0 0 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n",
                  busy, idle, busy, idle);
}

typedef struct rig {
    char *root;
    char exitfile[512];
    pa_ctx *ctx;
} rig;

/* Tick 1 primes: web (pid 100) 10 s, db (200) 5 s of CPU. */
static void rig_open(rig *g, bool records)
{
    g->root = pa_test_fixture_copy("rapl-server2s");
    snprintf(g->exitfile, sizeof(g->exitfile), "%s/exits.txt", g->root);
    g->ctx = pa_test_ctx(g->root);
    char opts[600];
    snprintf(opts, sizeof(opts), "exitfile=%s", g->exitfile);
    ck_assert_int_eq(pa_module_enable(g->ctx, "procfs-cpu", records ? opts : NULL), 0);
    ck_assert_int_eq(pa_module_enable(g->ctx, "cpu-curve", "points=0:40+100:100"), 0);
    ck_assert_int_eq(pa_watch_all(g->ctx, 1), 0);
    write_busy(g->root, 100000, 300000);
    write_pid(g->root, 100, 1, "web", 1000, 0);
    write_pid(g->root, 200, 100, "db", 500, 0);
    ck_assert_int_eq(pa_tick_at(g->ctx, 1000000000ull), 0);
}

/* Tick 2, one second on: 2.2 of 4 CPU-seconds busy (u = 0.55, P = 40 +
 * 60 x 0.55 = 73 W, 33 W active: 15 W a busy CPU-second); web ran 1 s and
 * lives, db ran 0.3 s more and exited. */
static void rig_window(rig *g, unsigned long web_cutime)
{
    write_busy(g->root, 100220, 300180);
    write_pid(g->root, 100, 1, "web", 1100, web_cutime);
    pa_test_remove(g->root, "proc/200");
    int rc = pa_tick_at(g->ctx, 2000000000ull);
    ck_assert_msg(rc == 0, "%s", pa_last_error());
}

static void rig_close(rig *g)
{
    pa_ctx_free(g->ctx);
    pa_test_rmtree(g->root);
}

/* processes + exited + unaccounted + idle == system, cpu */
static void assert_conserved(const pa_report *r)
{
    double sum = r->system.idle_w;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS || r->targets[i].type == PA_TARGET_EXITED ||
            r->targets[i].type == PA_TARGET_UNACCOUNTED)
            sum += r->targets[i].power.cpu_w;
    ck_assert_double_eq_tol(sum, r->system.cpu_w, TOL);
}

/* The kernel's records: db's lifetime 5.3 s (its last window 0.3 s),
 * sh (pid 300, two threads: 0.4 + 0.1 s) and its child true (302, 0.2 s)
 * born and gone in the window, and a thread of web that ended (web is
 * alive: its own reading has it, no record of its own). */
START_TEST(records_give_each_its_own)
{
    rig g;
    rig_open(&g, true);
    pa_test_write(g.root, "exits.txt",
                  "200 200 1 5300000000 db\n"
                  "300 300 100 400000000 sh\n"
                  "301 300 100 100000000 sh\n"
                  "302 302 300 200000000 true\n"
                  "101 100 1 50000000 web\n");
    rig_window(&g, 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g.ctx, &r), 0);
    ck_assert_str_eq(r->exits_source, "file");
    ck_assert_double_eq_tol(r->system.cpu_w, 73, TOL);
    ck_assert_double_eq_tol(r->system.idle_w, 40, TOL);
    const pa_target_info *web = pa_test_target(r, PA_TARGET_PROCESS, 100);
    const pa_target_info *db = pa_test_target(r, PA_TARGET_PROCESS, 200);
    ck_assert_ptr_nonnull(web);
    ck_assert_ptr_nonnull(db);
    ck_assert_double_eq_tol(web->power.cpu_w, 15, TOL);
    ck_assert_double_eq_tol(db->power.cpu_time_s, 0.3, TOL);
    ck_assert_double_eq_tol(db->power.cpu_w, 4.5, TOL);
    ck_assert(db->power.flags & PA_POWER_EXITED);
    ck_assert_ptr_null(pa_test_target(r, PA_TARGET_PROCESS, 300)); /* folded */
    const pa_target_info *ex = pa_test_target(r, PA_TARGET_EXITED, 0);
    const pa_target_info *un = pa_test_target(r, PA_TARGET_UNACCOUNTED, 0);
    ck_assert_ptr_nonnull(ex);
    ck_assert_ptr_nonnull(un);
    ck_assert_uint_eq(ex->processes, 2);
    ck_assert_str_eq(ex->comm, "[exited]");
    ck_assert_double_eq_tol(ex->power.cpu_time_s, 0.7, TOL);
    ck_assert_double_eq_tol(ex->power.cpu_w, 10.5, TOL);
    ck_assert_double_eq_tol(ex->power.cpu_j, 10.5, TOL);
    ck_assert_double_eq_tol(un->power.cpu_time_s, 0.2, TOL);
    ck_assert_double_eq_tol(un->power.cpu_w, 3, TOL);
    assert_conserved(r);
    /* the writers fold them into one named row each */
    char *json = rp_out_report_text(r, RP_OUT_JSON);
    char *table = rp_out_report_text(r, RP_OUT_TABLE);
    ck_assert_msg(strstr(json,
                         "{\"type\":\"exited\",\"time\":2,\"interval_s\":1,\"processes\":2,"
                         "\"comm\":\"[exited]\",\"cpu_time_s\":0.7,\"power_w\":{\"cpu\":10.5,"),
                  "%s", json);
    ck_assert_msg(strstr(json, "\"exits\":{\"source\":\"file\",\"lost\":0}"), "%s", json);
    ck_assert_msg(strstr(table, "[exited: 2 processes]"), "%s", table);
    ck_assert_msg(strstr(table, "[unaccounted]"), "%s", table);
    free(json);
    free(table);
    pa_report_free(r);
    rig_close(&g);
}
END_TEST

/* Without records: web reaped db (5.3 s over its life, 5 s of it already
 * counted) and sh (0.7 s with its child), its cutime grew 6 s: the
 * exited record is the 1 s left (15 W), db's last record has nothing. */
START_TEST(estimate_from_children_time)
{
    rig g;
    rig_open(&g, false);
    rig_window(&g, 600);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g.ctx, &r), 0);
    ck_assert_str_eq(r->exits_source, "children-time");
    const pa_target_info *web = pa_test_target(r, PA_TARGET_PROCESS, 100);
    ck_assert_double_eq_tol(web->power.cpu_w, 15, TOL);
    const pa_target_info *db = pa_test_target(r, PA_TARGET_PROCESS, 200);
    ck_assert(db->power.flags & PA_POWER_EXITED);
    ck_assert_double_eq_tol(db->power.cpu_w, 0, TOL);
    const pa_target_info *ex = pa_test_target(r, PA_TARGET_EXITED, 0);
    const pa_target_info *un = pa_test_target(r, PA_TARGET_UNACCOUNTED, 0);
    ck_assert_uint_eq(ex->processes, 0); /* an estimate counts none */
    ck_assert_double_eq_tol(ex->power.cpu_time_s, 1.0, TOL);
    ck_assert_double_eq_tol(ex->power.cpu_w, 15, TOL);
    ck_assert_double_eq_tol(un->power.cpu_w, 3, TOL);
    assert_conserved(r);
    char *table = rp_out_report_text(r, RP_OUT_TABLE);
    ck_assert_msg(strstr(table, "[exited]"), "%s", table);
    free(table);
    pa_report_free(r);
    rig_close(&g);
}
END_TEST

/* The estimate never exceeds what /proc/stat says was busy: a cutime that
 * jumps by 100 s leaves the exited record the 1.2 s the survivor did not
 * use, and nothing unaccounted. */
START_TEST(estimate_bounded_by_busy_time)
{
    rig g;
    rig_open(&g, false);
    rig_window(&g, 10000);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g.ctx, &r), 0);
    const pa_target_info *ex = pa_test_target(r, PA_TARGET_EXITED, 0);
    const pa_target_info *un = pa_test_target(r, PA_TARGET_UNACCOUNTED, 0);
    ck_assert_double_eq_tol(ex->power.cpu_time_s, 1.2, TOL);
    ck_assert_double_eq_tol(ex->power.cpu_w, 18, TOL);
    ck_assert_double_eq_tol(un->power.cpu_w, 0, TOL);
    assert_conserved(r);
    pa_report_free(r);
    rig_close(&g);
}
END_TEST

/* Watching one process: no exited or unaccounted record (the rest of the
 * machine is not "unaccounted", it is unwatched). */
START_TEST(none_without_watch_all)
{
    rig g;
    rig_open(&g, true);
    ck_assert_int_eq(pa_watch_all(g.ctx, 0), 0);
    ck_assert_int_eq(pa_watch_pid(g.ctx, 100, 0), 0);
    pa_test_write(g.root, "exits.txt", "300 300 100 400000000 sh\n");
    write_busy(g.root, 100220, 300180);
    write_pid(g.root, 100, 1, "web", 1100, 0);
    ck_assert_int_eq(pa_tick_at(g.ctx, 2000000000ull), 0);
    write_busy(g.root, 100440, 300360);
    write_pid(g.root, 100, 1, "web", 1200, 0);
    ck_assert_int_eq(pa_tick_at(g.ctx, 3000000000ull), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g.ctx, &r), 0);
    ck_assert_str_eq(r->exits_source, "none");
    ck_assert_ptr_null(pa_test_target(r, PA_TARGET_EXITED, 0));
    ck_assert_ptr_null(pa_test_target(r, PA_TARGET_UNACCOUNTED, 0));
    pa_report_free(r);
    rig_close(&g);
}
END_TEST

/* Bad input: a malformed exit file line costs its record, not the window
 * (said in the assumed list); a record without ids; an unknown exits=. */
START_TEST(bad_input)
{
    rig g;
    rig_open(&g, true);
    pa_test_write(g.root, "exits.txt", "not a record\n300 300 100 400000000 sh\n");
    rig_window(&g, 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(g.ctx, &r), 0);
    ck_assert_msg(strstr(r->assumed, "exitfile line 1 is not 'TID PID PPID CPU_NS COMM'"), "%s",
                  r->assumed);
    ck_assert_uint_eq(pa_test_target(r, PA_TARGET_EXITED, 0)->processes, 1);
    pa_report_free(r);
    pa_task_exit e = {.tid = 0, .pid = 5};
    pa_frame fake = {.ctx = g.ctx};
    ck_assert_int_eq(pa_frame_task_exit(&fake, &e), -EINVAL);
    ck_assert_int_eq(pa_frame_exits_source(&fake, "", 0), -EINVAL);
    ck_assert_int_eq(pa_module_enable(g.ctx, "procfs-cpu", "exits=sometimes"), -EINVAL);
    ck_assert_msg(strstr(pa_last_error(), "exits=sometimes is not known"), "%s", pa_last_error());
    rig_close(&g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("exits");
    TCase *tc = tcase_create("fixtures");
    tcase_add_test(tc, records_give_each_its_own);
    tcase_add_test(tc, estimate_from_children_time);
    tcase_add_test(tc, estimate_bounded_by_busy_time);
    tcase_add_test(tc, none_without_watch_all);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
