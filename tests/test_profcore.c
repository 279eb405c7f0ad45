/* test_profcore.c - the profiling core that `powerapi profile` and jalen
 * share (profcore/): a cumulative reading's increase, the call tree's
 * index, the function statistics with the filtered view, the window's top
 * functions, the sorted tables, and the per-window energy split over
 * processes, threads and samples with known inputs and known joules. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profcore.h"
#include "testutil.h"

#define EPS 1e-12

START_TEST(cum_delta)
{
    pc_cum c = {0};
    /* the first reading is the window's own, then increases; a reading
     * that went down (a target that restarted) gives 0, not less */
    ck_assert_double_eq_tol(pc_cum_delta(&c, 2.5), 2.5, EPS);
    ck_assert_double_eq_tol(pc_cum_delta(&c, 4.0), 1.5, EPS);
    ck_assert_double_eq_tol(pc_cum_delta(&c, 3.0), 0.0, EPS);
    ck_assert_double_eq_tol(pc_cum_delta(&c, 3.5), 0.5, EPS);
}
END_TEST

START_TEST(tree_index)
{
    pc_tree_build b = {.hint = 4, .node_hint = 1};
    int main0 = pc_tree_child(&b, -1, 0, 1, 20); /* inlined at a root: not */
    ck_assert_int_eq(main0, 0);
    ck_assert_int_eq(b.nodes[0].inlined, 0);
    int w5 = pc_tree_child(&b, main0, 1, 0, 5);
    int w6 = pc_tree_child(&b, main0, 1, 0, 6);
    int w5i = pc_tree_child(&b, main0, 1, 1, 5);
    ck_assert_int_eq(w5, 1);
    ck_assert_int_eq(w6, 2);
    ck_assert_int_eq(w5i, 3); /* inlined and called: two nodes */
    ck_assert_int_eq(pc_tree_child(&b, main0, 1, 0, 5), w5);
    /* siblings, the newest first */
    ck_assert_int_eq(b.nodes[main0].first_child, w5i);
    ck_assert_int_eq(b.nodes[w5i].next_sibling, w6);
    ck_assert_int_eq(b.nodes[w6].next_sibling, w5);
    ck_assert_int_eq(b.nodes[w5].next_sibling, -1);
    /* a stack, leaf first: found where it exists, the rest made; many
     * more nodes than the first index size */
    int ids[3] = {2, 1, 0}, lines[3] = {30, 5, 20};
    int leaf = pc_tree_stack(&b, ids, NULL, lines, 3);
    ck_assert_int_eq(leaf, 4);
    ck_assert_int_eq(b.nodes[leaf].parent, w5);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(pc_tree_child(&b, leaf, 3, 0, i), 5 + i);
    ck_assert_int_eq(pc_tree_child(&b, leaf, 3, 0, 42), 47);
    ck_assert_uint_eq(b.n, 105);
    ck_assert(pc_tree_build_memory(&b) >= 105 * sizeof(pc_tree_node));
    pc_tree_build_free(&b);
}
END_TEST

