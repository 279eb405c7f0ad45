/*
 * test_jalen_faults.c - the agent's out= folder failing under a running
 * JVM (issue 18): a full file system, a read-only one, the folder
 * removed.  The folder is a small tmpfs mounted for the test (as root;
 * without the right to mount, only the removal is tried and the rest is
 * skipped with a message).  Each time: the JVM runs on, the agent says
 * once what failed, the last complete files stay complete, and writing
 * resumes (said once) when the folder can be written again.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jtest.h"

static double windows_of(const char *out)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/summary.json", out);
    char *s = jt_read(p);
    ck_assert_msg(s != NULL, "no summary.json in %s", out);
    double w = jt_json_num(s, "windows");
    free(s);
    return w;
}

/* Lines of the agent's stderr containing needle. */
static int said(const char *errf, const char *needle)
{
    char *s = jt_read(errf);
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, needle)); p++)
        n++;
    free(s);
    return n;
}

/* Fills the file system of dir with one file; returns its path. */
static void fill(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    static char block[65536];
    while (write(fd, block, sizeof(block)) > 0)
        ;
    while (write(fd, block, 512) > 0) /* the last partial block */
        ;
    close(fd);
}

static void wait_windows(const char *out, double more_than, double secs)
{
    double w = 0;
    for (int i = 0; i < (int)(secs * 10); i++) {
        usleep(100000);
        char p[4200];
        snprintf(p, sizeof(p), "%s/summary.json", out);
        if (access(p, F_OK) == 0 && (w = windows_of(out)) > more_than)
            return;
    }
    ck_abort_msg("%s: no new window after %.0f s (windows %.0f, wanted > %.0f)", out, secs, w,
                 more_than);
}

START_TEST(out_folder_faults)
{
    char *dir = jt_tmpdir();
    char out[4200], opts[4400], errf[4200], filler[4300], line[256];
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    snprintf(filler, sizeof(filler), "%s/filler", out);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    /* in a mount namespace of this test's own process (the JVM inherits
     * it), so that a failed check leaves no mount behind */
    if (unshare(CLONE_NEWNS) == 0)
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    int mounted = mount("tmpfs", out, "tmpfs", 0, "size=2m") == 0;
    if (!mounted)
        fprintf(stderr,
                "full and read-only out= folder: SKIPPED (cannot mount a tmpfs: %s; "
                "needs root or CAP_SYS_ADMIN); only its removal is tried\n",
                strerror(errno));
    snprintf(opts, sizeof(opts), "out=%s,window=300ms", out);
    const char *args[] = {"Hostile", "forever", NULL};
    int fd;
    pid_t pid = jt_spawn(opts, JALEN_CLASSES, args, &fd, errf);
    ck_assert_int_gt(pid, 0);
    ck_assert_msg(jt_wait_line(fd, "READY", line, sizeof(line), 60) == 0, "no READY");
    wait_windows(out, 1, 20);

    if (mounted) {
        /* full: the files of the last whole window stay */
        fill(filler);
        usleep(1500000);
        ck_assert_int_eq(kill(pid, 0), 0); /* the JVM runs on */
        jt_check_outputs(out, 0.005);
        double w_full = windows_of(out);
        usleep(1000000);
        ck_assert_msg(windows_of(out) == w_full, "written on a full file system?");
        ck_assert_int_eq(said(errf, "No space left on device"), 1);
        ck_assert_int_eq(said(errf, "cannot write"), 1);
        /* room again: writing resumes, said once */
        ck_assert_int_eq(unlink(filler), 0);
        wait_windows(out, w_full, 20);
        jt_check_outputs(out, 0.005);
        ck_assert_int_eq(said(errf, "again\n"), 1);

        /* read-only */
        ck_assert_int_eq(mount("tmpfs", out, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=2m"), 0);
        usleep(1500000);
        ck_assert_int_eq(kill(pid, 0), 0);
        jt_check_outputs(out, 0.005);
        ck_assert_int_eq(said(errf, "Read-only file system"), 1);
        double w_ro = windows_of(out);
        ck_assert_int_eq(mount("tmpfs", out, "tmpfs", MS_REMOUNT, "size=2m"), 0);
        wait_windows(out, w_ro, 20);
        ck_assert_int_eq(said(errf, "again\n"), 2);
        ck_assert_int_eq(umount(out), 0);
        /* (the agent wrote into the tmpfs; the folder below it is empty) */
    }

    /* removed: made again, the files written again */
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
    ck_assert_int_eq(system(cmd), 0);
    wait_windows(out, 0, 20);
    ck_assert_int_eq(kill(pid, 0), 0);
    ck_assert_int_eq(said(errf, "was removed; made it again"), 1);

    /* the JVM ends normally and its last window is complete */
    kill(pid, SIGTERM);
    int st = jt_wait(pid, 60);
    ck_assert_msg(st >= 0, "the JVM did not exit");
    close(fd);
    jt_check_outputs(out, 0.005);
    char p[4300];
    snprintf(p, sizeof(p), "%s/summary.json", out);
    char *s = jt_read(p);
    ck_assert_ptr_nonnull(s);
    ck_assert(jt_json_true(s, "complete"));
    free(s);
    char *err = jt_read(errf);
    fprintf(stderr, "agent's stderr:\n%s", err ? err : "");
    free(err);
    jt_rmtree(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jalen-faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, out_folder_faults);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
