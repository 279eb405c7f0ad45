/*
 * test_vms.c - the VMs of a host by name (issue 41; libpowerapi/src/vms.c
 * and vmparse.c; DESIGN.md section 18).
 *
 * 1. pa_vm_parse_cmdline on the command lines libvirt, Proxmox, KubeVirt,
 *    a user, Firecracker (its jailer and by hand) and cloud-hypervisor
 *    (and Kata's) start; what is no hypervisor.
 * 2. pa_vm_parse_cgroup on libvirt's scopes (v2, v1 cgroupfs, the old
 *    layout) and Proxmox's; what is not a VM's cgroup.
 * 3. pa_vm_vcpu_index on thread names.
 * 4. pa_vm_list on tests/fixtures/vms/host: every VM, its name and where
 *    it came from, its uuid, manager, cgroup and vCPU threads; qemu-img
 *    and nginx are no VMs; which processes are a VM's (its cgroup).
 * 5. The table kept between scans: a VM that stops is gone, a new one is
 *    named, a renamed Proxmox VM keeps its name while its process lives.
 * 6. `powerapi monitor --vms --format json` on the fixture against
 *    tests/golden/monitor-vms.jsonl (PA_UPDATE_GOLDEN=1 rewrites it), and
 *    its sums: the VMs and "[not in a VM]" add up to the system's busy
 *    power, each VM's vCPU and emulator parts to its power, every window;
 *    --group-by vm is the same; the table; the refused combinations.
 * 7. The exporter's VM series: labels, the vCPU series only where the
 *    threads are told apart, at most max_cgroups VMs, the rest folded.
 * 8. daemon --vms into its ring, monitor --ring --vms out of it.
 * 9. The hypervisors watched with their threads while they run only.
 */
#include "internal.h"
#include "prometheus.h"
#include "testutil.h"
#include "vmgroups.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX PA_FIXTURES "/vms/host"

/* A command line from its arguments (NUL-separated, as /proc/PID/cmdline). */
static size_t cmdline(char *buf, size_t len, const char *const *argv)
{
    size_t n = 0;
    for (size_t i = 0; argv[i]; i++) {
        size_t l = strlen(argv[i]) + 1;
        ck_assert_uint_lt(n + l, len);
        memcpy(buf + n, argv[i], l);
        n += l;
    }
    return n;
}

typedef struct cmd_case {
    const char *argv[12];
    const char *hv, *name, *uuid, *id, *source;
} cmd_case;

static const cmd_case cmds[] = {
    {{"/usr/bin/qemu-system-x86_64", "-name", "guest=web-01,debug-threads=on", "-uuid",
      "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b", NULL},
     "qemu",
     "web-01",
     "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b",
     "",
     "qemu -name"},
    {{"/usr/libexec/qemu-kvm", "-name", "guest=db,,primary,debug-threads=on", NULL},
     "qemu",
     "db,primary",
     "",
     "",
     "qemu -name"},
    {{"qemu-system-aarch64", "--name", "plain", "-uuid", "not-a-uuid", NULL},
     "qemu",
     "plain",
     "",
     "",
     "qemu -name"},
    {{"/usr/bin/kvm", "-id", "100", "-name", "pve-web,debug-threads=on", "-smbios",
      "type=1,uuid=3b2a1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", NULL},
     "qemu",
     "pve-web",
     "3b2a1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
     "100",
     "qemu -name"},
    {{"qemu-system-x86_64", "-accel", "tcg", "-m", "256", NULL}, "qemu", "", "", "", ""},
    {{"qemu-system-x86_64", "-name", NULL}, "qemu", "", "", "", ""},
    {{"/firecracker", "--id", "fc-batch-7", "--api-sock", "/run/firecracker.socket", NULL},
     "firecracker",
     "fc-batch-7",
     "",
     "fc-batch-7",
     "firecracker --id"},
    {{"firecracker", "--id=anonymous-instance", "--api-sock", "/tmp/sandbox-42.socket", NULL},
     "firecracker",
     "sandbox-42",
     "",
     "",
     "firecracker api socket"},
    {{"firecracker", "--api-sock", "/run/firecracker.socket", NULL}, "firecracker", "", "", "", ""},
    {{"cloud-hypervisor", "--api-socket", "path=/run/ch/ch-ubuntu.sock", "--cpus", "boot=2", NULL},
     "cloud-hypervisor",
     "ch-ubuntu",
     "",
     "",
     "cloud-hypervisor api socket"},
    {{"/opt/kata/bin/cloud-hypervisor", "--api-socket=/run/vc/vm/c0ffee42/clh-api.sock", NULL},
     "cloud-hypervisor",
     "c0ffee42",
     "",
     "",
     "cloud-hypervisor api socket"},
    {{"/usr/bin/cloud-hypervisor", "--api-socket", "/tmp/ch.sock", NULL},
     "cloud-hypervisor",
     "",
     "",
     "",
     ""},
};

