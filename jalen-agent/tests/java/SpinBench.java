import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * bench_jalen.sh: CPU time (ms) of a fixed computation 61 frames deep, so
 * that the cost of stack sampling shows apart from the noise of a server
 * benchmark.  Usage: java SpinBench
 */
public class SpinBench {
    static volatile double sink;

    static double deep(int d, long iters) {
        if (d > 0)
            return deep(d - 1, iters) + 1;
        double x = 1;
        for (long i = 0; i < iters; i++)
            x = x * 1.0000001 + 0.5;
        return x;
    }

    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 20; i++)
            sink = deep(60, 5_000_000L);
        long t0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < 300; i++)
            sink = deep(60, 5_000_000L);
        long t1 = mx.getCurrentThreadCpuTime();
        System.out.printf("%.1f%n", (t1 - t0) / 1e6);
    }
}
