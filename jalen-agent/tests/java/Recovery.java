import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.zip.Adler32;
import java.util.zip.CRC32;

/**
 * Workloads whose hot loops spend their time where AsyncGetCallTrace alone
 * gives up (issue 16): JIT stubs, intrinsics, vtable and itable stubs, a
 * leaf call into the VM and the vDSO.  Each runs in a thread of its own,
 * named after the workload, for SECONDS of wall time; the loop method is
 * the one every sample of that thread should land under:
 *
 *   arraycopy  Recovery.arraycopyLoop   StringBuilder.append/delete
 *   itable     Recovery.itableLoop      megamorphic interface calls
 *   vtable     Recovery.vtableLoop      megamorphic calls on Number
 *   intrinsic  Recovery.intrinsicLoop   CRC32, Adler32, Base64, SHA-256
 *   time       Recovery.timeLoop        System.currentTimeMillis()
 *   deep       Recovery.deepLoop        work at every level of a 200-deep
 *                                       recursion (beyond the 128-frame cap)
 *   copy       Recovery.copyLoop        Recovery.copyHot (arraycopy stub),
 *                                       then cheap calls (issue 32)
 *   crc        Recovery.crcLoop         Recovery.crcHot (CRC32 stub), then
 *                                       cheap calls
 *   clock      Recovery.clockLoop       Recovery.clockHot (currentTimeMillis),
 *                                       then cheap calls
 *   nano       Recovery.nanoLoop        Recovery.nanoHot: vstamp,
 *                                       System.nanoTime then an inlined
 *                                       AtomicLong.lazySet of its result
 *   stamp      Recovery.stampLoop       the same with a constant AtomicLong
 *                                       (not in "all": the bench's)
 *   monitor    Recovery.monitorLoop     a lock two threads contend for
 *                                       (not in "all": the bench's)
 *   sbdelete   Recovery.sbdeleteLoop    StringBuilder.delete (its arraycopy),
 *                                       then Thread.isAlive and append
 *   arraycut   Recovery.arraycutLoop    arraycopy's appends, the builder cut
 *                                       by setLength (no copy) for delete
 *                                       (not in "all": the bench's check of
 *                                       where append's copies are credited)
 *   miss       Recovery.missLoop        Recovery.missLoad, a load that
 *                                       misses the caches (a chase through a
 *                                       64 MiB cycle), then cheap inlined code
 *                                       (not in "all": the bench's known
 *                                       answer of an interrupted PC)
 *
 * In copy, crc and clock the hot method is followed, in the same compiled
 * loop, by an inlined method (copyTick, crcTick, clockTick), an interface
 * call (P1/P2/P3.poke) and a JNI native (Thread.holdsLock) that cost next
 * to nothing (in nano by clockTick and poke, and each nanoTime call by
 * lazySet): a sample recovered from the hot call belongs to the hot
 * method, never to what runs after it.
 *
 * Usage: java Recovery WORKLOAD [SECONDS [CPU_SECONDS]]  (prints "done")
 *        java Recovery time-miss | time-arraycopy | time-stamp  (the known answers:
 *        each part of the loop timed, printed)
 * WORKLOAD "all" runs the eleven at once, one thread each.  With CPU_SECONDS
 * the run also lasts until every workload thread has used that much CPU
 * time (at most 120 s of wall time), so that a loaded host gives the
 * same work, warm-up included in the same proportion, in a longer run.
 */
public class Recovery {
    static volatile long sink;
    static volatile boolean stop;

    /* ---------- arraycopy ---------- */
    static void arraycopyLoop() {
        StringBuilder sb = new StringBuilder();
        String piece = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        long n = 0;
        while (!stop) {
            for (int i = 0; i < 1000; i++) {
                sb.append(piece);
                if (sb.length() > 8192)
                    sb.delete(0, 4096);
            }
            n += sb.length();
        }
        sink = n;
    }

    /* arraycopyLoop's rounds of 1000 appends, with its deletes (cut=false)
     * or with the builder cut to the same length by setLength, which copies
     * nothing (cut=true): n rounds, or until stop */
    static void arraycopyRounds(long n, boolean cut) {
        StringBuilder sb = new StringBuilder();
        String piece = "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        long acc = 0;
        for (long k = 0; k < n && !stop; k++) {
            for (int i = 0; i < 1000; i++) {
                sb.append(piece);
                if (sb.length() > 8192) {
                    if (cut)
                        sb.setLength(sb.length() - 4096);
                    else
                        sb.delete(0, 4096);
                }
            }
            acc += sb.length();
        }
        sink = acc;
    }

