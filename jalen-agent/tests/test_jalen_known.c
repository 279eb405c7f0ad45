/*
 * test_jalen_known.c - known-answer workloads under the agent, in both
 * sampling modes (real JVMs).
 *
 * Known.java: thread "burner" spends 60/30/10 % of its CPU time in
 * burnA/burnB/burnC; "duty-high" burns 3x the CPU of "duty-low"; sendA and
 * sendB write 3,000,000 and 1,000,000 bytes over loopback, receiveAll reads
 * the 4,000,000; sendUdp and writeUdp send 500,000 bytes of datagrams each
 * (DatagramChannelImpl.send0, DatagramDispatcher.write0); reuseSocket
 * moves 40,000 bytes over sockets whose fd numbers reuseFile then gets for
 * a file (none of its bytes are network).  NetQuiet.java (filter=NetQuiet):
 * two methods that move bytes with next to no CPU keep their rows and bytes
 * in methods-filtered.csv.  Expected: inclusive shares within 3 points, thread energy
 * ratio within 10 %, net_bytes within 2 %, conservation within 0.5 %.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "jtest.h"

/* The line of Known.java that is text once its indentation is gone (0:
 * none). */
static int java_line(const char *text)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/Known.java", JALEN_JAVA_SRC);
    char *src = jt_read(p);
    ck_assert_msg(src != NULL, "cannot read %s", p);
    int line = 1, found = 0;
    for (const char *l = src; *l && !found; line++) {
        size_t len = strcspn(l, "\n");
        const char *b = l + strspn(l, " ");
        if ((size_t)(l + len - b) == strlen(text) && !strncmp(b, text, strlen(text)))
            found = line;
        l += len + (l[len] == '\n');
    }
    free(src);
    return found;
}

/* The flat and cumulative microjoules of a row of `pprof -lines -top`
 * ("  FUNC FILE:LINE\n" its end), 0 and 0 when there is none. */
static void pprof_row(const char *top, const char *tail, double *flat, double *cum)
{
    *flat = *cum = 0;
    const char *hit = strstr(top, tail);
    if (!hit)
        return;
    const char *c = hit;
    while (c > top && c[-1] != '\n')
        c--;
    /* "  6094782microjoules 55.2% 55.2% 6094782microjoules 55.2%  F ..." */
    for (int field = 0; field < 4; field++) {
        c += strspn(c, " ");
        if (field == 0)
            *flat = strtod(c, NULL);
        else if (field == 3)
            *cum = strtod(c, NULL);
        c += strcspn(c, " \n");
    }
}

/* Energy per source line (pprof): the burner's three call lines get
 * 60/30/10 % of what they call, as its three methods do; spin's flat
 * energy is on its loop's lines. */
static void check_lines(const char *dir, const char *mode)
{
    if (!JALEN_GO[0]) {
        fprintf(stderr,
                "[%s] pprof lines: SKIPPED: go not found at configure time "
                "(Debian golang-go, scripts/deps.sh)\n",
                mode);
        return;
    }
    char cmd[9000];
    snprintf(cmd, sizeof(cmd),
             "HOME=%s GOCACHE=%s/gocache %s tool pprof -lines -top -nodecount=1000 "
             "-sample_index=energy %s/out/profile.pb.gz 2>&1",
             dir, dir, JALEN_GO, dir);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    size_t cap = 1 << 16, len = 0, n;
    char *top = malloc(cap);
    ck_assert(top != NULL);
    while ((n = fread(top + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            top = realloc(top, cap *= 2);
            ck_assert(top != NULL);
        }
    }
    top[len] = '\0';
    ck_assert_msg(pclose(f) == 0, "%s:\n%s", cmd, top);
    static const char *const calls[3] = {"burnA();", "burnB();", "burnC();"};
    static const double want[3] = {60, 30, 10};
    double cum[3], s = 0, flat;
    char tail[128];
    for (int i = 0; i < 3; i++) {
        int line = java_line(calls[i]);
        ck_assert_msg(line > 0, "no line '%s' in Known.java", calls[i]);
        snprintf(tail, sizeof(tail), "  Known.burner Known.java:%d\n", line);
        pprof_row(top, tail, &flat, &cum[i]);
        s += cum[i];
    }
    ck_assert_msg(s > 0, "no energy on burner's call lines:\n%s", top);
    fprintf(stderr, "[%s] burner's call lines: %.1f%% %.1f%% %.1f%%\n", mode, 100 * cum[0] / s,
            100 * cum[1] / s, 100 * cum[2] / s);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(100 * cum[i] / s - want[i]) <= 3,
                      "burner's line of %s: %.1f%%, not %.0f+-3:\n%s", calls[i], 100 * cum[i] / s,
                      want[i], top);
    /* spin: its flat energy on the loop's two lines */
    double loop = 0, all = 0;
    int first = java_line("for (int i = 0; i < 2000; i++)");
    ck_assert(first > 0);
    for (int line = first - 5; line <= first + 5; line++) {
        snprintf(tail, sizeof(tail), "  Known.spin Known.java:%d\n", line);
        pprof_row(top, tail, &flat, &cum[0]);
        all += flat;
        if (line == first || line == first + 1)
            loop += flat;
    }
    fprintf(stderr, "[%s] spin: %.1f%% of its flat energy on the loop's lines\n", mode,
            all > 0 ? 100 * loop / all : 0.0);
    ck_assert_msg(all > 0 && loop >= 0.5 * all, "spin's loop lines: %.0f of %.0f uJ:\n%s", loop,
                  all, top);
    free(top);
}

