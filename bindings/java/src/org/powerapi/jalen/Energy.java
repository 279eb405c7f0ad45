package org.powerapi.jalen;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.management.ObjectName;

/**
 * The {@link EnergyMXBean} of the jalen agent. The agent loads this class
 * (from the application's class path if powerapi.jar is there, else from
 * its own powerapi.jar in a class loader of its own), binds its native
 * (which copies the agent's live results) and calls {@link #register()}
 * from the agent thread, right after the JVM starts. Applications read it
 * through the platform MBean server, or in-process with {@link #get()}
 * when powerapi.jar is on their class path.
 */
public final class Energy implements EnergyMXBean {
    private static final int TOP = 10;
    private static final Energy INSTANCE = new Energy();
    private static volatile boolean bound;

    private Energy() {
    }

    /** The agent's live results, or null when the JVM runs without the agent. */
    public static EnergyMXBean get() {
        return bound ? INSTANCE : null;
    }

    /**
     * Called by the agent once its natives are bound: registers the MXBean
     * as {@value EnergyMXBean#OBJECT_NAME}. Idempotent.
     */
    static synchronized void register() throws Exception {
        if (bound)
            return;
        bound = true;
        ManagementFactory.getPlatformMBeanServer().registerMBean(INSTANCE,
                                                                 new ObjectName(OBJECT_NAME));
    }

    /*
     * A copy of the agent's results, or null before the first window:
     * [0] double[] {uptime_s, power_w, energy_j, attributed_j, unattributed_j,
     *               windows, samples, dropped}
     * [1] String[] {formula, mode}
     * [2] String[] method names, [3] double[] 5 per method (self_j, total_j,
     *     cpu_j, net_j, window_w), [4] long[] 3 per method (self_samples,
     *     total_samples, net_bytes)
     * [5] long[] tids, [6] String[] thread names, [7] double[] 5 per thread
     *     (cpu_time_s, energy_j, cpu_j, net_j, window_w), [8] long[] net_bytes
     * [9] double[] 4 per window (start_s, duration_s, power_w, energy_j)
     * [10] String[] scope names, [11] double[] 16 per scope (inclusive then
     *      self: cpu_time_s, energy_j, cpu_j, net_j, mean_j, p50_j, p95_j,
     *      p99_j), [12] long[] 3 per scope (calls, net_bytes, self_net_bytes)
     * ([0] also has scoped_j and unscoped_j at 8 and 9)
     * top: how many methods and threads (0: all).
     */
    private static native Object[] nSnapshot(int top);

    private static native String nTrace(String patterns);

    private static native String nTraced();

    @Override
    public String trace(String patterns) {
        String s = nTrace(patterns == null ? "" : patterns);
        return s == null ? "" : s.trim();
    }

    @Override
    public String getTracedCalls() {
        String s = nTraced();
        return s == null ? "" : s;
    }

    private static Object[] snapshot(int top) {
        return nSnapshot(Math.max(top, 0));
    }

    private static double summary(int i) {
        Object[] s = snapshot(1);
        return s == null ? 0 : ((double[]) s[0])[i];
    }

    @Override
    public double getUptimeSeconds() {
        return summary(0);
    }

    @Override
    public double getProcessPowerWatts() {
        return summary(1);
    }

    @Override
    public double getProcessEnergyJoules() {
        return summary(2);
    }

    @Override
    public double getAttributedEnergyJoules() {
        return summary(3);
    }

    @Override
    public double getUnattributedEnergyJoules() {
        return summary(4);
    }

    @Override
    public long getWindows() {
        return (long) summary(5);
    }

    @Override
    public long getSamples() {
        return (long) summary(6);
    }

    @Override
    public long getDroppedSamples() {
        return (long) summary(7);
    }

    @Override
    public String getFormula() {
        Object[] s = snapshot(1);
        return s == null ? "" : ((String[]) s[1])[0];
    }

    @Override
    public List<MethodEnergy> getTopMethods() {
        return topMethods(TOP);
    }

    @Override
    public List<ThreadEnergy> getTopThreads() {
        return topThreads(TOP);
    }

    @Override
    public List<MethodEnergy> topMethods(int n) {
        Object[] s = snapshot(n);
        if (s == null)
            return Collections.emptyList();
        String[] names = (String[]) s[2];
        double[] d = (double[]) s[3];
        long[] l = (long[]) s[4];
        List<MethodEnergy> out = new ArrayList<>(names.length);
        for (int i = 0; i < names.length; i++)
            out.add(new MethodEnergy(names[i], d[5 * i], d[5 * i + 1], d[5 * i + 2], d[5 * i + 3],
                                     d[5 * i + 4], l[3 * i], l[3 * i + 1], l[3 * i + 2]));
        return out;
    }

    @Override
    public List<ThreadEnergy> topThreads(int n) {
        Object[] s = snapshot(n);
        if (s == null)
            return Collections.emptyList();
        long[] tids = (long[]) s[5];
        String[] names = (String[]) s[6];
        double[] d = (double[]) s[7];
        long[] bytes = (long[]) s[8];
        List<ThreadEnergy> out = new ArrayList<>(names.length);
        for (int i = 0; i < names.length; i++)
            out.add(new ThreadEnergy(tids[i], names[i], d[5 * i], d[5 * i + 1], d[5 * i + 2],
                                     d[5 * i + 3], d[5 * i + 4], bytes[i]));
        return out;
    }

    @Override
    public double getScopedEnergyJoules() {
        return summary(8);
    }

    @Override
    public double getUnscopedEnergyJoules() {
        return summary(9);
    }

    @Override
    public List<ScopeEnergy> getScopes() {
        Object[] s = snapshot(1);
        if (s == null)
            return Collections.emptyList();
        String[] names = (String[]) s[10];
        double[] d = (double[]) s[11];
        long[] l = (long[]) s[12];
        List<ScopeEnergy> out = new ArrayList<>(names.length);
        for (int i = 0; i < names.length; i++)
            out.add(ScopeEnergy.of(names[i], d, 16 * i, l, 3 * i));
        return out;
    }

    @Override
    public List<WindowEnergy> getRecentWindows() {
        Object[] s = snapshot(1);
        if (s == null)
            return Collections.emptyList();
        double[] w = (double[]) s[9];
        List<WindowEnergy> out = new ArrayList<>(w.length / 4);
        for (int i = 0; i + 3 < w.length; i += 4)
            out.add(new WindowEnergy(w[i], w[i + 1], w[i + 2], w[i + 3]));
        return out;
    }
}
