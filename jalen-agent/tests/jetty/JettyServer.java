import java.io.IOException;
import javax.servlet.ServletException;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.AbstractHandler;

/**
 * Embedded Jetty 9 (Debian's libjetty9-java) for the jalen Jetty test and
 * benchmark.  Each request computes a small checksum and answers ~1 KiB.
 * Usage: java -cp ... JettyServer PORT ; prints "READY port" when serving.
 */
public class JettyServer {
    public static class EnergyHandler extends AbstractHandler {
        private static final byte[] BODY = new byte[1024];
        static {
            for (int i = 0; i < BODY.length; i++)
                BODY[i] = (byte) ('a' + i % 26);
        }

        static long checksum(String s, int rounds) {
            long h = 1125899906842597L;
            for (int r = 0; r < rounds; r++)
                for (int i = 0; i < s.length(); i++)
                    h = 31 * h + s.charAt(i) + r;
            return h;
        }

        @Override
        public void handle(String target, Request base, HttpServletRequest req,
                           HttpServletResponse resp) throws IOException, ServletException {
            long h = checksum(target, 200);
            resp.setContentType("text/plain");
            resp.setStatus(200);
            resp.setHeader("X-Sum", Long.toString(h));
            resp.getOutputStream().write(BODY);
            base.setHandled(true);
        }
    }

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 8080;
        Server server = new Server();
        ServerConnector c = new ServerConnector(server);
        c.setHost("127.0.0.1");
        c.setPort(port);
        server.addConnector(c);
        server.setHandler(new EnergyHandler());
        server.setStopAtShutdown(true);
        server.start();
        System.out.println("READY " + c.getLocalPort());
        System.out.flush();
        server.join();
    }
}