    /* arraycopyLoop without its deletes: every arraycopy stub sample is
     * append's (String.getBytes's copy of the piece) */
    static void arraycutLoop() { arraycopyRounds(Long.MAX_VALUE, true); }

    /* delete's share of arraycopyLoop: the loop timed (the thread's CPU
     * time: another process's turn on the CPU is not counted) with its
     * deletes and with a cut that copies nothing in their place, rounds
     * alternating, the lowest of each (the least disturbed); no clock read
     * inside the loop */
    static void timeArraycopy() {
        java.lang.management.ThreadMXBean mx =
                java.lang.management.ManagementFactory.getThreadMXBean();
        int n = 1000, m = 31;
        long del = Long.MAX_VALUE, cut = Long.MAX_VALUE;
        for (int w = 0; w < 5; w++) { /* compiled first */
            arraycopyRounds(n, false);
            arraycopyRounds(n, true);
        }
        for (int r = 0; r < m; r++) {
            long t0 = mx.getCurrentThreadCpuTime();
            arraycopyRounds(n, false);
            long t1 = mx.getCurrentThreadCpuTime();
            arraycopyRounds(n, true);
            long t2 = mx.getCurrentThreadCpuTime();
            del = Math.min(del, t1 - t0);
            cut = Math.min(cut, t2 - t1);
        }
        double d = del / (n * 1000.0), c = cut / (n * 1000.0);
        System.out.printf("arraycopy: %.2f ns an append with the deletes, %.2f with a cut that copies nothing: delete (its shift) is %.1f %% of the loop, %.0f ns a call%n",
                          d, c, 100 * (d - c) / d, (d - c) * 4096 / 72);
    }

    /* ---------- itable ---------- */
    interface Shape { long area(long x); }
    static final class Sq implements Shape { public long area(long x) { return x * x; } }
    static final class Re implements Shape { public long area(long x) { return x * 3; } }
    static final class Tr implements Shape { public long area(long x) { return x / 2; } }
    static final class Ci implements Shape { public long area(long x) { return x * 7 / 2; } }
    static final class Pe implements Shape { public long area(long x) { return x + 5; } }
    static final class He implements Shape { public long area(long x) { return x ^ 6; } }

    static void itableLoop() {
        Shape[] s = {new Sq(), new Re(), new Tr(), new Ci(), new Pe(), new He()};
        Shape[] arr = new Shape[1024];
        for (int i = 0; i < arr.length; i++)
            arr[i] = s[(i * 7 + i / 3) % s.length];
        long acc = 0;
        while (!stop)
            for (int i = 0; i < arr.length; i++)
                acc += arr[i].area(i);
        sink = acc;
    }

    /* ---------- vtable ---------- */
    static void vtableLoop() {
        Number[] s = {Integer.valueOf(3), Long.valueOf(5), Double.valueOf(2.5), Float.valueOf(1.5f),
                      Short.valueOf((short) 7), Byte.valueOf((byte) 9)};
        Number[] arr = new Number[1024];
        for (int i = 0; i < arr.length; i++)
            arr[i] = s[(i * 5 + i / 7) % s.length];
        long acc = 0;
        while (!stop)
            for (int i = 0; i < arr.length; i++)
                acc += arr[i].longValue();
        sink = acc;
    }

