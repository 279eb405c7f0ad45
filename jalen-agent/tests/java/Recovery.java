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
 *   sbdelete   Recovery.sbdeleteLoop    StringBuilder.delete (its arraycopy),
 *                                       then Thread.isAlive and append
 *
 * In copy, crc and clock the hot method is followed, in the same compiled
 * loop, by an inlined method (copyTick, crcTick, clockTick), an interface
 * call (P1/P2/P3.poke) and a JNI native (Thread.holdsLock) that cost next
 * to nothing: a sample recovered from the hot call belongs to the hot
 * method, never to what runs after it.
 *
 * Usage: java Recovery WORKLOAD [SECONDS [CPU_SECONDS]]  (prints "done")
 * WORKLOAD "all" runs the ten at once, one thread each.  With CPU_SECONDS
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
     * 5 bytes), Thread.isAlive and append cost next to nothing */
    static void sbdeleteLoop() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 1000000; i++)
            sb.append('x');
        do {
            sb.append(12345);
            sb.delete(0, 5);
        } while (Thread.currentThread().isAlive() && !stop);
        sink = sb.length();
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
        case "sbdelete": sbdeleteLoop(); break;
        default: throw new IllegalArgumentException("unknown workload " + w);
        }
    }

    public static void main(String[] args) throws Exception {
        String w = args[0];
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3;
        String[] ws = w.equals("all")
                ? new String[] {"arraycopy", "itable", "vtable", "intrinsic", "time", "deep",
                                "copy", "crc", "clock", "sbdelete"}
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
