/* jtest.c - see jtest.h */
#include "jtest.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double jt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *jt_java = JALEN_JAVA;

char *jt_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof(tmpl), "%s/jalen-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    ck_assert_msg(d != NULL, "mkdtemp: %s", strerror(errno));
    return strdup(d);
}

static int jt_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void jt_rmtree(const char *dir)
{
    nftw(dir, jt_rm, 16, FTW_DEPTH | FTW_PHYS);
}

pid_t jt_spawn(const char *opts, const char *cp, const char *const *args, int *out_fd,
               const char *errfile)
{
    int pfd[2] = {-1, -1};
    if (out_fd && pipe(pfd) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* a background runner may have left SIGINT ignored, and the JVM
         * then ignores it too */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (out_fd) {
            dup2(pfd[1], 1);
            close(pfd[0]);
            close(pfd[1]);
        } else {
            int nul = open("/dev/null", O_WRONLY);
            dup2(nul, 1);
        }
        if (errfile) {
            int e = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (e >= 0)
                dup2(e, 2);
        }
        const char *argv[64];
        int n = 0;
        char agent[8192];
        argv[n++] = jt_java;
        argv[n++] = "-Xmx256m";
        argv[n++] = "-XX:TieredStopAtLevel=4";
        if (opts) {
            snprintf(agent, sizeof(agent), "-agentpath:%s%s%s", JALEN_AGENT, *opts ? "=" : "",
                     opts);
            argv[n++] = agent;
        }
        argv[n++] = "-cp";
        argv[n++] = cp;
        for (size_t i = 0; args[i] && n < 62; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(jt_java, (char *const *)argv);
        _exit(127);
    }
    if (out_fd) {
        close(pfd[1]);
        *out_fd = pfd[0];
    }
    return pid;
}

int jt_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

int jt_other_jdk(const char *what)
{
    if (!*JALEN_JAVA_ALT) {
        fprintf(stderr, "%s on another JDK: SKIPPED: only one JDK under /usr/lib/jvm\n", what);
        return 0;
    }
    jt_java = JALEN_JAVA_ALT;
    return 1;
}

int jt_wait(pid_t pid, double timeout_s)
{
    double end = jt_now() + timeout_s;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0)
            return -1;
        if (jt_now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(20000);
    }
}

int jt_wait_line(int fd, const char *prefix, char *buf, size_t len, double timeout_s)
{
    double end = jt_now() + timeout_s;
    size_t k = 0;
    while (jt_now() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        char c;
        ssize_t n = read(fd, &c, 1);
        if (n <= 0)
            return -1;
        if (c == '\n') {
            buf[k] = '\0';
            if (!strncmp(buf, prefix, strlen(prefix)))
                return 0;
            k = 0;
        } else if (k + 1 < len) {
            buf[k++] = c;
        }
    }
    return -1;
}

char *jt_read(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *s = malloc(cap);
    size_t k;
    while (s && (k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n < 2) {
            cap *= 2;
            s = realloc(s, cap);
        }
    }
    fclose(f);
    if (s)
        s[n] = '\0';
    return s;
}

static void jt_split(char *line, jt_row *r)
{
    r->nf = 0;
    char *p = line;
    while (r->nf < JT_MAXF) {
        if (*p == '"') {
            char *w = ++p, *start = p;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *w++ = *p++;
            }
            if (*p == '"')
                p++;
            r->f[r->nf++] = start;
            *w = '\0';
            if (*p == ',') {
                *p = '\0';
                p++;
                continue;
            }
            break;
        }
        r->f[r->nf++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
}

int jt_csv_load(const char *path, jt_csv *out)
{
    memset(out, 0, sizeof(*out));
    char *s = jt_read(path);
    if (!s)
        return -1;
    char *save = NULL;
    char *line = strtok_r(s, "\n", &save);
    if (!line)
        return -1;
    jt_split(line, &out->head);
    size_t cap = 0;
    for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 256;
            out->rows = realloc(out->rows, cap * sizeof(jt_row));
        }
        jt_split(line, &out->rows[out->n]);
        if (out->rows[out->n].nf != out->head.nf)
            out->bad++;
        out->n++;
    }
    return 0;
}

