/*
 * test_cpu_curve.c - the cpu-curve formula on the 2-socket server fixture
 * (4 CPUs, packages 0 = CPUs 0-1 and 1 = CPUs 2-3) with an explicit clock:
 * exact watts for interpolation, per-package curves, frequency scaling,
 * the idle split and conservation (tasks + idle = P every window), curves
 * from a calibration file and a hwdb record (scaled to the CPUs online),
 * the default per-vCPU curve, self-calibration against RAPL (and its
 * save= file read back without RAPL) and bad options.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL 1e-9

static void write_pid_stat(const char *root, int pid, const char *comm, unsigned long utime,
                           int cpu)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
    pa_test_write(root, rel,
                  "%d (%s) R 1 %d %d 0 -1 4194560 100 0 0 0 %lu 0 0 0 20 0 "
                  "1 0 %d 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 "
                  "4096 0 0 0 0 17 %d 0 0 0 0 0\n",
                  pid, comm, pid, pid, utime, 40000 + pid, cpu);
}

typedef struct srv {
    char *root;
    pa_ctx *ctx;
    unsigned long b[4], i[4]; /* per-CPU busy / idle ticks */
    unsigned long u100, u200;
    unsigned long f_hi, f_lo; /* time_in_state units */
    unsigned long long pkg0;
    uint64_t t_ns;
} srv;

static void write_state(srv *s)
{
    unsigned long B = s->b[0] + s->b[1] + s->b[2] + s->b[3];
    unsigned long I = s->i[0] + s->i[1] + s->i[2] + s->i[3];
    pa_test_write(s->root, "proc/stat",
                  "cpu  %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu0 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu1 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu2 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "cpu3 %lu 0 0 %lu 0 0 0 0 0 0\n"
                  "intr 0\nctxt 1000\nbtime 1732200000\nprocesses 500\n"
                  "procs_running 1\nprocs_blocked 0\n",
                  B, I, s->b[0], s->i[0], s->b[1], s->i[1], s->b[2], s->i[2], s->b[3], s->i[3]);
    write_pid_stat(s->root, 100, "web", s->u100, 1);
    write_pid_stat(s->root, 200, "db", s->u200, 2);
    pa_test_write(s->root, "sys/class/powercap/intel-rapl:0/energy_uj", "%llu\n", s->pkg0);
    if (s->f_hi || s->f_lo)
        pa_test_write(s->root,
                      "sys/devices/system/cpu/cpufreq/policy0/stats/"
                      "time_in_state",
                      "2100000 %lu\n1050000 %lu\n", s->f_hi, s->f_lo);
}

/* Opens the fixture with procfs-cpu (+ rapl when rapl) and cpu-curve. */
static void srv_open(srv *s, const char *opts, bool freq, bool rapl)
{
    memset(s, 0, sizeof(*s));
    unsetenv("POWERAPI_CALIBRATION");
    s->root = pa_test_fixture_copy("rapl-server2s");
    for (int k = 0; k < 4; k++) {
        s->b[k] = 1000;
        s->i[k] = 1000;
    }
    s->u100 = 100;
    s->u200 = 100;
    s->pkg0 = 1000000;
    if (freq) {
        pa_test_write(s->root, "sys/devices/system/cpu/cpufreq/policy0/affected_cpus", "0 1 2 3\n");
        s->f_hi = 10;
        s->f_lo = 10;
    }
    write_state(s);
    s->ctx = pa_test_ctx(s->root);
    ck_assert_int_eq(pa_module_enable(s->ctx, "procfs-cpu", NULL), 0);
    if (rapl)
        ck_assert_int_eq(pa_module_enable(s->ctx, "rapl", NULL), 0);
    int rc = pa_module_enable(s->ctx, "cpu-curve", opts);
    ck_assert_msg(rc == 0, "%s", pa_last_error());
    ck_assert_int_eq(pa_watch_all(s->ctx, 1), 0);
    s->t_ns = NS_PER_S;
    ck_assert_int_eq(pa_tick_at(s->ctx, s->t_ns), 0);
}

/* One 1 s window: busy ticks of each CPU (of 100), web's and db's ticks,
 * package-0 joules, and 10 ms units at 2.1 / 1.05 GHz. */
