import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.powerapi.jalen.Scope;

/**
 * Known answers for org.powerapi.jalen.Scope (test_jalen_scope.c), every
 * case in one JVM. Work is spun by the thread's CPU clock, so its CPU time
 * is known: "a" 3 ms and "b" 1 ms a call (150 calls each); "outer" 1 ms of
 * its own around "inner" 2 ms (100 calls); "async" 0.5 ms on the caller
 * and 2 ms on an executor thread (Scope.wrap, 100 calls); "net" writes
 * 100,000 bytes over loopback a call (20 calls); "late" spins 10 ms, then 20 ms
 * more on another thread after it closed (Context.attach), then a second
 * call 5 ms while a continuation of 20 ms runs past its close; "x0".."x9":
 * scopes=8 keeps x0, the 9 others go to "[other scopes]". With a jar path as
 * argument: a second copy of Scope from it, in a class loader of its own,
 * stays inert. "noagent": the same API without the agent.
 */
public class ScopeWork {
    static final ThreadMXBean TMX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long cpu() {
        return TMX.getCurrentThreadCpuTime();
    }

    static void spin(long ns) {
        long end = TMX.getCurrentThreadCpuTime() + ns, x = 1;
        while (TMX.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 200; i++)
                x = x * 31 + i;
        sink += x;
    }

