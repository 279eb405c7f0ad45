package org.powerapi;

/**
 * One scope name's aggregates ({@code pa_scope_stats}): calls, CPU time and
 * energy, inclusive and self, and the energy per rated call (mean, then
 * p50, p95, p99 from a log-bucketed histogram, within 6.25 %). "Rated"
 * calls ended after the context's first window. The note says why names
 * were folded into "[other scopes]" (null for the other names). With a
 * carbon intensity ({@link PowerAPI#scopeConfigure(long, long, double)}):
 * that intensity, the assumption, and the grams of CO2e of the energy, the
 * self energy and the mean (energy / 3.6e6 x intensity); all 0 without.
 */
public record ScopeStats(String name, long calls, long ratedCalls, long measuredCalls,
                         double cpuTimeSeconds, double selfCpuTimeSeconds,
                         double energyJoules, double selfEnergyJoules,
                         double meanJoules, double p50Joules, double p95Joules,
                         double p99Joules, double selfMeanJoules, double selfP50Joules,
                         double selfP95Joules, double selfP99Joules, int flags,
                         String note, double carbonGramsPerKwh, double co2eGrams,
                         double selfCo2eGrams, double meanCo2eGrams) {
    /** The name under which the calls of the names beyond maxNames are counted. */
    public static final String OTHER = "[other scopes]";

    static ScopeStats of(String name, double[] d, long[] l, String note) {
        return new ScopeStats(name, l[0], l[1], l[2], d[0], d[1], d[2], d[3], d[4], d[5],
                              d[6], d[7], d[8], d[9], d[10], d[11], (int) l[3], note,
                              d[12], d[13], d[14], d[15]);
    }

    /** Every rated call was priced from RAPL. */
    public boolean measured() {
        return (flags & Scope.MEASURED) != 0;
    }
}
