"""Exact watts through the binding on a fixture tree: the chain of
tests/test_procfs_cpu.c (test_watts_cpu_tdp) driven from Python.

vm-nocpufreq: 2 CPUs at a nominal 2000 MHz, no cpufreq.  cpu-tdp with
tdp=100, ftdp=2000 (the nominal frequency), vtdp=1: P_cpu = 0.7 x 100 =
70 W.  java (pid 1801) uses 100 more clock ticks (1 s) in a 2 s window on
2 CPUs (capacity 4 s): 70 x 1/4 = 17.5 W, 35 J."""

import errno
import os
import shutil
import tempfile
import unittest

import powerapi

S = 1_000_000_000


def set_stat_times(root, pid, utime, stime):
    """Sets utime (proc(5) field 14) and stime (15) of root/proc/pid/stat."""
    path = os.path.join(root, "proc", str(pid), "stat")
    with open(path) as f:
        s = f.read()
    head, _, tail = s.rpartition(")")
    fields = tail.split()  # fields[0] is field 3 (state)
    fields[14 - 3] = str(utime)
    fields[15 - 3] = str(stime)
    with open(path, "w") as f:
        f.write(head + ") " + " ".join(fields) + "\n")


def stat_times(root, pid):
    with open(os.path.join(root, "proc", str(pid), "stat")) as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[14 - 3]), int(fields[15 - 3])


