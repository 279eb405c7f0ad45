package org.powerapi.jalen;

import javax.management.ConstructorParameters;

/**
 * One scope name of org.powerapi.jalen.Scope (jalen-api.jar) since the
 * agent started, as a row of scopes.csv: inclusive figures, and self ones
 * (less the scopes nested in it). Energy per call from a log-bucketed
 * histogram (p50, p95, p99 within 6.25 %); the mean is exact.
 */
public final class ScopeEnergy {
    private final String scope;
    private final long calls, netBytes, selfNetBytes;
    private final double cpuTimeSeconds, energyJoules, cpuEnergyJoules, netEnergyJoules;
    private final double meanJoules, p50Joules, p95Joules, p99Joules;
    private final double selfCpuTimeSeconds, selfEnergyJoules, selfCpuEnergyJoules,
        selfNetEnergyJoules;
    private final double selfMeanJoules, selfP50Joules, selfP95Joules, selfP99Joules;

    @ConstructorParameters({"scope", "calls", "netBytes", "selfNetBytes", "cpuTimeSeconds",
                            "energyJoules", "cpuEnergyJoules", "netEnergyJoules", "meanJoules",
                            "p50Joules", "p95Joules", "p99Joules", "selfCpuTimeSeconds",
                            "selfEnergyJoules", "selfCpuEnergyJoules", "selfNetEnergyJoules",
                            "selfMeanJoules", "selfP50Joules", "selfP95Joules", "selfP99Joules"})
    public ScopeEnergy(String scope, long calls, long netBytes, long selfNetBytes,
                       double cpuTimeSeconds, double energyJoules, double cpuEnergyJoules,
                       double netEnergyJoules, double meanJoules, double p50Joules,
                       double p95Joules, double p99Joules, double selfCpuTimeSeconds,
                       double selfEnergyJoules, double selfCpuEnergyJoules,
                       double selfNetEnergyJoules, double selfMeanJoules, double selfP50Joules,
                       double selfP95Joules, double selfP99Joules) {
        this.scope = scope;
        this.calls = calls;
        this.netBytes = netBytes;
        this.selfNetBytes = selfNetBytes;
        this.cpuTimeSeconds = cpuTimeSeconds;
        this.energyJoules = energyJoules;
        this.cpuEnergyJoules = cpuEnergyJoules;
        this.netEnergyJoules = netEnergyJoules;
        this.meanJoules = meanJoules;
        this.p50Joules = p50Joules;
        this.p95Joules = p95Joules;
        this.p99Joules = p99Joules;
        this.selfCpuTimeSeconds = selfCpuTimeSeconds;
        this.selfEnergyJoules = selfEnergyJoules;
        this.selfCpuEnergyJoules = selfCpuEnergyJoules;
        this.selfNetEnergyJoules = selfNetEnergyJoules;
        this.selfMeanJoules = selfMeanJoules;
        this.selfP50Joules = selfP50Joules;
        this.selfP95Joules = selfP95Joules;
        this.selfP99Joules = selfP99Joules;
    }

    static ScopeEnergy of(String name, double[] d, int di, long[] l, int li) {
        return new ScopeEnergy(name, l[li], l[li + 1], l[li + 2], d[di], d[di + 1], d[di + 2],
                               d[di + 3], d[di + 4], d[di + 5], d[di + 6], d[di + 7], d[di + 8],
                               d[di + 9], d[di + 10], d[di + 11], d[di + 12], d[di + 13],
                               d[di + 14], d[di + 15]);
    }

    /** The scope's name ("[other scopes]": the names beyond the agent's scopes=N). */
    public String getScope() { return scope; }
    public long getCalls() { return calls; }
    public long getNetBytes() { return netBytes; }
    public long getSelfNetBytes() { return selfNetBytes; }
    public double getCpuTimeSeconds() { return cpuTimeSeconds; }
    public double getEnergyJoules() { return energyJoules; }
    public double getCpuEnergyJoules() { return cpuEnergyJoules; }
    public double getNetEnergyJoules() { return netEnergyJoules; }
    public double getMeanJoules() { return meanJoules; }
    public double getP50Joules() { return p50Joules; }
    public double getP95Joules() { return p95Joules; }
    public double getP99Joules() { return p99Joules; }
    public double getSelfCpuTimeSeconds() { return selfCpuTimeSeconds; }
    public double getSelfEnergyJoules() { return selfEnergyJoules; }
    public double getSelfCpuEnergyJoules() { return selfCpuEnergyJoules; }
    public double getSelfNetEnergyJoules() { return selfNetEnergyJoules; }
    public double getSelfMeanJoules() { return selfMeanJoules; }
    public double getSelfP50Joules() { return selfP50Joules; }
    public double getSelfP95Joules() { return selfP95Joules; }
    public double getSelfP99Joules() { return selfP99Joules; }

    @Override
    public String toString() {
        return scope + " " + calls + " calls, " + energyJoules + " J";
    }
}
