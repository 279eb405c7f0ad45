/* test_ring.c - the shared-memory ring: round trip, following, lapping,
 * aggregation, truncation, layout version, dead and hung writers, and a
 * writer under stress with reader threads and processes. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "powerapi.h"
#include "ring_fixture.h"

static char ring_name[64];

static void fresh_name(void)
{
    static int n;
    snprintf(ring_name, sizeof(ring_name), "pa-test-ring-%d-%d", (int)getpid(), n++);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A hand-built report: up to 64 targets. */
typedef struct fake {
    pa_report r;
    pa_target_info t[64];
} fake;

static void fake_init(fake *f, uint64_t tick, uint64_t time_ns, double dt)
{
    memset(f, 0, sizeof(*f));
    f->r.tick = tick;
    f->r.time_ns = time_ns;
    f->r.interval_s = dt;
    f->r.system.cpu_w = 10;
    f->r.system.nic_w = 1;
    f->r.system.idle_w = 3;
    f->r.system.total_w = 11;
    f->r.system.total_j = 11.0 * (double)tick;
    f->r.system.interval_s = dt;
    f->r.formula = "cpu-tdp+nic-linear";
    f->r.sensors = "procfs-cpu+nic";
    f->r.cpu_source = "model";
    f->r.assumed = "tdp=10W (default: unknown CPU)";
    f->r.targets = f->t;
}

static pa_target_info *fake_add(fake *f, pa_target_type type, pid_t pid, const char *comm,
                                const char *cgroup, double cpu_w, double nic_w)
{
    pa_target_info *t = &f->t[f->r.ntargets++];
    t->type = type;
    t->pid = pid;
    snprintf(t->comm, sizeof(t->comm), "%s", comm);
    t->cgroup = cgroup;
    t->power.cpu_w = cpu_w;
    t->power.nic_w = nic_w;
    t->power.total_w = cpu_w + nic_w;
    t->power.interval_s = f->r.interval_s;
    t->power.time_ns = f->r.time_ns;
    t->multiplex = 1;
    return t;
}

static pa_ring_writer *make_ring(uint32_t cap, uint32_t maxt)
{
    fresh_name();
    pa_ring_opts o = {.capacity = cap, .max_targets = maxt};
    pa_ring_writer *w = NULL;
    int rc = pa_ring_create(ring_name, &o, &w);
    ck_assert_msg(rc == 0, "create: %d %s", rc, pa_last_error());
    return w;
}

START_TEST(test_roundtrip)
{
    pa_ring_writer *w = make_ring(8, 16);
    static const char cg_a[] = "/system.slice/a.service";
    fake f;
    fake_init(&f, 7, 5000000000ull, 1.0);
    pa_target_info *t = fake_add(&f, PA_TARGET_PROCESS, 4242, "java", cg_a, 4.1, 0.02);
    t->ppid = 1;
    t->power.cpu_j = 40;
    t->power.nic_j = 0.2;
    t->power.total_j = 40.2;
    t->power.cpu_time_s = 0.98;
    t->power.flags = PA_POWER_FIRST;
    t->net_rx_bytes = 1000;
    t->net_tx_bytes = 2000;
    t->has_net = 1;
    fake_add(&f, PA_TARGET_PROCESS, 17, "we(ird) na", cg_a, 1.5, 0);
    fake_add(&f, PA_TARGET_CGROUP, 0, "", cg_a, 5.6, 0.02);
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);

    /* The ring is world-readable, not writable, whatever the umask. */
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", ring_name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);

    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g = NULL;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(seq, 1);
    ck_assert_uint_eq(g->tick, 7);
    ck_assert_uint_eq(g->time_ns, 5000000000ull);
    ck_assert_double_eq(g->interval_s, 1.0);
    ck_assert_double_eq(g->system.cpu_w, 10);
    ck_assert_double_eq(g->system.idle_w, 3);
    ck_assert_double_eq(g->system.total_j, 77);
    ck_assert_str_eq(g->formula, "cpu-tdp+nic-linear");
    ck_assert_str_eq(g->sensors, "procfs-cpu+nic");
    ck_assert_str_eq(g->cpu_source, "model");
    ck_assert_str_eq(g->assumed, "tdp=10W (default: unknown CPU)");
    ck_assert_uint_eq(g->ntargets, 3);
    ck_assert_int_eq(g->targets[0].type, PA_TARGET_PROCESS);
    ck_assert_int_eq(g->targets[0].pid, 4242);
    ck_assert_int_eq(g->targets[0].ppid, 1);
    ck_assert_str_eq(g->targets[0].comm, "java");
    ck_assert_str_eq(g->targets[0].cgroup, cg_a);
    ck_assert_double_eq(g->targets[0].power.cpu_w, 4.1);
    ck_assert_double_eq(g->targets[0].power.total_j, 40.2);
    ck_assert_double_eq(g->targets[0].power.cpu_time_s, 0.98);
    ck_assert_uint_eq(g->targets[0].power.flags, PA_POWER_FIRST);
    ck_assert_uint_eq(g->targets[0].net_rx_bytes, 1000);
    ck_assert_uint_eq(g->targets[0].net_tx_bytes, 2000);
    ck_assert_int_eq(g->targets[0].has_net, 1);
    ck_assert_ptr_null(g->targets[0].counters);
    ck_assert_str_eq(g->targets[1].comm, "we(ird) na");
    ck_assert_int_eq(g->targets[2].type, PA_TARGET_CGROUP);
    ck_assert_str_eq(g->targets[2].cgroup, cg_a);
    ck_assert_double_eq_tol(g->targets[2].power.total_w, 5.62, 1e-12);

    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.version, PA_RING_VERSION);
    ck_assert_uint_eq(info.capacity, 8);
    ck_assert_uint_eq(info.max_targets, 16);
    ck_assert_uint_eq(info.mode, 0644);
    ck_assert_int_eq(info.writer_pid, getpid());
    ck_assert_int_eq(info.alive, 1);
    ck_assert_uint_eq(info.newest, 1);
    ck_assert_uint_eq(info.oldest, 1);
    ck_assert_uint_eq(info.lost, 0);

    /* Nothing newer. */
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EAGAIN);
    ck_assert_uint_eq(seq, 1);

    pa_ring_close(r);
    pa_ring_destroy(w);
    ck_assert_int_eq(stat(path, &st), -1);
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "powerapi daemon"));
}
END_TEST

