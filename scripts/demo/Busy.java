import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The workload of run.sh's jalen demo: three kinds of work in fixed
 * amounts (no clock read, no CPU-time query: nothing of the demo's own
 * measuring lands among its methods): sorting, counting primes and
 * hashing, in about that order of energy.
 *
 * Usage: java Busy [ROUNDS]   (about 0.3 s of CPU per round)
 */
public class Busy {
    static volatile long sink;

    /* Counts the primes below n by trial division. */
    static int countPrimes(int n) {
        int count = 0;
        for (int i = 2; i < n; i++) {
            boolean prime = true;
            for (int d = 2; (long) d * d <= i; d++)
                if (i % d == 0) {
                    prime = false;
                    break;
                }
            if (prime)
                count++;
        }
        return count;
    }

    /* Sorts arrays of pseudo-random doubles (xorshift: java.util.Random's
     * atomic seed would put its compareAndSet among the hot methods). */
    static double sortArrays(long seed, int arrays, int size) {
        double s = 0;
        long x = seed;
        for (int k = 0; k < arrays; k++) {
            double[] a = new double[size];
            for (int i = 0; i < size; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                a[i] = (x >>> 11) * 0x1.0p-53;
            }
            Arrays.sort(a);
            s += a[size / 2];
        }
        return s;
    }

    /* SHA-256 of a buffer, over and over. */
    static byte hashBlocks(MessageDigest md, byte[] buf, int times) {
        byte b = 0;
        for (int k = 0; k < times; k++) {
            buf[k % buf.length] ^= b;
            b ^= md.digest(buf)[0];
        }
        return b;
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[64 * 1024];
        long s = 0;
        for (int r = 0; r < rounds; r++) {
            s += countPrimes(300_000);
            s += (long) sortArrays(r + 1, 12, 50_000);
            s += hashBlocks(md, buf, 150);
        }
        sink = s;
    }
}
