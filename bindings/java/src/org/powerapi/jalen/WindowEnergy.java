package org.powerapi.jalen;

import javax.management.ConstructorParameters;

/** One closed power window of the process. */
public final class WindowEnergy {
    private final double startSeconds, durationSeconds, powerWatts, energyJoules;

    @ConstructorParameters({"startSeconds", "durationSeconds", "powerWatts", "energyJoules"})
    public WindowEnergy(double startSeconds, double durationSeconds, double powerWatts,
                        double energyJoules) {
        this.startSeconds = startSeconds;
        this.durationSeconds = durationSeconds;
        this.powerWatts = powerWatts;
        this.energyJoules = energyJoules;
    }

    /** Start of the window, seconds since the agent started. */
    public double getStartSeconds() { return startSeconds; }
    public double getDurationSeconds() { return durationSeconds; }
    /** Process power over the window. */
    public double getPowerWatts() { return powerWatts; }
    public double getEnergyJoules() { return energyJoules; }
}