START_TEST(test_group_mode)
{
    fresh_name();
    pa_ring_opts o = {.capacity = 4, .max_targets = 4, .mode = 0640, .set_gid = 1, .gid = getgid()};
    pa_ring_writer *w = NULL;
    ck_assert_int_eq(pa_ring_create(ring_name, &o, &w), 0);
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", ring_name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(st.st_gid, getgid());
    /* A second writer on a live ring is refused. */
    pa_ring_writer *w2 = NULL;
    ck_assert_int_eq(pa_ring_create(ring_name, &o, &w2), -EEXIST);
    ck_assert_ptr_null(w2);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "running writer"));
    pa_ring_destroy(w);
    /* Bad names and options. */
    ck_assert_int_eq(pa_ring_create("a/b", NULL, &w2), -EINVAL);
    ck_assert_int_eq(pa_ring_create("..", NULL, &w2), -EINVAL);
    pa_ring_opts bad = {.capacity = 1};
    ck_assert_int_eq(pa_ring_create(ring_name, &bad, &w2), -EINVAL);
    pa_ring_opts huge = {.capacity = 100000, .max_targets = 1u << 20};
    ck_assert_int_eq(pa_ring_create(ring_name, &huge, &w2), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "GiB"));
}
END_TEST

START_TEST(test_follow_and_lap)
{
    pa_ring_writer *w = make_ring(4, 4);
    fake f;
    pa_ring_reader *r = NULL;
    for (uint64_t i = 1; i <= 2; i++) {
        fake_init(&f, i, i * 1000000000ull, 1.0);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(seq, 2); /* 0 starts at the newest */
    ck_assert_uint_eq(g->tick, 2);
    for (uint64_t i = 3; i <= 5; i++) {
        fake_init(&f, i, i * 1000000000ull, 1.0);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    for (uint64_t i = 3; i <= 5; i++) {
        ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
        ck_assert_uint_eq(seq, i);
        ck_assert_uint_eq(g->tick, i);
    }
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EAGAIN);
    /* The writer laps the reader: 6..15 published, only 12..15 remain. */
    for (uint64_t i = 6; i <= 15; i++) {
        fake_init(&f, i, i * 1000000000ull, 1.0);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(seq, 12);
    ck_assert_uint_eq(g->tick, 12);
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.lost, 6); /* 6..11 */
    ck_assert_uint_eq(info.oldest, 12);
    ck_assert_uint_eq(info.newest, 15);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

START_TEST(test_aggregate)
{
    pa_ring_writer *w = make_ring(16, 8);
    static const char cg[] = "/user.slice";
    /* Windows ending at 1, 2, 3 s (1 s each), then one of 2 s at 5 s.
     * A: 2, 4, 6, 3 W; B appears in the third window only, 3 W. */
    const double aw[4] = {2, 4, 6, 3};
    const double dts[4] = {1, 1, 1, 2};
    const uint64_t ends[4] = {1000000000ull, 2000000000ull, 3000000000ull, 5000000000ull};
    double aj = 0;
    for (int i = 0; i < 4; i++) {
        fake f;
        fake_init(&f, (uint64_t)i + 1, ends[i], dts[i]);
        f.r.system.cpu_w = 10 + i;
        f.r.system.total_w = 10 + i;
        aj += aw[i] * dts[i];
        pa_target_info *a = fake_add(&f, PA_TARGET_PROCESS, 100, "a", cg, aw[i], 0);
        a->power.total_j = aj;
        a->power.cpu_time_s = 0.25;
        a->net_rx_bytes = 10;
        a->has_net = 1;
        if (i == 2) {
            pa_target_info *b = fake_add(&f, PA_TARGET_PROCESS, 200, "b", cg, 3, 0);
            b->power.total_j = 3;
            b->power.flags = PA_POWER_FIRST | PA_POWER_EXITED;
        }
        fake_add(&f, PA_TARGET_CGROUP, 0, "", cg, aw[i] + (i == 2 ? 3 : 0), 0);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    const pa_report *g;

    /* Everything: 5 s covered. A: (2+4+6+6)/5 = 3.6 W; B: 3/5 = 0.6 W. */
    uint64_t seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    ck_assert_uint_eq(seq, 4);
    ck_assert_uint_eq(g->tick, 4);
    ck_assert_uint_eq(g->time_ns, 5000000000ull);
    ck_assert_double_eq_tol(g->interval_s, 5.0, 1e-12);
    ck_assert_double_eq_tol(g->system.cpu_w, (10 + 11 + 12 + 13 * 2) / 5.0, 1e-12);
    ck_assert_uint_eq(g->ntargets, 3);
    const pa_target_info *a = NULL, *b = NULL, *c = NULL;
    for (size_t i = 0; i < g->ntargets; i++) {
        if (g->targets[i].pid == 100)
            a = &g->targets[i];
        else if (g->targets[i].pid == 200)
            b = &g->targets[i];
        else if (g->targets[i].type == PA_TARGET_CGROUP)
            c = &g->targets[i];
    }
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_double_eq_tol(a->power.total_w, 3.6, 1e-12);
    ck_assert_double_eq_tol(a->power.total_j, 18, 1e-12); /* newest */
    ck_assert_double_eq_tol(a->power.cpu_time_s, 1.0, 1e-12);
    ck_assert_uint_eq(a->net_rx_bytes, 40);
    ck_assert_double_eq_tol(b->power.total_w, 0.6, 1e-12);
    ck_assert_uint_eq(b->power.flags, PA_POWER_FIRST | PA_POWER_EXITED);
    ck_assert_str_eq(c->cgroup, cg);
    ck_assert_double_eq_tol(c->power.total_w, 4.2, 1e-12);
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.windows, 4);

    /* A 2.5 s view: windows ending less than 2.5 s before 5 s: 3 s and
     * 5 s.  A: (6 + 6) / 3 = 4 W. */
    seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 2500000000ull, &g), 0);
    ck_assert_double_eq_tol(g->interval_s, 3.0, 1e-12);
    for (size_t i = 0; i < g->ntargets; i++)
        if (g->targets[i].pid == 100)
            ck_assert_double_eq_tol(g->targets[i].power.total_w, 4.0, 1e-12);
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.windows, 2);

    /* Following: after window 2, only 3 and 4. */
    seq = 2;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    ck_assert_uint_eq(seq, 4);
    ck_assert_double_eq_tol(g->interval_s, 3.0, 1e-12);
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), -EAGAIN);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* The exits (issue 38): the exited record's count and the report's exits
 * source and overflows, in what was padding: read back from one window,
 * and an aggregate sums the processes over its windows. */
