/*
 * test_live_vms.c - a real VM named on this machine (issue 41; DESIGN.md
 * section 18).
 *
 * Debian's qemu-system-x86_64 runs with TCG (no nested KVM here: it hangs,
 * the workplace's FACTS) a 64 KiB firmware of the test's own whose reset
 * vector is `jmp $`, so that its one vCPU spins: no kernel, no disk, a
 * second to start.  pa_vm_list finds it by the name and uuid the test gave
 * (-name guest=NAME,debug-threads=on, -uuid), its vCPU thread "CPU 0/TCG"
 * told apart; `powerapi monitor --vms` gives it a record whose vCPU part
 * is most of its power.  Bounded to about 10 s; where qemu-system-x86_64
 * is absent (scripts/deps.sh installs it) the test says so and skips.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UUID "0badc0de-1234-4321-8abc-0123456789ab"

/* The VM of pid once its vCPU thread is named (within 5 s), else NULL;
 * *all gets the list (free it). */
static const pa_vm_info *find_vm(pid_t pid, pa_vm_info **all)
{
    for (int i = 0; i < 50; i++) {
        size_t n = 0;
        ck_assert_int_eq(pa_vm_list(NULL, NULL, all, &n), 0);
        for (size_t k = 0; k < n; k++)
            if ((*all)[k].pid == pid && (*all)[k].nvcpus == 1)
                return &(*all)[k];
        free(*all);
        *all = NULL;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static double num_after(const char *line, const char *key)
{
    const char *p = line ? strstr(line, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

START_TEST(test_live_qemu_named)
{
    if (system("command -v qemu-system-x86_64 >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_live_qemu_named: SKIPPED: qemu-system-x86_64 absent "
                        "(scripts/deps.sh installs Debian's qemu-system-x86)\n");
        return;
    }
    char *dir = pa_test_tmpdir();
    char name[64];
    snprintf(name, sizeof(name), "pa-live-%d", (int)getpid());
    pid_t q = pa_test_qemu_spin(dir, name, UUID, NULL);

    pa_vm_info *all = NULL;
    const pa_vm_info *v = find_vm(q, &all);
    ck_assert_msg(v != NULL, "qemu (pid %d) not found as a VM with a vCPU thread in 5 s", (int)q);
    ck_assert_str_eq(v->name, name);
    ck_assert_str_eq(v->uuid, UUID);
    ck_assert_str_eq(v->hypervisor, "qemu");
    ck_assert_str_eq(v->source, "qemu -name");
    ck_assert_uint_ge(v->nthreads, 2); /* the main loop, call_rcu, the vCPU */
    char rel[64], comm[32] = "";
    snprintf(rel, sizeof(rel), "/proc/%d/task/%d/comm", (int)q, (int)v->vcpu_tids[0]);
    char *c = pa_test_slurp(rel);
    ck_assert_ptr_nonnull(c);
    snprintf(comm, sizeof(comm), "%s", c);
    free(c);
    ck_assert_str_eq(comm, "CPU 0/TCG\n");
    free(all);

    /* its record: the spinning vCPU is most of its power */
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' monitor --vms --interval 1s --count 2 --format json 2>&1",
             CLI_PATH);
    ck_assert_int_eq(pa_test_run(cmd, &out), 0);
    char key[128], *last = NULL;
    snprintf(key, sizeof(key), "\"vm_name\":\"%s\"", name);
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
        if (strstr(l, key))
            last = l;
    ck_assert_msg(last != NULL, "no record of %s", name);
    double total = num_after(last, "\"total\":");
    double vcpu = num_after(last, "\"vcpu_w\":"), emu = num_after(last, "\"emulator_w\":");
    double emu_j = num_after(last, "\"emulator_j\":");
    ck_assert_msg(strstr(last, "\"vcpus\":1") && vcpu > 0 && vcpu > emu && emu_j >= 0 && emu >= 0 &&
                      fabs(vcpu + emu - total) < 1e-5, /* 6 decimals each */
                  "%s", last);
    fprintf(stderr, "test_live_qemu_named: %s\n", last);
    free(out);

    kill(q, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(q, &st, 0), q);
    pa_test_rmtree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live_vms");
    TCase *tc = tcase_create("live_vms");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_live_qemu_named);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
