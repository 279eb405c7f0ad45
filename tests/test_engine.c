/*
 * test_engine.c - the tick engine with user-registered modules: deltas,
 * energy integration, exits, pid reuse, trees, errors of the lifecycle.
 *
 * A scripted sensor reports CPU times set by the test; a formula gives
 * each target 10 W per CPU-second per second, so every expected value is
 * exact arithmetic.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- a scripted sensor ---- */
typedef struct fake_proc {
    pid_t pid, ppid;
    uint64_t start;
    uint64_t cpu_ns, child_ns;
    const char *comm;
    bool alive;
} fake_proc;

static fake_proc procs[8];
static size_t nprocs;
static uint64_t fake_busy_ns, fake_uptime_ns;
static int fake_fail;

static int fake_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    if (fake_fail)
        return pa__err(-EIO, "fake: scripted failure");
    f->sys->have |= PA_HAVE_CPU;
    f->sys->ncpus = 2;
    f->sys->busy_ns = fake_busy_ns;
    f->sys->uptime_ns = fake_uptime_ns;
    for (size_t i = 0; i < nprocs; i++) {
        if (!procs[i].alive)
            continue;
        pa_task *t = pa__task_seen(f, PA_TARGET_PROCESS, procs[i].pid, 0, procs[i].start);
        ck_assert_ptr_nonnull(t);
        snprintf(t->comm, sizeof(t->comm), "%s", procs[i].comm);
        t->ppid = procs[i].ppid;
        t->cur.cpu_ns = procs[i].cpu_ns;
        t->cur.child_cpu_ns = procs[i].child_ns;
        t->cur.have |= PA_RD_CPU | PA_RD_CHILD;
        if (t->ctr_cur) {
            /* one counter: ten events per ns of CPU time */
            t->ctr_cur[0] = 10.0 * (double)procs[i].cpu_ns;
            t->cur.multiplex = procs[i].pid == 104 ? 0.5 : 1.0;
            t->cur.have |= PA_RD_COUNTERS;
        }
    }
    return 0;
}

/* It lists every task (PA_MOD_DISCOVERS_TASKS): after it ran, a task no
 * sensor saw has exited (the exit and tree tests below rely on it). */
static const pa_module_ops fake_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "fake-sensor",
    .kind = PA_SENSOR,
    .description = "scripted readings",
    .sample = fake_sample,
    .flags = PA_MOD_DISCOVERS_TASKS,
};

static const char *const ten_opts[] = {"watts", NULL};

static int ten_start(pa_module *m, const pa_options *o)
{
    double *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    int rc = pa_options_get_double(o, "watts", 10.0, w);
    if (rc < 0) {
        free(w);
        return rc;
    }
    pa_module_set_priv(m, w);
    return 0;
}

static void ten_stop(pa_module *m)
{
    free(pa_module_priv(m));
}

static int ten_compute(pa_module *m, const pa_frame_delta *d, pa_power_table *t)
{
    double w = *(double *)pa_module_priv(m);
    double dt = pa_delta_interval_s(d), sum = 0;
    for (size_t i = 0; i < pa_delta_count(d); i++) {
        double p = w * pa_delta_cpu_s(d, i) / dt;
        pa_table_set_target_w(t, i, p);
        if (d->tasks[i]->type == PA_TARGET_PROCESS)
            sum += p;
    }
    pa_table_set_system_w(t, sum + 1.0, 1.0);
    pa_table_assume(t, "watts=%g (test)", w);
    return 0;
}

static const pa_module_ops ten_formula = {
    .abi = PA_MODULE_ABI,
    .name = "ten-watts",
    .kind = PA_FORMULA,
    .component = PA_COMP_CPU,
    .options = ten_opts,
    .start = ten_start,
    .compute = ten_compute,
    .stop = ten_stop,
};

static char *root;

static pa_ctx *setup_ctx(void)
{
    root = pa_test_tmpdir();
    pa_test_write(root, "proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\n");
    for (pid_t p = 100; p < 110; p++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/stat", (int)p);
        pa_test_write(root, rel, "x\n");
    }
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_register(ctx, &fake_sensor), 0);
    ck_assert_int_eq(pa_module_register(ctx, &ten_formula), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "fake-sensor", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "ten-watts", NULL), 0);
    memset(procs, 0, sizeof(procs));
    nprocs = 0;
    fake_busy_ns = fake_uptime_ns = 0;
    fake_fail = 0;
    return ctx;
}

