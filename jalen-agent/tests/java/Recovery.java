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
 *
 * Usage: java Recovery WORKLOAD [SECONDS]   (prints "done WORKLOAD")
 * WORKLOAD "all" runs the six at once, one thread each.
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
        default: throw new IllegalArgumentException("unknown workload " + w);
        }
    }

    public static void main(String[] args) throws Exception {
        String w = args[0];
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3;
        String[] ws = w.equals("all")
                ? new String[] {"arraycopy", "itable", "vtable", "intrinsic", "time", "deep"}
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
        Thread.sleep((long) (seconds * 1000));
        stop = true;
        for (Thread t : ts)
            t.join();
        if (err[0] != null)
            throw new RuntimeException(err[0]);
        System.out.println("done " + w);
    }
}