START_TEST(parse_cmdlines)
{
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char buf[1024];
        size_t n = cmdline(buf, sizeof(buf), cmds[i].argv);
        pa_vm_info v;
        ck_assert_int_eq(pa_vm_parse_cmdline(buf, n, &v), 0);
        ck_assert_str_eq(v.hypervisor, cmds[i].hv);
        ck_assert_msg(!strcmp(v.name, cmds[i].name), "%s: name '%s', want '%s'", cmds[i].argv[0],
                      v.name, cmds[i].name);
        ck_assert_str_eq(v.uuid, cmds[i].uuid);
        ck_assert_str_eq(v.id, cmds[i].id);
        ck_assert_str_eq(v.source, cmds[i].source);
    }
    static const char *const none[][4] = {
        {"qemu-img", "convert", "a", NULL},
        {"/usr/bin/virt-launcher", "--name", "x", NULL},
        {"bash", NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        char buf[256];
        size_t n = cmdline(buf, sizeof(buf), none[i]);
        pa_vm_info v;
        ck_assert_int_eq(pa_vm_parse_cmdline(buf, n, &v), -ENOENT);
        ck_assert_str_eq(v.hypervisor, "");
    }
    pa_vm_info v;
    ck_assert_int_eq(pa_vm_parse_cmdline("", 0, &v), -ENOENT);
    ck_assert_int_eq(pa_vm_parse_cmdline(NULL, 0, &v), -EINVAL);
    ck_assert_str_ne(pa_last_error(), "");
    /* not NUL-terminated at the end: the last argument still counts */
    static const char cut[] = "qemu-system-x86_64\0-name\0guest=cut";
    ck_assert_int_eq(pa_vm_parse_cmdline(cut, sizeof(cut) - 1, &v), 0);
    ck_assert_str_eq(v.name, "cut");
}
END_TEST