static void teardown_ctx(pa_ctx *ctx)
{
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
    root = NULL;
}

static fake_proc *add_proc(pid_t pid, pid_t ppid, uint64_t start, const char *comm)
{
    fake_proc *p = &procs[nprocs++];
    p->pid = pid;
    p->ppid = ppid;
    p->start = start;
    p->comm = comm;
    p->alive = true;
    return p;
}

START_TEST(energy_integrates_over_windows)
{
    pa_ctx *ctx = setup_ctx();
    fake_proc *a = add_proc(100, 1, 5, "a");
    ck_assert_int_eq(pa_watch_pid(ctx, 100, 0), 0);
    fake_uptime_ns = 10 * NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    pa_power p;
    /* the first tick only primes */
    ck_assert_int_eq(pa_pid_power(ctx, 100, &p), -ENODATA);
    a->cpu_ns = 500000000; /* 0.5 s in a 1 s window -> 5 W */
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    ck_assert_int_eq(pa_pid_power(ctx, 100, &p), 0);
    ck_assert_double_eq_tol(p.cpu_w, 5.0, 1e-9);
    ck_assert_double_eq_tol(p.cpu_j, 5.0, 1e-9);
    ck_assert_double_eq_tol(p.cpu_time_s, 0.5, 1e-9);
    ck_assert_double_eq_tol(p.interval_s, 1.0, 1e-9);
    a->cpu_ns += 2000000000; /* 2 s over a 4 s window -> 5 W, +20 J */
    ck_assert_int_eq(pa_tick_at(ctx, 6 * NS_PER_S), 0);
    ck_assert_int_eq(pa_pid_power(ctx, 100, &p), 0);
    ck_assert_double_eq_tol(p.cpu_w, 5.0, 1e-9);
    ck_assert_double_eq_tol(p.cpu_j, 25.0, 1e-9);
    ck_assert_double_eq_tol(p.total_j, 25.0, 1e-9);
    pa_power s;
    ck_assert_int_eq(pa_system_power(ctx, &s), 0);
    ck_assert_double_eq_tol(s.cpu_w, 6.0, 1e-9);
    ck_assert_double_eq_tol(s.idle_w, 1.0, 1e-9);
    ck_assert_double_eq_tol(s.cpu_j, 6.0 + 24.0, 1e-9);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_str_eq(r->formula, "ten-watts");
    ck_assert_str_eq(r->sensors, "fake-sensor");
    ck_assert_str_eq(r->cpu_source, "model");
    ck_assert_str_eq(r->assumed, "watts=10 (test)");
    ck_assert_uint_eq(r->ntargets, 1);
    ck_assert_str_eq(r->targets[0].comm, "a");
    pa_report_free(r);
    /* time must go forward */
    ck_assert_int_eq(pa_tick_at(ctx, 6 * NS_PER_S), -EINVAL);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(exit_is_reported_once_then_dropped)
{
    pa_ctx *ctx = setup_ctx();
    fake_proc *a = add_proc(101, 1, 5, "short");
    ck_assert_int_eq(pa_watch_pid(ctx, 101, 0), 0);
    fake_uptime_ns = 10 * NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    a->cpu_ns = 1000000000;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    a->alive = false;
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 101, &p), 0);
    ck_assert(p.flags & PA_POWER_EXITED);
    ck_assert_double_eq_tol(p.cpu_w, 0.0, 1e-12);
    ck_assert_double_eq_tol(p.cpu_j, 10.0, 1e-9); /* kept its energy */
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_target_info *t = pa_test_target(r, PA_TARGET_PROCESS, 101);
    ck_assert_ptr_nonnull(t);
    ck_assert(t->power.flags & PA_POWER_EXITED);
    pa_report_free(r);
    ck_assert_int_eq(pa_tick_at(ctx, 4 * NS_PER_S), 0);
    ck_assert_int_eq(pa_pid_power(ctx, 101, &p), -ESRCH);
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_ptr_null(pa_test_target(r, PA_TARGET_PROCESS, 101));
    pa_report_free(r);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(pid_reuse_starts_a_new_target)
{
    pa_ctx *ctx = setup_ctx();
    fake_proc *a = add_proc(102, 1, 5, "old");
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    fake_uptime_ns = 10 * NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    a->cpu_ns = 1000000000;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    /* same pid, new start time: born after the previous tick (uptime 10 s
     * = 1000 ticks), so its whole CPU time falls in this window */
    fake_uptime_ns = 11 * NS_PER_S;
    a->start = 1050;
    a->comm = "new";
    a->cpu_ns = 200000000;
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    size_t seen = 0;
    for (size_t i = 0; i < r->ntargets; i++) {
        const pa_target_info *t = &r->targets[i];
        if (t->pid != 102)
            continue;
        seen++;
        if (t->power.flags & PA_POWER_EXITED) {
            ck_assert_str_eq(t->comm, "old");
            ck_assert_double_eq_tol(t->power.cpu_j, 10.0, 1e-9);
        } else {
            ck_assert_str_eq(t->comm, "new");
            ck_assert(t->power.flags & PA_POWER_FIRST);
            ck_assert_double_eq_tol(t->power.cpu_w, 2.0, 1e-9);
            ck_assert_double_eq_tol(t->power.cpu_j, 2.0, 1e-9);
        }
    }
    ck_assert_uint_eq(seen, 2);
    pa_report_free(r);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(tree_counts_reaped_children)
{
    pa_ctx *ctx = setup_ctx();
    fake_proc *root_p = add_proc(103, 1, 5, "make");
    ck_assert_int_eq(pa_watch_pid(ctx, 103, PA_WATCH_CHILDREN), 0);
    add_proc(200, 1, 5, "other"); /* not in the tree */
    procs[1].cpu_ns = 0;
    fake_uptime_ns = 10 * NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    fake_proc *child = add_proc(104, 103, 1001, "cc");
    fake_uptime_ns = 11 * NS_PER_S;
    child->cpu_ns = 300000000;
    root_p->cpu_ns = 100000000;
    procs[1].cpu_ns = 900000000;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    pa_power p;
    ck_assert_int_eq(pa_tree_power(ctx, 103, &p), 0);
    ck_assert_double_eq_tol(p.cpu_time_s, 0.4, 1e-9);
    ck_assert_double_eq_tol(p.cpu_w, 4.0, 1e-9);
    /* the child exits and is reaped: its time moves to the parent's
     * cutime; the tree total stays continuous */
    child->alive = false;
    child->cpu_ns += 100000000; /* it ran 0.1 s more before exiting */
    root_p->child_ns = child->cpu_ns;
    fake_uptime_ns = 12 * NS_PER_S;
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    ck_assert_int_eq(pa_tree_power(ctx, 103, &p), 0);
    ck_assert_double_eq_tol(p.cpu_time_s, 0.1, 1e-9);
    ck_assert_double_eq_tol(p.cpu_j, 5.0, 1e-9);
    /* and the descendant was reported as its own process meanwhile */
    ck_assert_int_eq(pa_pid_power(ctx, 104, &p), 0);
    ck_assert(p.flags & PA_POWER_EXITED);
    ck_assert_double_eq_tol(p.cpu_j, 3.0, 1e-9);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(unwatched_targets_are_dropped_not_exited)
{
    pa_ctx *ctx = setup_ctx();
    fake_proc *a = add_proc(106, 1, 5, "kept");
    ck_assert_int_eq(pa_watch_pid(ctx, 106, 0), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    a->cpu_ns = 100000000;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    ck_assert_int_eq(pa_unwatch_pid(ctx, 106), 0);
    a->alive = false; /* the scripted sensor stops reading it */
    ck_assert_int_eq(pa_tick_at(ctx, 3 * NS_PER_S), 0);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_ptr_null(pa_test_target(r, PA_TARGET_PROCESS, 106));
    pa_report_free(r);
    pa_power p;
    ck_assert_int_eq(pa_pid_power(ctx, 106, &p), -ESRCH);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(tree_sums_counters)
{
    pa_ctx *ctx = setup_ctx();
    const char *names[] = {"events"};
    ck_assert_int_eq(pa__counters_declare(ctx, names, 1), 0);
    fake_proc *r0 = add_proc(103, 1, 5, "make");
    fake_proc *c = add_proc(104, 103, 6, "cc");
    ck_assert_int_eq(pa_watch_pid(ctx, 103, PA_WATCH_CHILDREN), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    r0->cpu_ns = 100000000;
    c->cpu_ns = 300000000;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), 0);
    pa_report *r;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_uint_eq(r->ncounters, 1);
    ck_assert_str_eq(r->counter_names[0], "events");
    const pa_target_info *tree = pa_test_target(r, PA_TARGET_TREE, 103);
    ck_assert_ptr_nonnull(tree);
    ck_assert_ptr_nonnull(tree->counters);
    ck_assert_double_eq_tol(tree->counters[0], 4e9, 1);
    ck_assert_double_eq_tol(tree->multiplex, 0.5, 1e-12);
    const pa_target_info *cc = pa_test_target(r, PA_TARGET_PROCESS, 104);
    ck_assert_ptr_nonnull(cc);
    ck_assert_double_eq_tol(cc->counters[0], 3e9, 1);
    pa_report_free(r);
    teardown_ctx(ctx);
}
END_TEST

/* A sensor that declares per-task counters when it starts; with the flag
 * PA_MOD_TASK_COUNTERS its counters leave the reports when it goes (the
 * core knows no sensor by name: "perf" says the same with the flag). */
static int counting_start(pa_module *m, const pa_options *o)
{
    (void)o;
    const char *names[] = {"events"};
    return pa__counters_declare(m->ctx, names, 1);
}

static int counting_sample(pa_module *m, pa_frame *f)
{
    (void)m;
    (void)f;
    return 0;
}

START_TEST(counters_go_with_their_sensor)
{
    pa_ctx *ctx = setup_ctx();
    pa_module_ops flagged = {
        .abi = PA_MODULE_ABI,
        .name = "counting",
        .kind = PA_SENSOR,
        .start = counting_start,
        .sample = counting_sample,
        .flags = PA_MOD_TASK_COUNTERS,
    };
    pa_module_ops unflagged = flagged;
    unflagged.name = "counting-old";
    unflagged.abi = 2; /* no flags field: its counters stay declared */
    ck_assert_int_eq(pa_module_register(ctx, &flagged), 0);
    ck_assert_int_eq(pa_module_register(ctx, &unflagged), 0);
    add_proc(107, 1, 5, "p");
    ck_assert_int_eq(pa_watch_pid(ctx, 107, 0), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "counting", NULL), 0);
    ck_assert_uint_eq(ctx->ncounters, 1);
    ck_assert_int_eq(pa_module_disable(ctx, "counting"), 0);
    ck_assert_uint_eq(ctx->ncounters, 0);
    ck_assert_int_eq(pa_module_enable(ctx, "counting-old", NULL), 0);
    ck_assert_uint_eq(ctx->ncounters, 1);
    ck_assert_int_eq(pa_module_disable(ctx, "counting-old"), 0);
    ck_assert_uint_eq(ctx->ncounters, 1);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(failing_sensor_backs_off_and_recovers)
{
    pa_ctx *ctx = setup_ctx();
    add_proc(105, 1, 5, "p");
    ck_assert_int_eq(pa_watch_pid(ctx, 105, 0), 0);
    ck_assert_int_eq(pa_tick_at(ctx, 1 * NS_PER_S), 0);
    fake_fail = 1;
    ck_assert_int_eq(pa_tick_at(ctx, 2 * NS_PER_S), -ENODATA);
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    ck_assert_int_ge(n, 2);
    bool found = false;
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, "fake-sensor")) {
            found = true;
            ck_assert(mi[i].enabled);
            ck_assert(mi[i].failing);
            ck_assert_ptr_nonnull(strstr(mi[i].why, "scripted failure"));
        }
    ck_assert(found);
    fake_fail = 0;
    /* retried after 2 ticks, then healthy */
    uint64_t t = 3;
    for (; t < 8; t++)
        pa_tick_at(ctx, t * NS_PER_S);
    n = pa_module_list(ctx, mi, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, "fake-sensor"))
            ck_assert(!mi[i].failing);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(lifecycle_errors_name_the_fix)
{
    pa_ctx *ctx = setup_ctx();
    ck_assert_int_eq(pa_module_enable(ctx, "no-such", NULL), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "unknown module 'no-such'"));
    ck_assert_int_eq(pa_module_configure(ctx, "ten-watts", "wats=3"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "did you mean 'watts'"));
    ck_assert_int_eq(pa_module_configure(ctx, "ten-watts", "watts=abc"), -EINVAL);
    ck_assert_int_eq(pa_module_configure(ctx, "ten-watts", "watts"), -EINVAL);
    /* enabling twice is harmless */
    ck_assert_int_eq(pa_module_enable(ctx, "ten-watts", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "ten-watts", "watts=20"), 0);
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(mi[i].name, "ten-watts"))
            ck_assert_str_eq(mi[i].options, "watts=20");
    ck_assert_int_eq(pa_module_register(ctx, &ten_formula), -EEXIST);
    pa_module_ops bad = fake_sensor;
    bad.name = "Bad Name";
    ck_assert_int_eq(pa_module_register(ctx, &bad), -EINVAL);
    bad = fake_sensor;
    bad.name = "old-abi";
    bad.abi = 99;
    ck_assert_int_eq(pa_module_register(ctx, &bad), -EINVAL);
    ck_assert_int_eq(pa_module_disable(ctx, "ten-watts"), 0);
    /* disabling again only repeats the wish; an unknown name is refused */
    ck_assert_int_eq(pa_module_disable(ctx, "ten-watts"), 0);
    ck_assert_int_eq(pa_module_disable(ctx, "no-such"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "unknown module 'no-such'"));
    ck_assert_int_eq(pa_watch_pid(ctx, 99999, 0), -ESRCH);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "99999"));
    ck_assert_int_eq(pa_watch_pid(ctx, -3, 0), -EINVAL);
    ck_assert_int_eq(pa_unwatch_pid(ctx, 100), -ESRCH);
    ck_assert_int_eq(pa_stop(ctx), -ENOENT);
    ck_assert_int_eq(pa_start(ctx, 10, NULL, NULL), -EINVAL);
    teardown_ctx(ctx);
}
END_TEST