/* profile.pb.gz's three sample types add up to the run's figures: the
 * samples to summary.json's, the CPU nanoseconds to threads.csv's CPU
 * time, the microjoules to the process's energy (0.5 %).  The samples and
 * CPU columns were zeros once (the tree kept only the energy). */
static void check_pprof_totals(const char *dir, const char *mode, double samples, double cpu_s,
                               double energy_j)
{
    if (!JALEN_GO[0])
        return; /* check_lines said why */
    char cmd[9000];
    snprintf(cmd, sizeof(cmd),
             "HOME=%s GOCACHE=%s/gocache %s tool pprof -raw %s/out/profile.pb.gz 2>&1", dir, dir,
             JALEN_GO, dir);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    char line[1 << 14];
    double v[3] = {0, 0, 0};
    while (fgets(line, sizeof(line), f)) {
        /* "   count   cpu_ns   energy_uj: loc loc ..." under "Samples:" */
        double a, b, c;
        char colon;
        if (sscanf(line, " %lf %lf %lf%c", &a, &b, &c, &colon) == 4 && colon == ':') {
            v[0] += a;
            v[1] += b;
            v[2] += c;
        }
    }
    ck_assert_msg(pclose(f) == 0, "%s failed", cmd);
    fprintf(stderr,
            "[%s] profile.pb.gz: %.0f samples (summary %.0f), %.3f CPU-s (threads %.3f), "
            "%.3f J (process %.3f)\n",
            mode, v[0], samples, v[1] / 1e9, cpu_s, v[2] / 1e6, energy_j);
    ck_assert_msg(v[0] == samples, "pprof samples %.0f, summary %.0f", v[0], samples);
    ck_assert_msg(fabs(v[1] / 1e9 - cpu_s) <= 0.005 * cpu_s, "pprof CPU %.3f s, threads %.3f s",
                  v[1] / 1e9, cpu_s);
    ck_assert_msg(fabs(v[2] / 1e6 - energy_j) <= 0.005 * energy_j, "pprof %.3f J, process %.3f J",
                  v[2] / 1e6, energy_j);
}