START_TEST(parse_cgroups)
{
    static const struct {
        const char *path, *manager, *id, *name, *cgroup;
    } ok[] = {
        {"/machine.slice/machine-qemu\\x2d1\\x2dweb\\x2d01.scope/libvirt/emulator", "libvirt", "1",
         "web-01", "/machine.slice/machine-qemu\\x2d1\\x2dweb\\x2d01.scope"},
        {"/machine.slice/machine-qemu\\x2d12\\x2dvm1.scope", "libvirt", "12", "vm1",
         "/machine.slice/machine-qemu\\x2d12\\x2dvm1.scope"},
        {"/machine/qemu-2-dbprimary.libvirt-qemu/emulator", "libvirt", "2", "dbprimary",
         "/machine/qemu-2-dbprimary.libvirt-qemu"},
        {"/machine/oldvm.libvirt-qemu/vcpu0", "libvirt", "", "oldvm",
         "/machine/oldvm.libvirt-qemu"},
        {"/qemu.slice/100.scope", "proxmox", "100", "", "/qemu.slice/100.scope"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        pa_vm_info v;
        ck_assert_int_eq(pa_vm_parse_cgroup(ok[i].path, &v), 0);
        ck_assert_str_eq(v.manager, ok[i].manager);
        ck_assert_str_eq(v.id, ok[i].id);
        ck_assert_str_eq(v.name, ok[i].name);
        ck_assert_str_eq(v.cgroup, ok[i].cgroup);
        ck_assert_str_eq(v.source, ok[i].name[0] ? "libvirt cgroup" : "");
    }
    static const char *const no[] = {
        "/",
        "",
        "/machine.slice/machine-lxc\\x2d1\\x2dct.scope",
        "/machine.slice/machine-qemu\\x2dx\\x2dvm.scope",
        "/machine.slice/machine-qemu\\x2d1.scope",
        "/system.slice/100.scope",
        "/qemu.slice/10a.scope",
        "/machine.slice/machine-qemu\\x2d1\\x2dbad\\x00.scope",
        "/user.slice/user-1000.slice/session-3.scope",
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        pa_vm_info v;
        ck_assert_msg(pa_vm_parse_cgroup(no[i], &v) == -ENOENT, "%s", no[i]);
        ck_assert_str_eq(v.cgroup, "");
    }
}
END_TEST

START_TEST(vcpu_names)
{
    ck_assert_int_eq(pa_vm_vcpu_index("CPU 0/KVM"), 0);
    ck_assert_int_eq(pa_vm_vcpu_index("CPU 13/KVM\n"), 13);
    ck_assert_int_eq(pa_vm_vcpu_index("CPU 1/TCG"), 1);
    ck_assert_int_eq(pa_vm_vcpu_index("fc_vcpu 2"), 2);
    ck_assert_int_eq(pa_vm_vcpu_index("vcpu7"), 7);
    static const char *const no[] = {"qemu-system-x86", "IO mon_iothread", "CPU /KVM", "CPU 1/KVMX",
                                     "CPU x/KVM",       "fc_api",          "vcpu",     "vcpux",
                                     "vnc_worker",      "worker",          ""};
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        ck_assert_msg(pa_vm_vcpu_index(no[i]) == -1, "%s", no[i]);
    ck_assert_int_eq(pa_vm_vcpu_index(NULL), -1);
}
END_TEST

typedef struct vm_want {
    pid_t pid;
    const char *name, *uuid, *hv, *manager, *id, *source, *cgroup;
    unsigned nthreads, nvcpus;
    pid_t vcpu0;
} vm_want;

#define KPOD                                                                                       \
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c0d3a55_9b1e_4f2a_8e6d_"      \
    "2b4c6a8e0f13.slice/cri-containerd-a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1" \
    "a1a1a1.scope"

static const vm_want fixture_vms[] = {
    {1001, "web-01", "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b", "qemu", "libvirt", "1", "qemu -name",
     "/machine.slice/machine-qemu\\x2d1\\x2dweb\\x2d01.scope", 5, 2, 1003},
    {1101, "db,primary", "0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b", "qemu", "libvirt", "2",
     "qemu -name", "/machine/qemu-2-dbprimary.libvirt-qemu", 2, 1, 1102},
    {1201, "legacy-vm", "11111111-2222-4333-8444-555555555555", "qemu", "libvirt", "3",
     "libvirt cgroup", "/machine.slice/machine-qemu\\x2d3\\x2dlegacy\\x2dvm.scope", 2, 1, 1202},
    {2001, "pve-web", "3b2a1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "qemu", "proxmox", "100",
     "proxmox VMID.conf", "/qemu.slice/100.scope", 3, 2, 2002},
    {3001, "fc-batch-7", "", "firecracker", "", "fc-batch-7", "firecracker --id", "", 4, 2, 3003},
    {3101, "sandbox-42", "", "firecracker", "", "", "firecracker api socket", "", 3, 1, 3103},
    {4001, "ch-ubuntu", "", "cloud-hypervisor", "", "", "cloud-hypervisor api socket", "", 5, 2,
     4004},
    {5001, "default/testvmi", "5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716", "qemu", "kubevirt",
     "7c0d3a55-9b1e-4f2a-8e6d-2b4c6a8e0f13", "kubevirt pod", KPOD, 2, 1, 5002},
    {6001, "scratch", "", "qemu", "", "", "qemu -name", "", 3, 0, 0},
};
#define NVMS (sizeof(fixture_vms) / sizeof(fixture_vms[0]))

static void check_vm(const pa_vm_info *v, const vm_want *w)
{
    ck_assert_int_eq(v->pid, w->pid);
    ck_assert_str_eq(v->name, w->name);
    ck_assert_str_eq(v->uuid, w->uuid);
    ck_assert_str_eq(v->hypervisor, w->hv);
    ck_assert_str_eq(v->manager, w->manager);
    ck_assert_str_eq(v->id, w->id);
    ck_assert_str_eq(v->source, w->source);
    ck_assert_str_eq(v->cgroup, w->cgroup);
    ck_assert_uint_eq(v->nthreads, w->nthreads);
    ck_assert_uint_eq(v->nvcpus, w->nvcpus);
    if (w->nvcpus)
        ck_assert_int_eq(v->vcpu_tids[0], w->vcpu0);
}

START_TEST(list_fixture)
{
    pa_vm_info *vms = NULL;
    size_t n = 0;
    ck_assert_int_eq(pa_vm_list(FIX "/proc", FIX "/rootfs", &vms, &n), 0);
    ck_assert_uint_eq(n, NVMS);
    for (size_t i = 0; i < n; i++)
        check_vm(&vms[i], &fixture_vms[i]);
    ck_assert_int_eq(vms[0].vcpu_tids[1], 1004);
    free(vms);
    /* which processes are a VM's */
    pa_vms *t = NULL;
    ck_assert_int_eq(pa_vms_new(&t, FIX "/proc", FIX "/rootfs"), 0);
    ck_assert_uint_eq(pa_vms_count(t), 0);
    ck_assert_int_eq(pa_vms_scan(t), 0);
    ck_assert_uint_eq(pa_vms_count(t), NVMS);
    ck_assert_str_eq(pa_vms_of_process(t, 2001, NULL)->name, "pve-web");
    ck_assert_str_eq(pa_vms_of_process(t, 2010, "/qemu.slice/100.scope")->name, "pve-web");
    ck_assert_str_eq(pa_vms_of_process(t, 5010, KPOD)->name, "default/testvmi");
    ck_assert_ptr_null(pa_vms_of_process(t, 7001, "/system.slice/nginx.service"));
    ck_assert_ptr_null(pa_vms_of_process(t, 7101, "/user.slice/user-1000.slice/session-3.scope"));
    ck_assert_ptr_null(pa_vms_of_process(t, 2010, "/qemu.slice/1000.scope"));
    ck_assert_ptr_null(pa_vms_get(t, NVMS));
    pa_vms_free(t);
    pa_vms_free(NULL);
    /* a root that is not there */
    ck_assert_int_eq(pa_vm_list(FIX "/nowhere", NULL, &vms, &n), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "nowhere"));
}
END_TEST

