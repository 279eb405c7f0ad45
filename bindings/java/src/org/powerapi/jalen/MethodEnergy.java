package org.powerapi.jalen;

import javax.management.ConstructorParameters;

/** Energy of one Java method since the agent started (an MXBean composite). */
public final class MethodEnergy {
    private final String method;
    private final double selfEnergyJoules, totalEnergyJoules, cpuEnergyJoules, netEnergyJoules;
    private final double windowPowerWatts;
    private final long selfSamples, totalSamples, netBytes;

    @ConstructorParameters({"method", "selfEnergyJoules", "totalEnergyJoules", "cpuEnergyJoules",
                            "netEnergyJoules", "windowPowerWatts", "selfSamples", "totalSamples",
                            "netBytes"})
    public MethodEnergy(String method, double selfEnergyJoules, double totalEnergyJoules,
                        double cpuEnergyJoules, double netEnergyJoules, double windowPowerWatts,
                        long selfSamples, long totalSamples, long netBytes) {
        this.method = method;
        this.selfEnergyJoules = selfEnergyJoules;
        this.totalEnergyJoules = totalEnergyJoules;
        this.cpuEnergyJoules = cpuEnergyJoules;
        this.netEnergyJoules = netEnergyJoules;
        this.windowPowerWatts = windowPowerWatts;
        this.selfSamples = selfSamples;
        this.totalSamples = totalSamples;
        this.netBytes = netBytes;
    }

    /** package.Class.method, as in methods.csv. */
    public String getMethod() { return method; }
    /** Energy while the method was on top of the stack. */
    public double getSelfEnergyJoules() { return selfEnergyJoules; }
    /** Energy while the method was anywhere on the stack. */
    public double getTotalEnergyJoules() { return totalEnergyJoules; }
    public double getCpuEnergyJoules() { return cpuEnergyJoules; }
    public double getNetEnergyJoules() { return netEnergyJoules; }
    /** Self power over the last window. */
    public double getWindowPowerWatts() { return windowPowerWatts; }
    public long getSelfSamples() { return selfSamples; }
    public long getTotalSamples() { return totalSamples; }
    public long getNetBytes() { return netBytes; }

    @Override
    public String toString() {
        return method + " " + selfEnergyJoules + " J self, " + totalEnergyJoules + " J total";
    }
}