static void srv_step(srv *s, const unsigned long busy[4], unsigned long d100, unsigned long d200,
                     double pkg_j, unsigned long hi, unsigned long lo)
{
    for (int k = 0; k < 4; k++) {
        s->b[k] += busy[k];
        s->i[k] += 100 - busy[k];
    }
    s->u100 += d100;
    s->u200 += d200;
    s->pkg0 += (unsigned long long)(pkg_j * 1e6);
    s->f_hi += hi;
    s->f_lo += lo;
    write_state(s);
    s->t_ns += NS_PER_S;
    int rc = pa_tick_at(s->ctx, s->t_ns);
    ck_assert_msg(rc == 0, "tick: %s", pa_last_error());
}

static void srv_close(srv *s)
{
    pa_ctx_free(s->ctx);
    pa_test_rmtree(s->root);
}

static double pid_w(pa_ctx *ctx, pid_t pid)
{
    pa_power p;
    int rc = pa_pid_power(ctx, pid, &p);
    ck_assert_msg(rc == 0, "pid %d: %s", (int)pid, pa_last_error());
    ck_assert(!(p.flags & PA_POWER_MEASURED));
    return p.cpu_w;
}

/* Checks system watts, idle, conservation and the assumed text. */
static void check_sys(pa_ctx *ctx, double cpu_w, double idle_w, const char *assumed)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    ck_assert_str_eq(r->formula, "cpu-curve");
    ck_assert_str_eq(r->cpu_source, "model");
    ck_assert_double_eq_tol(r->system.cpu_w, cpu_w, TOL);
    ck_assert_double_eq_tol(r->system.idle_w, idle_w, TOL);
    double sum = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (r->targets[i].type == PA_TARGET_PROCESS || r->targets[i].type == PA_TARGET_EXITED ||
            r->targets[i].type == PA_TARGET_UNACCOUNTED)
            sum += r->targets[i].power.cpu_w;
    ck_assert_double_eq_tol(sum + r->system.idle_w, r->system.cpu_w, TOL);
    if (assumed)
        ck_assert_msg(strstr(r->assumed, assumed) != NULL, "'%s' not in '%s'", assumed, r->assumed);
    pa_report_free(r);
}

static double model_error(pa_ctx *ctx)
{
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    double e = r->model_error;
    pa_report_free(r);
    return e;
}

/* points 0:40, 50:70, 100:100 of the machine.  u = 100 of 400 ticks =
 * 0.25: P = 40 + 30 x 0.25/0.5 = 55 W; static 40 W is idle; the dynamic
 * 15 W goes by share of the busy 1 s to web (0.6 s) and db (0.3 s): 9 W
 * and 4.5 W, and 1.5 W to what no process accounts for. */
START_TEST(interpolation_and_idle_split)
{
    srv s;
    srv_open(&s, "points=0:40+50:70+100:100", false, false);
    const unsigned long busy[4] = {25, 25, 25, 25};
    srv_step(&s, busy, 60, 30, 0, 0, 0);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 9.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 4.5, TOL);
    check_sys(s.ctx, 55.0, 40.0, "cpu-curve: curve from option points=");
    ck_assert(model_error(s.ctx) < 0); /* unknown for an option's curve */
    /* u = 0.75: 70 + 30 x 0.5 = 85 W; web alone ran: all 45 W dynamic */
    const unsigned long busy2[4] = {75, 75, 75, 75};
    srv_step(&s, busy2, 300, 0, 0, 0, 0);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 45.0, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 0.0, TOL);
    check_sys(s.ctx, 85.0, 40.0, NULL);
    /* energy integrates: web 9 J + 45 J */
    pa_power p;
    ck_assert_int_eq(pa_pid_power(s.ctx, 100, &p), 0);
    ck_assert_double_eq_tol(p.cpu_j, 54.0, TOL);
    srv_close(&s);
}
END_TEST

/* A curve that starts above idle, as a calibration made on a busy machine
 * does: points 40:70, 60:80, 100:100.  Below 40 % the line of the points
 * within 25 points of the first (40 and 60: 50 W per unit of load), through
 * the first: P(0) = 50 W, not the first point's 70 W.  u = 0.25: P = 62.5 W,
 * idle 50 W, the dynamic 12.5 W to web and db by their 0.6 s and 0.3 s
 * of the busy 1 s (1.25 W unaccounted); the assumed text says
 * where the curve starts.  u = 0.5 interpolates as before: 75 W. */
