package org.powerapi.jalen;

import com.sun.tools.attach.VirtualMachine;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * The jalen agent's MXBean, read in-process and from a JMX client.
 *
 * Parent (run by ctest, args: libjalen.so): starts a child JVM with the
 * agent, attaches to it, starts its local JMX agent and reads
 * org.powerapi.jalen:type=Energy over JMX. Child (arg "child"): burns CPU in
 * hotLoop() and checks the MXBean in-process. Exit status 1 on any failure.
 */
public final class EnergyMXBeanTest {
    private static final String HOT = "org.powerapi.jalen.EnergyMXBeanTest.hotLoop";
    private static final List<String> failures = new ArrayList<>();
    private static int checks;
    static volatile long sink;

    private static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
            System.out.println("FAIL: " + what);
        }
    }

    /** Burns ms milliseconds of CPU time: the method the agent must find on top. */
    static void hotLoop(long ms) {
        var bean = ManagementFactory.getThreadMXBean();
        long end = bean.getCurrentThreadCpuTime() + ms * 1_000_000L;
        long x = sink;
        while (bean.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 20000; i++)
                x = x * 6364136223846793005L + i;
        sink = x;
    }

    private static int finish() {
        System.out.println(checks + " checks, " + failures.size() + " failed");
        return failures.isEmpty() ? 0 : 1;
    }

    // ------------------------------------------------------------ child
    static int child() throws Exception {
        ObjectName name = new ObjectName(EnergyMXBean.OBJECT_NAME);
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        // The agent registers it from its own thread, soon after start.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!server.isRegistered(name) && System.nanoTime() < until)
            hotLoop(10);
        check(server.isRegistered(name), "registered in the platform MBean server");
        EnergyMXBean direct = Energy.get();
        check(direct != null, "Energy.get() with the agent");
        if (direct == null || !server.isRegistered(name))
            return finish();
        EnergyMXBean proxy = JMX.newMXBeanProxy(server, name, EnergyMXBean.class);
        // 400 ms of hotLoop's CPU after registration as well as 3 windows:
        // registration comes about a second after VMInit, often after 3
        // windows, and on a busy host the main thread then had had too few
        // samples for hotLoop to be among the top ten (startup methods were)
        var threads = ManagementFactory.getThreadMXBean();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while ((proxy.getWindows() < 3 || threads.getCurrentThreadCpuTime() - cpu0 < 400_000_000L)
               && System.nanoTime() < deadline)
            hotLoop(50);
        check(proxy.getWindows() >= 3, "3 windows in 20 s: " + proxy.getWindows());
        List<MethodEnergy> top = proxy.getTopMethods();
        check(!top.isEmpty() && top.size() <= 10, "top methods: " + top.size());
        check(top.stream().anyMatch(m -> m.getMethod().equals(HOT) && m.getSelfEnergyJoules() > 0),
              "in-process: " + HOT + " among " + top);
        check(direct.getProcessEnergyJoules() > 0, "in-process energy");
        // Read-only: reading does not disturb the agent; the same figures both ways.
        check(direct.getFormula().equals(proxy.getFormula()) && !direct.getFormula().isEmpty(),
              "formula: " + direct.getFormula());
        System.out.println("READY");
        System.out.flush();
        // Keep working until the parent says quit.
        Thread t = new Thread(() -> {
            try {
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            } catch (Exception e) {
                // parent gone: quit too
            }
        });
        t.setDaemon(true);
        t.start();
        while (t.isAlive())
            hotLoop(20);
        return finish();
    }

    // ------------------------------------------------------------ parent
    static int parent(String agent) throws Exception {
        Path out = Files.createTempDirectory("jalen-mxbean-");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xcheck:jni",
            "-agentpath:" + agent + "=window=200ms,out=" + out + ",quiet",
            "-cp", System.getProperty("java.class.path"),
            EnergyMXBeanTest.class.getName(), "child");
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        try {
            BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                                                                        StandardCharsets.UTF_8));
            String line;
            boolean ready = false;
            while ((line = r.readLine()) != null) {
                System.out.println("child: " + line);
                if (line.equals("READY")) {
                    ready = true;
                    break;
                }
            }
            check(ready, "child ready");
            if (ready)
                readOverJmx(p.pid());
            OutputStream in = p.getOutputStream();
            in.write("quit\n".getBytes(StandardCharsets.UTF_8));
            in.flush();
            while ((line = r.readLine()) != null)
                System.out.println("child: " + line);
            check(p.waitFor(30, TimeUnit.SECONDS), "child exits");
            check(p.exitValue() == 0, "child's own checks passed");
        } finally {
            p.destroyForcibly();
            try (var walk = Files.walk(out)) {
                walk.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
        }
        bareChild(agent, out);
        return finish();
    }

    /** A JVM without powerapi.jar on its class path still gets the MXBean. */
    static void bareChild(String agent, Path out) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String testJar = null;
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator))
            if (e.endsWith("powerapi-tests.jar"))
                testJar = e;
        check(testJar != null, "test jar on the class path");
        if (testJar == null)
            return;
        ProcessBuilder pb = new ProcessBuilder(java, "-Xcheck:jni",
            "-agentpath:" + agent + "=window=200ms,out=" + out + ",quiet",
            "-cp", testJar, BareWorkload.class.getName());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.print(text);
        check(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, "bare workload: " + text);
        check(!text.toLowerCase(Locale.ROOT).contains("warning"), "no JVM warning: " + text);
    }

    static void readOverJmx(long pid) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection conn = c.getMBeanServerConnection();
            ObjectName name = new ObjectName(EnergyMXBean.OBJECT_NAME);
            check(conn.isRegistered(name), "registered, seen over JMX");
            // Raw open types, as any JMX console (jconsole, VisualVM) sees them.
            double power = (Double) conn.getAttribute(name, "ProcessPowerWatts");
            double energy = (Double) conn.getAttribute(name, "ProcessEnergyJoules");
            long windows = (Long) conn.getAttribute(name, "Windows");
            System.out.println("jmx: power " + power + " W, energy " + energy + " J, windows " + windows);
            check(power > 0, "process power > 0: " + power);
            check(windows >= 3, "windows >= 3: " + windows);
            CompositeData[] top = (CompositeData[]) conn.getAttribute(name, "TopMethods");
            boolean found = false;
            for (CompositeData m : top) {
                System.out.println("jmx: method " + m.get("method") + " " + m.get("selfEnergyJoules") + " J");
                if (HOT.equals(m.get("method")) && (Double) m.get("selfEnergyJoules") > 0)
                    found = true;
            }
            check(found, "over JMX: " + HOT + " in TopMethods");
            // Typed proxy on the client side (composites rebuilt into classes).
            EnergyMXBean proxy = JMX.newMXBeanProxy(conn, name, EnergyMXBean.class);
            List<MethodEnergy> methods = proxy.topMethods(0);
            double self = 0;
            for (MethodEnergy m : methods)
                self += m.getSelfEnergyJoules();
            double pe = proxy.getProcessEnergyJoules();
            // Self energies (with the pseudo-frames, [unattributed] included) add up to the
            // process energy; a window may close between two reads, hence the tolerance.
            check(Math.abs(self - pe) <= 0.2 * pe + 1e-6, "sum of self energies " + self + " vs " + pe);
            check(methods.get(0).getSelfEnergyJoules() >= methods.get(methods.size() - 1).getSelfEnergyJoules(),
                  "sorted by self energy");
            List<ThreadEnergy> threads = proxy.topThreads(3);
            check(!threads.isEmpty() && threads.size() <= 3, "topThreads(3): " + threads);
            check(threads.get(0).getEnergyJoules() > 0, "busiest thread has energy: " + threads);
            List<WindowEnergy> recent = proxy.getRecentWindows();
            check(!recent.isEmpty() && recent.size() <= 60, "recent windows: " + recent.size());
            double prevStart = -1;
            for (WindowEnergy w : recent) {
                check(w.getStartSeconds() > prevStart, "windows in order");
                prevStart = w.getStartSeconds();
                check(Math.abs(w.getPowerWatts() * w.getDurationSeconds() - w.getEnergyJoules()) < 1e-9,
                      "window power x duration = energy");
                check(w.getDurationSeconds() > 0.1 && w.getDurationSeconds() < 2, "window length "
                      + w.getDurationSeconds());
            }
            check(Math.abs(proxy.getAttributedEnergyJoules() + proxy.getUnattributedEnergyJoules()
                           - proxy.getProcessEnergyJoules()) <= 0.2 * pe + 1e-6,
                  "attributed + unattributed = process");
            check(proxy.getUptimeSeconds() > 0.5, "uptime " + proxy.getUptimeSeconds());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("child"))
            System.exit(child());
        if (args.length != 1) {
            System.err.println("usage: EnergyMXBeanTest LIBJALEN.so | child");
            System.exit(2);
        }
        System.exit(parent(args[0]));
    }
}
