import io.opentelemetry.api.trace.Span;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.EnumSet;
import javax.servlet.DispatcherType;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.powerapi.jalen.servlet.EnergyFilter;

/**
 * Embedded Jetty 9 with jalen's EnergyFilter (test_jalen_jetty.c): /a
 * spins 3 ms of the thread's CPU time, /b 1 ms, /z nothing (what any
 * request costs inside the filter), /c/{id} writes 100,000 bytes, /otel answers how many requests set jalen.energy_j on the
 * (stand-in) OpenTelemetry span. Usage: ScopeServer PORT LOGFILE
 * [nofilter]; prints "READY port".
 */
public class ScopeServer {
    static final ThreadMXBean TMX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static class Spin extends HttpServlet {
        private final long ns;

        Spin(long ns) {
            this.ns = ns;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            long end = TMX.getCurrentThreadCpuTime() + ns, x = 1;
            while (TMX.getCurrentThreadCpuTime() < end)
                for (int i = 0; i < 200; i++)
                    x = x * 31 + i;
            sink += x;
            resp.setContentType("text/plain");
            resp.getWriter().write("ok\n");
        }
    }

    static class Big extends HttpServlet {
        private static final byte[] BODY = new byte[100_000];

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("application/octet-stream");
            resp.getOutputStream().write(BODY);
        }
    }

    static class Otel extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("text/plain");
            resp.getWriter().write("otel " + Span.ENERGY_SET.get() + "\n");
        }
    }

    public static void main(String[] args) throws Exception {
        Server server = new Server();
        ServerConnector c = new ServerConnector(server);
        c.setHost("127.0.0.1");
        c.setPort(Integer.parseInt(args[0]));
        server.addConnector(c);
        ServletContextHandler ctx = new ServletContextHandler();
        ctx.addServlet(new ServletHolder(new Spin(3_000_000L)), "/a");
        ctx.addServlet(new ServletHolder(new Spin(1_000_000L)), "/b");
        ctx.addServlet(new ServletHolder(new Spin(0)), "/z"); /* a request's own cost */
        ctx.addServlet(new ServletHolder(new Big()), "/c/*");
        ctx.addServlet(new ServletHolder(new Otel()), "/otel");
        FilterHolder f = new FilterHolder(new EnergyFilter());
        f.setInitParameter("routes", "/c/{id}");
        f.setInitParameter("server-timing", "true");
        f.setInitParameter("log", args[1]);
        if (args.length < 3 || !args[2].equals("nofilter")) /* the benchmark's baseline */
            ctx.addFilter(f, "/*", EnumSet.of(DispatcherType.REQUEST));
        server.setHandler(ctx);
        server.setStopAtShutdown(true);
        server.start();
        System.out.println("READY " + c.getLocalPort());
        System.out.flush();
        server.join();
    }
}
