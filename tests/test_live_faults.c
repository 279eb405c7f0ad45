/* test_live_faults.c - faults of the environment (issue 18):
 *   - `monitor --output FILE` on a full file system (a 256-KiB tmpfs,
 *     mounted when we may, skipped with a message otherwise): a clear
 *     error naming the cause, the file ends with the last whole record;
 *   - `monitor ... | head -1` (EPIPE): a quiet exit with status 141, a
 *     command under `monitor --` ended with it;
 *   - procfs mounted with hidepid=2 (a procfs mount in a private mount
 *     namespace, as root) read by another user, and another user's
 *     process: skipped with a reason in the report's assumed list, never
 *     an error line per tick. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static char *tmp;

static void setup(void)
{
    tmp = pa_test_tmpdir();
}

static void teardown(void)
{
    char mnt[4200];
    snprintf(mnt, sizeof(mnt), "%s/full", tmp);
    umount2(mnt, MNT_DETACH); /* when a failed check left it mounted */
    pa_test_rmtree(tmp);
    tmp = NULL;
}

/* Each line a whole JSON object; returns the number of lines. */
static size_t whole_json_lines(const char *path)
{
    char *s = pa_test_slurp(path);
    ck_assert_ptr_nonnull(s);
    size_t n = 0;
    for (char *l = s; *l;) {
        char *e = strchr(l, '\n');
        ck_assert_msg(e != NULL, "%s ends with a partial line: %.100s", path, l);
        ck_assert_msg(l[0] == '{' && e > l && e[-1] == '}', "%s: not one JSON object: %.100s", path,
                      l);
        n++;
        l = e + 1;
    }
    free(s);
    return n;
}

START_TEST(test_output_full_fs)
{
    char mnt[4200], out[4300], cmd[9000];
    snprintf(mnt, sizeof(mnt), "%s/full", tmp);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    /* in a mount namespace of this test's own process, so that a failed
     * check (which skips the teardown) leaves no mount behind */
    if (unshare(CLONE_NEWNS) == 0)
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k") < 0) {
        fprintf(stderr,
                "full file system: SKIPPED (cannot mount a tmpfs: "
                "%s; needs root or CAP_SYS_ADMIN)\n",
                strerror(errno));
        return;
    }
    const char *fmts[2] = {"json", "csv"};
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof(out), "%s/out.%s", mnt, fmts[k]);
        /* --all writes 20-60 KiB a window here: the tmpfs fills in a few */
        snprintf(cmd, sizeof(cmd),
                 "%s monitor --all --format %s --interval 50ms "
                 "--count 400 --output %s 2>&1",
                 CLI_PATH, fmts[k], out);
        char *msg = NULL;
        int st = pa_test_run(cmd, &msg);
        ck_assert_msg(st == 1, "status %d: %s", st, msg);
        const char *nl = strchr(msg, '\n');
        ck_assert_msg(strstr(msg, "No space left on device") && strstr(msg, out) && nl &&
                          nl[1] == '\0',
                      "one line naming the file and the cause: %s", msg);
        free(msg);
        if (k == 0) {
            ck_assert_uint_gt(whole_json_lines(out), 3);
        } else {
            /* CSV: every line has the header's number of fields */
            char *s = pa_test_slurp(out);
            ck_assert_ptr_nonnull(s);
            size_t len = strlen(s), fields = 0, lines = 0;
            ck_assert_msg(len > 0 && s[len - 1] == '\n', "partial CSV line at the end");
            for (char *l = s; *l;) {
                char *e = strchr(l, '\n');
                size_t f = 1;
                int quoted = 0; /* "a, b" is one field (RFC 4180) */
                for (char *c = l; c < e; c++) {
                    quoted ^= *c == '"';
                    f += *c == ',' && !quoted;
                }
                if (!lines)
                    fields = f;
                ck_assert_msg(f == fields, "CSV line %zu: %zu fields of %zu", lines, f, fields);
                lines++;
                l = e + 1;
            }
            free(s);
            ck_assert_uint_gt(lines, 3);
        }
        unlink(out);
    }
    ck_assert_int_eq(umount(mnt), 0);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with stdout on a pipe whose reader takes one line and
 * closes; returns the wait status and stderr's text. */
static int run_head1(char *const argv[], char **err_out, double *secs)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    char errp[4200];
    snprintf(errp, sizeof(errp), "%s/head.err", tmp);
    double t0 = now_s();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(p[1], STDOUT_FILENO);
        dup2(fe, STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    char c;
    while (read(p[0], &c, 1) == 1 && c != '\n')
        ;
    close(p[0]); /* head -1 is done */
    int ws = -1;
    while (waitpid(pid, &ws, WNOHANG) == 0 && now_s() - t0 < 30)
        usleep(10000);
    if (now_s() - t0 >= 30) {
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
    }
    *secs = now_s() - t0;
    *err_out = pa_test_slurp(errp);
    return ws;
}