START_TEST(table_between_scans)
{
    char *root = pa_test_fixture_copy("vms/host");
    char proc[4096], rootfs[4096];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", root);
    pa_vms *t = NULL;
    ck_assert_int_eq(pa_vms_new(&t, proc, rootfs), 0);
    ck_assert_int_eq(pa_vms_scan(t), 0);
    /* renamed in Proxmox while running: the name of its start stays */
    pa_test_write(root, "rootfs/etc/pve/qemu-server/100.conf", "name: renamed\n");
    /* one VM stops, one starts (a hot-plugged vCPU in another) */
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "rm -r '%s/proc/3101'", root);
    ck_assert_int_eq(system(cmd), 0);
    pa_test_write(root, "proc/8001/comm", "qemu-system-x86\n");
    pa_test_write(root, "proc/8001/cmdline", "qemu-system-x86_64%c-name%cguest=late%c", 0, 0, 0);
    pa_test_write(root, "proc/8001/cgroup", "0::/\n");
    pa_test_write(root, "proc/8001/task/8001/comm", "qemu-system-x86\n");
    pa_test_write(root, "proc/1001/task/1006/comm", "CPU 2/KVM\n");
    ck_assert_int_eq(pa_vms_scan(t), 0);
    ck_assert_uint_eq(pa_vms_count(t), NVMS);
    ck_assert_ptr_null(pa_vms_of_process(t, 3101, NULL));
    ck_assert_str_eq(pa_vms_of_process(t, 8001, NULL)->name, "late");
    ck_assert_str_eq(pa_vms_of_process(t, 2001, NULL)->name, "pve-web");
    const pa_vm_info *w = pa_vms_of_process(t, 1001, NULL);
    ck_assert_uint_eq(w->nvcpus, 3);
    ck_assert_int_eq(w->vcpu_tids[2], 1006);
    /* the same pid, now another program: named again */
    pa_test_write(root, "proc/8001/comm", "kvm\n");
    pa_test_write(root, "proc/8001/cmdline", "kvm%c-name%cagain%c", 0, 0, 0);
    ck_assert_int_eq(pa_vms_scan(t), 0);
    ck_assert_str_eq(pa_vms_of_process(t, 8001, NULL)->name, "again");
    pa_vms_free(t);
    pa_test_rmtree(root);
}
END_TEST