/* mode: "cpu", "jvmti", or "cpu" with more options ("cpu,clock=timer") */
static void run_known(const char *mode)
{
    char *dir = jt_tmpdir();
    char opts[64], p[4200];
    snprintf(opts, sizeof(opts), "mode=%s", mode);
    const char *args[] = {"Known", "4", NULL};
    char *sum = jt_run_quiet(dir, opts, args, 100);
    char want[64];
    snprintf(want, sizeof(want), "\"mode\": \"%.*s\"", (int)strcspn(mode, ","), mode);
    ck_assert_ptr_nonnull(strstr(sum, want));
    ck_assert_msg(jt_json_num(sum, "process_energy_j") > 0, "no process energy");
    ck_assert_msg(jt_json_num(sum, "samples") >= 200, "only %.0f samples",
                  jt_json_num(sum, "samples"));

    jt_csv me, th;
    snprintf(p, sizeof(p), "%s/out/methods.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &me), 0);
    /* every sample counted is someone's self sample: none lost between
     * the signal handler's ring and the profile */
    ck_assert_msg(jt_csv_sum(&me, 5) == jt_json_num(sum, "samples"),
                  "self samples %.0f, samples %.0f", jt_csv_sum(&me, 5),
                  jt_json_num(sum, "samples"));
    double nsamples = jt_json_num(sum, "samples"), process_j = jt_json_num(sum, "process_energy_j");
    free(sum);
    snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    check_pprof_totals(dir, mode, nsamples, jt_csv_sum(&th, 2), process_j);

    /* inclusive shares of the burner's three methods: 60/30/10 */
    double a = jt_num(jt_csv_find(&me, 0, "Known.burnA"), 2);
    double b = jt_num(jt_csv_find(&me, 0, "Known.burnB"), 2);
    double c = jt_num(jt_csv_find(&me, 0, "Known.burnC"), 2);
    double burner = jt_num(jt_csv_find(&th, 1, "burner"), 3);
    ck_assert_msg(a > 0 && b > 0 && c > 0 && burner > 0, "burn methods missing");
    double s = a + b + c;
    fprintf(stderr, "[%s] shares A %.1f%% B %.1f%% C %.1f%% (of burner %.1f%%)\n", mode,
            100 * a / s, 100 * b / s, 100 * c / s, 100 * s / burner);
    ck_assert_msg(fabs(100 * a / s - 60) <= 3, "burnA %.1f%% not 60+-3", 100 * a / s);
    ck_assert_msg(fabs(100 * b / s - 30) <= 3, "burnB %.1f%% not 30+-3", 100 * b / s);
    ck_assert_msg(fabs(100 * c / s - 10) <= 3, "burnC %.1f%% not 10+-3", 100 * c / s);
    ck_assert_msg(s <= burner * 1.005 && s >= burner * 0.9,
                  "burn methods %.3f J vs burner thread %.3f J", s, burner);
    check_lines(dir, mode);

    /* duty cycles 30 % and 10 % of CPU: energy ratio 3 within 10 % */
    double hi = jt_num(jt_csv_find(&th, 1, "duty-high"), 3);
    double lo = jt_num(jt_csv_find(&th, 1, "duty-low"), 3);
    ck_assert_msg(hi > 0 && lo > 0, "duty threads missing");
    fprintf(stderr, "[%s] duty energy ratio %.3f\n", mode, hi / lo);
    ck_assert_msg(fabs(hi / lo - 3.0) <= 0.3, "duty ratio %.3f not 3+-10%%", hi / lo);

    /* bytes per method over loopback, within 2 % */
    struct {
        const char *m;
        double bytes;
    } nb[] = {{"Known.sendA", 3e6},   {"Known.sendB", 1e6},    {"Known.receiveAll", 4e6},
              {"Known.sendUdp", 5e5}, {"Known.writeUdp", 5e5}, {"Known.reuseSocket", 4e4}};
    for (size_t i = 0; i < sizeof(nb) / sizeof(nb[0]); i++) {
        double got = jt_num(jt_csv_find(&me, 0, nb[i].m), 7);
        fprintf(stderr, "[%s] %s net_bytes %.0f\n", mode, nb[i].m, got);
        ck_assert_msg(fabs(got - nb[i].bytes) <= 0.02 * nb[i].bytes, "%s: %.0f bytes, not %.0f",
                      nb[i].m, got, nb[i].bytes);
    }
    /* a file written through the socket's fd number once it is closed is
     * not network (the fd's cached kind is forgotten on close) */
    const jt_row *rf = jt_csv_find(&me, 0, "Known.reuseFile");
    double fb = rf ? jt_num(rf, 7) : 0;
    fprintf(stderr, "[%s] Known.reuseFile net_bytes %.0f\n", mode, fb);
    ck_assert_msg(fb == 0, "reuseFile: %.0f bytes of a file counted as network", fb);
    double snd = jt_num(jt_csv_find(&th, 1, "net-sender"), 6);
    ck_assert_msg(fabs(snd - 4e6) <= 0.02 * 4e6, "net-sender thread %.0f bytes", snd);
    /* datagrams may be dropped on the way: only some must arrive */
    double urx = jt_num(jt_csv_find(&me, 0, "Known.receiveUdp"), 7);
    fprintf(stderr, "[%s] Known.receiveUdp net_bytes %.0f\n", mode, urx);
    ck_assert_msg(urx > 0 && urx <= 1e6, "receiveUdp %.0f bytes", urx);
    jt_csv_free(&me);
    jt_csv_free(&th);
    jt_rmtree(dir);
    free(dir);
}

/* Issue 15, item 3: NetQuiet.java's quietA and quietB write 1,600,000 and
 * 400,000 bytes to a loopback socket in a few ms of CPU (no CPU sample
 * needed).  With filter= set both must be in methods.csv and in
 * methods-filtered.csv, with the same bytes in both, in ratio 4 (2 %). */
static void run_quiet(void)
{
    char *dir = jt_tmpdir();
    char p[4200];
    const char *args[] = {"NetQuiet", NULL};
    free(jt_run_quiet(dir, "mode=cpu,filter=NetQuiet", args, 100));
    const char *files[] = {"methods.csv", "methods-filtered.csv"};
    double bytes[2][2];
    for (int f = 0; f < 2; f++) {
        jt_csv me;
        snprintf(p, sizeof(p), "%s/out/%s", dir, files[f]);
        ck_assert_int_eq(jt_csv_load(p, &me), 0);
        const char *names[] = {"NetQuiet.quietA", "NetQuiet.quietB"};
        for (int k = 0; k < 2; k++) {
            const jt_row *r = jt_csv_find(&me, 0, names[k]);
            ck_assert_msg(r, "%s missing from %s", names[k], files[f]);
            bytes[f][k] = jt_num(r, 7);
            fprintf(stderr, "[quiet] %s %s net_bytes %.0f self_samples %.0f\n", files[f], names[k],
                    bytes[f][k], jt_num(r, 5));
        }
        jt_csv_free(&me);
        ck_assert_msg(bytes[f][1] > 0, "%s: quietB moved no bytes", files[f]);
        double ratio = bytes[f][0] / bytes[f][1];
        ck_assert_msg(fabs(ratio - 4) <= 0.08, "%s: bytes ratio %.3f, not 4 (2 %%)", files[f],
                      ratio);
    }
    ck_assert_msg(bytes[0][0] == bytes[1][0] && bytes[0][1] == bytes[1][1],
                  "filtered bytes %.0f/%.0f differ from unfiltered %.0f/%.0f", bytes[1][0],
                  bytes[1][1], bytes[0][0], bytes[0][1]);
    jt_rmtree(dir);
    free(dir);
}

START_TEST(quiet_net_filtered)
{
    run_quiet();
}
END_TEST

START_TEST(quiet_net_filtered_other_jdk)
{
    if (!*JALEN_JAVA_ALT) {
        fprintf(stderr, "SKIP: no second JDK under /usr/lib/jvm at configure time\n");
        return;
    }
    jt_java = JALEN_JAVA_ALT;
    fprintf(stderr, "[quiet] on %s\n", jt_java);
    run_quiet();
}
END_TEST

START_TEST(known_cpu)
{
    run_known("cpu");
}
END_TEST

/* The same on another JDK when one is installed (JDK 21+ write through
 * SocketDispatcher.write0 and UnixFileDispatcherImpl). */
START_TEST(known_cpu_other_jdk)
{
    if (!*JALEN_JAVA_ALT) {
        fprintf(stderr, "SKIP: no second JDK under /usr/lib/jvm at configure time\n");
        return;
    }
    jt_java = JALEN_JAVA_ALT;
    fprintf(stderr, "[cpu] on %s\n", jt_java);
    run_known("cpu");
}
END_TEST

START_TEST(known_jvmti)
{
    run_known("jvmti");
}
END_TEST

/* The POSIX-timer clock, for machines where perf's is refused. */
START_TEST(known_cpu_timer)
{
    run_known("cpu,clock=timer");
}
END_TEST

/* mode=cpu's clock: as root, perf's cpu-clock, which honours a 1 ms
 * interval (a thread busy for 2 s gets about 2000 samples; the POSIX
 * timers' expiry is seen only at scheduler ticks, 250 a second on a
 * HZ=250 kernel); clock=timer says so in summary.json.  perf's clock sends
 * SIGTRAP where the kernel has sigtrap (5.13 on), SIGPROF with
 * signal=prof, each at the same rate. */
START_TEST(clock_rate)
{
    const char *args[] = {"Recovery", "time", "2", "1.5", NULL};
    char p[4200];
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) == 0)
        sscanf(u.release, "%d.%d", &major, &minor);
    int trap = major > 5 || (major == 5 && minor >= 13);
    struct {
        const char *opts, *clock, *note, *signal;
    } runs[] = {{"interval=1ms", "\"clock\": \"perf-cpu-clock\"", "\"clock_note\": \"\"",
                 trap ? "\"signal\": \"SIGTRAP\"" : "\"signal\": \"SIGPROF\""},
                {"interval=1ms,signal=prof", "\"clock\": \"perf-cpu-clock\"",
                 "\"clock_note\": \"\"", "\"signal_note\": \"signal=prof\""},
                {"interval=1ms,clock=timer", "\"clock\": \"thread-cpu-timer\"",
                 "\"clock_note\": \"clock=timer\"", "\"signal\": \"\""}};
    for (int i = 0; i < 3; i++) {
        if (i < 2 && geteuid() != 0) {
            fprintf(stderr, "SKIP: perf's clock with kernel samples needs root here\n");
            continue;
        }
        char *dir = jt_tmpdir();
        char *sum = jt_run_quiet(dir, runs[i].opts, args, 100);
        ck_assert_msg(strstr(sum, runs[i].clock) && strstr(sum, runs[i].note) &&
                          strstr(sum, runs[i].signal),
                      "%s: summary.json lacks %s / %s / %s", runs[i].opts, runs[i].clock,
                      runs[i].note, runs[i].signal);
        if (i == 1)
            ck_assert_msg(strstr(sum, "\"signal\": \"SIGPROF\""), "signal=prof: %s", sum);
        jt_csv th;
        snprintf(p, sizeof(p), "%s/out/threads.csv", dir);
        ck_assert_int_eq(jt_csv_load(p, &th), 0);
        const jt_row *t = jt_csv_find(&th, 1, "time");
        ck_assert_msg(t, "thread 'time' missing");
        double cpu = jt_num(t, 2), samples = jt_json_num(sum, "samples");
        fprintf(stderr, "[clock] %s: %.0f samples for %.3f s of the busy thread's CPU\n",
                runs[i].opts, samples, cpu);
        if (i < 2)
            ck_assert_msg(samples >= 800 * cpu, "%s: %.0f samples for %.3f CPU-s at 1 ms",
                          runs[i].opts, samples, cpu);
        else
            ck_assert_msg(samples > 0, "no sample with clock=timer");
        jt_csv_free(&th);
        free(sum);
        jt_rmtree(dir);
        free(dir);
    }
}
END_TEST

