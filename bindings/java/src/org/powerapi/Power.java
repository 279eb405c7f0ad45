package org.powerapi;

/**
 * Power of a target over the last window (watts) and its energy since it
 * was first seen (joules), as {@code pa_power}.
 */
public record Power(double cpuWatts, double nicWatts, double totalWatts,
                    double idleWatts, double cpuJoules, double nicJoules,
                    double totalJoules, double intervalSeconds,
                    double cpuTimeSeconds, long timeNanos, int flags) {
    /** The CPU figure is scaled from a measured counter (RAPL). */
    public static final int MEASURED = 1;
    /** The target is gone: last report. */
    public static final int EXITED = 2;
    /** First window the target was seen. */
    public static final int FIRST = 4;

    static Power of(double[] v, long[] l) {
        return new Power(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                         l[0], (int) l[1]);
    }

    public boolean measured() {
        return (flags & MEASURED) != 0;
    }
}
