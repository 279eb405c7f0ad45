package org.powerapi.jalen;

import java.lang.management.ManagementFactory;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;

/**
 * A JVM whose class path lacks powerapi.jar (it uses no powerapi class):
 * the agent then loads the MXBean from its own powerapi.jar. Reads it by
 * name through the platform MBean server. Exit status 0 when all is well.
 */
public final class BareWorkload {
    static volatile long sink;

    static void bareHot(long ms) {
        var bean = ManagementFactory.getThreadMXBean();
        long end = bean.getCurrentThreadCpuTime() + ms * 1_000_000L;
        long x = sink;
        while (bean.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 20000; i++)
                x = x * 6364136223846793005L + i;
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        try {
            Class.forName("org.powerapi.jalen.Energy");
            System.out.println("FAIL: powerapi.jar is on this class path");
            System.exit(1);
        } catch (ClassNotFoundException expected) {
            // the agent's copy lives in its own class loader
        }
        MBeanServer s = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("org.powerapi.jalen:type=Energy");
        long until = System.nanoTime() + 10_000_000_000L;
        while (!s.isRegistered(name) && System.nanoTime() < until)
            bareHot(10);
        if (!s.isRegistered(name)) {
            System.out.println("FAIL: MXBean not registered");
            System.exit(1);
        }
        // bareHot's CPU after registration, not wall time: the MXBean is
        // registered a second after VMInit, by when three windows of 200 ms
        // have often passed; on a busy host the main thread then had few
        // samples, none at times, and startup methods filled the top ten
        var threads = ManagementFactory.getThreadMXBean();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (((Long) s.getAttribute(name, "Windows") < 3
                || threads.getCurrentThreadCpuTime() - cpu0 < 400_000_000L)
               && System.nanoTime() < deadline)
            bareHot(50);
        for (CompositeData m : (CompositeData[]) s.getAttribute(name, "TopMethods")) {
            if ("org.powerapi.jalen.BareWorkload.bareHot".equals(m.get("method"))
                && (Double) m.get("selfEnergyJoules") > 0) {
                System.out.println("bare: found " + m.get("method") + " " + m.get("selfEnergyJoules") + " J");
                System.exit(0);
            }
        }
        StringBuilder top = new StringBuilder();
        for (CompositeData m : (CompositeData[]) s.getAttribute(name, "TopMethods"))
            top.append(' ').append(m.get("method")).append('=').append(m.get("selfEnergyJoules"));
        System.out.println("FAIL: bareHot not among the top methods:" + top);
        System.exit(1);
    }
}
