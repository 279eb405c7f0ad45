/*
 * Trace.java - what the methods jalen's trace= rewrote call (DESIGN.md
 * section 11.2).  On the boot class path (the agent puts jalen-trace-rt.jar
 * there), so that a class of any class loader sees it; its natives are
 * bound by the agent (trace.c) before the first class is rewritten.
 */
package org.powerapi.jalen.trace;

public final class Trace {
    private Trace() {}

    /** A traced method (id from register) was entered on this thread. */
    public static native void enter(int id);

    /** It returned normally. */
    public static native void exit(int id);

    /** It ended by an exception (thrown in it or by a callee). */
    public static native void thrown(int id);

    /** The id of a method about to be rewritten (pattern: the index of the
     * trace= pattern that matched it); -1 when the agent cannot take more. */
    public static native int register(String cls, String method, String desc, int pattern);
}