START_TEST(test_exits)
{
    pa_ring_writer *w = make_ring(16, 8);
    for (int i = 0; i < 2; i++) {
        fake f;
        fake_init(&f, (uint64_t)i + 1, (uint64_t)(i + 1) * 1000000000ull, 1);
        f.r.exits_source = "taskstats";
        f.r.exits_lost = 3;
        pa_target_info *e = fake_add(&f, PA_TARGET_EXITED, 0, "[exited]", "", 2, 0);
        e->processes = 100u * (unsigned)(i + 1);
        e->power.cpu_time_s = 0.5;
        fake_add(&f, PA_TARGET_UNACCOUNTED, 0, "[unaccounted]", "", 1, 0);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    const pa_report *g;
    uint64_t seq = 1;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_str_eq(g->exits_source, "taskstats");
    ck_assert_uint_eq(g->exits_lost, 3);
    const pa_target_info *ex = NULL, *un = NULL;
    for (size_t i = 0; i < g->ntargets; i++) {
        if (g->targets[i].type == PA_TARGET_EXITED)
            ex = &g->targets[i];
        if (g->targets[i].type == PA_TARGET_UNACCOUNTED)
            un = &g->targets[i];
    }
    ck_assert_ptr_nonnull(ex);
    ck_assert_ptr_nonnull(un);
    ck_assert_uint_eq(ex->processes, 200);
    ck_assert_str_eq(ex->comm, "[exited]");
    ck_assert_uint_eq(un->processes, 0);
    seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    for (size_t i = 0; i < g->ntargets; i++)
        if (g->targets[i].type == PA_TARGET_EXITED) {
            ck_assert_uint_eq(g->targets[i].processes, 300);
            ck_assert_double_eq_tol(g->targets[i].power.cpu_time_s, 1.0, 1e-12);
            ck_assert_double_eq_tol(g->targets[i].power.total_w, 2.0, 1e-12);
        }
    ck_assert_str_eq(g->exits_source, "taskstats");
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Version 5 (issue 41): a VM record's names and vCPU part read back;
 * an aggregate averages the vCPU and emulator watts over the windows
 * (6 W then 0 W of vCPUs, 1 s each: 3 W) and keeps the newest joules;
 * "[not in a VM]" (no names) stays one record without them. */
START_TEST(test_vms)
{
    pa_ring_writer *w = make_ring(8, 4);
    pa_vm_info vm;
    memset(&vm, 0, sizeof(vm));
    snprintf(vm.name, sizeof(vm.name), "web-01");
    snprintf(vm.uuid, sizeof(vm.uuid), "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b");
    snprintf(vm.hypervisor, sizeof(vm.hypervisor), "qemu");
    snprintf(vm.manager, sizeof(vm.manager), "libvirt");
    snprintf(vm.id, sizeof(vm.id), "1");
    snprintf(vm.source, sizeof(vm.source), "qemu -name");
    snprintf(vm.cgroup, sizeof(vm.cgroup),
             "/machine.slice/machine-qemu\\x2d1\\x2dweb\\x2d01.scope");
    vm.pid = 1001;
    vm.nthreads = 5;
    vm.nvcpus = 2;
    for (int i = 0; i < 2; i++) {
        fake f;
        fake_init(&f, (uint64_t)i + 1, (uint64_t)(i + 1) * 1000000000ull, 1);
        pa_target_info *t = fake_add(&f, PA_TARGET_VM, 1001, "qemu-system-x86", vm.cgroup, 8, 0);
        t->vm = &vm;
        t->vcpu_w = i ? 0 : 6;
        t->emulator_w = i ? 8 : 2;
        t->vcpu_j = 6;
        t->emulator_j = 2.0 + 8.0 * i;
        pa_target_info *o = fake_add(&f, PA_TARGET_VM, 0, "[not in a VM]", "", 1, 0);
        o->vcpu_w = 0;
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    const pa_report *g;
    uint64_t seq = 1;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    const pa_target_info *t = NULL, *rest = NULL;
    for (size_t i = 0; i < g->ntargets; i++) {
        if (g->targets[i].type == PA_TARGET_VM && g->targets[i].vm)
            t = &g->targets[i];
        else if (g->targets[i].type == PA_TARGET_VM)
            rest = &g->targets[i];
    }
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(rest);
    ck_assert_str_eq(t->vm->name, "web-01");
    ck_assert_str_eq(t->vm->uuid, vm.uuid);
    ck_assert_str_eq(t->vm->hypervisor, "qemu");
    ck_assert_str_eq(t->vm->manager, "libvirt");
    ck_assert_str_eq(t->vm->id, "1");
    ck_assert_str_eq(t->vm->source, "qemu -name");
    ck_assert_str_eq(t->vm->cgroup, vm.cgroup);
    ck_assert_uint_eq(t->vm->nthreads, 5);
    ck_assert_uint_eq(t->vm->nvcpus, 2);
    ck_assert_int_eq(t->pid, 1001);
    ck_assert_uint_eq(t->processes, 0);
    ck_assert_double_eq_tol(t->vcpu_w, 0, 1e-12);
    ck_assert_double_eq_tol(t->emulator_w, 8, 1e-12);
    ck_assert_double_eq_tol(t->emulator_j, 10, 1e-12);
    ck_assert_str_eq(rest->comm, "[not in a VM]");
    seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    t = NULL;
    for (size_t i = 0; i < g->ntargets; i++)
        if (g->targets[i].vm)
            t = &g->targets[i];
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->vm->name, "web-01");
    ck_assert_double_eq_tol(t->vcpu_w, 3, 1e-12);
    ck_assert_double_eq_tol(t->emulator_w, 5, 1e-12);
    ck_assert_double_eq_tol(t->power.total_w, 8, 1e-12);
    ck_assert_double_eq_tol(t->vcpu_j, 6, 1e-12);
    ck_assert_double_eq_tol(t->emulator_j, 10, 1e-12);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Version 4: the report's devices (GPUs) read back whole, and an
 * aggregate averages each device's power and idle part over its windows
 * (10 W for 1 s, 40 W for 2 s: 30 W) with the newest energy. */
START_TEST(test_devices)
{
    pa_ring_writer *w = make_ring(8, 4);
    const double pw[2] = {10, 40}, dts[2] = {1, 2};
    for (int i = 0; i < 2; i++) {
        fake f;
        fake_init(&f, (uint64_t)i + 1, (uint64_t)(i + 1) * 1000000000ull, dts[i]);
        pa_device_info d[2];
        memset(d, 0, sizeof(d));
        for (int k = 0; k < 2; k++) {
            snprintf(d[k].component, sizeof(d[k].component), "gpu");
            snprintf(d[k].bus, sizeof(d[k].bus), "00000000:%02d:00.0", k + 3);
            snprintf(d[k].uuid, sizeof(d[k].uuid), "GPU-%d", k);
            snprintf(d[k].source, sizeof(d[k].source), "measured");
            d[k].index = k;
            d[k].power_w = pw[i] * (k + 1);
            d[k].idle_w = 5;
            d[k].energy_j = 100.0 * (i + 1);
        }
        f.r.ndevices = 2;
        f.r.devices = d;
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    const pa_report *g;
    uint64_t seq = 1;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(g->ndevices, 2);
    ck_assert_str_eq(g->devices[1].uuid, "GPU-1");
    ck_assert_str_eq(g->devices[1].bus, "00000000:04:00.0");
    ck_assert_double_eq_tol(g->devices[1].power_w, 80, 1e-12);
    seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    ck_assert_uint_eq(g->ndevices, 2);
    ck_assert_double_eq_tol(g->devices[0].power_w, (10 * 1 + 40 * 2) / 3.0, 1e-12);
    ck_assert_double_eq_tol(g->devices[1].power_w, (20 * 1 + 80 * 2) / 3.0, 1e-12);
    ck_assert_double_eq_tol(g->devices[0].idle_w, 5, 1e-12);
    ck_assert_double_eq_tol(g->devices[0].energy_j, 200, 1e-12);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

START_TEST(test_truncation)
{
    pa_ring_writer *w = make_ring(4, 2);
    fake f;
    fake_init(&f, 1, 1000000000ull, 1.0);
    fake_add(&f, PA_TARGET_PROCESS, 1, "p1", "", 1, 0);
    fake_add(&f, PA_TARGET_PROCESS, 2, "p2", "", 5, 0);
    fake_add(&f, PA_TARGET_PROCESS, 3, "p3", "", 3, 0);
    fake_add(&f, PA_TARGET_PROCESS, 4, "p4", "", 2, 0);
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(g->ntargets, 2);
    ck_assert_int_eq(g->targets[0].pid, 2);
    ck_assert_int_eq(g->targets[1].pid, 3);
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.truncated, 2);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Reports may carry one copy of a cgroup path per target: the ring keeps
 * each distinct path once per window, so 64 copies of a 200-byte path fit
 * a pool of 8 KiB (64 targets' worth), and a cgroup that does not fit is
 * dropped and counted rather than stored nameless. */
START_TEST(test_cgroup_paths)
{
    pa_ring_writer *w = make_ring(4, 64);
    static char paths[64][224];
    char longpath[201];
    memset(longpath, 'x', 200);
    longpath[0] = '/';
    longpath[200] = '\0';
    fake f;
    fake_init(&f, 1, 1000000000ull, 1.0);
    for (int i = 0; i < 64; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s", longpath);
        fake_add(&f, PA_TARGET_PROCESS, 100 + i, "p", paths[i], 1, 0);
    }
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(g->ntargets, 64);
    for (size_t i = 0; i < g->ntargets; i++)
        ck_assert_str_eq(g->targets[i].cgroup, longpath);
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.truncated, 0);

    /* 64 distinct 200-byte cgroups: 12.8 KB do not fit 8 KiB. */
    fake_init(&f, 2, 2000000000ull, 1.0);
    for (int i = 0; i < 64; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s%03d", longpath, i);
        fake_add(&f, PA_TARGET_CGROUP, 0, "", paths[i], 64 - i, 0);
    }
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_gt(g->ntargets, 30);
    ck_assert_uint_lt(g->ntargets, 64);
    for (size_t i = 0; i < g->ntargets; i++) {
        char want[224];
        snprintf(want, sizeof(want), "%s%03zu", longpath, i);
        ck_assert_str_eq(g->targets[i].cgroup, want);
    }
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_uint_eq(info.truncated, 64 - g->ntargets);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Perf counters: names, values and multiplex read back exactly; a target
 * without counters reads back NULL, as the engine reports it. */
START_TEST(test_counters_roundtrip)
{
    pa_ring_writer *w = make_ring(4, 8);
    static const char *const names[3] = {"task-clock", "perf::INSTRUCTIONS:u", "page-faults"};
    static const char cg[] = "/user.slice";
    const double pc[3] = {987654321.0, 123456789012.0, 0.5};
    const double cc[3] = {1e9 + 0.25, 3.0, 4096.0};
    fake f;
    fake_init(&f, 1, 1000000000ull, 1.0);
    f.r.ncounters = 3;
    f.r.counter_names = names;
    pa_target_info *p = fake_add(&f, PA_TARGET_PROCESS, 4242, "java", cg, 4, 0);
    p->counters = pc;
    p->multiplex = 0.5;
    fake_add(&f, PA_TARGET_PROCESS, 17, "idle", cg, 1, 0); /* no counters */
    pa_target_info *c = fake_add(&f, PA_TARGET_CGROUP, 0, "", cg, 5, 0);
    c->counters = cc;
    c->multiplex = 0.75;
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);

    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(g->ntargets, 3);
    ck_assert_uint_eq(g->ncounters, 3);
    ck_assert_ptr_nonnull(g->counter_names);
    for (int e = 0; e < 3; e++)
        ck_assert_str_eq(g->counter_names[e], names[e]);
    ck_assert_int_eq(g->targets[0].pid, 4242);
    ck_assert_ptr_nonnull(g->targets[0].counters);
    for (int e = 0; e < 3; e++)
        ck_assert_double_eq(g->targets[0].counters[e], pc[e]);
    ck_assert_double_eq(g->targets[0].multiplex, 0.5);
    ck_assert_int_eq(g->targets[1].pid, 17);
    ck_assert_ptr_null(g->targets[1].counters);
    ck_assert_double_eq(g->targets[1].multiplex, 1.0);
    ck_assert_int_eq(g->targets[2].type, PA_TARGET_CGROUP);
    ck_assert_str_eq(g->targets[2].cgroup, cg);
    ck_assert_ptr_nonnull(g->targets[2].counters);
    for (int e = 0; e < 3; e++)
        ck_assert_double_eq(g->targets[2].counters[e], cc[e]);
    ck_assert_double_eq(g->targets[2].multiplex, 0.75);

    /* The next window has no counters (perf disabled): none read back. */
    fake_init(&f, 2, 2000000000ull, 1.0);
    fake_add(&f, PA_TARGET_PROCESS, 4242, "java", cg, 4, 0);
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_uint_eq(seq, 2);
    ck_assert_uint_eq(g->ncounters, 0);
    ck_assert_ptr_null(g->counter_names);
    ck_assert_ptr_null(g->targets[0].counters);

    /* More counters than a context can count is refused. */
    static const char *const many[17] = {"e"};
    fake_init(&f, 3, 3000000000ull, 1.0);
    f.r.ncounters = 17;
    f.r.counter_names = many;
    ck_assert_int_eq(pa_ring_publish(w, &f.r), -EINVAL);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Aggregated counters are the exact sums over the windows counted with
 * the newest window's events (in any order), multiplex the lowest; a
 * window of other events (the daemon reconfigured) adds none. */
START_TEST(test_counters_aggregate)
{
    pa_ring_writer *w = make_ring(8, 8);
    static const char *const old_names[2] = {"cycles", "instructions"};
    static const char *const names[2] = {"task-clock", "page-faults"};
    static const char *const reversed[2] = {"page-faults", "task-clock"};
    /* Window 1 counts cycles, instructions; windows 2 to 4 task-clock and
     * page-faults (window 3 in the other order).  Target 100 everywhere,
     * 200 only in window 1, 300 in 2 to 4 without counters. */
    const double c100[4][2] = {{1000, 2000}, {10, 1}, {2, 20}, {30, 3}};
    const double mux100[4] = {0.125, 0.5, 0.25, 1};
    const double c200[2] = {7, 8};
    for (int i = 0; i < 4; i++) {
        fake f;
        fake_init(&f, (uint64_t)i + 1, (uint64_t)(i + 1) * 1000000000ull, 1.0);
        f.r.ncounters = 2;
        f.r.counter_names = i == 0 ? old_names : i == 2 ? reversed : names;
        pa_target_info *a = fake_add(&f, PA_TARGET_PROCESS, 100, "a", "", 2, 0);
        a->counters = c100[i];
        a->multiplex = mux100[i];
        if (i == 0) {
            pa_target_info *b = fake_add(&f, PA_TARGET_PROCESS, 200, "b", "", 1, 0);
            b->counters = c200;
            b->multiplex = 0.0625;
        } else {
            fake_add(&f, PA_TARGET_PROCESS, 300, "c", "", 1, 0);
        }
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    }
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    const pa_report *g;
    uint64_t seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    ck_assert_uint_eq(seq, 4);
    ck_assert_uint_eq(g->ncounters, 2);
    ck_assert_str_eq(g->counter_names[0], "task-clock");
    ck_assert_str_eq(g->counter_names[1], "page-faults");
    const pa_target_info *a = NULL, *b = NULL, *c = NULL;
    for (size_t i = 0; i < g->ntargets; i++) {
        if (g->targets[i].pid == 100)
            a = &g->targets[i];
        else if (g->targets[i].pid == 200)
            b = &g->targets[i];
        else if (g->targets[i].pid == 300)
            c = &g->targets[i];
    }
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(a->counters);
    ck_assert_double_eq(a->counters[0], 10 + 20 + 30);
    ck_assert_double_eq(a->counters[1], 1 + 2 + 3);
    ck_assert_double_eq(a->multiplex, 0.25); /* window 1's 0.125 not */
    ck_assert_double_eq_tol(a->power.total_w, 2, 1e-12);
    ck_assert_ptr_null(b->counters); /* only other events */
    ck_assert_double_eq(b->multiplex, 1);
    ck_assert_double_eq_tol(b->power.total_w, 0.25, 1e-12); /* power kept */
    ck_assert_ptr_null(c->counters);

    /* Following: after window 2, windows 3 and 4 only. */
    seq = 2;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 0, &g), 0);
    ck_assert_uint_eq(seq, 4);
    a = NULL;
    for (size_t i = 0; i < g->ntargets; i++)
        if (g->targets[i].pid == 100)
            a = &g->targets[i];
    ck_assert_ptr_nonnull(a);
    ck_assert_double_eq(a->counters[0], 50);
    ck_assert_double_eq(a->counters[1], 5);
    ck_assert_double_eq(a->multiplex, 0.25);
    /* A 0.5 s span: the newest window alone, its own values. */
    seq = 0;
    ck_assert_int_eq(pa_ring_aggregate(r, &seq, 500000000ull, &g), 0);
    a = NULL;
    for (size_t i = 0; i < g->ntargets; i++)
        if (g->targets[i].pid == 100)
            a = &g->targets[i];
    ck_assert_ptr_nonnull(a);
    ck_assert_double_eq(a->counters[0], 30);
    ck_assert_double_eq(a->counters[1], 3);
    ck_assert_double_eq(a->multiplex, 1);
    pa_ring_close(r);
    pa_ring_destroy(w);
}
END_TEST

/* Writes a 32-bit word of the ring's header as another program might. */
static void poke_u32(const char *name, size_t off, uint32_t v)
{
    char shm[80];
    snprintf(shm, sizeof(shm), "/%s", name);
    int fd = shm_open(shm, O_RDWR, 0);
    ck_assert_int_ge(fd, 0);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    memcpy((char *)m + off, &v, sizeof(v));
    munmap(m, 4096);
    close(fd);
}

START_TEST(test_version_mismatch)
{
    pa_ring_writer *w = make_ring(4, 4);
    poke_u32(ring_name, 8, 99); /* the version word follows the magic */
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -EPROTO);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "layout version 99"));
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "reads version 5"));
    /* A ring of a version-1 daemon (no perf counters): refused, saying
     * which versions differ. */
    poke_u32(ring_name, 8, 1);
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -EPROTO);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "layout version 1,"));
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "reads version 5"));
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "same powerapi version"));
    pa_ring_destroy(w);

    /* Not a ring at all. */
    fresh_name();
    char shm[80];
    snprintf(shm, sizeof(shm), "/%s", ring_name);
    int fd = shm_open(shm, O_CREAT | O_EXCL | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -EAGAIN); /* empty */
    ck_assert_int_eq(ftruncate(fd, 8192), 0);
    char junk[16] = "not a ring!";
    ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -EPROTO);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "not a powerapi ring"));
    /* And a writer will not take it over. */
    pa_ring_writer *w2 = NULL;
    ck_assert_int_eq(pa_ring_create(ring_name, NULL, &w2), -EEXIST);
    close(fd);
    shm_unlink(shm);
}
END_TEST

