import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import org.powerapi.jalen.Scope;

/**
 * async-profiler's recovery test programs (async-profiler/, Apache-2.0)
 * under jalen, several in one JVM: each program's main runs on a thread of
 * its own named after it, inside a jalen scope of that name, so that every
 * sample of the program, [unknown Java] ones included, lies under its
 * "[scope NAME]" root in energy.collapsed.  The programs run forever (or
 * for minutes); the JVM exits once SECONDS of wall time have passed and
 * each program's thread has used CPU_SECONDS of CPU time (a loaded host
 * gets a longer run, not less work), or at 4 x SECONDS at the latest.
 *
 *   java AprofRecovery SECONDS CPU_SECONDS PROGRAM...
 *   PROGRAM: StringBuilderTest, Numbers, Suppliers, CodingIntrinsics
 */
public class AprofRecovery {
    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        long cpuNs = (long) (Double.parseDouble(args[1]) * 1e9);
        // Scope loaded (and its natives bound by the agent) before the
        // programs' threads enter theirs
        if (!org.powerapi.jalen.Scope.active())
            System.err.println("AprofRecovery: no jalen agent: no scopes");
        Thread[] threads = new Thread[args.length - 2];
        for (int i = 2; i < args.length; i++) {
            final String name = args[i];
            Thread t = new Thread(() -> run(name), name);
            t.setDaemon(true);
            threads[i - 2] = t;
            t.start();
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long t0 = System.nanoTime();
        for (;;) {
            Thread.sleep(50);
            double wall = (System.nanoTime() - t0) / 1e9;
            if (wall >= 4 * seconds)
                break;
            boolean enough = wall >= seconds;
            for (Thread t : threads)
                if (t.isAlive() && mx.getThreadCpuTime(t.getId()) < cpuNs)
                    enough = false;
            if (enough)
                break;
        }
        System.exit(0);
    }

    private static void run(String name) {
        String[] none = new String[0];
        // never closed while the program runs: its thread is in the scope
        // until the JVM exits
        try (Scope s = Scope.enter(name)) {
            switch (name) {
            case "StringBuilderTest":
                test.recovery.StringBuilderTest.main(none);
                break;
            case "Numbers":
                test.recovery.Numbers.main(none);
                break;
            case "Suppliers":
                test.recovery.Suppliers.main(none);
                break;
            case "CodingIntrinsics":
                test.recovery.CodingIntrinsics.main(none);
                break;
            case "Cpu": /* the smoke programs (test/test/smoke/) */
                test.smoke.Cpu.main(none);
                break;
            case "Threads": /* starts two threads of its own and returns */
                test.smoke.Threads.main(none);
                break;
            case "LoadLibrary":
                test.smoke.LoadLibrary.main(none);
                break;
            default:
                throw new IllegalArgumentException("no program " + name);
            }
        } catch (Exception e) { /* the smoke programs' mains declare it */
            throw new RuntimeException(e);
        }
    }
}
