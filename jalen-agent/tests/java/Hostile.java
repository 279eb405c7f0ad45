import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;

/**
 * Hostile workloads for the jalen agent tests.
 *   threads N   start N short-lived threads (batches of 50), each burning a little
 *   unload      define classes in throw-away class loaders, run them, unload them
 *   exit SECS [CPU_SECS]
 *               burn on 3 threads and call System.exit(3) while they run, after
 *               SECS and once each has used CPU_SECS of CPU time (at most 90 s
 *               of wall time), so that a loaded host gives the same work
 *               (samples) in a longer run
 *   forever     burn on 2 threads until killed
 */
public class Hostile {
    static volatile double sink;

    static void work(int n) {
        double x = sink;
        for (int i = 0; i < n; i++)
            x = x * 1.0000001 + Math.sqrt(i);
        sink = x;
    }

    static void shortLived(int n) throws Exception {
        for (int done = 0; done < n; done += 50) {
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                Thread t = new Thread(() -> work(20000), "short-" + (done + i));
                t.setDaemon(true);
                t.start();
                ts.add(t);
            }
            for (Thread t : ts)
                t.join();
        }
    }

    static void unload(String classesDir) throws Exception {
        URL[] urls = {new java.io.File(classesDir).toURI().toURL()};
        List<WeakReference<ClassLoader>> refs = new ArrayList<>();
        for (int round = 0; round < 200; round++) {
            URLClassLoader cl = new URLClassLoader(urls, null);
            Class<?> c = cl.loadClass("Payload");
            Object p = c.getDeclaredConstructor().newInstance();
            ((Runnable) p).run();
            refs.add(new WeakReference<>(cl));
            cl.close();
            if (round % 50 == 49)
                System.gc();
        }
        System.gc();
        int alive = 0;
        for (WeakReference<ClassLoader> r : refs)
            if (r.get() != null)
                alive++;
        System.out.println("loaders alive " + alive);
    }

    static void burnUntilExit(double secs, double cpuSecs) throws Exception {
        Thread[] ts = new Thread[3];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> { while (true) work(100000); }, "burn-" + i);
            ts[i].setDaemon(false);
            ts[i].start();
        }
        java.lang.management.ThreadMXBean mx =
                java.lang.management.ManagementFactory.getThreadMXBean();
        long start = System.nanoTime();
        Thread.sleep((long) (secs * 1000));
        for (boolean short_ = true; short_ && System.nanoTime() - start < 90_000_000_000L;) {
            short_ = false;
            for (Thread t : ts)
                if (mx.getThreadCpuTime(t.getId()) < (long) (cpuSecs * 1e9))
                    short_ = true;
            if (short_)
                Thread.sleep(50);
        }
        System.exit(3);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
        case "threads": shortLived(Integer.parseInt(args[1])); break;
        case "unload": unload(args[1]); break;
        case "exit":
            burnUntilExit(Double.parseDouble(args[1]),
                          args.length > 2 ? Double.parseDouble(args[2]) : 0);
            break;
        case "forever":
            for (int i = 0; i < 2; i++)
                new Thread(() -> { while (true) work(100000); }, "forever-" + i).start();
            System.out.println("READY");
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
            break;
        default: throw new IllegalArgumentException(args[0]);
        }
    }
}