START_TEST(curve_starting_above_idle)
{
    srv s;
    srv_open(&s, "points=40:70+60:80+100:100", false, false);
    const unsigned long busy[4] = {25, 25, 25, 25};
    srv_step(&s, busy, 60, 30, 0, 0, 0);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 12.5 * 0.6, TOL);
    ck_assert_double_eq_tol(pid_w(s.ctx, 200), 12.5 * 0.3, TOL);
    check_sys(s.ctx, 62.5, 50.0,
              "cpu-curve: the curve starts at 40 % load: below it, "
              "extrapolated along its lowest points (the curve's 50 W "
              "at idle, 70 W at its first point)");
    const unsigned long busy2[4] = {50, 50, 50, 50};
    srv_step(&s, busy2, 60, 30, 0, 0, 0);
    check_sys(s.ctx, 75.0, 50.0, NULL);
    srv_close(&s);
    /* a curve from 0 says nothing of it */
    srv_open(&s, "points=0:40+50:70+100:100", false, false);
    srv_step(&s, busy, 60, 30, 0, 0, 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    ck_assert_ptr_null(strstr(r->assumed, "the curve starts at"));
    pa_report_free(r);
    srv_close(&s);
}
END_TEST

/* per=package points 0:10, 100:30: package 0 (CPUs 0-1) fully busy = 30 W,
 * package 1 idle = 10 W: P = 40 W, idle (2 x 10) = 20 W, and web gets
 * the dynamic 20 W.  With the machine's utilisation (0.5) instead it would
 * be 2 x 20 = 40 W too, so a second window tells them apart: package 0 at
 * 50 %, package 1 at 0 %: 20 + 10 = 30 W. */
START_TEST(several_packages)
{
    srv s;
    srv_open(&s, "points=0:10+100:30,per=package", false, false);
    const unsigned long busy[4] = {100, 100, 0, 0};
    srv_step(&s, busy, 200, 0, 0, 0, 0);
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 20.0, TOL);
    check_sys(s.ctx, 40.0, 20.0, "cpu-curve: per package, each at its CPUs'");
    const unsigned long busy2[4] = {50, 50, 0, 0};
    srv_step(&s, busy2, 100, 0, 0, 0, 0);
    check_sys(s.ctx, 30.0, 20.0, NULL);
    srv_close(&s);
}
END_TEST

/* fref=2100: the window spent 3/4 of its time at 1.05 GHz and 1/4 at
 * 2.1 GHz, f = 1.3125 GHz: the dynamic part at u = 0.5 (30 W) is scaled
 * by 0.625 to 18.75 W: P = 58.75 W. */
START_TEST(frequency_scaling)
{
    srv s;
    srv_open(&s, "points=0:40+50:70+100:100,fref=2100", true, false);
    const unsigned long busy[4] = {50, 50, 50, 50};
    srv_step(&s, busy, 200, 0, 0, 100, 300);
    check_sys(s.ctx, 58.75, 40.0, "f_ref=2100MHz");
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 18.75, TOL);
    srv_close(&s);
}
END_TEST

/* A curve of the fixture's CPU model with n points, and the path
 * DIR/cal.txt for its file in a new folder DIR (returned). */
static char *curve_of(pa_curve *c, size_t n, const double *load, const double *watts, char *path,
                      size_t len)
{
    char *dir = pa_test_tmpdir();
    snprintf(path, len, "%s/cal.txt", dir);
    memset(c, 0, sizeof(*c));
    snprintf(c->match, sizeof(c->match), "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz");
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        c->load[i] = load[i];
        c->watts[i] = watts[i];
    }
    return dir;
}

/* A calibration file: its points (load %, watts), and its validation
 * error becomes model_error. */