void jt_csv_free(jt_csv *c)
{
    if (c->head.nf)
        free(c->head.f[0]);
    free(c->rows);
    memset(c, 0, sizeof(*c));
}

const jt_row *jt_csv_find(const jt_csv *c, int col, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].nf > col && !strcmp(c->rows[i].f[col], name))
            return &c->rows[i];
    return NULL;
}

double jt_num(const jt_row *r, int col)
{
    if (!r || col >= r->nf)
        return NAN;
    char *end;
    double v = strtod(r->f[col], &end);
    return *end ? NAN : v;
}

double jt_csv_sum(const jt_csv *c, int col)
{
    double s = 0;
    for (size_t i = 0; i < c->n; i++)
        s += jt_num(&c->rows[i], col);
    return s;
}

double jt_json_num(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = json ? strstr(json, pat) : NULL;
    if (!p)
        return NAN;
    p += strlen(pat);
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

int jt_json_true(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\": true", key);
    return json && strstr(json, pat) != NULL;
}

int jt_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static void jt_path(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

void jt_check_outputs(const char *dir, double tol)
{
    char p[4096];
    static const struct {
        const char *file;
        const char *header;
    } csvs[] = {
        {"methods.csv", "method,self_energy_j,total_energy_j,cpu_energy_j,net_energy_j,"
                        "self_samples,total_samples,net_bytes"},
        {"methods-filtered.csv", "method,self_energy_j,total_energy_j,cpu_energy_j,"
                                 "net_energy_j,self_samples,total_samples,net_bytes"},
        {"classes.csv", "class,self_energy_j,total_energy_j,cpu_energy_j,net_energy_j"},
        {"threads.csv", "tid,name,cpu_time_s,energy_j,cpu_energy_j,net_energy_j,net_bytes"},
        {"timeline.csv", "window_start_s,method,power_w"},
    };
    for (size_t i = 0; i < sizeof(csvs) / sizeof(csvs[0]); i++) {
        jt_path(p, sizeof(p), dir, csvs[i].file);
        char *s = jt_read(p);
        ck_assert_msg(s != NULL, "%s missing", p);
        ck_assert_msg(!strncmp(s, csvs[i].header, strlen(csvs[i].header)) &&
                          s[strlen(csvs[i].header)] == '\n',
                      "%s: header differs", p);
        free(s);
        jt_csv c;
        ck_assert_int_eq(jt_csv_load(p, &c), 0);
        ck_assert_msg(c.bad == 0, "%s: %d rows with a wrong field count", p, c.bad);
        for (size_t r = 0; r < c.n; r++)
            for (int f = 0; f < c.rows[r].nf; f++) {
                if ((f == 0 && i != 3 && i != 4) || (i == 3 && f == 1) || (i == 4 && f == 1))
                    continue;
                ck_assert_msg(!isnan(jt_num(&c.rows[r], f)), "%s: row %zu field %d '%s'", p, r, f,
                              c.rows[r].f[f]);
            }
        jt_csv_free(&c);
    }
    jt_path(p, sizeof(p), dir, "summary.json");
    char *sum = jt_read(p);
    ck_assert_msg(sum != NULL, "summary.json missing");
    static const char *const keys[] = {
        "process_energy_j", "attributed_energy_j", "unattributed_energy_j", "duration_s", "windows",
        "samples",          "samples_dropped"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        ck_assert_msg(!isnan(jt_json_num(sum, keys[i])), "summary.json: no %s", keys[i]);
    static const char *const skeys[] = {
        "\"mode\":", "\"formula\":", "\"sensors\":", "\"assumed\":"};
    for (size_t i = 0; i < sizeof(skeys) / sizeof(skeys[0]); i++)
        ck_assert_msg(strstr(sum, skeys[i]) != NULL, "summary.json: no %s", skeys[i]);
    double proc = jt_json_num(sum, "process_energy_j");
    ck_assert_msg(fabs(jt_json_num(sum, "attributed_energy_j") +
                       jt_json_num(sum, "unattributed_energy_j") - proc) <= 1e-6 + tol * proc,
                  "attributed + unattributed != process");
    free(sum);

    /* conservation: threads sum to the process, self energies (with
     * [unattributed] and the pseudo-frames) too */
    jt_csv th, me;
    jt_path(p, sizeof(p), dir, "threads.csv");
    ck_assert_int_eq(jt_csv_load(p, &th), 0);
    jt_path(p, sizeof(p), dir, "methods.csv");
    ck_assert_int_eq(jt_csv_load(p, &me), 0);
    double tsum = jt_csv_sum(&th, 3), msum = jt_csv_sum(&me, 1);
    ck_assert_msg(fabs(tsum - proc) <= 1e-6 + tol * proc, "threads %.6f J != process %.6f J", tsum,
                  proc);
    ck_assert_msg(fabs(msum - proc) <= 1e-6 + tol * proc, "self energies %.6f J != process %.6f J",
                  msum, proc);
    jt_csv_free(&th);
    jt_csv_free(&me);

    /* energy.collapsed: "frame;frame value" with integer microjoules */
    jt_path(p, sizeof(p), dir, "energy.collapsed");
    char *col = jt_read(p);
    ck_assert_msg(col != NULL, "energy.collapsed missing");
    double uj = 0;
    char *save = NULL;
    for (char *l = strtok_r(col, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *sp = strrchr(l, ' ');
        ck_assert_msg(sp && sp != l, "energy.collapsed: bad line '%s'", l);
        char *end;
        long long v = strtoll(sp + 1, &end, 10);
        ck_assert_msg(*end == '\0' && v > 0, "energy.collapsed: bad value in '%s'", l);
        uj += (double)v;
    }
    free(col);
    ck_assert_msg(fabs(uj * 1e-6 - proc) <= 0.001 + tol * proc,
                  "collapsed %.6f J != process %.6f J", uj * 1e-6, proc);

    jt_path(p, sizeof(p), dir, "flamegraph.html");
    char *html = jt_read(p);
    ck_assert_msg(html != NULL, "flamegraph.html missing");
    ck_assert_ptr_nonnull(strstr(html, "<script>"));
    ck_assert_ptr_nonnull(strstr(html, "</html>"));
    ck_assert_msg(!strstr(html, "http://") && !strstr(html, "https://") &&
                      !strstr(html, "<script src"),
                  "flamegraph.html is not self-contained");
    free(html);
    /* profile.pb.gz (pprof, gzip) once the run is complete (written at
     * exit only) */
    jt_path(p, sizeof(p), dir, "summary.json");
    char *fin = jt_read(p);
    if (fin && strstr(fin, "\"complete\": true")) {
        jt_path(p, sizeof(p), dir, "profile.pb.gz");
        FILE *pf = fopen(p, "rb");
        ck_assert_msg(pf != NULL, "profile.pb.gz missing after a complete run");
        unsigned char magic[2] = {0, 0};
        ck_assert_int_eq(fread(magic, 1, 2, pf), 2);
        fclose(pf);
        ck_assert_msg(magic[0] == 0x1f && magic[1] == 0x8b, "profile.pb.gz is not gzip");
    }
    free(fin);
    /* no temporary file left behind */
    jt_path(p, sizeof(p), dir, ".summary.json.tmp");
    ck_assert_int_ne(access(p, F_OK), 0);
}

char *jt_run_quiet(const char *dir, const char *opts, const char *const *args, double timeout_s)
{
    char all[8192], errf[4200], p[4200];
    snprintf(all, sizeof(all), "%s%sout=%s/out,quiet", opts, *opts ? "," : "", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    pid_t pid = jt_spawn(all, JALEN_CLASSES, args, NULL, errf);
    ck_assert_int_gt(pid, 0);
    int st = jt_wait(pid, timeout_s);
    char *err = jt_read(errf);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "java %s failed (status %d): %s", args[0], st, err ? err : "");
    ck_assert_msg(err && err[0] == '\0', "stderr not empty with quiet: %s", err);
    free(err);
    snprintf(p, sizeof(p), "%s/out", dir);
    jt_check_outputs(p, 0.005);
    snprintf(p, sizeof(p), "%s/out/summary.json", dir);
    char *sum = jt_read(p);
    ck_assert_msg(sum != NULL, "no %s", p);
    ck_assert_msg(jt_json_true(sum, "complete"), "%s: not complete", p);
    return sum;
}