/* Where the kernel refuses perf's clock (a user, perf_event_paranoid 2):
 * clock=perf says so in one line and the JVM runs on; clock=auto samples
 * with the timers and summary.json says why. */
START_TEST(clock_refused)
{
    char *par = jt_read("/proc/sys/kernel/perf_event_paranoid");
    int paranoid = par ? atoi(par) : 2;
    free(par);
    if (geteuid() != 0 || paranoid < 2) {
        fprintf(stderr,
                "SKIP: needs root (to run the JVM as nobody) and perf_event_paranoid >= 2\n");
        return;
    }
    char *dir = jt_tmpdir();
    chmod(dir, 0777);
    const char *opts[] = {"clock=perf", "quiet"};
    for (int i = 0; i < 2; i++) {
        char cmd[16384], p[4200];
        snprintf(cmd, sizeof(cmd),
                 "setpriv --reuid=65534 --regid=65534 --clear-groups %s "
                 "-agentpath:%s=%s,out=%s/o%d -cp %s Hello 2>&1",
                 jt_java, JALEN_AGENT, opts[i], dir, i, JALEN_CLASSES);
        FILE *f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        char out[4096] = "";
        size_t n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = 0;
        int st = pclose(f);
        ck_assert_msg(st == 0 && strstr(out, "hello"), "%s: %d %s", opts[i], st, out);
        snprintf(p, sizeof(p), "%s/o%d/summary.json", dir, i);
        char *sum = jt_read(p);
        if (i == 0) {
            ck_assert_msg(strstr(out, "jalen: clock=perf: perf_event_open: Permission denied") &&
                              jt_lines(out) == 2,
                          "clock=perf as nobody: %s", out);
            ck_assert_msg(!sum, "clock=perf refused, yet a summary.json");
        } else {
            ck_assert_msg(sum && strstr(sum, "\"clock\": \"thread-cpu-timer\"") &&
                              strstr(sum, "Permission denied"),
                          "clock=auto as nobody: %s", sum ? sum : "(no summary.json)");
        }
        free(sum);
    }
    jt_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen_known");
    TCase *tc = tcase_create("known");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, known_cpu);
    tcase_add_test(tc, known_jvmti);
    tcase_add_test(tc, known_cpu_timer);
    tcase_add_test(tc, clock_rate);
    tcase_add_test(tc, clock_refused);
    tcase_add_test(tc, known_cpu_other_jdk);
    tcase_add_test(tc, quiet_net_filtered);
    tcase_add_test(tc, quiet_net_filtered_other_jdk);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