    /* ---------- intrinsics ---------- */
    static void intrinsicLoop() throws Exception {
        byte[] buf = new byte[16384];
        for (int i = 0; i < buf.length; i++)
            buf[i] = (byte) (i * 31);
        CRC32 crc = new CRC32();
        Adler32 adler = new Adler32();
        Base64.Encoder enc = Base64.getEncoder();
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] out = new byte[enc.encode(buf).length];
        long acc = 0;
        while (!stop) {
            crc.update(buf, 0, buf.length);
            adler.update(buf, 0, buf.length);
            acc += enc.encode(buf, out);
            md.update(buf);
            acc += md.digest()[0];
            acc += crc.getValue() + adler.getValue();
        }
        sink = acc;
    }

    /* ---------- currentTimeMillis ---------- */
    static void timeLoop() {
        long acc = 0;
        while (!stop)
            for (int i = 0; i < 1000; i++)
                acc += System.currentTimeMillis();
        sink = acc;
    }

    /* ---------- call sites (issue 32) ----------
     * A hot stub, intrinsic or VM call in a method of its own (inlined into
     * the loop), followed in the same compiled code by cheap calls of other
     * methods: an inlined one, a megamorphic interface call and a JNI native.
     * The hot method must get the loop's energy, the cheap ones next to
     * none of it (they cost well under 1 % of an iteration). */
    interface Poke { int poke(int x); }
    static final class P1 implements Poke { public int poke(int x) { return x + 1; } }
    static final class P2 implements Poke { public int poke(int x) { return x ^ 3; } }
    static final class P3 implements Poke { public int poke(int x) { return x * 5; } }
    static final Poke[] POKES = {new P1(), new P2(), new P3()};
    static final Object LOCK = new Object();

    static int copyTick(int x) { return x * 31 + 7; }
    static int crcTick(int x) { return x * 17 + 3; }
    static int clockTick(int x) { return x * 13 + 5; }

    /* the arraycopy stub, about 4 MiB a call (a length the JIT cannot
     * know: the copy is a small inline one or a call of the stub from an
     * out-of-line block, where the code laid out after the call is
     * another method's) */
    static void copyHot(byte[] src, byte[] dst, int x) {
        System.arraycopy(src, x & 7, dst, 0, src.length - 8);
    }
    /* the CRC32 intrinsic's stub, 4 MiB a call */
    static long crcHot(CRC32 crc, byte[] buf) { crc.update(buf, 0, buf.length); return crc.getValue(); }
    /* System.currentTimeMillis: a leaf call into the VM and the vDSO */
    static long clockHot() {
        long a = 0;
        for (int i = 0; i < 2000; i++)
            a += System.currentTimeMillis();
        return a;
    }

    static void copyLoop() {
        byte[] src = new byte[1 << 22], dst = new byte[1 << 22];
        int x = 0;
        while (!stop) {
            copyHot(src, dst, x);
            x = copyTick(x);
            x = POKES[(x >>> 3) % 3].poke(x);
            if (Thread.holdsLock(LOCK))
                x++;
        }
        sink = x + dst[7];
    }

    static void crcLoop() {
        byte[] buf = new byte[1 << 22];
        CRC32 crc = new CRC32();
        long acc = 0;
        int x = 0;
        while (!stop) {
            acc += crcHot(crc, buf);
            x = crcTick(x);
            x = POKES[(x >>> 3) % 3].poke(x);
            if (Thread.holdsLock(LOCK))
                x++;
        }
        sink = acc + x;
    }

    /* the loop of issue 32, as a user wrote it: StringBuilder.delete's
     * array copy is the work (the capacity never changes, so append copies
     * 5 bytes), Thread.isAlive and append cost next to nothing.  The
     * builder is filled by its caller: a million appends of one character
     * are append's own work (1-2 % of the thread where the JIT is slow to
     * compile them), not the loop's */
    static StringBuilder filled() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 1000000; i++)
            sb.append('x');
        return sb;
    }

    static void sbdeleteLoop(StringBuilder sb) {
        do {
            sb.append(12345);
            sb.delete(0, 5);
        } while (Thread.currentThread().isAlive() && !stop);
        sink = sb.length();
    }

    /* Jetty's ByteBufferPool$Bucket.resetUpdateTime (issue 32): the shape
     * that put the vDSO's time on the next call.  System.nanoTime is a
     * leaf call into the VM and the vDSO (an intrinsic: no frame of its
     * own) whose result an inlined AtomicLong.lazySet stores at once.  In
     * vstamp the AtomicLong is loaded before the call (a volatile field),
     * as Jetty's is: the call has a debug record at its return address,
     * and the next record is lazySet's, which ASGCT's own walk out of the
     * vDSO took.  In stamp (a constant, the "stamp" workload) the call has
     * no record of its own: the records around it are whatever the JIT
     * laid out there (async-profiler credits lazySet with all of it). */
    static final java.util.concurrent.atomic.AtomicLong LAST = new java.util.concurrent.atomic.AtomicLong();
    static volatile java.util.concurrent.atomic.AtomicLong vlast = new java.util.concurrent.atomic.AtomicLong();
    static void stamp() { LAST.lazySet(System.nanoTime()); }
    static void vstamp() { vlast.lazySet(System.nanoTime()); }
    static long nanoHot() {
        for (int i = 0; i < 2000; i++)
            vstamp();
        return vlast.get();
    }
    static long stampHot() {
        for (int i = 0; i < 2000; i++)
            stamp();
        return LAST.get();
    }

    static void nanoLoop() {
        long acc = 0;
        int x = 0;
        while (!stop) {
            acc += nanoHot();
            x = clockTick(x);
            x = POKES[(x >>> 3) % 3].poke(x);
        }
        sink = acc + x;
    }

    static void stampLoop() {
        long acc = 0;
        int x = 0;
        while (!stop) {
            acc += stampHot();
            x = clockTick(x);
            x = POKES[(x >>> 3) % 3].poke(x);
        }
        sink = acc + x;
    }

    /* A contended monitor (the synchronized blocks of Jetty's
     * EatWhatYouKill.doProduce): two threads take one lock by turns; the
     * slow paths run inside the VM (ObjectMonitor's spinning and its
     * hand-off), entered from lockHot through a runtime stub, whose frame
     * ASGCT will not walk out of (before the agent walked from the stub's
     * caller, 17-29 % of the loop's energy went to "[not Java]" or
     * "[not walkable Java]").  Alone, not in "all": with two threads on
     * two CPUs the lock is handed over while both run, and the slow paths
     * are where the time goes; among a dozen threads it is not. */
    static final Object MON = new Object();
    static long monCount;

    static void lockHot() {
        for (int i = 0; i < 1000; i++) {
            synchronized (MON) {
                monCount++;
            }
        }
    }

    static void monitorLoop() throws InterruptedException {
        Thread peer = new Thread(() -> {
            while (!stop)
                lockHot();
        }, "monitor-peer");
        peer.start();
        while (!stop)
            lockHot();
        peer.join();
    }

    static void clockLoop() {
        long acc = 0;
        int x = 0;
        while (!stop) {
            acc += clockHot();
            x = clockTick(x);
            x = POKES[(x >>> 3) % 3].poke(x);
            if (Thread.holdsLock(LOCK))
                x++;
        }
        sink = acc + x;
    }

    /* ---------- a load that misses (issue 32) ----------
     * Each iteration loads the next index of a random cycle through 64 MiB
     * (a miss in every cache and most TLBs: hundreds of ns), in missLoad,
     * then runs a few cheap instructions of missUse and of the loop.  The
     * same loop over an 8 KiB cycle, which stays in L1, costs a few ns: the
     * load is over 99 % of the time (time-miss prints both).  The sample
     * interrupts the instruction after the load, in another method's scope:
     * a profiler that credits the instruction at the interrupted PC puts the
     * load's time on missUse or the loop. */
    static long missLoad(long[] a, int j) { return a[j]; }
    static long missUse(long v, long acc) { return acc + (v ^ 0x55); }

    static long[] missCycle(int len) {
        long[] a = new long[len];
        for (int i = 0; i < len; i++)
            a[i] = i;
        long r = 7;
        for (int i = len - 1; i > 0; i--) { /* Sattolo: a single cycle */
            r = r * 6364136223846793005L + 1442695040888963407L;
            int k = (int) ((r >>> 33) % i);
            long x = a[i];
            a[i] = a[k];
            a[k] = x;
        }
        return a;
    }

    /* the chase: iterations until stop, or n */
    static long missLoop(long[] a, long n) {
        long acc = 0, done = 0;
        int j = 1;
        while (!stop && done < n) {
            for (int i = 0; i < 10000; i++) {
                long v = missLoad(a, j);
                acc = missUse(v, acc);
                j = (int) v;
            }
            done += 10000;
        }
        sink = acc;
        return done;
    }

    static void timeMiss() {
        long[] big = missCycle(1 << 23), small = missCycle(1 << 10);
        for (int w = 0; w < 3; w++) { /* compiled, then measured */
            long t0 = System.nanoTime();
            long nb = missLoop(big, 2_000_000);
            long t1 = System.nanoTime();
            long ns = missLoop(small, 200_000_000);
            long t2 = System.nanoTime();
            double b = (t1 - t0) / (double) nb, s = (t2 - t1) / (double) ns;
            System.out.printf("miss: %.2f ns an iteration over 64 MiB, %.2f over 8 KiB: the load's miss is %.1f %%%n",
                              b, s, 100 * (b - s) / b);
        }
    }

    /* stamp's known answer: the thread's CPU time of 200,000 calls of
     * stamp (nanoTime stored by lazySet) and of nanoTime alone added to a
     * field, the lowest of 60 rounds each, alternating: lazySet's share of
     * a stamp call */
    static long nanoSum;
    static void nanoBare() { nanoSum += System.nanoTime(); }
    static void timeStamp() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long[] best = {Long.MAX_VALUE, Long.MAX_VALUE};
        for (int r = 0; r <= 60; r++) {
            for (int k = 0; k < 2; k++) {
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < 200_000; i++) {
                    if (k == 0)
                        stamp();
                    else
                        nanoBare();
                }
                long t = mx.getCurrentThreadCpuTime() - t0;
                if (r > 0 && t < best[k]) /* round 0 compiles */
                    best[k] = t;
            }
        }
        System.out.printf("stamp: %.2f ns a call, nanoTime alone %.2f ns: lazySet %.1f %% of a call%n",
                          best[0] / 2e5, best[1] / 2e5, 100.0 * (best[0] - best[1]) / best[0]);
    }

    /* ---------- deep recursion ---------- */
    static long deepWork(int level, long x) {
        for (int i = 0; i < 2000; i++)
            x = x * 6364136223846793005L + level;
        if (level > 0)
            x += deepWork(level - 1, x);
        return x;
    }

    static void deepLoop() {
        long acc = 0;
        while (!stop)
            acc += deepWork(200, acc);
        sink = acc;
    }

    static void run(String w) throws Exception {
        switch (w) {
        case "arraycopy": arraycopyLoop(); break;
        case "itable": itableLoop(); break;
        case "vtable": vtableLoop(); break;
        case "intrinsic": intrinsicLoop(); break;
        case "time": timeLoop(); break;
        case "deep": deepLoop(); break;
        case "copy": copyLoop(); break;
        case "crc": crcLoop(); break;
        case "clock": clockLoop(); break;
        case "nano": nanoLoop(); break;
        case "stamp": stampLoop(); break;
        case "monitor": monitorLoop(); break;
        case "sbdelete": sbdeleteLoop(filled()); break;
        case "arraycut": arraycutLoop(); break;
        case "miss": missLoop(missCycle(1 << 23), Long.MAX_VALUE); break;
        default: throw new IllegalArgumentException("unknown workload " + w);
        }
    }

    public static void main(String[] args) throws Exception {
        String w = args[0];
        if (w.equals("time-miss") || w.equals("time-arraycopy") || w.equals("time-stamp")) {
            if (w.equals("time-miss"))
                timeMiss();
            else if (w.equals("time-stamp"))
                timeStamp();
            else
                timeArraycopy();
            return;
        }
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3;
        String[] ws = w.equals("all")
                ? new String[] {"arraycopy", "itable", "vtable", "intrinsic", "time", "deep",
                                "copy", "crc", "clock", "nano", "sbdelete"}
                : new String[] {w};
        Throwable[] err = new Throwable[1];
        Thread[] ts = new Thread[ws.length];
        for (int i = 0; i < ws.length; i++) {
            String name = ws[i];
            ts[i] = new Thread(() -> {
                try {
                    run(name);
                } catch (Throwable e) {
                    err[0] = e;
                }
            }, name);
            ts[i].start();
        }
        double cpuSeconds = args.length > 2 ? Double.parseDouble(args[2]) : 0;
        java.lang.management.ThreadMXBean mx =
                java.lang.management.ManagementFactory.getThreadMXBean();
        long start = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        for (boolean short_ = true; short_ && System.nanoTime() - start < 120_000_000_000L;) {
            short_ = false;
            for (Thread t : ts)
                if (mx.getThreadCpuTime(t.getId()) < (long) (cpuSeconds * 1e9))
                    short_ = true;
            if (short_)
                Thread.sleep(100);
        }
        stop = true;
        for (Thread t : ts)
            t.join();
        if (err[0] != null)
            throw new RuntimeException(err[0]);
        System.out.println("done " + w);
    }
}