/* The number after key in line, NAN when absent or null. */
static double json_num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p || !strncmp(p + strlen(key), "null", 4))
        return NAN;
    return strtod(p + strlen(key), NULL);
}

/* monitor on the fixture (two windows of 1 s) with opts; its output. */
static char *run_monitor(const char *opts, int want_status)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "'%s' monitor %s --procfs '%s/proc' --sysfs '%s/sys' --rootfs '%s/rootfs' "
             "--hwdb '%s' --clock-step 1s --count 2 --fixture-states '%s/states' 2>&1",
             CLI_PATH, opts, FIX, FIX, FIX, PA_TEST_HWDB, FIX);
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == want_status, "%s: exit %d: %s", opts, st, out ? out : "");
    return out;
}

/* Compares text with tests/golden/NAME, or rewrites it (PA_UPDATE_GOLDEN=1). */
static void golden(const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", PA_GOLDEN_DIR, name);
    const char *upd = getenv("PA_UPDATE_GOLDEN");
    if (upd && !strcmp(upd, "1")) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        return;
    }
    char *want = pa_test_slurp(path);
    ck_assert_msg(want != NULL, "golden file %s missing (PA_UPDATE_GOLDEN=1 writes it)", path);
    ck_assert_msg(!strcmp(want, text),
                  "output differs from %s (PA_UPDATE_GOLDEN=1 rewrites it):\n%s", path, text);
    free(want);
}

