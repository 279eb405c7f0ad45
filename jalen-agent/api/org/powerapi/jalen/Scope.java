package org.powerapi.jalen;

import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The energy of a unit of work (a request, a job) in a JVM run with the
 * jalen agent ({@code -agentpath:libjalen.so}):
 *
 * <pre>
 * try (Scope s = Scope.enter("checkout")) {
 *     handle(request);
 * }
 * </pre>
 *
 * Each call is measured exactly, not sampled: the thread's CPU clock and
 * the socket bytes it moved, read at {@code enter} and at {@code close};
 * the agent prices them at the end of the window they ended in (the
 * process's energy per CPU-second of that window, and its network energy
 * per byte) and writes the aggregates per name to {@code scopes.csv}.
 * Scopes nest (per thread): each name is reported inclusive and self (less
 * the scopes nested in it). Work that a scope hands to another thread is
 * carried with {@link #context()} and {@link Context#attach()}, or
 * {@link #wrap(Runnable)}: its CPU time and bytes are added to the call
 * that handed it (when it ends after that call closed, to the name's
 * totals but not to a call).
 *
 * <p>Without the agent every method is a no-op that returns at once (one
 * static field read): the agent binds the natives and sets that field
 * when this class is loaded. This jar depends on nothing and runs on Java
 * 8 and later. A scope is closed by the thread that entered it.
 */
public final class Scope implements AutoCloseable {
    /* Set by the agent (JNI) when it has bound the natives: no initializer,
     * so that class initialization, which runs after, never resets it. */
    private static boolean bound;

    /* flags read by the natives */
    private static final int RECURSIVE = 1; /* the name is open further out on this thread */
    private static final int TOP = 2;       /* outermost scope of its thread */
    private static final int PART = 4;      /* continued work, after its call was counted */

    private static final int MAX_CACHED_NAMES = 4096;
    private static final ThreadLocal<Scope> CURRENT = new ThreadLocal<Scope>();
    private static final ConcurrentHashMap<String, Integer> IDS =
        new ConcurrentHashMap<String, Integer>();
    private static final Scope NOOP = new Scope("", -1, null, null, null);

    private final String name;
    private final int id;
    private final Scope parent; /* enclosing scope on this thread */
    private final Scope owner;  /* continued call, null for a call */
    private final Thread thread;
    private boolean closed;

    /* read and written by the natives (field names are part of the agent's ABI) */
    private int flags;
    private int outer;           /* the enclosing scope's id, -1 none */
    private boolean commit;      /* record the call at nExit */
    private long cpu0, bytes0;   /* thread CPU clock (ns) and bytes at enter */
    private long cpu, bytes;     /* inclusive, at close */
    private double jPerCpuNs, jPerByte; /* the last window's prices, at close */
    private long childCpu, childBytes; /* inclusive figures of the scopes nested on this thread */
    /* continued work, under the owner's lock until the call is counted */
    private long extCpu, extBytes, extSelfCpu, extSelfBytes;
    private int running;            /* continuations open */
    private boolean ownerClosed, counted;

    private Scope(String name, int id, Scope parent, Scope owner, Thread thread) {
        this.name = name;
        this.id = id;
        this.parent = parent;
        this.owner = owner;
        this.thread = thread;
        this.closed = id == -1;
    }

    private static native int nId(String name);
    private static native void nEnter(Scope s);
    private static native void nExit(Scope s);
    private static native void nRecord(Scope s);

    /** Whether the jalen agent runs in this JVM and counts scopes. */
    public static boolean active() {
        return bound;
    }

    /**
     * Opens scope {@code name} on the calling thread. The name is the unit
     * of aggregation: keep it to a bounded set (a route, not a path with
     * ids in it); the agent keeps at most {@code scopes=N} names (default
     * 256) and counts the rest under "[other scopes]".
     */
    public static Scope enter(String name) {
        if (!bound || name == null || name.isEmpty())
            return NOOP;
        return open(name, idOf(name), null, 0);
    }

    /** The innermost scope open on this thread, or null. */
    public static Scope current() {
        return bound ? CURRENT.get() : null;
    }

    /**
     * A token of the call open on this thread (the innermost scope), for
     * work handed to another thread; an inert token when none is open.
     */
    public static Context context() {
        Scope s = bound ? CURRENT.get() : null;
        if (s == null)
            return Context.NONE;
        return new Context(s.owner != null ? s.owner : s);
    }

    /** {@code task} run inside the current call (see {@link #context()}). */
    public static Runnable wrap(Runnable task) {
        return bound ? context().wrap(task) : task;
    }

    /** {@code task} run inside the current call (see {@link #context()}). */
    public static <V> Callable<V> wrap(Callable<V> task) {
        return bound ? context().wrap(task) : task;
    }

    private static int idOf(String name) {
        Integer id = IDS.get(name);
        if (id != null)
            return id;
        int i = nId(name);
        if (i != -1 && IDS.size() < MAX_CACHED_NAMES)
            IDS.put(name, i);
        return i;
    }

    private static Scope open(String name, int id, Scope owner, int flags) {
        if (id == -1) /* not counted (the agent said why) */
            return NOOP;
        Scope parent = CURRENT.get();
        Scope s = new Scope(name, id, parent, owner, Thread.currentThread());
        int f = flags | (parent == null ? TOP : 0);
        for (Scope p = parent; p != null; p = p.parent)
            if (p.id == id) {
                f |= RECURSIVE;
                break;
            }
        s.flags = f;
        s.outer = parent == null ? -1 : parent.id;
        CURRENT.set(s);
        nEnter(s); /* last: the bookkeeping above is outside the scope */
        return s;
    }

    /**
     * Closes the scope (and, first, the scopes nested in it that were left
     * open). Later calls do nothing.
     *
     * @throws IllegalStateException on another thread than the one that
     *     entered it
     */
    @Override
    public void close() {
        if (closed)
            return;
        if (Thread.currentThread() != thread)
            throw new IllegalStateException("scope '" + name + "' is closed by the thread that "
                                            + "entered it (hand work over with Scope.context())");
        Scope c = CURRENT.get();
        while (c != null && c != this)
            c = c.parent;
        if (c == null) { /* no longer on this thread's stack */
            closed = true;
            return;
        }
        for (Scope in = CURRENT.get(); in != this; in = CURRENT.get())
            in.close();
        closed = true;
        boolean late = false; /* continuations still run: count the call after them */
        if (owner == null) {
            synchronized (this) {
                commit = running == 0;
                counted = ownerClosed = commit;
                late = !commit;
            }
        } else {
            commit = (flags & PART) != 0;
        }
        nExit(this); /* measures, and queues the call when commit */
        if (late) {
            /* ownerClosed only now that cpu and bytes are set: the last
             * continuation to end, or this thread, queues the call */
            boolean record;
            synchronized (this) {
                ownerClosed = true;
                record = running == 0 && !counted;
                if (record)
                    counted = true;
            }
            if (record)
                nRecord(this);
        }
        CURRENT.set(parent);
        if (parent != null) {
            parent.childCpu += cpu;
            parent.childBytes += bytes;
        }
        if (owner != null && (flags & PART) == 0)
            owner.partDone(this);
    }

    /* A continuation of this call ended. */
    private void partDone(Scope c) {
        boolean record;
        synchronized (this) {
            extCpu += c.cpu;
            extBytes += c.bytes;
            extSelfCpu += c.cpu - c.childCpu;
            extSelfBytes += c.bytes - c.childBytes;
            record = --running == 0 && ownerClosed && !counted;
            if (record)
                counted = true;
        }
        if (record)
            nRecord(this);
    }

    /** The scope's name ("" for the inert scope of a JVM without the agent). */
    public String name() {
        return name;
    }

    /** After close: this thread's CPU time in the scope, nested scopes included (s). */
    public double cpuTimeSeconds() {
        return cpu * 1e-9;
    }

    /** After close: the socket bytes this thread moved in the scope. */
    public long netBytes() {
        return bytes;
    }

    /**
     * After close: an estimate of the call's energy (J) at the last priced
     * window's prices, for a response header or a log line. scopes.csv
     * prices the call at the window it ended in (the same, or the next).
     * Work continued on other threads is included when it ended first. 0
     * before the agent's first window.
     */
    public double estimatedEnergyJoules() {
        return (cpu + extCpu) * jPerCpuNs + (bytes + extBytes) * jPerByte;
    }

    @Override
    public String toString() {
        return "Scope[" + name + "]";
    }

    /**
     * A call carried to another thread: {@code try (Scope s = ctx.attach())
     * { ... }} on that thread adds its CPU time and bytes to the call.
     */
    public static final class Context {
        static final Context NONE = new Context(null);
        private final Scope call;

        Context(Scope call) {
            this.call = call;
        }

        /** The call's name, or null for the inert token. */
        public String name() {
            return call == null ? null : call.name;
        }

        /** Opens the continuation on the calling thread; close it there. */
        public Scope attach() {
            if (call == null || !bound)
                return NOOP;
            boolean part;
            synchronized (call) {
                part = call.counted;
                if (!part)
                    call.running++;
            }
            return open(call.name, call.id, call, part ? PART : 0);
        }

        public Runnable wrap(final Runnable task) {
            if (call == null)
                return task;
            return new Runnable() {
                @Override
                public void run() {
                    try (Scope s = attach()) {
                        task.run();
                    }
                }
            };
        }

        public <V> Callable<V> wrap(final Callable<V> task) {
            if (call == null)
                return task;
            return new Callable<V>() {
                @Override
                public V call() throws Exception {
                    try (Scope s = attach()) {
                        return task.call();
                    }
                }
            };
        }
    }
}