/* A child writer that publishes one window, says so, and either dies or
 * hangs (pause).  Returns its pid. */
static pid_t child_writer(uint64_t interval_ns, int hang)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never beyond a failed check */
        close(p[0]);
        pa_ring_opts o = {.capacity = 4, .max_targets = 4, .interval_ns = interval_ns};
        pa_ring_writer *w = NULL;
        if (pa_ring_create(ring_name, &o, &w) < 0)
            _exit(1);
        fake f;
        fake_init(&f, 1, 1000000000ull, 1.0);
        pa_ring_publish(w, &f.r);
        char c = 'r';
        if (write(p[1], &c, 1) != 1)
            _exit(1);
        if (hang)
            for (;;)
                pause();
        _exit(0); /* dies without removing its ring */
    }
    close(p[1]);
    char c;
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

START_TEST(test_dead_writer)
{
    fresh_name();
    pid_t pid = child_writer(1000000000ull, 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), -EOWNERDEAD);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "no longer running"));
    /* A new daemon replaces the stale ring. */
    pa_ring_writer *w = NULL;
    ck_assert_int_eq(pa_ring_create(ring_name, NULL, &w), 0);
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    /* A clean stop: the reader drains what is left, then hears of it. */
    fake f;
    fake_init(&f, 1, 1000000000ull, 1.0);
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
    pa_ring_destroy(w);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EOWNERDEAD);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "stopped"));
    pa_ring_close(r);
}
END_TEST

