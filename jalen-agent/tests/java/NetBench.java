import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * bench_jalen.sh: the CPU time of one small socket write (100 bytes over
 * loopback), so that the cost of the agent's socket wrappers shows apart
 * from the noise of a server benchmark.  Usage: java NetBench WRITES
 */
public class NetBench {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        ServerSocketChannel ss = ServerSocketChannel.open();
        ss.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        SocketChannel c = SocketChannel.open(ss.getLocalAddress());
        SocketChannel s = ss.accept();
        long total = (long) (n + n / 4) * 100;
        Thread r = new Thread(() -> {
            try {
                ByteBuffer b = ByteBuffer.allocateDirect(65536);
                long got = 0;
                while (got < total) {
                    b.clear();
                    got += s.read(b);
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "reader");
        r.start();
        ByteBuffer w = ByteBuffer.allocateDirect(100);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < n / 4; i++) {
            w.clear();
            c.write(w);
        }
        long t0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            w.clear();
            c.write(w);
        }
        long t1 = mx.getCurrentThreadCpuTime();
        r.join();
        System.out.printf("%.1f%n", (t1 - t0) / (double) n);
    }
}
