import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Thread names that change after start, and a thread that ends early
 * (issue 16).
 *
 * Thread "self-before" burns 300 ms of its CPU time in selfWork, renames
 * itself "self-after" (Thread.setName on the current thread) and burns
 * 700 ms more.  Thread "outside-before" is renamed "outside-after" by main
 * after 200 ms, and burns 1 s of CPU time in outsideWork.  Thread
 * "short-lived" burns 300 ms in shortWork and ends; main then waits 1.5 s
 * (over a window) before it exits.
 *
 * Usage: java Rename
 */
public class Rename {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile double sink;

    static void spin(long ns) {
        long end = MX.getCurrentThreadCpuTime() + ns;
        double x = sink;
        while (MX.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 2000; i++)
                x = x * 1.0000001 + 0.5;
        sink = x;
    }

    static void selfWork(long ns) { spin(ns); }
    static void outsideWork(long ns) { spin(ns); }
    static void shortWork(long ns) { spin(ns); }

    public static void main(String[] args) throws Exception {
        Thread self = new Thread(() -> {
            selfWork(300_000_000L);
            Thread.currentThread().setName("self-after");
            selfWork(700_000_000L);
        }, "self-before");
        Thread outside = new Thread(() -> outsideWork(1_000_000_000L), "outside-before");
        Thread shortLived = new Thread(() -> shortWork(300_000_000L), "short-lived");
        self.start();
        outside.start();
        shortLived.start();
        Thread.sleep(200);
        outside.setName("outside-after");
        shortLived.join();
        self.join();
        outside.join();
        Thread.sleep(1500);
        System.out.println("done");
    }
}
