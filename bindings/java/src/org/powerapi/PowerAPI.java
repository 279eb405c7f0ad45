package org.powerapi;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A libpowerapi monitoring context (JNI over {@code pa_ctx}).
 *
 * <pre>
 * try (PowerAPI api = PowerAPI.open()) {
 *     api.watchPid(ProcessHandle.current().pid());
 *     api.tick();                 // the first tick only primes
 *     Thread.sleep(1000);
 *     api.tick();
 *     Power p = api.pidPower(ProcessHandle.current().pid());
 * }
 * </pre>
 *
 * Every method may be called from any thread; after {@link #close()} they
 * throw IllegalStateException. Failures throw {@link PowerAPIException}
 * carrying the library's message.
 *
 * The JNI library is loaded from the system property
 * {@code org.powerapi.jni.library}, else {@code $POWERAPI_JNI_LIBRARY},
 * else the installed location, else {@code java.library.path}.
 */
public final class PowerAPI implements AutoCloseable {
    /** Also report each thread of a watched pid. */
    public static final int WATCH_THREADS = 1;
    /** Also report every descendant of a watched pid. */
    public static final int WATCH_CHILDREN = 2;

    static {
        NativeLoader.load();
    }

    private static final Cleaner CLEANER = Cleaner.create();

    /* The native context, freed by close() or, if the caller forgot, once
     * the PowerAPI object is unreachable.  Holds no reference to it. */
    private static final class State implements Runnable {
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        long handle;

        State(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            lock.writeLock().lock();
            try {
                if (handle != 0) {
                    nClose(handle);
                    handle = 0;
                }
            } finally {
                lock.writeLock().unlock();
            }
        }
    }

    private final State state;
    private final Cleaner.Cleanable cleanable;

    private PowerAPI(long handle) {
        this.state = new State(handle);
        this.cleanable = CLEANER.register(this, state);
    }

    /** A context reading /proc, /sys and /dev. */
    public static PowerAPI open() {
        return open(null, null);
    }

    /**
     * A context reading other roots (fixture trees, a container's /proc);
     * null means the default.
     */
    public static PowerAPI open(String procfs, String sysfs) {
        return open(procfs, sysfs, null, null);
    }

    /**
     * A context reading other roots of procfs, sysfs and devfs, and another
     * hardware database file; null means the default.
     */
    public static PowerAPI open(String procfs, String sysfs, String devfs, String hwdb) {
        return new PowerAPI(nOpen(procfs, sysfs, devfs, hwdb));
    }

    /** The library's version string. */
    public static String version() {
        return nVersion();
    }

    private static final String[] NAME_KEYS = {"runtime", "container_id", "container_name",
        "pod_name", "pod_namespace", "pod_uid", "unit", "names_source"};

    /**
     * The container, pod or systemd unit a cgroup path is (pa_cgroup_names_resolve): the
     * keys runtime, container_id, container_name, pod_name, pod_namespace, pod_uid, unit and
     * names_source, those known only; empty when the path names nothing.  rootfs is where
     * the runtimes' state is (null: "/").
     */
    public static Map<String, String> cgroupNames(String rootfs, String cgroupPath) {
        String[] v = nCgroupNames(rootfs, cgroupPath);
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; v != null && i < v.length; i++)
            if (!v[i].isEmpty())
                m.put(NAME_KEYS[i], v[i]);
        return m;
    }

    private static final String[] VM_KEYS = {"name", "uuid", "hypervisor", "manager", "id",
                                             "names_source", "cgroup", "pid", "vcpu_tids"};

    /**
     * The virtual machines running on this host (pa_vm_list; DESIGN.md section 18), one map
     * each: name, uuid, hypervisor, manager, id, names_source (where the name came from),
     * cgroup, pid, vcpu_tids (the vCPU threads' ids joined by ','); empty values left out.
     * procfs: null for "/proc"; rootfs: where Proxmox's etc/pve and the container runtimes'
     * state are, null for "/".  Throws PowerAPIException when procfs cannot be listed.
     */
    public static List<Map<String, String>> vms(String procfs, String rootfs) {
        String[] v = nVms(procfs, rootfs);
        List<Map<String, String>> out = new ArrayList<>();
        for (int i = 0; v != null && i + VM_KEYS.length <= v.length; i += VM_KEYS.length) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int k = 0; k < VM_KEYS.length; k++)
                if (!v[i + k].isEmpty())
                    m.put(VM_KEYS[k], v[i + k]);
            out.add(m);
        }
        return out;
    }

    private long acquire() {
        state.lock.readLock().lock();
        if (state.handle == 0) {
            state.lock.readLock().unlock();
            throw new IllegalStateException("powerapi: context is closed");
        }
        return state.handle;
    }

    private void release() {
        state.lock.readLock().unlock();
    }

    /**
     * Enables a module ("auto", "procfs-cpu", "cpu-tdp"...); options "k=v,k=v" or null.
     * A formula brings the sensors it requires; "auto" fills every component no
     * enabled formula computes (the rule of pa_module_enable in powerapi.h).
     */
    public void enable(String name, String options) {
        long h = acquire();
        try {
            nEnable(h, name, options);
        } finally {
            release();
        }
    }

    /**
     * Disables a module (a formula takes along the sensors enabled only for it);
     * "auto" will not bring it back.  A sensor that a formula enabled by name
     * requires throws PowerAPIException (errno 16, EBUSY) naming the formula.
     */
    public void disable(String name) {
        long h = acquire();
        try {
            nDisable(h, name);
        } finally {
            release();
        }
    }

    /** Changes some options of an enabled module. */
    public void configure(String name, String options) {
        long h = acquire();
        try {
            nConfigure(h, name, options);
        } finally {
            release();
        }
    }

    public void watchPid(long pid) {
        watchPid(pid, 0);
    }

    /** Watches a pid; flags: WATCH_THREADS, WATCH_CHILDREN. */
    public void watchPid(long pid, int flags) {
        long h = acquire();
        try {
            nWatchPid(h, pid, flags);
        } finally {
            release();
        }
    }

    public void unwatchPid(long pid) {
        long h = acquire();
        try {
            nUnwatchPid(h, pid);
        } finally {
            release();
        }
    }

    /** Samples now. The first tick only primes the readings. */
    public void tick() {
        long h = acquire();
        try {
            nTick(h, -1);
        } finally {
            release();
        }
    }

    /** Samples at an explicit clock time (ns, strictly increasing): for replays and tests. */
    public void tickAt(long timeNanos) {
        if (timeNanos < 0)
            throw new IllegalArgumentException("timeNanos < 0");
        long h = acquire();
        try {
            nTick(h, timeNanos);
        } finally {
            release();
        }
    }

    /** Last window's power and cumulative energy of a watched pid. */
    public Power pidPower(long pid) {
        long h = acquire();
        try {
            long[] l = new long[2];
            return Power.of(nPower(h, 0, pid, l), l);
        } finally {
            release();
        }
    }

    /** Same for a thread of a pid watched with WATCH_THREADS. */
    public Power tidPower(long tid) {
        long h = acquire();
        try {
            long[] l = new long[2];
            return Power.of(nPower(h, 1, tid, l), l);
        } finally {
            release();
        }
    }

    /** The whole machine; idleWatts is the CPU power no task caused. */
    public Power systemPower() {
        long h = acquire();
        try {
            long[] l = new long[2];
            return Power.of(nPower(h, 2, 0, l), l);
        } finally {
            release();
        }
    }

    /** Starts a background sampler ticking every periodNanos (>= 1 ms). */
    public void start(long periodNanos) {
        long h = acquire();
        try {
            nStart(h, periodNanos);
        } finally {
            release();
        }
    }

    /** Stops the background sampler and waits for it. */
    public void stop() {
        long h = acquire();
        try {
            nStop(h);
        } finally {
            release();
        }
    }

    /**
     * Scope options: maxNames distinct names kept (0: the default, 256; set
     * before the first scope), pid the process whose energy per CPU-second
     * prices the scopes (0: this process, -1: the machine's). Reads the
     * last window's price at once.
     */
    public void scopeConfigure(long maxNames, long pid) {
        scopeConfigure(maxNames, pid, 0);
    }

    /**
     * The same, and the carbon intensity of the stats' grams of CO2e: grams
     * of CO2e per kWh, more than 0 and at most 5000 (your grid's figure,
     * stated in each ScopeStats as the assumption), 0 for none.
     * PowerAPIException (ERANGE) for another value.
     */
    public void scopeConfigure(long maxNames, long pid, double carbonGramsPerKwh) {
        long h = acquire();
        try {
            nScopeConfigure(h, maxNames, pid, carbonGramsPerKwh);
        } finally {
            release();
        }
    }

    /** Opens a scope on the calling thread; close it (try-with-resources). */
    public Scope scope(String name) {
        return scopeAt(name, -1);
    }

    /**
     * Opens a scope at an explicit thread CPU clock (ns; -1: the thread's
     * clock), for tests and replays; close it with {@link Scope#closeAt}.
     */
    public Scope scopeAt(String name, long cpuNanos) {
        long h = acquire();
        try {
            nScopeBegin(h, name, cpuNanos);
        } finally {
            release();
        }
        return new Scope(this, name);
    }

    void scopeEnd(Scope s, String name, long cpuNanos) {
        long h = acquire();
        try {
            double[] d = new double[5];
            long[] l = new long[2];
            nScopeEnd(h, name, cpuNanos, d, l);
            s.fill(d, l);
        } finally {
            release();
        }
    }

    /** Every scope name's aggregates, in the order of first use, "[other scopes]" last. */
    public List<ScopeStats> scopes() {
        long h = acquire();
        try {
            List<ScopeStats> out = new ArrayList<>();
            for (String n : nScopeNames(h))
                out.add(stats(h, n));
            return out;
        } finally {
            release();
        }
    }

    /** One name's aggregates; PowerAPIException (ENOENT) when no scope of that name ran. */
    public ScopeStats scopeStats(String name) {
        long h = acquire();
        try {
            return stats(h, name);
        } finally {
            release();
        }
    }

    private static ScopeStats stats(long h, String name) {
        double[] d = new double[16];
        long[] l = new long[4];
        String note = nScopeGet(h, name, d, l);
        return ScopeStats.of(name, d, l, note);
    }

    /**
     * Frees the context, once the calls other threads are making return.
     * Idempotent. (A PowerAPI never closed is freed after it becomes
     * unreachable.)
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    private static native String nVersion();
    private static native String[] nCgroupNames(String rootfs, String path);
    private static native String[] nVms(String procfs, String rootfs);
    private static native long nOpen(String procfs, String sysfs, String devfs,
                                     String hwdb);
    private static native void nClose(long h);
    private static native void nEnable(long h, String name, String options);
    private static native void nDisable(long h, String name);
    private static native void nConfigure(long h, String name, String options);
    private static native void nWatchPid(long h, long pid, int flags);
    private static native void nUnwatchPid(long h, long pid);
    private static native void nTick(long h, long timeNanos);
    /* which: 0 pid, 1 tid, 2 system; returns the 9 double fields of Power
     * and fills l with timeNanos and flags. */
    private static native double[] nPower(long h, int which, long id, long[] l);
    private static native void nStart(long h, long periodNanos);
    private static native void nStop(long h);
    private static native void nScopeConfigure(long h, long maxNames, long pid, double carbon);
    private static native void nScopeBegin(long h, String name, long cpuNanos);
    /* fills d with cpu, self cpu, energy, self energy, price; l with depth, flags */
    private static native void nScopeEnd(long h, String name, long cpuNanos, double[] d,
                                         long[] l);
    private static native String[] nScopeNames(long h);
    /* d: the 12 doubles of pa_scope_stats; l: calls, rated, measured, flags */
    private static native String nScopeGet(long h, String name, double[] d, long[] l);
}
