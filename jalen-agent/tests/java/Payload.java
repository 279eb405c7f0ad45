/** Loaded by Hostile in throw-away class loaders, then unloaded. */
public class Payload implements Runnable {
    static volatile double sink;

    public void run() {
        double x = 1;
        for (int i = 0; i < 200000; i++)
            x = x * 1.0000001 + i;
        sink = x;
    }
}
