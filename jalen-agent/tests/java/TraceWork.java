import java.lang.management.ManagementFactory;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ThreadMXBean;
import java.util.Random;

/**
 * Known answers for jalen's trace= (test_jalen_trace): a() runs 1 ms of
 * CPU time, b() 0.25 ms; a() is called A times and b() 4 A times, in a
 * shuffled order (no period a sampler could lock onto).  Then rec(depth)
 * recurses (depth + 1 calls each), fail() throws, and Node's constructor
 * runs, a known number of times each.  With LIB (libjalen_testnative.so)
 * the native NativeBurn.burn() (0.5 ms of CPU) is called A / 5 times from
 * each of two call sites, shuffled with a() and b(), NativeBurn.fail() 10
 * times (each throws), the virtual native NativeBurn.where() 20 times
 * through its subclass Burner (the class the call site names), and the
 * JDK's native Thread.holdsLock() 20 times.
 * Args: A [LIB] (default 1000); or "loop
 * MS": b() then a 1 ms sleep, for MS ms, for an agent attached meanwhile;
 * or "bench N [LIB]": nop() (with LIB: the native NativeBurn.nop()) N
 * times, best of 7 rounds, in ns per call (bench/bench_jalen_trace.sh runs
 * it traced and not); or "mx": through
 * the agent's MXBean (JMX, no compile-time dependency), tracing of b()
 * (and, with "mx LIB", of NativeBurn.burn(), whose caller Sites is loaded
 * before) added, 100 calls of each, removed, 100 calls, with the answers
 * and calls.csv's rows of both printed after each step.
 */
public class TraceWork {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static long sink;

    static void spin(long ns) {
        long end = MX.getCurrentThreadCpuTime() + ns;
        long x = sink;
        while (MX.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 200; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
        sink = x;
    }

    static void a() {
        spin(1_000_000);
    }

    static void b() {
        spin(250_000);
    }

    static void warm() {
        spin(1_100_000_000L);
    }

    static int nopSink;

    static void nop(int i) {
        nopSink += i;
    }

    static void bench(int n) {
        double best = Double.MAX_VALUE;
        for (int r = 0; r < 7; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++)
                nop(i);
            best = Math.min(best, (System.nanoTime() - t0) / (double) n);
        }
        System.out.printf("nop: %.1f ns per call (best of 7 rounds of %d)%n", best, n);
    }

    /** The same with the native NativeBurn.nop(). */
    static void benchNative(int n) {
        double best = Double.MAX_VALUE;
        for (int r = 0; r < 7; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++)
                NativeBurn.nop();
            best = Math.min(best, (System.nanoTime() - t0) / (double) n);
        }
        System.out.printf("native nop: %.1f ns per call (best of 7 rounds of %d)%n", best, n);
    }

    static int rec(int depth) {
        return depth == 0 ? 0 : 1 + rec(depth - 1);
    }

    static void fail(int i) {
        if (i >= 0)
            throw new IllegalStateException("thrown " + i);
    }

    static final class Node {
        final int v;

        Node(int v) {
            this.v = v;
        }
    }

    /** NativeBurn's native where(), inherited. */
    static final class Burner extends NativeBurn {
    }

    /** The call sites of the natives, in a class no pattern names. */
    static final class Sites {
        static void one() {
            NativeBurn.burn();
        }

        static void two() {
            NativeBurn.burn();
        }

        static int fails() {
            int caught = 0;
            for (int i = 0; i < 10; i++) {
                try {
                    NativeBurn.fail();
                } catch (IllegalStateException e) {
                    caught++;
                }
            }
            return caught;
        }
    }

    static void mx(boolean natives) throws Exception {
        if (natives)
            Sites.one(); // Sites loaded (untraced) before tracing begins
        MBeanServer s = ManagementFactory.getPlatformMBeanServer();
        ObjectName n = new ObjectName("org.powerapi.jalen:type=Energy");
        for (int i = 0; i < 100 && !s.isRegistered(n); i++)
            Thread.sleep(50);
        String[] sig = {"java.lang.String"};
        String[] steps = {natives ? "TraceWork.b;NativeBurn.burn" : "TraceWork.b", ""};
        for (String p : steps) {
            System.out.println("answer: " + s.invoke(n, "trace", new Object[] {p}, sig));
            for (int i = 0; i < 100; i++) {
                b();
                if (natives)
                    Sites.one();
            }
            for (String line : ((String) s.getAttribute(n, "TracedCalls")).split("\n"))
                if (line.startsWith("TraceWork.b()V,[all threads]"))
                    System.out.println("calls: " + line);
            for (String line : ((String) s.getAttribute(n, "TracedCalls")).split("\n"))
                if (line.startsWith("NativeBurn.burn()V,[all threads]"))
                    System.out.println("native: " + line);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("mx")) {
            if (args.length > 1)
                System.load(args[1]);
            mx(args.length > 1);
            System.out.println("done");
            return;
        }
        if (args.length > 1 && args[0].equals("bench")) {
            if (args.length > 2) {
                System.load(args[2]);
                benchNative(Integer.parseInt(args[1]));
            } else {
                bench(Integer.parseInt(args[1]));
            }
            return;
        }
        if (args.length > 1 && args[0].equals("loop")) {
            System.out.println("ready");
            System.out.flush();
            long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000L;
            while (System.nanoTime() < end) {
                b();
                Thread.sleep(1);
            }
            System.out.println("done");
            return;
        }
        int na = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int nn = 0; // native calls per call site
        if (args.length > 1) {
            System.load(args[1]);
            nn = na / 5;
        }
        /* the first window (1 s) holds the JVM's start on this thread, whose
         * CPU time no sample saw and which the sampler spreads over the
         * window's samples: spent here, not in a() and b(), whose energy the
         * test compares with the trace's */
        warm();
        byte[] order = new byte[5 * na + 2 * nn];
        for (int i = 0; i < na; i++)
            order[i] = 1;
        for (int i = 0; i < nn; i++) {
            order[na + i] = 2;
            order[na + nn + i] = 3;
        }
        Random r = new Random(45);
        for (int i = order.length - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            byte t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (byte o : order) {
            if (o == 1)
                a();
            else if (o == 2)
                Sites.one();
            else if (o == 3)
                Sites.two();
            else
                b();
        }
        long s = 0;
        for (int i = 0; i < 10; i++)
            s += rec(9); // 10 calls each
        int caught = 0;
        for (int i = 0; i < 50; i++) {
            try {
                fail(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        for (int i = 0; i < 20; i++)
            s += new Node(i).v;
        if (nn > 0) {
            caught += Sites.fails();
            Burner k = new Burner();
            for (int i = 0; i < 20; i++) {
                s += k.where() - 45; // invokevirtual TraceWork$Burner.where
                synchronized (k) {
                    s += Thread.holdsLock(k) ? 0 : 1;
                }
            }
        }
        System.out.println("done " + s + " " + caught);
    }
}