START_TEST(stats_filter)
{
    /* 0 "[unknown] x+0x10" (leaf only), 1 libc (outside), 2 app (in the
     * filter), 3 "[outside filter]" */
    pc_stat st[4];
    memset(st, 0, sizeof(st));
    const unsigned char charge[4] = {PC_CHARGE_LEAF, PC_CHARGE_NONE, PC_CHARGE_ANY, PC_CHARGE_ANY};
    pc_sample s = {
        .energy_j = 2, .cpu_j = 1.5, .net_j = 0.5, .cpu_s = 0.01, .samples = 1, .net_bytes = 100};
    /* app -> libc -> app (recursion) -> [unknown]: the leaf is charged */
    int a[4] = {0, 2, 1, 2};
    pc_stat_add(st, a, 4, charge, 3, 1, &s);
    ck_assert_double_eq_tol(st[0].self_j, 2, EPS);
    ck_assert_double_eq_tol(st[0].fself_j, 2, EPS);
    ck_assert_double_eq_tol(st[2].total_j, 2, EPS); /* once per stack */
    ck_assert_uint_eq(st[2].total_samples, 1);
    ck_assert_double_eq_tol(st[2].cpu_j, 1.5, EPS);
    ck_assert_double_eq_tol(st[2].net_j, 0.5, EPS);
    ck_assert_uint_eq(st[2].net_bytes, 100);
    ck_assert_double_eq_tol(st[2].cpu_s, 0.01, EPS);
    /* libc -> [unknown] -> app: [unknown] above the leaf is passed over */
    int b[3] = {1, 0, 2};
    pc_stat_add(st, b, 3, charge, 3, 2, &s);
    ck_assert_double_eq_tol(st[1].self_j, 2, EPS);
    ck_assert_double_eq_tol(st[1].fself_j, 0, EPS);
    ck_assert_double_eq_tol(st[0].fself_j, 2, EPS);
    ck_assert_double_eq_tol(st[2].fself_j, 2, EPS);
    /* libc alone: outside the filter */
    int c[1] = {1};
    pc_stat_add(st, c, 1, charge, 3, 3, &s);
    ck_assert_double_eq_tol(st[3].fself_j, 2, EPS);
    ck_assert_uint_eq(st[3].fself_samples, 1);
    ck_assert_uint_eq(st[1].self_samples, 2);
    /* no filtered view: nothing charged */
    pc_stat_add(st, c, 1, NULL, 3, 4, &s);
    ck_assert_double_eq_tol(st[3].fself_j, 2, EPS);
    ck_assert_double_eq_tol(st[1].self_j, 6, EPS);
    ck_assert_double_eq_tol(st[1].w_self_j, 6, EPS);

    /* the window's top two, then every window value back to 0 */
    int idx[2];
    double j[2];
    ck_assert_int_eq(pc_stat_window_top(st, 4, 2, idx, j), 2);
    ck_assert_int_eq(idx[0], 1);
    ck_assert_double_eq_tol(j[0], 6, EPS);
    ck_assert_int_eq(idx[1], 0);
    ck_assert_double_eq_tol(j[1], 2, EPS);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(st[i].w_self_j, 0, EPS);
    ck_assert_int_eq(pc_stat_window_top(st, 4, 2, idx, j), 0);
}
END_TEST

static const double rank_v[] = {1, 3, 1, 0, 3};
static const char *const rank_n[] = {"e", "d", "c", "b", "a"};
static double rank_key(const void *ctx, int i)
{
    (void)ctx;
    return rank_v[i];
}
static const char *rank_name(const void *ctx, int i)
{
    (void)ctx;
    return rank_n[i];
}
static int rank_keep(const void *ctx, int i)
{
    (void)ctx;
    return rank_v[i] > 0;
}

START_TEST(rank)
{
    size_t n;
    pc_rank r = {.count = 5, .keep = rank_keep, .key = rank_key};
    int *idx = pc_rank_select(&r, &n);
    ck_assert_ptr_nonnull(idx);
    ck_assert_uint_eq(n, 4);
    const int by_index[4] = {1, 4, 0, 2};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(idx[i], by_index[i]);
    free(idx);
    r.name = rank_name;
    idx = pc_rank_select(&r, &n);
    ck_assert_ptr_nonnull(idx);
    const int by_name[4] = {4, 1, 2, 0};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(idx[i], by_name[i]);
    free(idx);
}
END_TEST

static pa_target_info target(pa_target_type type, pid_t pid, pid_t tid, double cpu_j, double cpu_s,
                             unsigned flags)
{
    pa_target_info t;
    memset(&t, 0, sizeof(t));
    t.type = type;
    t.pid = pid;
    t.tid = tid;
    snprintf(t.comm, sizeof(t.comm), "%s", type == PA_TARGET_PROCESS ? "app" : "worker");
    t.power.cpu_j = cpu_j;
    t.power.cpu_time_s = cpu_s;
    t.power.interval_s = 1;
    t.power.flags = flags;
    return t;
}