START_TEST(test_output_epipe)
{
    char *err = NULL;
    double secs;
    char *a1[] = {CLI_PATH,     "monitor", "--all",   "--format", "json",
                  "--interval", "100ms",   "--count", "100",      NULL};
    int ws = run_head1(a1, &err, &secs);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 141, "status %d (signaled %d)", ws,
                  WIFSIGNALED(ws));
    ck_assert_msg(err && err[0] == '\0', "stderr: %s", err);
    ck_assert_double_lt(secs, 5);
    free(err);

    /* With a command: it is ended too, not left running. */
    char marker[64];
    snprintf(marker, sizeof(marker), "exec sleep 37.%d", (int)getpid() % 1000);
    char *a2[] = {CLI_PATH, "monitor", "--format", "json", "--interval", "100ms", "-o",
                  "-",      "--",      "sh",       "-c",   marker,       NULL};
    ws = run_head1(a2, &err, &secs);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 141, "status %d", ws);
    ck_assert_msg(err && err[0] == '\0', "stderr: %s", err);
    ck_assert_double_lt(secs, 10);
    free(err);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "pgrep -f '^sleep 37.%d$'", (int)getpid() % 1000);
    ck_assert_int_eq(pa_test_run(cmd, NULL), 1); /* no such process */

    /* The ring reader too (a daemon of our own). */
    char ring[64];
    snprintf(ring, sizeof(ring), "pa-test-faults-%d", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "%s daemon --ring %s --interval 100ms --count 30 -q &"
             " sleep 0.5; %s monitor --ring %s --format json --interval "
             "100ms | head -1 >/dev/null; echo \"status ${PIPESTATUS[0]}\"; "
             "wait",
             CLI_PATH, ring, CLI_PATH, ring);
    char bash[4096];
    snprintf(bash, sizeof(bash), "bash -c '%s' 2>&1", cmd);
    char *out = NULL;
    ck_assert_int_eq(pa_test_run(bash, &out), 0);
    ck_assert_msg(strcmp(out, "status 141\n") == 0, "%s", out);
    free(out);
}
END_TEST

/* /proc mounted with hidepid=2 and read as user nobody, in a private
 * mount namespace (unshare -m): the hidden processes are named once in
 * each report's assumed list (not on stderr), a hidden pid is refused
 * with the reason; a process of another user on a normal /proc is
 * reported, its unreadable parts said in the assumed list. */
START_TEST(test_hidepid_and_other_users)
{
    if (geteuid() != 0 || system("command -v unshare setpriv >/dev/null "
                                 "2>&1 && unshare -m true 2>/dev/null") != 0) {
        fprintf(stderr, "hidepid: SKIPPED (needs root, unshare and setpriv "
                        "to mount a procfs in a private mount namespace)\n");
        return;
    }
    char cmd[8192];
    char *out = NULL;
    char mnt[1024];
    snprintf(mnt, sizeof(mnt), "%s/proc", tmp);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    chmod(tmp, 0755);
    const char *nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups";
    snprintf(cmd, sizeof(cmd),
             "unshare -m sh -c 'mount -t proc -o hidepid=2 proc %s && "
             "%s %s monitor --procfs %s --all --count 3 --interval 100ms "
             "--format json 2>%s/err.txt; echo \"status $?\"' 2>&1",
             mnt, nobody, CLI_PATH, mnt, tmp);
    int st = pa_test_run(cmd, &out);
    if (strstr(out, "status 126") || strstr(out, "status 127")) {
        fprintf(stderr, "hidepid: SKIPPED (the build tree is not executable "
                        "by nobody)\n");
        free(out);
        return;
    }
    ck_assert_msg(st == 0 && strstr(out, "status 0"), "%s", out);
    /* three windows, each naming the hidden processes once */
    size_t sys = 0, notes = 0;
    for (char *l = out; (l = strstr(l, "{\"type\":\"system\"")); l++) {
        sys++;
        char *e = strchr(l, '\n');
        char *h = strstr(l, "other users' processes are hidden");
        notes += h && h < e && strstr(l, "hidepid=");
    }
    ck_assert_uint_eq(sys, 3);
    ck_assert_msg(notes == 3, "%s", out);
    ck_assert_ptr_null(strstr(out, "\"pid\":1,")); /* root's init hidden */
    free(out);
    char errp[4300];
    snprintf(errp, sizeof(errp), "%s/err.txt", tmp);
    char *err = pa_test_slurp(errp);
    ck_assert_msg(err && err[0] == '\0', "stderr: %s", err);
    free(err);

    /* a hidden pid: refused at once, with the reason */
    snprintf(cmd, sizeof(cmd),
             "unshare -m sh -c 'mount -t proc -o hidepid=2 proc %s && "
             "%s %s monitor --procfs %s --pid 1 --count 1 2>&1'",
             mnt, nobody, CLI_PATH, mnt);
    ck_assert_int_eq(pa_test_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "hidepid=") && strstr(out, "run as root"), "%s", out);
    free(out);

    /* another user's process (root's init) on a normal /proc: reported,
     * what nobody cannot read said once per report, stderr silent */
    snprintf(cmd, sizeof(cmd),
             "%s %s monitor --pid 1 --threads --count 3 --interval 100ms "
             "--format json 2>%s/err2.txt",
             nobody, CLI_PATH, tmp);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"pid\":1,"));
    ck_assert_ptr_nonnull(strstr(out, "fd folder unreadable"));
    free(out);
    snprintf(errp, sizeof(errp), "%s/err2.txt", tmp);
    err = pa_test_slurp(errp);
    ck_assert_msg(err && err[0] == '\0', "stderr: %s", err);
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_output_full_fs);
    tcase_add_test(tc, test_output_epipe);
    tcase_add_test(tc, test_hidepid_and_other_users);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
