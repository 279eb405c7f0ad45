package org.powerapi;

/**
 * The energy of a region of code on the calling thread ({@code
 * pa_scope_begin} / {@code pa_scope_end}):
 *
 * <pre>
 * try (Scope s = api.scope("checkout")) {
 *     handle(request);
 * }                                  // s.energyJoules(), s.cpuTimeSeconds()
 * try (Scope s = Scope.enter("checkout")) { ... }   // the default context
 * </pre>
 *
 * Its CPU time is the thread's CPU clock at the end less at the begin; its
 * energy that CPU time times the context's energy per CPU-second of its
 * last window. Inclusive figures contain the scopes nested in it, self
 * figures do not. A scope is closed on the thread that opened it, in the
 * reverse order of the openings (a platform thread: a virtual thread may
 * move to another carrier between the two). The figures are filled by
 * {@link #close()}.
 */
public final class Scope implements AutoCloseable {
    /** Priced from a measured counter (RAPL); modelled otherwise. */
    public static final int MEASURED = 1;
    /** Ended before the context's first window: energy 0. */
    public static final int NO_WINDOW = 1 << 8;
    /** Priced from the machine's power, not the process's. */
    public static final int RATE_SYSTEM = 1 << 9;
    /** The same name was open further out on the thread. */
    public static final int RECURSIVE = 1 << 10;
    /** Counted under "[other scopes]" (more names than maxNames). */
    public static final int FOLDED = 1 << 11;

    private final PowerAPI api;
    private final String name;
    private boolean closed;
    private double cpu, selfCpu, energy, selfEnergy, price;
    private int depth, flags;

    Scope(PowerAPI api, String name) {
        this.api = api;
        this.name = name;
    }

    /**
     * Opens a scope on the default context ({@link #defaultContext()}):
     * the Java API of issue 29 for programs that use the library without
     * the jalen agent.
     */
    public static Scope enter(String name) {
        return defaultContext().scope(name);
    }

    private static PowerAPI defaultApi;

    /**
     * The context {@link #enter(String)} uses, made at its first call: this
     * process watched, priced by the best formula auto finds, sampled every
     * second by a background sampler. Making it takes a first window (50 ms
     * to 1 s: until the machine ran), so that the first scope is priced.
     */
    public static synchronized PowerAPI defaultContext() {
        if (defaultApi == null) {
            PowerAPI api = PowerAPI.open();
            try {
                api.watchPid(ProcessHandle.current().pid());
                api.tick();
                for (int i = 0; i < 20; i++) {
                    Thread.sleep(50);
                    api.tick();
                    if (api.systemPower().cpuTimeSeconds() > 0)
                        break;
                }
                api.scopeConfigure(0, 0); /* reads that window's price */
                api.start(1_000_000_000L);
            } catch (InterruptedException e) {
                api.close();
                Thread.currentThread().interrupt();
                throw new IllegalStateException("powerapi: interrupted", e);
            } catch (RuntimeException e) {
                api.close();
                throw e;
            }
            defaultApi = api;
        }
        return defaultApi;
    }

    void fill(double[] d, long[] l) {
        cpu = d[0];
        selfCpu = d[1];
        energy = d[2];
        selfEnergy = d[3];
        price = d[4];
        depth = (int) l[0];
        flags = (int) l[1];
    }

    /** Ends the scope (once it succeeded, later calls do nothing). */
    @Override
    public void close() {
        if (closed)
            return;
        api.scopeEnd(this, name, -1);
        closed = true;
    }

    /** Ends the scope at an explicit thread CPU clock (ns): tests, replays. */
    public void closeAt(long cpuNanos) {
        if (cpuNanos < 0)
            throw new IllegalArgumentException("cpuNanos < 0");
        if (closed)
            return;
        api.scopeEnd(this, name, cpuNanos);
        closed = true;
    }

    public String name() {
        return name;
    }

    /** Inclusive CPU time of the thread in the scope (s). */
    public double cpuTimeSeconds() {
        return cpu;
    }

    public double selfCpuTimeSeconds() {
        return selfCpu;
    }

    /** Inclusive energy (J). */
    public double energyJoules() {
        return energy;
    }

    public double selfEnergyJoules() {
        return selfEnergy;
    }

    /** The price: energy per CPU-second (J/s). */
    public double joulesPerCpuSecond() {
        return price;
    }

    /** 0 for the outermost scope of the thread. */
    public int depth() {
        return depth;
    }

    public int flags() {
        return flags;
    }

    public boolean measured() {
        return (flags & MEASURED) != 0;
    }

    /** False when it ended before the context's first window. */
    public boolean rated() {
        return (flags & NO_WINDOW) == 0;
    }

    @Override
    public String toString() {
        return "Scope[" + name + ", energyJoules=" + energy + ", cpuTimeSeconds=" + cpu + "]";
    }
}