START_TEST(monitor_vms)
{
    char *out = run_monitor("--vms --format json", 0);
    golden("monitor-vms.jsonl", out);
    char *same = run_monitor("--group-by vm --format json", 0);
    ck_assert_str_eq(same, out);
    free(same);
    double busy[3] = {0}, sum[3] = {0};
    int vms[3] = {0};
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        int k = (int)json_num(line, "\"time\":");
        ck_assert(k == 1 || k == 2);
        double w = json_num(line, "\"power_w\":{\"cpu\":");
        if (strstr(line, "\"type\":\"system\"")) {
            busy[k] = w - json_num(line, "\"idle\":");
            continue;
        }
        ck_assert_msg(strstr(line, "\"type\":\"vm\""), "%s", line);
        sum[k] += w;
        vms[k] += strstr(line, "\"vm_name\"") != NULL;
        double v = json_num(line, "\"vcpu_w\":"), e = json_num(line, "\"emulator_w\":");
        if (!isnan(v))
            ck_assert_double_eq_tol(v + e, w, 1e-9);
        ck_assert_double_eq_tol(json_num(line, "\"energy_j\":{\"cpu\":"), k * w, 1e-9);
    }
    for (int k = 1; k <= 2; k++) {
        ck_assert_int_eq(vms[k], (int)NVMS);
        ck_assert_double_eq_tol(busy[k], 114, 1e-9); /* 380 of 400 ticks of 120 W */
        ck_assert_double_eq_tol(sum[k], busy[k], 1e-9);
    }
    free(out);
    /* the table: names, the rest */
    out = run_monitor("--vms", 0);
    ck_assert_msg(
        strstr(out,
               "    1001           web-01                     80.0    24.00    24.00      48.00"),
        "%s", out);
    ck_assert_msg(strstr(out, "[not in a VM]"), "%s", out);
    free(out);
    out = run_monitor("--vms --group-by pod", 2);
    ck_assert_msg(strstr(out, "--vms is --group-by vm, not --group-by pod"), "%s", out);
    free(out);
    out = run_monitor("--vms --pid 1001", 2);
    ck_assert_msg(strstr(out, "no --pid or COMMAND with it"), "%s", out);
    free(out);
}
END_TEST

/* The hypervisors are watched with their threads while they run, and no
 * longer once gone. */
START_TEST(watch_while_running)
{
    char *root = pa_test_fixture_copy("vms/host");
    char proc[4096], sys[4096], rootfs[4096], cmd[4200];
    snprintf(proc, sizeof(proc), "%s/proc", root);
    snprintf(sys, sizeof(sys), "%s/sys", root);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", root);
    pa_ctx *ctx = NULL;
    pa_ctx_opts o = {.procfs = proc, .sysfs = sys, .rootfs = rootfs};
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    rp_vmgroups *g = NULL;
    ck_assert_int_eq(rp_vmgroups_new(&g, proc, rootfs), 0);
    ck_assert_int_eq(rp_vmgroups_scan(g, ctx), 0);
    snprintf(cmd, sizeof(cmd), "rm -r '%s/3101'", proc);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(rp_vmgroups_scan(g, ctx), 0);
    ck_assert_int_eq(pa_unwatch_pid(ctx, 3101), -ESRCH); /* already */
    ck_assert_int_eq(pa_unwatch_pid(ctx, 3001), 0);
    ck_assert_int_eq(pa_unwatch_pid(ctx, 7001), -ESRCH); /* never: no VM */
    rp_vmgroups_free(g);
    pa_ctx_free(ctx);
    pa_test_rmtree(root);
}
END_TEST

/* A daemon --vms publishes the VM records into its ring (version 5);
 * monitor --ring --vms reads them back with their names. */
START_TEST(daemon_ring_vms)
{
    char ring[64], cmd[8192];
    snprintf(ring, sizeof(ring), "pa-test-vms-%d", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "timeout 8 '%s' daemon --vms --ring %s --interval 200ms -q --procfs '%s/proc' "
             "--sysfs '%s/sys' --rootfs '%s/rootfs' --hwdb '%s' >/dev/null 2>&1 & d=$!; sleep 1; "
             "'%s' monitor --ring %s --vms --count 1 --interval 400ms --format json 2>&1; "
             "st=$?; { kill $d; wait $d; } 2>/dev/null; exit $st",
             CLI_PATH, ring, FIX, FIX, FIX, PA_TEST_HWDB, CLI_PATH, ring);
    char *out = NULL;
    int st = pa_test_run(cmd, &out);
    ck_assert_msg(st == 0, "exit %d: %s", st, out);
    int vms = 0, others = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        if (strstr(l, "\"type\":\"system\""))
            continue;
        if (!strstr(l, "\"type\":\"vm\"")) {
            others++;
            continue;
        }
        vms += strstr(l, "\"vm_name\"") != NULL;
        if (strstr(l, "\"vm_name\":\"pve-web\"")) {
            ck_assert_msg(strstr(l, "\"vm_uuid\":\"3b2a1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\","
                                    "\"hypervisor\":\"qemu\",\"vm_manager\":\"proxmox\","
                                    "\"vm_id\":\"100\",\"names_source\":\"proxmox VMID.conf\","
                                    "\"threads\":3,\"vcpus\":2"),
                          "%s", l);
            ck_assert_ptr_null(strstr(strstr(l, "names_source") + 1, "names_source"));
        }
    }
    ck_assert_int_eq(vms, (int)NVMS);
    ck_assert_int_eq(others, 0);
    free(out);
}
END_TEST