/* Process 100 (cumulative 10 J, then 14 J: 4 J in the second window) with
 * threads 101 (0.3 s), 102 (0.1 s, first report) and 103 (0.1 s, no
 * sample); process 200 in no report, with two samples and 1 J of extra
 * energy.  10 ms samples: 101 x3, 102 x1 (whose samples show 0.01 s, as
 * the report). */
START_TEST(window_split)
{
    pc_tasks t = {.period_is_time = true};
    pc_prof *p;
    ck_assert_int_eq(pc_prof_new(&p, NULL, 0), 0);
    pa_target_info v[4] = {
        target(PA_TARGET_PROCESS, 100, 0, 10, 0.5, 0),
        target(PA_TARGET_THREAD, 100, 101, 0, 0.3, 0),
        target(PA_TARGET_THREAD, 100, 102, 0, 0.1, 0),
        target(PA_TARGET_THREAD, 100, 103, 0, 0.1, 0),
    };
    pa_report rep = {.ntargets = 4, .targets = v};
    pc_win w;
    pc_tasks_begin(&t);
    pc_tasks_report(&t, &rep, &w); /* first window: 10 J */
    ck_assert_double_eq_tol(w.procs_j, 10, EPS);
    v[0].power.cpu_j = 14;
    pc_tasks_begin(&t);
    pc_tasks_report(&t, &rep, &w);
    ck_assert_double_eq_tol(w.procs_j, 4, EPS);
    ck_assert_double_eq_tol(w.cpu_s, 0.5, EPS);
    ck_assert_str_eq(pc_tasks_comm(&t, 100), "app");
    const pid_t tids[] = {101, 101, 101, 102};
    for (int i = 0; i < 4; i++)
        pc_tasks_sample(&t, 100, tids[i], 10000000);
    pc_tasks_set_comm(&t, 200, "short");
    pc_tasks_sample(&t, 200, 201, 10000000);
    pc_tasks_sample(&t, 200, 201, 10000000);
    w.extra_j = 1;
    double f0, t0;
    pc_prof_sums(p, &f0, &t0);
    pc_tasks_split(&t, &w, p, 100);
    ck_assert_double_eq_tol(w.window_j, 5, EPS);
    /* E_thread = 4 J . cpu / 0.5 s; the unseen process's samples share
     * the extra joule */
    ck_assert_double_eq_tol(pc_tasks_thr(&t, 100, 101)->w_j, 2.4, 1e-9);
    ck_assert_double_eq_tol(pc_tasks_thr(&t, 100, 102)->w_j, 0.8, 1e-9);
    ck_assert_double_eq_tol(pc_tasks_thr(&t, 100, 103)->w_j, 0.8, 1e-9);
    ck_assert_double_eq_tol(pc_tasks_thr(&t, 200, 201)->w_j, 1.0, 1e-9);
    pc_frame f = pc_frame_pseudo("work");
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pc_tasks_charge(&t, p, 100, tids[i], 10000000, &f, 1), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pc_tasks_charge(&t, p, 200, 201, 10000000, &f, 1), 0);
    pc_tasks_end(&t, p); /* 103's 0.8 J: [unsampled] */
    double f1, t1;
    pc_prof_sums(p, &f1, &t1);
    ck_assert_double_eq_tol(f1 - f0, 5, 1e-9);
    ck_assert_double_eq_tol(t1 - t0, 5, 1e-9);
    pc_prof_free(p);
    pc_tasks_free(&t);
    pc_intern_free();
}
END_TEST

/* --all: 2 J to the processes seen over 0.5 s of CPU; an unseen process
 * sampled for 0.25 s.  With 1.5 J of active energy unclaimed (R), it
 * gets its time at the processes' rate, 1 J, from R; with none, (E + R)
 * . u / (s + u) = 2/3 J, taken from the processes seen. */