START_TEST(test_hung_writer)
{
    fresh_name();
    /* 1 ms windows: called hung after 3 ms + 2 s without a heartbeat. */
    pid_t pid = child_writer(1000000ull, 1);
    pa_ring_reader *r = NULL;
    ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
    uint64_t seq = 0;
    const pa_report *g;
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EAGAIN);
    usleep(2200000);
    ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EOWNERDEAD);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "has not published"));
    pa_ring_info info;
    ck_assert_int_eq(pa_ring_get_info(r, &info), 0);
    ck_assert_int_eq(info.alive, 0);
    ck_assert_int_eq(info.writer_pid, pid);
    pa_ring_close(r);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char shm[80];
    snprintf(shm, sizeof(shm), "/%s", ring_name);
    shm_unlink(shm);
}
END_TEST

/* ---- stress: every field of window s is a function of s ---- */

#define STRESS_CAP 8
#define STRESS_MAXT 48
static const char *const stress_cg[5] = {"/a", "/b/c", "/system.slice/x.service",
                                         "/user.slice/user-1000.slice", ""};

static void stress_report(fake *f, uint64_t s)
{
    fake_init(f, s, s * 1000000ull, 0.001);
    f->r.system.cpu_w = (double)s;
    size_t n = 1 + s % 60; /* sometimes more than fit: truncated */
    for (size_t i = 0; i < n; i++) {
        char comm[16];
        snprintf(comm, sizeof(comm), "c%llu", (unsigned long long)(s % 100000));
        pa_target_info *t = fake_add(f, PA_TARGET_PROCESS, (pid_t)(s * 64 + i), comm,
                                     stress_cg[(s + i) % 5], (double)s + (double)i * 0.5, 0);
        t->power.total_j = (double)s * 2;
        t->net_rx_bytes = s ^ i;
    }
}

