import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Known-answer workload for the jalen agent tests.
 *
 * Thread "burner": in each second of its own CPU time, burnA uses 600 ms,
 * burnB 300 ms and burnC 100 ms, so their inclusive shares of the thread's
 * energy are 60/30/10 %.  Phases are long against the sampling interval,
 * so sampling error is at the phase boundaries only (a sample or so).
 * Threads "duty-high" and "duty-low": burn 30 ms and 10 ms of CPU per
 * 100 ms period (then sleep), the same number of periods, so their
 * energies are in the ratio 3 however loaded the machine is.
 * Thread "net-sender": sendA writes 3,000,000 bytes and sendB 1,000,000
 * bytes over a loopback socket; "net-receiver" reads the 4,000,000 bytes in
 * receiveAll.
 * Thread "udp-sender": sendUdp sends 500 datagrams of 1000 bytes unconnected
 * (DatagramChannelImpl.send0) and writeUdp 500 more on a connected channel
 * (DatagramDispatcher.write0); "udp-receiver" counts what arrives in
 * receiveUdp (loopback may drop datagrams: not a known answer).
 * Thread "main", at the end: 20 times, reuseSocket writes 1000 bytes on a
 * loopback SocketChannel and reads them on the peer (2000 bytes), closes
 * both, then reuseFile writes 100,000 bytes to a file through a
 * FileChannel that gets the socket's fd number again (the same native,
 * FileDispatcherImpl.write0 on JDK 17): 40,000 network bytes, and none for
 * reuseFile.
 *
 * Usage: java Known CYCLES   (CYCLES seconds of the burner's CPU time)
 */
public class Known {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile double sink;
    static volatile boolean stop;

    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    /* Spins until the thread used ns more nanoseconds of CPU time. */
    static void spin(long ns) {
        long end = cpu() + ns;
        double x = sink;
        while (true) {
            for (int i = 0; i < 2000; i++)
                x = x * 1.0000001 + 0.5;
            if (cpu() >= end)
                break;
        }
        sink = x;
    }

    static void burnA() { spin(600_000_000L); }
    static void burnB() { spin(300_000_000L); }
    static void burnC() { spin(100_000_000L); }

    static void burner(int cycles) {
        for (int c = 0; c < cycles; c++) {
            burnA();
            burnB();
            burnC();
        }
    }

    static void duty(long burnNs, int periods) throws InterruptedException {
        for (int p = 0; p < periods; p++) {
            long t0 = System.nanoTime();
            spin(burnNs);
            long left = 100_000_000L - (System.nanoTime() - t0);
            if (left > 0)
                Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
        }
    }

    static void writeN(OutputStream out, byte[] buf, long n) throws Exception {
        while (n > 0) {
            int k = (int) Math.min(buf.length, n);
            out.write(buf, 0, k);
            n -= k;
        }
        out.flush();
    }

    static void sendA(OutputStream out, byte[] buf) throws Exception { writeN(out, buf, 3_000_000L); }
    static void sendB(OutputStream out, byte[] buf) throws Exception { writeN(out, buf, 1_000_000L); }

    static long receiveAll(InputStream in, long want) throws Exception {
        byte[] buf = new byte[65536];
        long got = 0;
        while (got < want) {
            int k = in.read(buf);
            if (k < 0)
                break;
            got += k;
        }
        return got;
    }

    static void sendUdp(DatagramChannel c, SocketAddress to) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(1000);
        for (int i = 0; i < 500; i++) {
            b.clear();
            c.send(b, to);
            Thread.sleep(0, 200_000);
        }
    }

    static void writeUdp(DatagramChannel c) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(1000);
        for (int i = 0; i < 500; i++) {
            b.clear();
            c.write(b);
            Thread.sleep(0, 200_000);
        }
    }

    /* set once udp-sender has sent everything: loopback queues a datagram
     * before send returns, so the receiver then stops at its first empty
     * receive, and main closes the channel after it (main used to close
     * it under a receiver still running once a 5 s join timed out, a
     * race under load: datagrams dropped, the receiver waiting for them) */
    static volatile boolean udpSent;

    static long receiveUdp(DatagramChannel r, long want, long deadlineNs) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(2000);
        long got = 0;
        r.configureBlocking(false);
        while (got < want && System.nanoTime() < deadlineNs) {
            b.clear();
            boolean sent = udpSent;
            if (r.receive(b) != null)
                got += b.position();
            else if (sent)
                break;
            else
                Thread.sleep(1);
        }
        return got;
    }

    static void reuseSocket(ServerSocketChannel srv, ByteBuffer out, ByteBuffer in) throws Exception {
        SocketChannel c = SocketChannel.open(srv.getLocalAddress());
        SocketChannel p = srv.accept();
        out.clear();
        while (out.hasRemaining())
            c.write(out);
        in.clear();
        while (in.hasRemaining())
            if (p.read(in) < 0)
                throw new IllegalStateException("peer closed");
        p.close();
        c.close();
    }

    static void reuseFile(Path f, ByteBuffer buf) throws Exception {
        try (FileChannel fc = FileChannel.open(f, StandardOpenOption.WRITE,
                                               StandardOpenOption.TRUNCATE_EXISTING)) {
            for (int i = 0; i < 10; i++) {
                buf.clear();
                while (buf.hasRemaining())
                    fc.write(buf);
            }
        }
    }

    static void fdReuse() throws Exception {
        Path f = Files.createTempFile("jalen-known", ".bin");
        try (ServerSocketChannel srv = ServerSocketChannel.open()) {
            srv.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            ByteBuffer out = ByteBuffer.allocateDirect(1000), in = ByteBuffer.allocateDirect(1000);
            ByteBuffer fb = ByteBuffer.allocateDirect(10_000);
            for (int i = 0; i < 20; i++) {
                reuseSocket(srv, out, in);
                reuseFile(f, fb);
            }
        } finally {
            Files.deleteIfExists(f);
        }
    }

    public static void main(String[] args) throws Exception {
        int cycles = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int periods = cycles * 10;
        ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread recv = new Thread(() -> {
            try (Socket s = ss.accept(); InputStream in = s.getInputStream()) {
                long got = receiveAll(in, 4_000_000L);
                System.out.println("received " + got);
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "net-receiver");
        recv.start();
        Thread send = new Thread(() -> {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
                 OutputStream out = s.getOutputStream()) {
                byte[] buf = new byte[65536];
                sendA(out, buf);
                sendB(out, buf);
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "net-sender");
        send.start();
        DatagramChannel ur = DatagramChannel.open();
        ur.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread urecv = new Thread(() -> {
            try {
                long got = receiveUdp(ur, 1_000_000L, System.nanoTime() + 30_000_000_000L);
                System.out.println("udp received " + got);
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "udp-receiver");
        urecv.start();
        Thread usend = new Thread(() -> {
            try (DatagramChannel s1 = DatagramChannel.open();
                 DatagramChannel s2 = DatagramChannel.open()) {
                s2.connect(ur.getLocalAddress());
                sendUdp(s1, ur.getLocalAddress());
                writeUdp(s2);
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "udp-sender");
        usend.start();
        Thread b = new Thread(() -> burner(cycles), "burner");
        Thread hi = new Thread(() -> { try { duty(30_000_000L, periods); } catch (InterruptedException e) { } }, "duty-high");
        Thread lo = new Thread(() -> { try { duty(10_000_000L, periods); } catch (InterruptedException e) { } }, "duty-low");
        b.start();
        hi.start();
        lo.start();
        b.join();
        hi.join();
        lo.join();
        send.join();
        recv.join();
        usend.join();
        udpSent = true;
        urecv.join();
        ur.close();
        ss.close();
        fdReuse();
        System.out.println("done");
    }
}
