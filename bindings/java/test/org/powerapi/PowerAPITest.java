package org.powerapi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Tests of the Java binding, run by ctest (java org.powerapi.PowerAPITest).
 * A plain main: each check records a failure; exit status 1 if any failed.
 */
public final class PowerAPITest {
    private static final List<String> failures = new ArrayList<>();
    private static int checks;

    private static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
            System.out.println("FAIL: " + what);
        }
    }

    private static void near(double got, double want, double tol, String what) {
        check(Math.abs(got - want) <= tol, what + ": got " + got + ", want " + want + " +- " + tol);
    }

    interface Body {
        void run();
    }

    /** Runs body, which must throw PowerAPIException with this errno. */
    private static PowerAPIException expect(int errno, String what, Body body) {
        try {
            body.run();
        } catch (PowerAPIException e) {
            check(e.errno() == errno, what + ": errno " + e.errno() + ", want " + errno
                  + " (" + e.getMessage() + ")");
            check(e.getMessage() != null && !e.getMessage().isEmpty(), what + ": empty message");
            return e;
        }
        check(false, what + ": no exception");
        return null;
    }

    /** Burns about ms milliseconds of CPU time on this thread. */
    private static long burn(long ms) {
        var bean = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = bean.getCurrentThreadCpuTime() + ms * 1_000_000L;
        long x = 0;
        while (bean.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 10000; i++)
                x += i * 31L ^ x;
        return x;
    }

    static void testVersion() {
        check(PowerAPI.version().matches("\\d+\\.\\d+\\.\\d+"), "version: " + PowerAPI.version());
    }

    static void testLiveProcess() {
        long pid = ProcessHandle.current().pid();
        try (PowerAPI api = PowerAPI.open()) {
            api.watchPid(pid);
            long t0 = System.nanoTime();
            api.tick();
            long t1 = System.nanoTime();
            expect(61 /* ENODATA */, "pidPower before a window", () -> api.pidPower(pid));
            burn(300);
            long t2 = System.nanoTime();
            api.tick();
            long t3 = System.nanoTime();
            Power p = api.pidPower(pid);
            System.out.println("process: " + p);
            // The window lies between the two calls, whatever the load.
            check(p.intervalSeconds() >= (t2 - t1) / 1e9 && p.intervalSeconds() <= (t3 - t0) / 1e9,
                  "interval " + p.intervalSeconds());
            // 300 ms burnt in the window, plus the JVM's own threads (JIT, GC); /proc counts
            // 10 ms ticks.
            check(p.cpuTimeSeconds() >= 0.28 && p.cpuTimeSeconds() <= Runtime.getRuntime().availableProcessors() * (t3 - t0) / 1e9 + 0.02,
                  "cpu time " + p.cpuTimeSeconds());
            check(p.cpuWatts() > 0, "cpu watts > 0: " + p.cpuWatts());
            near(p.totalWatts(), p.cpuWatts() + p.nicWatts(), 1e-9, "total = cpu + nic");
            // First window: cumulative energy is this window's power x length.
            near(p.totalJoules(), p.totalWatts() * p.intervalSeconds(), 1e-6 * (1 + p.totalJoules()),
                 "joules = watts x interval");
            check(p.timeNanos() > 0, "timeNanos");
            Power s = api.systemPower();
            System.out.println("system: " + s);
            check(s.totalWatts() >= p.totalWatts() - 1e-9, "system >= process");
            // A second window accumulates.
            burn(100);
            api.tick();
            Power p2 = api.pidPower(pid);
            near(p2.totalJoules(), p.totalJoules() + p2.totalWatts() * p2.intervalSeconds(),
                 1e-6 * (1 + p2.totalJoules()), "energy accumulates");
        }
    }

    /** Copies a fixture tree into a temporary folder. */
    private static Path copyTree(Path from) throws IOException {
        Path to = Files.createTempDirectory("powerapi-java-");
        try (var walk = Files.walk(from)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Path d = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS))
                    Files.createDirectories(d);
                else
                    Files.copy(p, d, StandardCopyOption.COPY_ATTRIBUTES,
                               java.nio.file.LinkOption.NOFOLLOW_LINKS);
            }
        }
        return to;
    }

    private static void removeTree(Path root) throws IOException {
        try (var walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** Adds du ticks to utime (proc(5) field 14) and ds to stime (15). */
    private static void addStatTimes(Path stat, long du, long ds) throws IOException {
        String s = Files.readString(stat, StandardCharsets.US_ASCII);
        int close = s.lastIndexOf(')');
        String[] f = s.substring(close + 1).trim().split(" ");
        f[14 - 3] = Long.toString(Long.parseLong(f[14 - 3]) + du);
        f[15 - 3] = Long.toString(Long.parseLong(f[15 - 3]) + ds);
        Files.writeString(stat, s.substring(0, close + 1) + " " + String.join(" ", f) + "\n",
                          StandardCharsets.US_ASCII);
    }

    /*
     * Exact watts on a fixture (the chain of tests/test_procfs_cpu.c,
     * test_watts_cpu_tdp): vm-nocpufreq, 2 CPUs at a nominal 2000 MHz;
     * cpu-tdp tdp=100 at ftdp=2000, vtdp=1 gives 0.7 x 100 = 70 W; java (pid
     * 1801) uses 1 s (100 ticks) of a 2 s window on 2 CPUs: 17.5 W, 35 J.
     */
    static void testFixture() throws IOException {
        String fixtures = System.getProperty("powerapi.fixtures");
        if (fixtures == null) {
            System.out.println("testFixture skipped: -Dpowerapi.fixtures not set");
            return;
        }
        Path root = copyTree(Path.of(fixtures, "vm-nocpufreq"));
        try {
            Files.createDirectories(root.resolve("sys"));
            Files.createDirectories(root.resolve("dev"));
            try (PowerAPI api = PowerAPI.open(root.resolve("proc").toString(),
                                              root.resolve("sys").toString(),
                                              root.resolve("dev").toString(),
                                              System.getProperty("powerapi.hwdb"))) {
                api.enable("procfs-cpu", null);
                api.enable("cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0");
                api.watchPid(1801);
                api.tickAt(1_000_000_000L);
                addStatTimes(root.resolve("proc/1801/stat"), 90, 10);
                api.tickAt(3_000_000_000L);
                Power p = api.pidPower(1801);
                near(p.intervalSeconds(), 2.0, 1e-12, "fixture interval");
                near(p.cpuTimeSeconds(), 1.0, 1e-12, "fixture cpu time");
                near(p.cpuWatts(), 17.5, 1e-9, "fixture cpu watts");
                near(p.totalWatts(), 17.5, 1e-9, "fixture total watts");
                near(p.totalJoules(), 35.0, 1e-9, "fixture joules");
                check(p.timeNanos() == 3_000_000_000L, "fixture time " + p.timeNanos());
                check(!p.measured(), "modelled, not measured");
                // Reconfigured while running: tdp 200 doubles the next window.
                api.configure("cpu-tdp", "tdp=200");
                addStatTimes(root.resolve("proc/1801/stat"), 90, 10);
                api.tickAt(5_000_000_000L);
                Power q = api.pidPower(1801);
                near(q.cpuWatts(), 35.0, 1e-9, "fixture watts after configure");
                near(q.totalJoules(), 35.0 + 70.0, 1e-9, "fixture joules after configure");
                expect(22 /* EINVAL */, "tick back in time", () -> api.tickAt(4_000_000_000L));
            }
        } finally {
            removeTree(root);
        }
    }

    /*
     * Scopes on the same fixture: java's window prices every CPU-second at
     * 35 J (17.5 W x 2 s / 1 CPU-s); explicit clocks make the figures exact.
     */
    static void testScopes() throws IOException {
        String fixtures = System.getProperty("powerapi.fixtures");
        if (fixtures == null) {
            System.out.println("testScopes skipped: -Dpowerapi.fixtures not set");
            return;
        }
        Path root = copyTree(Path.of(fixtures, "vm-nocpufreq"));
        try (PowerAPI api = PowerAPI.open(root.resolve("proc").toString(),
                                          root.resolve("sys").toString(),
                                          root.resolve("dev").toString(),
                                          System.getProperty("powerapi.hwdb"))) {
            Scope early = api.scopeAt("early", 0);
            early.closeAt(10_000_000L);
            check(!early.rated() && early.energyJoules() == 0, "no window yet: " + early);
            api.enable("procfs-cpu", null);
            api.enable("cpu-tdp", "tdp=100,ftdp=2000,vtdp=1.0");
            api.watchPid(1801);
            api.scopeConfigure(0, 1801);
            api.tickAt(1_000_000_000L);
            addStatTimes(root.resolve("proc/1801/stat"), 90, 10);
            api.tickAt(3_000_000_000L);
            Scope s = api.scopeAt("checkout", 0);
            s.closeAt(250_000_000L);
            near(s.joulesPerCpuSecond(), 35.0, 1e-9, "scope price");
            near(s.energyJoules(), 8.75, 1e-9, "scope energy");
            check(s.rated() && !s.measured() && s.flags() == 0, "scope flags " + s.flags());
            // nesting, with the thread's real clock
            Scope req, db;
            try (Scope r = api.scope("request")) {
                req = r;
                burn(20);
                try (Scope d = api.scope("db")) {
                    db = d;
                    burn(30);
                }
            }
            check(db.cpuTimeSeconds() >= 0.03 && db.depth() == 1, "db " + db);
            near(req.energyJoules(), req.cpuTimeSeconds() * 35, 1e-9, "request energy");
            near(req.energyJoules(), req.selfEnergyJoules() + db.energyJoules(), 1e-12,
                 "inclusive = self + children");
            near(req.selfCpuTimeSeconds(), req.cpuTimeSeconds() - db.cpuTimeSeconds(), 1e-9,
                 "self cpu time");
            // aggregates: 100 calls of 1..100 ms
            for (int k = 1; k <= 100; k++)
                api.scopeAt("req", 0).closeAt(k * 1_000_000L);
            ScopeStats st = api.scopeStats("req");
            check(st.calls() == 100 && st.ratedCalls() == 100, "calls " + st);
            near(st.energyJoules(), 5.05 * 35, 1e-9, "stats energy");
            near(st.meanJoules(), 0.0505 * 35, 1e-9, "stats mean");
            near(st.p50Joules(), 0.050 * 35, 0.050 * 35 * 0.0625, "stats p50");
            near(st.p99Joules(), 0.099 * 35, 0.099 * 35 * 0.0625, "stats p99");
            // a carbon intensity: grams = joules x 385 / 3.6e6 (issue 29)
            check(st.co2eGrams() == 0 && st.carbonGramsPerKwh() == 0, "no grams " + st);
            api.scopeConfigure(0, 1801, 385);
            st = api.scopeStats("req");
            check(st.carbonGramsPerKwh() == 385, "intensity " + st);
            near(st.co2eGrams(), 5.05 * 35 * 385 / 3.6e6, 1e-12, "stats grams");
            near(st.meanCo2eGrams(), 0.0505 * 35 * 385 / 3.6e6, 1e-12, "stats mean grams");
            expect(34 /* ERANGE */, "carbon intensity out of range",
                   () -> api.scopeConfigure(0, 1801, 9000));
            List<String> names = new ArrayList<>();
            for (ScopeStats x : api.scopes())
                names.add(x.name());
            check(names.equals(List.of("early", "checkout", "request", "db", "req")),
                  "names " + names);
            // errors
            expect(2 /* ENOENT */, "scope end without begin", () -> new Scope(api, "x").closeAt(0));
            Scope outer = api.scopeAt("outer", 0);
            Scope inner = api.scopeAt("inner", 0);
            expect(71 /* EPROTO */, "unbalanced end", () -> outer.closeAt(1));
            inner.closeAt(1);
            outer.closeAt(2);
            expect(2 /* ENOENT */, "stats of an unknown name", () -> api.scopeStats("never"));
            expect(22 /* EINVAL */, "empty scope name", () -> api.scope(""));
            expect(16 /* EBUSY */, "maxNames after the first scope",
                   () -> api.scopeConfigure(10, 0));
        } finally {
            removeTree(root);
        }
    }

    /** Scope.enter on the default context (this JVM on the real /proc). */
    static void testScopeDefault() {
        Scope s;
        try (Scope x = Scope.enter("java-test-burn")) {
            s = x;
            burn(50);
        }
        check(s.cpuTimeSeconds() >= 0.05, "default scope cpu " + s);
        check(s.rated() && s.energyJoules() > 0, "default scope priced " + s);
        near(s.energyJoules(), s.cpuTimeSeconds() * s.joulesPerCpuSecond(), 1e-12,
             "default scope energy = cpu x price");
        check(Scope.defaultContext().scopeStats("java-test-burn").calls() == 1,
              "default scope stats");
    }

    static void testErrors() {
        try (PowerAPI api = PowerAPI.open()) {
            PowerAPIException e = expect(2 /* ENOENT */, "unknown module",
                                         () -> api.enable("no-such-module", null));
            check(e != null && e.getMessage().contains("no-such-module"),
                  "message names the module: " + (e == null ? null : e.getMessage()));
            expect(2, "disable an unknown module", () -> api.disable("no-such-module"));
            // a sensor that a formula enabled by name requires cannot go first
            api.enable("cpu-tdp", null);
            PowerAPIException busy = expect(16 /* EBUSY */, "disable a required sensor",
                                            () -> api.disable("procfs-cpu"));
            check(busy != null && busy.getMessage().contains("disable cpu-tdp first"),
                  "message names the formula: " + (busy == null ? null : busy.getMessage()));
            api.disable("cpu-tdp");
            api.disable("cpu-tdp"); // disabling again is not an error
            expect(3 /* ESRCH */, "pidPower of an unwatched pid", () -> api.pidPower(1));
            try {
                api.watchPid(-5);
                check(false, "watchPid(-5) accepted");
            } catch (IllegalArgumentException ok) {
                checks++;
            }
            api.enable("cpu-tdp", "tdp=50");
            PowerAPIException bad = expect(22 /* EINVAL */, "bad option",
                                           () -> api.configure("cpu-tdp", "tpd=40"));
            check(bad != null && bad.getMessage().contains("tpd"),
                  "message names the option: " + (bad == null ? null : bad.getMessage()));
            api.disable("cpu-tdp");
        }
        expect(2 /* ENOENT */, "missing procfs root",
               () -> PowerAPI.open("/nonexistent-powerapi-root", null).close());
        PowerAPI api = PowerAPI.open();
        api.close();
        api.close(); // idempotent
        try {
            api.tick();
            check(false, "tick after close accepted");
        } catch (IllegalStateException ok) {
            checks++;
        }
    }

    static void testConcurrentClose() throws InterruptedException {
        // close() while other threads tick must neither crash nor use a freed context.
        for (int round = 0; round < 5; round++) {
            PowerAPI api = PowerAPI.open();
            api.watchPid(ProcessHandle.current().pid());
            Thread[] ts = new Thread[3];
            for (int i = 0; i < ts.length; i++) {
                ts[i] = new Thread(() -> {
                    try {
                        for (int k = 0; k < 200; k++)
                            api.tick();
                    } catch (IllegalStateException closed) {
                        // expected once closed
                    } catch (PowerAPIException e) {
                        // concurrent ticks may be refused; never a crash
                    }
                });
                ts[i].start();
            }
            Thread.sleep(5);
            api.close();
            for (Thread t : ts)
                t.join();
        }
        checks++;
    }

    /** Contexts never closed are freed by the cleaner (no crash, no leak growth). */
    static void testForgottenContexts() throws InterruptedException {
        for (int i = 0; i < 200; i++)
            PowerAPI.open().watchPid(ProcessHandle.current().pid());
        System.gc();
        Thread.sleep(100);
        checks++;
    }

    /* issue 27: a cgroup named from the runtimes' state (fixture root) */
    static void testCgroupNames() {
        String fixtures = System.getProperty("powerapi.fixtures");
        if (fixtures == null) {
            System.out.println("testCgroupNames skipped: -Dpowerapi.fixtures not set");
            return;
        }
        String k = "c0ffeefedcba9876543210fedcba9876543210fedcba9876543210fedcba9876";
        java.util.Map<String, String> m = PowerAPI.cgroupNames(fixtures + "/containers/root",
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
            + "0a1b2c3d_4e5f_4a6b_8c7d_9e0f1a2b3c4d.slice/cri-containerd-" + k + ".scope");
        check("checkout".equals(m.get("container_name")) && "shop".equals(m.get("pod_namespace"))
              && "containerd".equals(m.get("runtime")) && k.equals(m.get("container_id"))
              && "containerd config.json".equals(m.get("names_source")), "cgroupNames: " + m);
        check(PowerAPI.cgroupNames(null, "/").isEmpty(), "cgroupNames of the root");
    }

    /* issue 41: the VMs of the vms fixture, by name */
    static void testVms() {
        String fixtures = System.getProperty("powerapi.fixtures");
        if (fixtures == null) {
            System.out.println("testVms skipped: -Dpowerapi.fixtures not set");
            return;
        }
        String host = fixtures + "/vms/host";
        java.util.List<java.util.Map<String, String>> v
            = PowerAPI.vms(host + "/proc", host + "/rootfs");
        check(v.size() == 9, "vms: " + v);
        java.util.Map<String, String> w = v.get(0);
        check("web-01".equals(w.get("name"))
              && "6a1f3c2e-8d4b-4e5f-9a0b-1c2d3e4f5a6b".equals(w.get("uuid"))
              && "libvirt".equals(w.get("manager")) && "qemu -name".equals(w.get("names_source"))
              && "1001".equals(w.get("pid")) && "1003,1004".equals(w.get("vcpu_tids")),
              "vms: web-01 " + w);
        check("proxmox VMID.conf".equals(v.get(3).get("names_source")), "vms: pve " + v.get(3));
        check(!v.get(8).containsKey("vcpu_tids"), "vms: scratch " + v.get(8));
        boolean threw = false;
        try {
            PowerAPI.vms(host + "/nowhere", null);
        } catch (PowerAPIException e) {
            threw = true;
        }
        check(threw, "vms of a procfs that is not there");
    }

    public static void main(String[] args) throws Exception {
        testVersion();
        testCgroupNames();
        testVms();
        testLiveProcess();
        testFixture();
        testErrors();
        testConcurrentClose();
        testForgottenContexts();
        testScopes();
        testScopeDefault();
        System.out.println(checks + " checks, " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }
}