/* Checks a window read back; returns 1 when consistent. */
static int stress_check(const pa_report *g)
{
    uint64_t s = g->tick;
    char comm[16];
    snprintf(comm, sizeof(comm), "c%llu", (unsigned long long)(s % 100000));
    size_t n = 1 + s % 60;
    size_t keep = n < STRESS_MAXT ? n : STRESS_MAXT;
    if (g->time_ns != s * 1000000ull || g->system.cpu_w != (double)s || g->ntargets != keep ||
        strcmp(g->formula, "cpu-tdp+nic-linear") != 0)
        return 0;
    for (size_t k = 0; k < g->ntargets; k++) {
        const pa_target_info *t = &g->targets[k];
        size_t i = (size_t)t->pid - s * 64;
        if (i >= n || t->power.cpu_w != (double)s + (double)i * 0.5 ||
            t->power.total_j != (double)s * 2 || t->net_rx_bytes != (s ^ i) ||
            strcmp(t->comm, comm) != 0 || strcmp(t->cgroup, stress_cg[(s + i) % 5]) != 0)
            return 0;
    }
    return 1;
}

typedef struct stress_reader {
    volatile int *stop;
    long reads, torn, aggs;
} stress_reader;

static void *stress_read_loop(void *arg)
{
    stress_reader *sr = arg;
    pa_ring_reader *r = NULL;
    if (pa_ring_open(ring_name, &r) < 0) {
        sr->torn = -1;
        return NULL;
    }
    uint64_t seq = 0, aseq = 0;
    while (!__atomic_load_n(sr->stop, __ATOMIC_ACQUIRE)) {
        const pa_report *g;
        int rc = pa_ring_read(r, &seq, &g);
        if (rc == 0) {
            __atomic_store_n(&sr->reads, sr->reads + 1, __ATOMIC_RELAXED);
            if (!stress_check(g) || g->tick != seq)
                sr->torn++;
        } else if (rc != -EAGAIN) {
            break;
        }
        if (sr->reads % 16 == 0 && pa_ring_aggregate(r, &aseq, 0, &g) == 0) {
            sr->aggs++;
            if (g->ntargets == 0 || g->interval_s <= 0)
                sr->torn++;
        }
    }
    pa_ring_close(r);
    return NULL;
}