def copy_vm(test):
    """Copies vm-nocpufreq into a temporary folder removed after test, and
    returns its path (skips test outside ctest)."""
    fixtures = os.environ.get("POWERAPI_FIXTURES")
    if not fixtures:
        test.skipTest("POWERAPI_FIXTURES not set (run through ctest)")
    tmp = tempfile.mkdtemp(prefix="powerapi-py-")
    test.addCleanup(shutil.rmtree, tmp, True)
    root = os.path.join(tmp, "vm")
    shutil.copytree(os.path.join(fixtures, "vm-nocpufreq"), root,
                    symlinks=True)
    for d in ("sys", "dev"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    return root


def fixture_context(root):
    """A Context on the fixture tree at root."""
    return powerapi.Context(procfs=os.path.join(root, "proc"),
                            sysfs=os.path.join(root, "sys"),
                            devfs=os.path.join(root, "dev"),
                            hwdb=os.environ.get("POWERAPI_HWDB"))


class TestFixture(unittest.TestCase):
    def setUp(self):
        self.root = copy_vm(self)

    def context(self):
        return fixture_context(self.root)

    def java_window(self, ctx, threads=False):
        """Watches java (pid 1801) and ticks a 2 s window (t = 1 s, 3 s) in
        which it uses 1 s of CPU time (90 + 10 clock ticks)."""
        ctx.watch_pid(1801, threads=threads)
        u, s = stat_times(self.root, 1801)
        ctx.tick(time_ns=1 * S)
        set_stat_times(self.root, 1801, u + 90, s + 10)
        ctx.tick(time_ns=3 * S)

    def test_exited_and_unaccounted(self):
        """Issue 38: the processes born and gone in the window are one
        target of their own, with their number; the report says how exits
        were counted."""
        ctx = self.context()
        exits = os.path.join(self.root, "exits.txt")
        ctx.enable("procfs-cpu", "exitfile=" + exits)
        ctx.enable("cpu-tdp", "tdp=100,ftdp=2000,vtdp=1")
        ctx.watch_all()
        ctx.tick(time_ns=1 * S)
        u, s = stat_times(self.root, 1801)
        set_stat_times(self.root, 1801, u + 90, s + 10)
        with open(exits, "w") as f:
            f.write("5000 5000 1801 500000000 sh\n5001 5001 5000 250000000 true\n")
        ctx.tick(time_ns=3 * S)
        r = ctx.report()
        self.assertEqual(r.exits_source, "file")
        self.assertEqual(r.exits_lost, 0)
        ex = [t for t in r.targets if t.type == powerapi.PA_TARGET_EXITED]
        un = [t for t in r.targets if t.type == powerapi.PA_TARGET_UNACCOUNTED]
        self.assertEqual(len(ex), 1)
        self.assertEqual(len(un), 1)
        self.assertEqual(ex[0].processes, 2)
        self.assertEqual(ex[0].comm, "[exited]")
        self.assertAlmostEqual(ex[0].power.cpu_time_s, 0.75, places=9)
        # 70 W x 0.75 s of the 4 s capacity, as java's 1 s gets 17.5 W
        self.assertAlmostEqual(ex[0].power.cpu_w, 70 * 0.75 / 4, places=9)
        # each of them its own record too, with its parent
        self.assertEqual(sorted((t.pid, t.ppid, t.comm) for t in r.exited),
                         [(5000, 1801, "sh"), (5001, 5000, "true")])
        self.assertTrue(all(t.power.exited for t in r.exited))
        self.assertAlmostEqual(sum(t.power.cpu_w for t in r.exited),
                               ex[0].power.cpu_w, places=9)
        java = [t for t in r.targets if t.pid == 1801][0]
        self.assertAlmostEqual(java.power.cpu_w, 17.5, places=9)
        ctx.close()

    def test_cgroup_names(self):
        """Issue 27: a cgroup path named from the runtimes' state files."""
        root = os.path.join(os.environ["POWERAPI_FIXTURES"], "containers", "root")
        d = "d0c4e70123456789abcdef0123456789abcdef0123456789abcdef0123456789"
        n = powerapi.cgroup_names("/system.slice/docker-%s.scope" % d, rootfs=root)
        self.assertEqual(n, {"runtime": "docker", "container_id": d,
                             "container_name": "web",
                             "source": "docker config.v2.json"})
        self.assertEqual(powerapi.cgroup_names("/"), {})
        self.assertEqual(powerapi.cgroup_names("/system.slice/nginx.service"),
                         {"unit": "nginx.service", "source": "cgroup path"})

    def test_vms(self):
        """Issue 41: the VMs of tests/fixtures/vms/host by name."""
        host = os.path.join(os.environ["POWERAPI_FIXTURES"], "vms", "host")
        vms = powerapi.vms(procfs=os.path.join(host, "proc"),
                           rootfs=os.path.join(host, "rootfs"))
        self.assertEqual([v["name"] for v in vms],
                         ["web-01", "db,primary", "legacy-vm", "pve-web",
                          "fc-batch-7", "sandbox-42", "ch-ubuntu",
                          "default/testvmi", "scratch"])
        web = vms[0]
        self.assertEqual(web["uuid"], "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b")
        self.assertEqual((web["hypervisor"], web["manager"], web["id"],
                          web["source"]), ("qemu", "libvirt", "1", "qemu -name"))
        self.assertEqual((web["pid"], web["nthreads"], web["vcpu_tids"]),
                         (1001, 5, [1003, 1004]))
        self.assertEqual(vms[3]["source"], "proxmox VMID.conf")
        self.assertEqual(vms[8]["vcpu_tids"], [])
        with self.assertRaises(powerapi.PowerAPIError) as e:
            powerapi.vms(procfs=os.path.join(host, "nowhere"))
        self.assertEqual(e.exception.errno, errno.ENOENT)

    def test_cpu_tdp_watts(self):
        with self.context() as ctx:
            ctx.enable("procfs-cpu")
            ctx.enable("cpu-tdp", {"tdp": 100, "ftdp": 2000, "vtdp": 1.0})
            self.java_window(ctx)
            p = ctx.pid_power(1801)
            self.assertAlmostEqual(p.interval_s, 2.0, places=12)
            self.assertAlmostEqual(p.cpu_time_s, 1.0, places=12)
            self.assertAlmostEqual(p.cpu_w, 17.5, places=9)
            self.assertAlmostEqual(p.cpu_j, 35.0, places=9)
            self.assertAlmostEqual(p.total_w, 17.5, places=9)
            self.assertEqual(p.time_ns, 3 * S)
            r = ctx.report()
            self.assertEqual(r.cpu_source, "model")
            self.assertIn("cpu-tdp", r.formula)
            (t,) = [t for t in r.targets if t.pid == 1801]
            self.assertEqual(t.comm, "java")
            self.assertEqual(t.ppid, 1734)

            # Reconfigured at runtime: tdp 200 doubles the next window.
            ctx.configure("cpu-tdp", "tdp=200")
            u, s = stat_times(self.root, 1801)
            set_stat_times(self.root, 1801, u + 90, s + 10)
            ctx.tick(time_ns=5 * S)
            p = ctx.pid_power(1801)
            self.assertAlmostEqual(p.cpu_w, 35.0, places=9)
            self.assertAlmostEqual(p.cpu_j, 35.0 + 70.0, places=9)

    def test_formula_alone_brings_its_sensor(self):
        # cpu-tdp alone (no procfs-cpu named): the same exact figures.
        with self.context() as ctx:
            ctx.enable("cpu-tdp", {"tdp": 100, "ftdp": 2000, "vtdp": 1.0})
            mods = {m.name: m for m in ctx.modules()}
            self.assertTrue(mods["procfs-cpu"].enabled)
            self.assertFalse(mods["procfs-cpu"].user)
            self.assertEqual(mods["procfs-cpu"].required_by, ["cpu-tdp"])
            self.assertTrue(mods["cpu-tdp"].user)
            self.assertEqual(mods["cpu-tdp"].requires, ["procfs-cpu"])
            self.assertEqual(mods["rapl-share"].uses, ["perf"])
            self.java_window(ctx)
            self.assertAlmostEqual(ctx.pid_power(1801).cpu_w, 17.5, places=9)
            # the sensor cannot go while the formula needs it
            with self.assertRaises(powerapi.PowerAPIError) as cm:
                ctx.disable("procfs-cpu")
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertIn("disable cpu-tdp first", cm.exception.strerror)
            # the formula goes, and the sensor enabled for it with it
            ctx.disable("cpu-tdp")
            mods = {m.name: m for m in ctx.modules()}
            self.assertFalse(mods["procfs-cpu"].enabled)
            self.assertFalse(mods["cpu-tdp"].enabled)

    def test_bindings_readme_example(self):
        # bindings/README.md: ctx.enable("cpu-tdp", {"tdp": 45}), then tick
        with self.context() as ctx:
            ctx.enable("cpu-tdp", {"tdp": 45})
            self.java_window(ctx, threads=True)
            p = ctx.pid_power(1801)
            self.assertAlmostEqual(p.cpu_time_s, 1.0, places=12)
            self.assertGreater(p.cpu_w, 0.0)
            r = ctx.report()
            self.assertEqual(r.formula, "cpu-tdp")
            self.assertEqual(r.sensors, "procfs-cpu")
            mods = {m.name: m for m in ctx.modules()}
            self.assertEqual(mods["cpu-tdp"].options, "tdp=45")

    def test_python_module_declares_requires(self):
        class Needs(powerapi.Module):
            """70 W split by CPU time, from procfs-cpu's readings."""
            name = "py-needs"
            kind = powerapi.PA_FORMULA
            component = powerapi.PA_COMP_CPU
            requires = ("procfs-cpu",)
            uses = ("perf",)

            def compute(self, delta, table):
                for i in range(len(delta)):
                    table.set_target_w(i, 70.0 * delta.cpu_s(i)
                                       / delta.capacity_s)
                table.set_system_w(70.0, 0.0)

        class Broken(Needs):
            name = "py-broken"
            requires = ("no-such-sensor",)

        with self.context() as ctx:
            ctx.register(Needs())
            ctx.register(Broken())
            with self.assertRaises(powerapi.PowerAPIError) as cm:
                ctx.enable("py-broken")
            self.assertEqual(cm.exception.errno, errno.ENOENT)
            self.assertIn("no-such-sensor", cm.exception.strerror)
            ctx.enable("py-needs")
            mods = {m.name: m for m in ctx.modules()}
            self.assertEqual(mods["py-needs"].requires, ["procfs-cpu"])
            self.assertEqual(mods["py-needs"].uses, ["perf"])
            self.assertEqual(mods["procfs-cpu"].required_by, ["py-needs"])
            self.assertFalse(mods["perf"].enabled)  # used, not required
            self.java_window(ctx)
            # 1 s of a 4 CPU-second window: 70 x 1/4
            self.assertAlmostEqual(ctx.pid_power(1801).cpu_w, 17.5, places=9)
            with self.assertRaises(powerapi.PowerAPIError) as cm:
                ctx.disable("procfs-cpu")
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertIn("py-needs", cm.exception.strerror)

    def test_process_gone(self):
        with self.context() as ctx:
            ctx.enable("procfs-cpu")
            ctx.watch_pid(1801)
            ctx.tick(time_ns=1 * S)
            ctx.tick(time_ns=2 * S)
            self.assertFalse(ctx.pid_power(1801).exited)
            shutil.rmtree(os.path.join(self.root, "proc", "1801"))
            ctx.tick(time_ns=3 * S)
            p = ctx.pid_power(1801)  # the last report says it is gone
            self.assertTrue(p.exited)
            self.assertEqual(p.cpu_w, 0.0)
            ctx.tick(time_ns=4 * S)
            with self.assertRaises(powerapi.PowerAPIError) as cm:
                ctx.pid_power(1801)
            self.assertEqual(cm.exception.errno, errno.ESRCH)
            self.assertIn("1801", cm.exception.strerror)


if __name__ == "__main__":
    unittest.main()
