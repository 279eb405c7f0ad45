/*
 * test_live_containers.c - containers named on this machine (issue 27).
 *
 *  - A real container: Podman (runc, or crun where the hierarchy allows
 *    it) runs `yes` in a root filesystem of Debian's busybox-static; the
 *    test starts it with a name of its own, and `powerapi monitor --all
 *    --containers` gives one record with that name, runtime podman, and
 *    about one CPU-second a window.  Where it cannot run (not root, no
 *    podman, the runtime refuses this machine's cgroups), the test says
 *    why it skipped.
 *  - A cgroup made by hand as a runtime names it (docker's cgroupfs
 *    driver: .../docker/ID in the cpu hierarchy, or docker-ID.scope under
 *    system.slice on a pure v2 host), a busy child moved in, and a Docker
 *    state file under a --rootfs of the test's: the record says the name
 *    of the state file, and the child's CPU time.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The JSON line of the second window's container record named name. */
static char *second_record(char *out, const char *name)
{
    char key[256];
    snprintf(key, sizeof(key), "\"container_name\":\"%s\"", name);
    char *last = NULL;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
        if (strstr(l, "\"type\":\"container\"") && strstr(l, key))
            last = l;
    return last;
}

static double num_after(const char *line, const char *key)
{
    const char *p = line ? strstr(line, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : -1;
}

static char *monitor_containers(const char *rootfs)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "'%s' monitor --all --containers --format json --interval 1s --count 3 %s%s%s 2>&1",
             CLI_PATH, rootfs ? "--rootfs '" : "", rootfs ? rootfs : "", rootfs ? "'" : "");
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 0, "monitor: exit %d: %s", st, out ? out : "");
    return out;
}

START_TEST(podman_container)
{
    if (geteuid() != 0 || system("command -v podman >/dev/null 2>&1") != 0 ||
        access("/bin/busybox", X_OK) != 0) {
        fprintf(stderr, "podman_container: SKIPPED: needs root, podman and busybox-static "
                        "(scripts/deps.sh installs them)\n");
        return;
    }
    char *dir = pa_test_tmpdir(), cmd[8192], name[64];
    snprintf(name, sizeof(name), "pa-live-%d", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/rootfs/bin' && cp /bin/busybox '%s/rootfs/bin/' && "
             "ln -s busybox '%s/rootfs/bin/sh' && ln -s busybox '%s/rootfs/bin/yes'",
             dir, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *runtimes[] = {"runc", "crun"};
    char *out = NULL;
    int st = -1;
    for (int i = 0; i < 2 && st != 0; i++) {
        free(out);
        out = NULL;
        snprintf(cmd, sizeof(cmd),
                 "podman --runtime %s run -d --rm --name %s --network none "
                 "--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs '%s/rootfs' "
                 "/bin/sh -c 'yes > /dev/null' 2>&1",
                 runtimes[i], name, dir);
        st = pa_test_run(cmd, &out);
    }
    if (st != 0) {
        fprintf(stderr, "podman_container: SKIPPED: podman cannot run a container here: %s",
                out ? out : "?\n");
        free(out);
        pa_test_rmtree(dir);
        return;
    }
    free(out);
    out = monitor_containers(NULL);
    snprintf(cmd, sizeof(cmd), "podman rm -f -t 0 %s >/dev/null 2>&1", name);
    int rm = system(cmd);
    char *rec = second_record(out, name);
    ck_assert_msg(rec != NULL, "no container record named %s", name);
    fprintf(stderr, "[containers] %s\n", rec);
    ck_assert_msg(strstr(rec, "\"runtime\":\"podman\"") &&
                      strstr(rec, "\"names_source\":\"podman containers.json\""),
                  "%s", rec);
    double cpu = num_after(rec, "\"cpu_time_s\":");
    /* one busy thread: up to a CPU-second a window, less on a loaded host */
    ck_assert_msg(cpu > 0.2 && cpu < 1.2, "the container's yes: %g CPU-s a window", cpu);
    ck_assert_msg(num_after(rec, "\"power_w\":{\"cpu\":") > 0, "%s", rec);
    ck_assert_int_eq(rm, 0);
    free(out);
    pa_test_rmtree(dir);
}
END_TEST

/* The cgroup folder a runtime would make for container id, on this
 * machine's hierarchy; "" when neither is writable. */
static void handmade_cgroup(const char *id, char *path, size_t len)
{
    static const char *const v1[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"};
    path[0] = '\0';
    for (int i = 0; i < 2; i++) {
        struct stat st;
        char base[256];
        snprintf(base, sizeof(base), "%s/docker", v1[i]);
        if (stat(v1[i], &st) != 0 || (mkdir(base, 0755) < 0 && errno != EEXIST))
            continue;
        snprintf(path, len, "%s/%s", base, id);
        if (mkdir(path, 0755) == 0)
            return;
    }
    snprintf(path, len, "/sys/fs/cgroup/system.slice/docker-%s.scope", id);
    if (mkdir(path, 0755) != 0)
        path[0] = '\0';
}

START_TEST(handmade_cgroup_named)
{
    if (geteuid() != 0) {
        fprintf(stderr, "handmade_cgroup_named: SKIPPED: making cgroups needs root\n");
        return;
    }
    char id[65];
    snprintf(id, sizeof(id), "%08x%056d", (unsigned)getpid(), 0);
    char cg[512];
    handmade_cgroup(id, cg, sizeof(cg));
    if (!cg[0]) {
        fprintf(stderr, "handmade_cgroup_named: SKIPPED: no writable cpu hierarchy (%s)\n",
                strerror(errno));
        return;
    }
    char *root = pa_test_tmpdir();
    char rel[256];
    snprintf(rel, sizeof(rel), "var/lib/docker/containers/%s/config.v2.json", id);
    pa_test_write(root, rel, "{\"ID\":\"%s\",\"Name\":\"/handmade\"}", id);
    pid_t child = fork();
    if (child == 0) {
        volatile unsigned long x = 0;
        for (;;)
            x++;
    }
    char procs[600];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
    FILE *f = fopen(procs, "w");
    ck_assert_msg(f != NULL, "%s: %s", procs, strerror(errno));
    fprintf(f, "%d\n", (int)child);
    ck_assert_int_eq(fclose(f), 0);
    char *out = monitor_containers(root);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    usleep(100000);
    rmdir(cg);
    char *rec = second_record(out, "handmade");
    ck_assert_msg(rec != NULL, "no record of the handmade container (%s):\n%s", cg, out);
    fprintf(stderr, "[containers] %s: %s\n", cg, rec);
    ck_assert_msg(strstr(rec, "\"runtime\":\"docker\"") && strstr(rec, id) &&
                      strstr(rec, "\"names_source\":\"docker config.v2.json\""),
                  "%s", rec);
    double cpu = num_after(rec, "\"cpu_time_s\":");
    ck_assert_msg(cpu > 0.2 && cpu < 1.2, "the busy child: %g CPU-s a window", cpu);
    free(out);
    pa_test_rmtree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_containers");
    TCase *tc = tcase_create("containers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, handmade_cgroup_named);
    tcase_add_test(tc, podman_container);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