START_TEST(prometheus_vm_series)
{
    pa_ctx *ctx = NULL;
    pa_ctx_opts o = {.procfs = FIX "/proc", .sysfs = FIX "/sys", .rootfs = FIX "/rootfs"};
    ck_assert_int_eq(pa_ctx_new(&ctx, &o), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "procfs-cpu", NULL), 0);
    ck_assert_int_eq(pa_module_enable(ctx, "cpu-tdp", NULL), 0);
    ck_assert_int_eq(pa_watch_all(ctx, 1), 0);
    ck_assert_int_eq(pa_report_cgroups(ctx, 1), 0);
    rp_vmgroups *g = NULL;
    ck_assert_int_eq(rp_vmgroups_new(&g, FIX "/proc", FIX "/rootfs"), 0);
    ck_assert_int_eq(rp_vmgroups_scan(g, ctx), 0);
    for (uint64_t k = 1; k <= 3; k++)
        ck_assert_int_eq(pa_tick_at(ctx, k * 1000000000ull), 0);
    pa_report *r = NULL;
    ck_assert_int_eq(pa_report_get(ctx, &r), 0);
    const pa_report *vr = NULL;
    ck_assert_int_eq(rp_vmgroups_report(g, r, &vr), 0);
    ck_assert_uint_eq(vr->ntargets, NVMS + 1);
    rp_prom_opts po = {.vms = vr};
    snprintf(po.node, sizeof(po.node), "h1");
    size_t len = 0;
    char *page = rp_prom_page(r, &po, &len);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page,
                         "powerapi_vm_power_watts{vm_name=\"web-01\",vm_uuid=\"6a1f3c2e-"
                         "8d4b-4e5f-9a0b-1c2d3e4f5a6b\",hypervisor=\"qemu\",node=\"h1\"} 0\n"),
                  "%s", page);
    ck_assert_ptr_nonnull(strstr(page, "powerapi_vm_vcpu_power_watts{vm_name=\"fc-batch-7\""));
    ck_assert_ptr_null(strstr(page, "powerapi_vm_vcpu_power_watts{vm_name=\"scratch\""));
    ck_assert_ptr_nonnull(strstr(page, "powerapi_vm_power_watts{vm_name=\"[not in a VM]\""));
    ck_assert_ptr_nonnull(strstr(page, "powerapi_vm_series_folded 0\n"));
    free(page);
    po.max_cgroups = 3; /* the containers' bound */
    page = rp_prom_page(r, &po, &len);
    size_t series = 0;
    for (const char *p = page; (p = strstr(p, "\npowerapi_vm_power_watts{")); p++)
        series++;
    ck_assert_uint_eq(series, 4); /* 3 and [other] */
    ck_assert_ptr_nonnull(strstr(page, "powerapi_vm_power_watts{vm_name=\"[other]\",vm_uuid=\"\""));
    ck_assert_ptr_nonnull(strstr(page, "powerapi_vm_series_folded 7\n"));
    free(page);
    pa_report_free(r);
    rp_vmgroups_free(g);
    pa_ctx_free(ctx);
}
END_TEST