static int probe_calls;

static int counted_probe(const pa_env *env, char *why, size_t why_len)
{
    (void)env;
    probe_calls++;
    snprintf(why, why_len, "counted probe %d", probe_calls);
    return -ENODEV;
}

static const pa_module_ops counted_sensor = {
    .abi = PA_MODULE_ABI,
    .name = "counted",
    .kind = PA_SENSOR,
    .probe = counted_probe,
    .sample = fake_sample,
};

/* pa_module_get gives what pa_module_list gives for one module, and
 * probes that module only. */
START_TEST(module_get_probes_one_module)
{
    pa_ctx *ctx = setup_ctx();
    ck_assert_int_eq(pa_module_register(ctx, &counted_sensor), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "ten-watts", "watts=20"), 0);
    probe_calls = 0;
    pa_module_info one;
    ck_assert_int_eq(pa_module_get(ctx, "ten-watts", &one), 0);
    ck_assert_int_eq(probe_calls, 0);
    ck_assert_str_eq(one.name, "ten-watts");
    ck_assert_int_eq(one.kind, PA_FORMULA);
    ck_assert_int_eq(one.component, PA_COMP_CPU);
    ck_assert(one.available && one.enabled && one.user);
    ck_assert_str_eq(one.options, "watts=20");
    /* the same as the list's entry */
    pa_module_info mi[32];
    int n = pa_module_list(ctx, mi, 32);
    ck_assert_int_eq(probe_calls, 1);
    int found = 0;
    for (int i = 0; i < n && i < 32; i++)
        if (!strcmp(mi[i].name, "ten-watts")) {
            found = 1;
            ck_assert_int_eq(mi[i].kind, one.kind);
            ck_assert_int_eq(mi[i].available, one.available);
            ck_assert_int_eq(mi[i].enabled, one.enabled);
            ck_assert_str_eq(mi[i].options, one.options);
            ck_assert_str_eq(mi[i].why, one.why);
        }
    ck_assert(found);
    /* a built-in sensor, and one whose probe fails: its reason */
    ck_assert_int_eq(pa_module_get(ctx, "procfs-cpu", &one), 0);
    ck_assert_int_eq(one.kind, PA_SENSOR);
    ck_assert_int_eq(probe_calls, 1);
    ck_assert_int_eq(pa_module_get(ctx, "counted", &one), 0);
    ck_assert_int_eq(probe_calls, 2);
    ck_assert(!one.available && !one.enabled);
    ck_assert_str_eq(one.why, "counted probe 2");
    /* unknown: the message lists the modules, as enable's and disable's */
    ck_assert_int_eq(pa_module_get(ctx, "no-such", &one), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "unknown module 'no-such'"));
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "modules: auto, procfs-cpu"));
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "counted"));
    ck_assert_int_eq(pa_module_disable(ctx, "no-such"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "modules: auto, procfs-cpu"));
    ck_assert_int_eq(pa_module_get(ctx, NULL, &one), -EINVAL);
    ck_assert_int_eq(pa_module_get(ctx, "ten-watts", NULL), -EINVAL);
    ck_assert_int_eq(pa_module_get(NULL, "ten-watts", &one), -EINVAL);
    teardown_ctx(ctx);
}
END_TEST

