package org.powerapi.jalen;

import javax.management.ConstructorParameters;

/** Energy of one thread (or pseudo-thread [GC], [JIT compiler], [VM]) since the agent started. */
public final class ThreadEnergy {
    private final long tid;
    private final String name;
    private final double cpuTimeSeconds, energyJoules, cpuEnergyJoules, netEnergyJoules;
    private final double windowPowerWatts;
    private final long netBytes;

    @ConstructorParameters({"tid", "name", "cpuTimeSeconds", "energyJoules", "cpuEnergyJoules",
                            "netEnergyJoules", "windowPowerWatts", "netBytes"})
    public ThreadEnergy(long tid, String name, double cpuTimeSeconds, double energyJoules,
                        double cpuEnergyJoules, double netEnergyJoules, double windowPowerWatts,
                        long netBytes) {
        this.tid = tid;
        this.name = name;
        this.cpuTimeSeconds = cpuTimeSeconds;
        this.energyJoules = energyJoules;
        this.cpuEnergyJoules = cpuEnergyJoules;
        this.netEnergyJoules = netEnergyJoules;
        this.windowPowerWatts = windowPowerWatts;
        this.netBytes = netBytes;
    }

    /** Linux thread id (0 for pseudo-threads). */
    public long getTid() { return tid; }
    public String getName() { return name; }
    public double getCpuTimeSeconds() { return cpuTimeSeconds; }
    public double getEnergyJoules() { return energyJoules; }
    public double getCpuEnergyJoules() { return cpuEnergyJoules; }
    public double getNetEnergyJoules() { return netEnergyJoules; }
    /** Power over the last window. */
    public double getWindowPowerWatts() { return windowPowerWatts; }
    public long getNetBytes() { return netBytes; }

    @Override
    public String toString() {
        return name + " (" + tid + ") " + energyJoules + " J";
    }
}
