import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Workload of test_jalen_attach: thread "burner" spends 60/30/10 % of its
 * CPU time in burnA/burnB/burnC, in cycles of 100 ms of CPU, for SECONDS of
 * wall time.  Prints "ready" once the burner runs, "done" at the end.
 *
 * Usage: java Burn SECONDS
 */
public class Burn {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile double sink;

    /* Spins until the thread used ns more nanoseconds of CPU time. */
    static void spin(long ns) {
        long end = MX.getCurrentThreadCpuTime() + ns;
        double x = sink;
        do {
            for (int i = 0; i < 20000; i++)
                x = x * 1.0000001 + 0.5;
        } while (MX.getCurrentThreadCpuTime() < end);
        sink = x;
    }

    static void burnA() { spin(60_000_000L); }
    static void burnB() { spin(30_000_000L); }
    static void burnC() { spin(10_000_000L); }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        Thread t = new Thread(() -> {
            while (System.nanoTime() < end) {
                burnA();
                burnB();
                burnC();
            }
        }, "burner");
        t.start();
        System.out.println("ready");
        System.out.flush();
        t.join();
        System.out.println("done");
    }
}