/* pa_module_option_keys: a module's accepted keys, from its ops table,
 * without probing; NULL for a module that takes none. */
START_TEST(module_option_keys)
{
    pa_ctx *ctx = setup_ctx();
    const char *const *keys = NULL;
    ck_assert_int_eq(pa_module_option_keys(ctx, "cpu-tdp", &keys), 0);
    ck_assert_ptr_nonnull(keys);
    ck_assert_str_eq(keys[0], "tdp");
    int n = 0;
    while (keys[n])
        n++;
    ck_assert_int_ge(n, 2);
    keys = (const char *const *)&n; /* overwritten */
    ck_assert_int_eq(pa_module_option_keys(ctx, "procfs-cpu", &keys), 0);
    ck_assert_ptr_nonnull(keys);
    ck_assert_str_eq(keys[0], "exits");
    ck_assert_str_eq(keys[1], "exitfile");
    ck_assert_ptr_null(keys[2]);
    ck_assert_int_eq(pa_module_option_keys(ctx, "no-such", &keys), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "no-such"));
    ck_assert_int_eq(pa_module_option_keys(ctx, NULL, &keys), -EINVAL);
    ck_assert_int_eq(pa_module_option_keys(ctx, "cpu-tdp", NULL), -EINVAL);
    teardown_ctx(ctx);
}
END_TEST

START_TEST(bad_roots_are_refused)
{
    pa_ctx *ctx = NULL;
    pa_ctx_opts o = {.procfs = "/nonexistent/proc"};
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), -ENOENT);
    ck_assert_ptr_null(ctx);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "/nonexistent/proc"));
    pa_ctx_free(NULL);
    pa_report_free(NULL);
    ck_assert_str_eq(pa_strerror(-ESRCH), "no such process");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, energy_integrates_over_windows);
    tcase_add_test(tc, exit_is_reported_once_then_dropped);
    tcase_add_test(tc, pid_reuse_starts_a_new_target);
    tcase_add_test(tc, tree_counts_reaped_children);
    tcase_add_test(tc, unwatched_targets_are_dropped_not_exited);
    tcase_add_test(tc, tree_sums_counters);
    tcase_add_test(tc, counters_go_with_their_sensor);
    tcase_add_test(tc, failing_sensor_backs_off_and_recovers);
    tcase_add_test(tc, lifecycle_errors_name_the_fix);
    tcase_add_test(tc, module_get_probes_one_module);
    tcase_add_test(tc, module_option_keys);
    tcase_add_test(tc, bad_roots_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
