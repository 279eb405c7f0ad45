package org.powerapi;

import java.util.ArrayList;
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

    static void testErrors() {
        try (PowerAPI api = PowerAPI.open()) {
            PowerAPIException e = expect(2 /* ENOENT */, "unknown module",
                                         () -> api.enable("no-such-module", null));
            check(e != null && e.getMessage().contains("no-such-module"),
                  "message names the module: " + (e == null ? null : e.getMessage()));
            expect(2, "disable a module not enabled", () -> api.disable("cpu-tdp"));
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

    public static void main(String[] args) throws Exception {
        testVersion();
        testLiveProcess();
        testErrors();
        testConcurrentClose();
        System.out.println(checks + " checks, " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }
}
