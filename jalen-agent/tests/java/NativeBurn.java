/**
 * Native methods of our own for jalen's trace= (test_jalen_trace), which
 * counts them at their Java call sites: burn() runs 0.5 ms of its thread's
 * CPU time in C, fail() throws IllegalStateException, where() (a virtual
 * one, which TraceWork calls through a subclass) gives 45, nop() does
 * nothing (bench/bench_jalen_trace.sh: the cost of a call site traced)
 * (tests/native/burn.c, libjalen_testnative.so: TraceWork loads it).
 */
public class NativeBurn {
    static native void burn();

    static native void fail();

    native int where();

    static native void nop();
}