START_TEST(calibration_file)
{
    char path[4200];
    pa_curve c;
    const double load[3] = {0, 0.4, 1}, watts[3] = {20, 60, 80};
    char *dir = curve_of(&c, 3, load, watts, path, sizeof(path));
    const double res[3] = {0.1, 0.2, 0.3};
    ck_assert_int_eq(pa__calib_write(path, &c, res, "6.18", "2026-11-23", 4, 2.5, 4.0, 0.5), 0);
    char opts[4300];
    snprintf(opts, sizeof(opts), "calibration=%s", path);
    srv s;
    srv_open(&s, opts, false, false);
    /* u = 0.7: 60 + 20 x 0.3/0.6 = 70 W */
    const unsigned long busy[4] = {70, 70, 70, 70};
    srv_step(&s, busy, 280, 0, 0, 0, 0);
    check_sys(s.ctx, 70.0, 20.0, "cpu-curve: calibration ");
    ck_assert_double_eq_tol(model_error(s.ctx), 0.025, TOL);
    srv_close(&s);
    /* the same file found through $POWERAPI_CALIBRATION by auto */
    setenv("POWERAPI_CALIBRATION", path, 1);
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_test_remove(root, "sys/class/powercap/intel-rapl:0/energy_uj");
    pa_test_remove(root, "sys/class/powercap/intel-rapl:1/energy_uj");
    pa_test_remove(root, "sys/class/powercap/intel-rapl:0:0/energy_uj");
    pa_test_remove(root, "sys/class/powercap/intel-rapl:1:0/energy_uj");
    pa_test_remove(root, "sys/class/powercap/intel-rapl-mmio:0/energy_uj");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "auto", NULL), 0);
    pa_module_info mi[16];
    int n = pa_module_list(ctx, mi, 16);
    bool found = false;
    for (int k = 0; k < n && k < 16; k++)
        if (!strcmp(mi[k].name, "cpu-curve")) {
            found = mi[k].enabled;
            ck_assert_msg(strstr(mi[k].auto_why, "calibration") != NULL, "%s", mi[k].auto_why);
        }
    ck_assert(found);
    pa_ctx_free(ctx);
    unsetenv("POWERAPI_CALIBRATION");
    /* the same file given to the context (pa_ctx_set_calibration, what
     * --calibration does): auto takes it, the environment untouched, and
     * the curve gives the same 70 W at u = 0.7 */
    ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_ctx_set_calibration(ctx, "/nonexistent/c.txt"), -ENOENT);
    ck_assert_int_eq(pa_ctx_set_calibration(ctx, path), 0);
    ck_assert_ptr_null(getenv("POWERAPI_CALIBRATION"));
    pa_module_info one;
    ck_assert_int_eq(pa_tick_at(ctx, 1000000000ull), 0);
    ck_assert_int_eq(pa_module_get(ctx, "cpu-curve", &one), 0);
    ck_assert(one.enabled && one.by_auto);
    char want[4300];
    snprintf(want, sizeof(want), "no RAPL; calibration %s (", path);
    ck_assert_msg(strstr(one.auto_why, want) != NULL, "%s", one.auto_why);
    ck_assert_str_eq(pa_env_calibration(&ctx->env), path);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
    pa_test_rmtree(dir);
}
END_TEST

/* A calibration with curves at 1050 MHz (20..40 W) and 2100 MHz
 * (20..80 W): a window half at each (f = 1575 MHz) at u = 0.5 gets the
 * mean of 30 W and 50 W = 40 W, idle 20 W (the main points with f/f_ref
 * scaling would give 50 W); at 2100 MHz only, 50 W. */
START_TEST(calibration_per_frequency)
{
    char path[4200];
    pa_curve c;
    const double load[2] = {0, 1}, watts[2] = {20, 100};
    char *dir = curve_of(&c, 2, load, watts, path, sizeof(path));
    c.mhz = 2100;
    c.nfreq = 2;
    c.fmhz[0] = 1050;
    c.fmhz[1] = 2100;
    for (int k = 0; k < 2; k++) {
        c.fn[k] = 2;
        c.fload[k][1] = 1;
        c.fwatts[k][0] = 20;
        c.fwatts[k][1] = k ? 80 : 40;
        c.fres[k][1] = 0.5;
    }
    ck_assert_int_eq(pa__calib_write(path, &c, NULL, NULL, NULL, 4, -1, -1, -1), 0);
    pa_curve r;
    ck_assert_int_eq(pa__calib_read(path, &r), 0);
    ck_assert_uint_eq(r.nfreq, 2);
    ck_assert_double_eq_tol(r.fmhz[1], 2100, TOL);
    ck_assert_double_eq_tol(r.fwatts[0][1], 40, TOL);
    ck_assert_double_eq_tol(r.fres[1][1], 0.5, TOL);
    char opts[4300];
    snprintf(opts, sizeof(opts), "calibration=%s", path);
    srv s;
    srv_open(&s, opts, true, false);
    const unsigned long busy[4] = {50, 50, 50, 50};
    srv_step(&s, busy, 200, 0, 0, 200, 200);
    check_sys(s.ctx, 40.0, 20.0, "interpolated at the window's 1575 MHz");
    ck_assert_double_eq_tol(pid_w(s.ctx, 100), 20.0, TOL);
    srv_step(&s, busy, 200, 0, 0, 400, 0);
    check_sys(s.ctx, 50.0, 20.0, "curves at 1050..2100 MHz");
    srv_close(&s);
    /* fpoint lines out of order are refused */
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fputs("fpoint 900 0 10 0\n", f);
    fclose(f);
    ck_assert_int_eq(pa__calib_read(path, &r), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "not above the previous"));
    pa_test_rmtree(dir);
}
END_TEST