START_TEST(test_stress)
{
    pa_ring_writer *w = make_ring(STRESS_CAP, STRESS_MAXT);
    fake f;
    stress_report(&f, 1);
    ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);

    /* Two reader processes, plus one that is frozen for good: a reader
     * never writes to the ring, so even a stopped one cannot hold the
     * writer back. */
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        kids[k] = fork();
        ck_assert_int_ge(kids[k], 0);
        if (kids[k] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pa_ring_reader *r = NULL;
            if (pa_ring_open(ring_name, &r) < 0)
                _exit(3);
            if (k == 2) {
                raise(SIGSTOP);
                _exit(0);
            }
            uint64_t seq = 0;
            long reads = 0, torn = 0;
            for (;;) {
                const pa_report *g;
                int rc = pa_ring_read(r, &seq, &g);
                if (rc == -EOWNERDEAD)
                    break;
                if (rc == 0) {
                    reads++;
                    torn += !stress_check(g);
                }
            }
            _exit(torn ? 1 : reads ? 0 : 2);
        }
    }
    volatile int stop = 0;
    stress_reader sr[3];
    pthread_t th[3];
    for (int k = 0; k < 3; k++) {
        memset(&sr[k], 0, sizeof(sr[k]));
        sr[k].stop = &stop;
        ck_assert_int_eq(pthread_create(&th[k], NULL, stress_read_loop, &sr[k]), 0);
    }
    uint64_t t0 = now_ns(), worst = 0;
    uint64_t s = 2;
    /* One second, longer on a loaded machine (up to 20 s) until the
     * threads have read enough windows for a torn one to show. */
    for (;;) {
        uint64_t el = now_ns() - t0;
        long sofar = 0;
        for (int k = 0; k < 3; k++)
            sofar += __atomic_load_n(&sr[k].reads, __ATOMIC_RELAXED);
        if (el >= 20000000000ull || (el >= 1000000000ull && s > 200 && sofar > 100))
            break;
        stress_report(&f, s);
        uint64_t a = now_ns();
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
        uint64_t d = now_ns() - a;
        if (d > worst)
            worst = d;
        s++;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    long reads = 0;
    for (int k = 0; k < 3; k++) {
        pthread_join(th[k], NULL);
        ck_assert_int_eq(sr[k].torn, 0);
        reads += sr[k].reads;
    }
    pa_ring_destroy(w); /* the reader processes now see -EOWNERDEAD */
    for (int k = 0; k < 2; k++) {
        int st;
        ck_assert_int_eq(waitpid(kids[k], &st, 0), kids[k]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                      "reader process %d: status %d (1 = torn window)", k, st);
    }
    kill(kids[2], SIGKILL);
    waitpid(kids[2], NULL, 0);
    fprintf(stderr,
            "stress: %llu windows published, %ld read by threads, "
            "worst publish %.1f us\n",
            (unsigned long long)(s - 1), reads, (double)worst / 1e3);
    /* enough windows and reads that torn windows would have shown (on a
     * quiet machine, tens of thousands; a loaded one, hundreds) */
    ck_assert_uint_gt(s, 200);
    ck_assert_int_gt(reads, 100);
}
END_TEST

