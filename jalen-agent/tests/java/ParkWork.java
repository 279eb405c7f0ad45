import java.io.FileWriter;
import java.util.concurrent.locks.LockSupport;

/**
 * A server's pool thread in miniature (issue 32): thread "worker" computes
 * for 10 to 30 us (a length drawn each time, so that no sampling period
 * locks onto the cycle), then parks until thread "waker" unparks it.  The
 * CPU time spent inside park() (the futex wait and wake-up in the kernel)
 * is measured around each call with the thread's CPU clock, less the cost
 * of one read of that clock (measured by two reads in a row each time):
 * the share of the worker's CPU time that a profiler should put on
 * Unsafe.park.
 *
 * Usage: java ParkWork SECONDS [FILE]  (prints, and writes to FILE, the line
 * "worker_cpu_s PARK_CPU_S park_share")
 */
public class ParkWork {
    static volatile boolean stop;
    static volatile long sink;

    static long work(long x, int n) {
        for (int i = 0; i < n; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    public static void main(String[] args) throws Exception {
        java.lang.management.ThreadMXBean mx =
                java.lang.management.ManagementFactory.getThreadMXBean();
        long[] ns = new long[2];
        Thread w = new Thread(() -> {
            long x = 1, p = 0, r = 88172645463325252L;
            while (!stop) {
                r ^= r << 13;
                r ^= r >>> 7;
                r ^= r << 17;
                x = work(x, 10000 + (int) ((r >>> 1) % 20000));
                long t0 = mx.getCurrentThreadCpuTime();
                long t1 = mx.getCurrentThreadCpuTime();
                LockSupport.park();
                long t2 = mx.getCurrentThreadCpuTime();
                /* t2 - t1 holds park and one clock read (the end of one,
                 * the start of the next), which t1 - t0 measures alone */
                p += (t2 - t1) - (t1 - t0);
            }
            ns[0] = p;
            ns[1] = mx.getCurrentThreadCpuTime();
            sink = x;
        }, "worker");
        Thread k = new Thread(() -> {
            while (!stop) {
                LockSupport.unpark(w);
                LockSupport.parkNanos(20000);
            }
        }, "waker");
        w.start();
        k.start();
        Thread.sleep((long) (Double.parseDouble(args[0]) * 1000));
        stop = true;
        LockSupport.unpark(w);
        w.join();
        k.join();
        String line = String.format("%.6f %.6f %.6f", ns[1] / 1e9, ns[0] / 1e9, (double) ns[0] / ns[1]);
        System.out.println(line);
        if (args.length > 1)
            try (FileWriter f = new FileWriter(args[1])) {
                f.write(line + "\n");
            }
    }
}