/* Every component beyond cpu and nic (a GPU formula's "gpu") is summed
 * per VM record like cpu and nic (DESIGN.md section 18, "Records"): its
 * watts, its joules over the windows; rp_vmgroups_merge appends the VM
 * records with theirs (the GPU zone of --export-vms comes from them). */
START_TEST(component_sums)
{
    rp_vmgroups *g = NULL;
    ck_assert_int_eq(rp_vmgroups_new(&g, FIX "/proc", FIX "/rootfs"), 0);
    ck_assert_int_eq(rp_vmgroups_scan(g, NULL), 0);
    const pa_vms *vms = rp_vmgroups_vms(g);
    ck_assert_uint_eq(pa_vms_count(vms), NVMS);
    pid_t qemu = pa_vms_get(vms, 0)->pid;
    static const char *const comps[] = {"cpu", "nic", "gpu"};
    pa_target_info t[3] = {
        {.type = PA_TARGET_PROCESS, .pid = qemu, .cgroup = "", .power = {.cpu_w = 1, .total_w = 4}},
        {.type = PA_TARGET_PROCESS,
         .pid = 999999,
         .cgroup = "",
         .power = {.cpu_w = 2, .total_w = 7}},
        {.type = PA_TARGET_UNACCOUNTED, .power = {.cpu_w = 0.5, .total_w = 1.5}}};
    double w[9] = {1, 0, 3, 2, 0, 5, 0.5, 0, 1}, j[9] = {0};
    pa_report r = {.interval_s = 2.0,
                   .ntargets = 3,
                   .targets = t,
                   .ncomponents = 3,
                   .component_names = comps,
                   .target_component_w = w,
                   .target_component_j = j};
    const pa_report *vr = NULL;
    for (int window = 1; window <= 2; window++) {
        ck_assert_int_eq(rp_vmgroups_report(g, &r, &vr), 0);
        ck_assert_uint_eq(vr->ntargets, NVMS + 1);
        ck_assert_ptr_nonnull(vr->target_component_w);
        ck_assert_ptr_eq(vr->targets[0].vm, pa_vms_get(vms, 0));
        ck_assert_double_eq_tol(vr->target_component_w[2], 3.0, 1e-12); /* its QEMU's */
        ck_assert_double_eq_tol(vr->target_component_j[2], 6.0 * window, 1e-12);
        for (size_t k = 1; k < NVMS; k++) /* the other VMs: none */
            ck_assert_double_eq_tol(vr->target_component_w[k * 3 + 2], 0, 1e-12);
        ck_assert_double_eq_tol(vr->target_component_w[NVMS * 3 + 2], 6.0, 1e-12); /* 5 + 1 */
        ck_assert_double_eq_tol(vr->target_component_j[NVMS * 3 + 2], 12.0 * window, 1e-12);
    }
    const pa_report *m = NULL;
    ck_assert_int_eq(rp_vmgroups_merge(g, &r, &m), 0);
    ck_assert_uint_eq(m->ntargets, 3 + NVMS + 1);
    ck_assert_double_eq_tol(m->target_component_w[0 * 3 + 2], 3.0, 1e-12); /* r's own rows */
    ck_assert_double_eq_tol(m->target_component_w[3 * 3 + 2], 3.0, 1e-12); /* the VM's */
    ck_assert_double_eq_tol(m->target_component_j[3 * 3 + 2], 18.0, 1e-12);
    rp_vmgroups_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vms");
    TCase *tc = tcase_create("vms");
    tcase_add_test(tc, parse_cmdlines);
    tcase_add_test(tc, component_sums);
    tcase_add_test(tc, parse_cgroups);
    tcase_add_test(tc, vcpu_names);
    tcase_add_test(tc, list_fixture);
    tcase_add_test(tc, table_between_scans);
    tcase_add_test(tc, monitor_vms);
    tcase_add_test(tc, prometheus_vm_series);
    tcase_add_test(tc, daemon_ring_vms);
    tcase_add_test(tc, watch_while_running);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