START_TEST(window_unseen)
{
    for (int k = 0; k < 2; k++) {
        pc_tasks t = {.period_is_time = true};
        pa_target_info v[1] = {target(PA_TARGET_PROCESS, 100, 0, 2, 0.5, 0)};
        pa_report rep = {.ntargets = 1, .targets = v};
        rep.system.interval_s = 1;
        rep.system.cpu_w = k == 0 ? 3.5 : 2;
        pc_win w;
        pc_tasks_begin(&t);
        pc_tasks_report(&t, &rep, &w);
        pc_tasks_proc(&t, 300);
        for (int i = 0; i < 25; i++)
            pc_tasks_sample(&t, 300, 300, 10000000);
        double x = pc_tasks_unseen(&t, &rep, &w);
        ck_assert_double_eq_tol(x, k == 0 ? 1.0 : 2.0 / 3, 1e-9);
        ck_assert_double_eq_tol(w.procs_j, k == 0 ? 2.0 : 4.0 / 3, 1e-9);
        ck_assert_double_eq_tol(pc_tasks_proc_find(&t, 100)->w_j, w.procs_j, 1e-9);
        pc_tasks_free(&t);
    }
}
END_TEST

/* A fake engine: four stacks of process 100, three of thread 101 in hot()
 * called by main(), one of thread 102 in cold(). */
typedef struct fake_engine {
    size_t n;
    int done;
} fake_engine;

static bool fake_next(void *self, size_t *at, pid_t *pid, pid_t *tid, uint64_t *weight)
{
    fake_engine *e = self;
    if (*at >= e->n)
        return false;
    *pid = 100;
    *tid = *at < 3 ? 101 : 102;
    *weight = 10000000;
    (*at)++;
    return true;
}

static int fake_frames(void *self, size_t at, pc_frame *out, int max)
{
    (void)self;
    ck_assert_int_ge(max, 2);
    out[0] = pc_frame_pseudo(at < 3 ? "hot" : "cold");
    out[1] = pc_frame_pseudo("main");
    return 2;
}

static void fake_done(void *self)
{
    ((fake_engine *)self)->done++;
}

/* What pc_prof_write is told of a run: 10 ms samples, 1 s windows. */
static pc_meta meta_of(const pc_source *src, const char *target, double process_j)
{
    return (pc_meta){.title = "t",
                     .target = target,
                     .event = "cpu-clock",
                     .call_graph = "fp",
                     .period_ns = 10000000,
                     .window_s = 1,
                     .source = src,
                     .kernel_state = "",
                     .exit_status = -1,
                     .tree_j = -1,
                     .unseen_j = -1,
                     .process_j = process_j};
}

/* The whole window through an engine, and the files: 4 J over threads
 * at 0.3 s and 0.1 s: hot 3 J, cold 1 J, main 4 J in total. */
START_TEST(window_engine)
{
    pc_tasks t = {.period_is_time = true};
    pc_prof *p;
    ck_assert_int_eq(pc_prof_new(&p, NULL, 0), 0);
    pa_target_info v[3] = {
        target(PA_TARGET_PROCESS, 100, 0, 4, 0.4, 0),
        target(PA_TARGET_THREAD, 100, 101, 0, 0.3, 0),
        target(PA_TARGET_THREAD, 100, 102, 0, 0.1, 0),
    };
    pa_report rep = {.ntargets = 3, .targets = v};
    fake_engine fe = {.n = 4};
    pc_engine e = {.self = &fe, .next = fake_next, .frames = fake_frames, .window_done = fake_done};
    pc_win w;
    pc_tasks_window(&t, p, &e, &rep, &w);
    ck_assert_int_eq(fe.done, 1);
    ck_assert_double_eq_tol(w.window_j, 4, EPS);
    ck_assert(w.error < 1e-12);
    pc_prof_window_end(p, 0, 1);
    char *dir = pa_test_tmpdir();
    pc_source src = {.formula = "cpu-tdp"};
    pc_meta m = meta_of(&src, "pid 100", 4);
    ck_assert_int_eq(pc_prof_write(p, dir, &m), 0);
    char path[4200];
    snprintf(path, sizeof(path), "%s/functions.csv", dir);
    char *csv = pa_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    ck_assert_ptr_nonnull(strstr(csv, "\nhot,,,3.000000000,3.000000000,3,3,0.030000\n"));
    ck_assert_ptr_nonnull(strstr(csv, "\ncold,,,1.000000000,1.000000000,1,1,0.010000\n"));
    ck_assert_ptr_nonnull(strstr(csv, "\nmain,,,0.000000000,4.000000000,0,4,0.040000\n"));
    /* sorted by self energy */
    ck_assert(strstr(csv, "\nhot,") < strstr(csv, "\ncold,"));
    free(csv);
    snprintf(path, sizeof(path), "%s/timeline.csv", dir);
    csv = pa_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    ck_assert_str_eq(csv, "window_start_s,function,power_w\n0.000,hot,3.000000\n"
                          "0.000,cold,1.000000\n");
    free(csv);
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    csv = pa_test_slurp(path);
    ck_assert_ptr_nonnull(strstr(csv, "\"formula\": \"cpu-tdp\",\n  \"sensors\": \"\","));
    ck_assert_ptr_nonnull(strstr(csv, "\"threads_energy_j\": 4.000000000,"));
    free(csv);
    pa_test_rmtree(dir);
    pc_prof_free(p);
    pc_tasks_free(&t);
    pc_intern_free();
}
END_TEST