/* A writer killed with SIGKILL in the middle of publishing (it publishes
 * without pause, so the kill lands inside pa_ring_publish most of the
 * time), then a new writer on the same name, ten times: the open reader
 * never gets a torn window, drains what was whole and then hears the
 * writer is gone (-EOWNERDEAD, "no longer running"); the new writer
 * replaces the stale ring, and a reader opened again reads its windows
 * from sequence 1. */
START_TEST(test_killed_mid_publish)
{
    fresh_name();
    long total = 0;
    for (int round = 0; round < 10; round++) {
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(p[0]);
            pa_ring_opts o = {
                .capacity = STRESS_CAP, .max_targets = STRESS_MAXT, .interval_ns = 1000000000ull};
            pa_ring_writer *w = NULL;
            if (pa_ring_create(ring_name, &o, &w) < 0)
                _exit(1);
            fake f;
            stress_report(&f, 1);
            pa_ring_publish(w, &f.r);
            char c = 'r';
            if (write(p[1], &c, 1) != 1)
                _exit(1);
            for (uint64_t k = 2;; k++) {
                stress_report(&f, k);
                pa_ring_publish(w, &f.r);
            }
        }
        close(p[1]);
        char c;
        ck_assert_int_eq(read(p[0], &c, 1), 1);
        close(p[0]);
        pa_ring_reader *r = NULL;
        ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
        uint64_t seq = 0, until = now_ns() + (5 + round * 3) * 1000000ull;
        const pa_report *g;
        long reads = 0;
        while (now_ns() < until) {
            int rc = pa_ring_read(r, &seq, &g);
            if (rc == 0) {
                ck_assert_msg(stress_check(g), "torn window %llu", (unsigned long long)seq);
                reads++;
            }
        }
        kill(pid, SIGKILL);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        /* what is left is whole, then the gap is reported */
        int rc;
        while ((rc = pa_ring_read(r, &seq, &g)) == 0) {
            ck_assert_msg(stress_check(g), "torn window %llu after the kill",
                          (unsigned long long)seq);
            reads++;
        }
        ck_assert_int_eq(rc, -EOWNERDEAD);
        ck_assert_ptr_nonnull(strstr(pa_last_error(), "no longer running"));
        total += reads;

        /* a new writer takes the name over */
        pa_ring_writer *w = NULL;
        ck_assert_int_eq(pa_ring_create(ring_name, NULL, &w), 0);
        fake f;
        stress_report(&f, 1);
        ck_assert_int_eq(pa_ring_publish(w, &f.r), 0);
        /* the old mapping stays the dead writer's */
        ck_assert_int_eq(pa_ring_read(r, &seq, &g), -EOWNERDEAD);
        pa_ring_close(r);
        ck_assert_int_eq(pa_ring_open(ring_name, &r), 0);
        seq = 0;
        ck_assert_int_eq(pa_ring_read(r, &seq, &g), 0);
        ck_assert_uint_eq(seq, 1);
        ck_assert(stress_check(g));
        pa_ring_close(r);
        pa_ring_destroy(w);
    }
    ck_assert_int_gt(total, 10);
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_group_mode);
    tcase_add_test(tc, test_follow_and_lap);
    tcase_add_test(tc, test_aggregate);
    tcase_add_test(tc, test_devices);
    tcase_add_test(tc, test_exits);
    tcase_add_test(tc, test_vms);
    tcase_add_test(tc, test_truncation);
    tcase_add_test(tc, test_cgroup_paths);
    tcase_add_test(tc, test_counters_roundtrip);
    tcase_add_test(tc, test_counters_aggregate);
    tcase_add_test(tc, test_version_mismatch);
    tcase_add_test(tc, test_dead_writer);
    tcase_add_test(tc, test_hung_writer);
    tcase_add_test(tc, test_stress);
    tcase_add_test(tc, test_killed_mid_publish);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ring_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    rf_sweep();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
