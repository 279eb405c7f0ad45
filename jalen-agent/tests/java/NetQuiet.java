import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Known-answer workload for methods that move bytes but use next to no CPU
 * (issue 15, item 3): with filter= set they must still appear in
 * methods-filtered.csv, with the bytes they have in methods.csv.
 *
 * Thread "quiet-sender", 50 rounds: quietA writes 4 x 8000 bytes and
 * quietB 1 x 8000 bytes to a loopback socket, then the thread sleeps 2 ms.
 * quietA moves 1,600,000 bytes, quietB 400,000 (ratio 4), each in a few
 * milliseconds of CPU time in all, so that neither needs a CPU sample.
 * Writes of 4 KiB or more are each walked by the agent (net.c), so the
 * bytes per method are exact.  Thread "quiet-receiver" reads the
 * 2,000,000 bytes in drainQuiet.
 *
 * Usage: java NetQuiet
 */
public class NetQuiet {
    static void quietA(OutputStream out, byte[] buf) throws Exception {
        for (int i = 0; i < 4; i++)
            out.write(buf, 0, 8000);
    }

    static void quietB(OutputStream out, byte[] buf) throws Exception {
        out.write(buf, 0, 8000);
    }

    static long drainQuiet(InputStream in, long want) throws Exception {
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

    public static void main(String[] args) throws Exception {
        ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread recv = new Thread(() -> {
            try (Socket s = ss.accept(); InputStream in = s.getInputStream()) {
                System.out.println("received " + drainQuiet(in, 2_000_000L));
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "quiet-receiver");
        recv.start();
        Thread send = new Thread(() -> {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
                 OutputStream out = s.getOutputStream()) {
                byte[] buf = new byte[8000];
                for (int r = 0; r < 50; r++) {
                    quietA(out, buf);
                    quietB(out, buf);
                    Thread.sleep(2);
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, "quiet-sender");
        send.start();
        send.join();
        recv.join();
        ss.close();
    }
}