/* model=X5670: the SPECpower curve of a 24-thread server, 4 CPUs online:
 * x 4/24.  u = 0.5: 156 W x 4/24 = 26 W, idle 66 x 4/24 = 11 W. */
START_TEST(hwdb_record_scaled)
{
    srv s;
    srv_open(&s, "model=X5670", false, false);
    const unsigned long busy[4] = {50, 50, 50, 50};
    srv_step(&s, busy, 200, 0, 0, 0, 0);
    check_sys(s.ctx, 26.0, 11.0, "4 of the curve's 24 CPUs online");
    srv_close(&s);
}
END_TEST

/* No curve for the Gold 6130: the default 0.74 .. 3.5 W per vCPU x 4.
 * u = 0.25: 4 x (0.74 + 2.76 x 0.25) = 5.72 W, idle 2.96 W. */
START_TEST(default_curve)
{
    srv s;
    srv_open(&s, NULL, false, false);
    const unsigned long busy[4] = {25, 25, 25, 25};
    srv_step(&s, busy, 100, 0, 0, 0, 0);
    check_sys(s.ctx, 5.72, 2.96, "cpu-curve: default 0.74 W idle");
    srv_close(&s);
}
END_TEST

/* $POWERAPI_CALIBRATION naming a file that does not parse: the default
 * curve, and the report says which file was not used and why (a silent
 * fallback would pass the default off as the user's calibration). */
START_TEST(bad_calibration_stated)
{
    char *dir = pa_test_tmpdir();
    char path[4200];
    snprintf(path, sizeof(path), "%s/bad.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("cpu \"x\"\npoints; of nothing\n", f);
    fclose(f);
    srv s;
    srv_open(&s, NULL, false, false);
    setenv("POWERAPI_CALIBRATION", path, 1);
    const unsigned long busy[4] = {25, 25, 25, 25};
    srv_step(&s, busy, 100, 0, 0, 0, 0);
    check_sys(s.ctx, 5.72, 2.96, "cpu-curve: default 0.74 W idle");
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(s.ctx, &r), 0);
    const char *a = strstr(r->assumed, "$POWERAPI_CALIBRATION not used: ");
    ck_assert_msg(a && strstr(a, path) && strstr(a, ":2: cannot parse"), "%s", r->assumed);
    /* one item: the reason's own ';' must not split the list */
    ck_assert_msg(!strchr(a, ';') || strstr(a, ";") > strstr(a, "again)"), "%s", r->assumed);
    pa_report_free(r);
    unsetenv("POWERAPI_CALIBRATION");
    srv_close(&s);
    pa_test_rmtree(dir);
}
END_TEST

/* With RAPL in the window the curve learns: the option's curve says
 * 40 + 60u, RAPL package 0 says 20 + 40u (packages 1, DRAM: 0 J).  Each
 * load bin needs 5 windows; then the learned points replace the option's
 * and the error falls; an outlier window is rejected. */