/* A process that changes its name (a shell's child, "sh" until it execs
 * "sort") has one root in the flame graph, named as processes.csv names
 * it, whichever thread and name its samples came with. */
START_TEST(process_root_follows_exec)
{
    pc_prof *p;
    ck_assert_int_eq(pc_prof_new(&p, NULL, 0), 0);
    pc_frame f = pc_frame_pseudo("work");
    ck_assert_int_eq(pc_prof_add(p, &f, 1, 1.0, 0.01, 1, 300, 300, "sh", "sh"), 0);
    ck_assert_int_eq(pc_prof_add(p, &f, 1, 2.0, 0.02, 2, 300, 300, "sort", "sort"), 0);
    ck_assert_int_eq(pc_prof_add(p, &f, 1, 4.0, 0.04, 4, 300, 301, "sort", "sort"), 0);
    ck_assert_int_eq(pc_prof_add(p, &f, 1, 8.0, 0.08, 8, 400, 400, "tail", "tail"), 0);
    char *dir = pa_test_tmpdir();
    pc_source src = {.formula = "cpu-tdp"};
    pc_meta m = meta_of(&src, "command", 15);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(pc_prof_write(p, dir, &m), 0);
        char path[4200];
        snprintf(path, sizeof(path), "%s/processes.csv", dir);
        char *csv = pa_test_slurp(path);
        ck_assert_ptr_nonnull(csv);
        ck_assert_ptr_nonnull(strstr(csv, "\n300,sort,"));
        free(csv);
        snprintf(path, sizeof(path), "%s/flamegraph.html", dir);
        char *html = pa_test_slurp(path);
        ck_assert_ptr_nonnull(html);
        const char *at = strstr(html, "\"sort (pid 300)\"");
        ck_assert_ptr_nonnull(at);
        ck_assert_ptr_null(strstr(at + 1, "\"sort (pid 300)\""));
        ck_assert_ptr_null(strstr(html, "sh (pid 300)"));
        ck_assert_ptr_nonnull(strstr(html, "\"tail (pid 400)\""));
        free(html);
        /* samples after a write still find the process's root */
        ck_assert_int_eq(pc_prof_add(p, &f, 1, 1.0, 0.01, 1, 300, 302, "sort", "sort"), 0);
    }
    pa_test_rmtree(dir);
    pc_prof_free(p);
    pc_intern_free();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("profcore");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cum_delta);
    tcase_add_test(tc, tree_index);
    tcase_add_test(tc, stats_filter);
    tcase_add_test(tc, rank);
    tcase_add_test(tc, window_split);
    tcase_add_test(tc, window_unseen);
    tcase_add_test(tc, window_engine);
    tcase_add_test(tc, process_root_follows_exec);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