    static void check(boolean ok, String what) {
        if (!ok)
            throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("noagent")) {
            noAgent();
            return;
        }
        if (args.length > 0 && args[0].equals("bench")) {
            bench();
            return;
        }
        if (args.length > 0 && args[0].equals("attach")) {
            attached();
            return;
        }
        check(Scope.active(), "the agent did not bind Scope");
        spin(100_000_000L); /* unscoped */
        /* beside the spins, a scope holds whatever else the JVM runs on its
         * thread meanwhile (a few ms once in a while on a loaded host) and,
         * for "async", the hand-off (the submit, the wake-up, the wait, the
         * executor's start): 2-5 % more.
         * What the threads' own clocks measured inside each scope is
         * printed for the test to compare with the agent's figures. */
        long aNs = 0, bNs = 0, outerSelfNs = 0, innerNs = 0, asyncNs = 0;
        for (int i = 0; i < 150; i++) {
            try (Scope s = Scope.enter("a")) {
                long t0 = cpu();
                spin(3_000_000L);
                aNs += cpu() - t0;
            }
            try (Scope s = Scope.enter("b")) {
                long t0 = cpu();
                spin(1_000_000L);
                bNs += cpu() - t0;
            }
        }
        for (int i = 0; i < 100; i++) {
            try (Scope o = Scope.enter("outer")) {
                long t0 = cpu();
                spin(1_000_000L);
                long t1 = cpu();
                try (Scope in = Scope.enter("inner")) {
                    long u0 = cpu();
                    check(Scope.current() == in, "current() is the inner scope");
                    spin(2_000_000L);
                    innerNs += cpu() - u0;
                }
                long t2 = cpu();
                check(Scope.current() == o, "current() is the outer scope again");
                outerSelfNs += t1 - t0 + cpu() - t2;
            }
        }
        check(Scope.current() == null, "no scope open");
        ExecutorService ex = Executors.newSingleThreadExecutor();
        for (int i = 0; i < 100; i++) {
            long[] task = new long[1];
            try (Scope s = Scope.enter("async")) {
                long t0 = cpu();
                spin(500_000L);
                ex.submit(Scope.wrap(() -> {
                    long u0 = cpu();
                    spin(2_000_000L);
                    task[0] = cpu() - u0;
                })).get();
                asyncNs += cpu() - t0 + task[0];
            }
        }
        System.out.println("clocks a=" + aNs + " b=" + bNs + " outer_self=" + outerSelfNs
                           + " inner=" + innerNs + " async=" + asyncNs);
        ex.shutdown();
        /* work continued after its call closed (Context.attach on a thread
         * of its own): in the name's sums, not a call of its own */
        final Scope.Context late;
        try (Scope s = Scope.enter("late")) {
            spin(10_000_000L);
            late = Scope.context();
        }
        Thread t = new Thread(() -> {
            try (Scope c = late.attach()) {
                spin(20_000_000L);
            }
        });
        t.start();
        t.join();
        /* a continuation still running when its call closes: the call is
         * counted when it ends (once, with both threads' time) */
        final java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        Thread u;
        try (Scope s = Scope.enter("late")) {
            u = new Thread(Scope.wrap(() -> {
                started.countDown();
                spin(20_000_000L);
            }));
            u.start();
            started.await();
            spin(5_000_000L);
        }
        u.join();
        net();
        for (int i = 0; i < 10; i++)
            try (Scope s = Scope.enter("x" + i)) {
                sink++;
            }
        mxbean();
        if (args.length > 0)
            secondCopy(args[0]);
        System.out.println("scopework done");
    }

    /* The agent's MXBean (when it found powerapi.jar): scope "a" after a
     * window has priced its calls; read as open data, no compile-time
     * dependency. */
    static void mxbean() throws Exception {
        javax.management.MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
        javax.management.ObjectName on = new javax.management.ObjectName(
            "org.powerapi.jalen:type=Energy");
        for (int i = 0; i < 50 && !mbs.isRegistered(on); i++)
            Thread.sleep(100);
        if (!mbs.isRegistered(on)) {
            System.out.println("mxbean absent");
            return;
        }
        Thread.sleep(500); /* a window ends after the last call */
        Object[] rows = (Object[]) mbs.getAttribute(on, "Scopes");
        for (Object o : rows) {
            javax.management.openmbean.CompositeData c =
                (javax.management.openmbean.CompositeData) o;
            if (c.get("scope").equals("a"))
                System.out.println("mxbean a calls=" + c.get("calls") + " energy="
                                   + c.get("energyJoules") + " scoped="
                                   + mbs.getAttribute(on, "ScopedEnergyJoules"));
        }
    }

    static void net() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread reader = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (Socket c = ss.accept(); InputStream in = c.getInputStream()) {
                    while (in.read(buf) > 0)
                        ;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "reader");
            reader.start();
            byte[] data = new byte[100_000];
            try (Socket c = new Socket(ss.getInetAddress(), ss.getLocalPort());
                 OutputStream out = c.getOutputStream()) {
                for (int i = 0; i < 20; i++)
                    try (Scope s = Scope.enter("net")) {
                        out.write(data);
                        out.flush();
                    }
            }
            reader.join();
        }
    }

    /* A second copy of the class, in a class loader of its own: inert (the
     * agent binds one). */
    static void secondCopy(String jar) throws Exception {
        try (java.net.URLClassLoader l = new java.net.URLClassLoader(
                 new java.net.URL[] {new java.io.File(jar).toURI().toURL()}, null)) {
            Class<?> c = Class.forName("org.powerapi.jalen.Scope", true, l);
            check(c != Scope.class, "another copy of the class");
            check(!(Boolean) c.getMethod("active").invoke(null), "the second copy is inert");
            Object s = c.getMethod("enter", String.class).invoke(null, "a");
            c.getMethod("close").invoke(s);
        }
    }

    /* Scope loaded before the agent is attached (powerapi jalen PID
     * start): the agent binds it then, and 50 calls of "a" (2 ms) follow. */
    static void attached() throws Exception {
        check(!Scope.active(), "no agent yet");
        System.out.println("waiting");
        System.out.flush();
        for (int i = 0; i < 3000 && !Scope.active(); i++)
            Thread.sleep(10);
        check(Scope.active(), "the attached agent did not bind Scope");
        for (int i = 0; i < 50; i++)
            try (Scope s = Scope.enter("a")) {
                spin(2_000_000L);
            }
        System.out.println("attached done");
        System.out.flush();
        Thread.sleep(60_000); /* until the test ends it */
    }

    /* ns per iteration, best of `rounds` rounds of n, interleaved: [0] an
     * enter+close of a scope, [1] the bare loop, [2] two reads of the
     * thread's CPU clock (when clock) */
    static double[] pairCost(int n, int rounds, boolean clock) {
        long[] best = {Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE};
        for (int round = 0; round < rounds; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++)
                try (Scope s = Scope.enter("bench")) {
                    sink++;
                }
            long t1 = System.nanoTime();
            for (int i = 0; i < n; i++)
                sink++;
            long t2 = System.nanoTime();
            for (int i = 0; clock && i < n; i++)
                sink += TMX.getCurrentThreadCpuTime() - TMX.getCurrentThreadCpuTime();
            long t3 = System.nanoTime();
            best[0] = Math.min(best[0], t1 - t0);
            best[1] = Math.min(best[1], t2 - t1);
            best[2] = Math.min(best[2], t3 - t2);
        }
        return new double[] {(double) best[0] / n, (double) best[1] / n, (double) best[2] / n};
    }

    /* bench/bench_jalen_scope.sh: what an enter+close costs, with the agent
     * or without, less the bare loop, beside its floor with the agent: two
     * reads of the thread's CPU clock. */
    static void bench() {
        double[] c = pairCost(200_000, 7, true);
        System.out.printf("bench agent=%s %.1f ns per enter+close (bare loop %.1f ns; two thread "
                              + "CPU clock reads %.1f ns)%n",
                          Scope.active() ? "yes" : "no", c[0] - c[1], c[1], c[2] - c[1]);
    }

    /* Without the agent: inert scopes, and what a pair costs. */
    static void noAgent() {
        check(!Scope.active(), "no agent, yet active");
        Runnable r = () -> sink++;
        check(Scope.wrap(r) == r, "wrap without the agent returns the task");
        check(Scope.context().name() == null, "an inert context");
        double[] c = pairCost(5_000_000, 5, false);
        check(Scope.current() == null, "no current scope without the agent");
        System.out.printf("noagent ok %.2f ns per enter+close (%.2f ns per iteration without)%n",
                          c[0] - c[1], c[1]);
    }
}