START_TEST(self_calibration)
{
    char *dir = pa_test_tmpdir();
    char path[4200], opts[4300];
    snprintf(path, sizeof(path), "%s/learned.txt", dir);
    snprintf(opts, sizeof(opts), "points=0:40+100:100,save=%s", path);
    srv s;
    srv_open(&s, opts, false, true);
    const unsigned long lo[4] = {0, 0, 0, 0}, hi[4] = {100, 100, 100, 100};
    for (int k = 0; k < 6; k++) {
        srv_step(&s, lo, 0, 0, 20, 0, 0);
        srv_step(&s, hi, 200, 200, 60, 0, 0);
    }
    double e = model_error(s.ctx);
    ck_assert(e > 0.2); /* the option's curve was 67-100 % off at first */
    /* learned: at u = 1 the curve now gives 60 W */
    srv_step(&s, hi, 200, 200, 60, 0, 0);
    check_sys(s.ctx, 60.0, 20.0, "self-calibrated from");
    /* an outlier (600 W at full load) is rejected: still 60 W */
    srv_step(&s, hi, 200, 200, 600, 0, 0);
    srv_step(&s, hi, 200, 200, 60, 0, 0);
    check_sys(s.ctx, 60.0, 20.0, "1 outliers rejected");
    check_sys(s.ctx, 60.0, 20.0, "saved to");
    double learned_e = model_error(s.ctx);
    ck_assert(learned_e < e);
    ck_assert(learned_e > 0);
    /* save=: nothing before the formula stops, then the learned curve */
    ck_assert_int_eq(access(path, F_OK), -1);
    srv_close(&s);
    pa_curve c;
    ck_assert_msg(pa__calib_read(path, &c) == 0, "%s", pa_last_error());
    ck_assert_str_eq(c.match, "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz");
    ck_assert_uint_eq(c.n, 2); /* the two bins with enough windows */
    ck_assert_uint_eq(c.threads, 4);
    ck_assert_double_eq_tol(c.watts[0], 20.0, 1e-4);
    ck_assert_double_eq_tol(c.watts[1], 60.0, 1e-4);
    ck_assert_double_eq_tol(c.error, learned_e, 1e-5);
    /* read back by a context without RAPL: the learned watts at u = 0.5
     * (40 W, where the option's curve gave 70 W) and the learned error */
    snprintf(opts, sizeof(opts), "calibration=%s", path);
    srv_open(&s, opts, false, false);
    const unsigned long half[4] = {50, 50, 50, 50};
    srv_step(&s, half, 200, 0, 0, 0, 0);
    check_sys(s.ctx, 40.0, 20.0, "cpu-curve: calibration ");
    ck_assert_double_eq_tol(model_error(s.ctx), learned_e, 1e-5);
    srv_close(&s);
    /* fewer than 2 learned bins: no file is written */
    unlink(path);
    snprintf(opts, sizeof(opts), "save=%s", path);
    srv_open(&s, opts, false, true);
    for (int k = 0; k < 6; k++)
        srv_step(&s, hi, 200, 200, 60, 0, 0);
    check_sys(s.ctx, 4 * 3.5, 4 * 0.74, "1 of 11 load bins");
    srv_close(&s);
    ck_assert_int_eq(access(path, F_OK), -1);
    pa_test_rmtree(dir);
}
END_TEST

START_TEST(bad_options)
{
    char *root = pa_test_fixture_copy("rapl-server2s");
    pa_ctx *ctx = pa_test_ctx(root);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "points=0:10"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "at least 2 points"));
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "points=0:10+50:5"), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "must not fall"));
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "per=vcpu"), -EINVAL);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "calibration=/nonexistent/cal"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "powerapi calibrate"));
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "model=Z80"), -EINVAL);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "learn=maybe"), -EINVAL);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "save=/nonexistent/dir/cal.txt"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "not writable"));
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-curve", "learn=off,save=/tmp/cal.txt"), -EINVAL);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu-curve");
    TCase *tc = tcase_create("fixtures");
    tcase_add_test(tc, interpolation_and_idle_split);
    tcase_add_test(tc, curve_starting_above_idle);
    tcase_add_test(tc, several_packages);
    tcase_add_test(tc, frequency_scaling);
    tcase_add_test(tc, calibration_file);
    tcase_add_test(tc, calibration_per_frequency);
    tcase_add_test(tc, hwdb_record_scaled);
    tcase_add_test(tc, default_curve);
    tcase_add_test(tc, bad_calibration_stated);
    tcase_add_test(tc, self_calibration);
    tcase_add_test(tc, bad_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
