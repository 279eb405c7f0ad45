package org.powerapi.jalen;

import java.util.List;

/**
 * Live results of the jalen agent, registered as
 * {@code org.powerapi.jalen:type=Energy} in the platform MBean server when
 * the JVM runs with {@code -agentpath:libjalen.so} (by the agent's thread,
 * within moments of the start). Readable in-process
 * ({@code ManagementFactory.getPlatformMBeanServer()}, or
 * {@link Energy#get()}) and over JMX. All figures are since the agent
 * started unless named "window" (the last closed power window).
 */
public interface EnergyMXBean {
    /** The ObjectName the agent registers. */
    String OBJECT_NAME = "org.powerapi.jalen:type=Energy";

    /** Process power over the last window (W). */
    double getProcessPowerWatts();

    /** Process energy since the agent started (J). */
    double getProcessEnergyJoules();

    /** Energy charged to Java methods and pseudo-frames (J). */
    double getAttributedEnergyJoules();

    /** Energy left in [unattributed] (J). */
    double getUnattributedEnergyJoules();

    double getUptimeSeconds();

    /** Closed power windows so far. */
    long getWindows();

    long getSamples();

    long getDroppedSamples();

    /** Formula computing the process power ("cpu-tdp", "rapl-share"...). */
    String getFormula();

    /** The 10 methods with the most self energy. */
    List<MethodEnergy> getTopMethods();

    /** The 10 threads with the most energy. */
    List<ThreadEnergy> getTopThreads();

    /** The most recent windows (up to 60), oldest first. */
    List<WindowEnergy> getRecentWindows();

    /**
     * Traces the methods the patterns name from now on, as the agent's
     * trace= option does ("Demo.work;com.acme.*.handle"; "" stops
     * tracing): the loaded classes they name are rewritten at once.
     * Returns the agent's one-line answer.
     */
    String trace(String patterns);

    /** The traced methods' calls and energy per call, as calls.csv (CSV text). */
    String getTracedCalls();

    /**
     * Each scope name of org.powerapi.jalen.Scope (jalen-api.jar), as in
     * scopes.csv: the calls priced at the ends of the windows so far.
     */
    List<ScopeEnergy> getScopes();

    /** Energy of the time and bytes of the outermost scopes (J). */
    double getScopedEnergyJoules();

    /** The process's energy outside every scope (J). */
    double getUnscopedEnergyJoules();

    /** The n methods with the most self energy (n <= 0: all). */
    List<MethodEnergy> topMethods(int n);

    /** The n threads with the most energy (n <= 0: all). */
    List<ThreadEnergy> topThreads(int n);
}
