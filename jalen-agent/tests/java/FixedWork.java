/**
 * bench_jalen_cost.sh: a fixed amount of CPU work, the same whatever the
 * profiler, so that the JVM's CPU time with a profiler minus without is
 * the profiler's cost.  ROUNDS rounds in all, split over THREADS threads;
 * each round recurses DEPTH frames deep and runs a numeric loop of
 * 4,000 dependent steps (about 10 us) at the bottom, so that a sample's
 * stack is about DEPTH Java frames.  Two lengths of ROUNDS give the cost
 * per sample (the slope) apart from the fixed cost.
 *
 * Usage: java FixedWork THREADS DEPTH ROUNDS
 */
public class FixedWork {
    static volatile double sink;

    static double down(int d) {
        if (d > 0)
            return down(d - 1) * 0.5 + 1;
        double x = d;
        for (int i = 0; i < 4000; i++)
            x = x * 1.0000001 + 0.5;
        return x;
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        int depth = Integer.parseInt(args[1]);
        long rounds = Long.parseLong(args[2]);
        Thread[] t = new Thread[threads];
        for (int k = 0; k < threads; k++) {
            long mine = rounds / threads + (k < rounds % threads ? 1 : 0);
            t[k] = new Thread(() -> {
                double s = 0;
                for (long r = 0; r < mine; r++)
                    s += down(depth);
                sink = s;
            }, "work-" + k);
            t[k].start();
        }
        for (Thread x : t)
            x.join();
    }
}
