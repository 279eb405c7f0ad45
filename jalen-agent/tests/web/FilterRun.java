import java.io.ByteArrayOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.servlet.FilterChain;
import javax.servlet.FilterConfig;
import javax.servlet.ServletContext;
import javax.servlet.ServletOutputStream;
import javax.servlet.WriteListener;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.powerapi.jalen.Scope;
import org.powerapi.jalen.servlet.EnergyFilter;

/**
 * One request through jalen's servlet filter without a container, under
 * the agent (test_jalen_jetty): the request's scope open in the chain and
 * named by its route template, the Server-Timing header set, the body
 * passed on, the traceparent's ids in the per-request log. The build makes
 * the jakarta.servlet twin of this file (JakartaFilterRun, with the
 * jakarta filter), as it makes the filter's, so that both filters run.
 * Usage: FilterRun LOGFILE; prints "FILTER OK".
 */
public class FilterRun {
    static void check(boolean ok, String what) {
        if (!ok)
            throw new AssertionError(what);
    }

    /* A stand-in of an interface: answers from a map of method names. */
    @SuppressWarnings("unchecked")
    static <T> T stand(Class<T> type, final Map<String, Object> answers) {
        InvocationHandler h = (proxy, m, args) -> {
            Object a = answers.get(m.getName());
            if (a instanceof InvocationHandler)
                return ((InvocationHandler) a).invoke(proxy, m, args);
            if (a == null && m.getReturnType() == boolean.class)
                return false;
            if (a == null && m.getReturnType() == int.class)
                return 0;
            return a;
        };
        return (T) Proxy.newProxyInstance(FilterRun.class.getClassLoader(), new Class<?>[] {type},
                                          h);
    }

    public static void main(String[] args) throws Exception {
        check(Scope.active(), "run with the jalen agent");
        final String log = args[0];
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        final Map<String, String> headers = new HashMap<String, String>();
        final ServletOutputStream out = new ServletOutputStream() {
            @Override
            public void write(int b) {
                body.write(b);
            }

            @Override
            public boolean isReady() {
                return true;
            }

            @Override
            public void setWriteListener(WriteListener l) {
            }
        };
        final PrintWriter writer =
            new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), true);
        Map<String, Object> ctx = new HashMap<String, Object>();
        ctx.put("getServletRegistrations", Collections.emptyMap());
        Map<String, Object> cfg = new HashMap<String, Object>();
        cfg.put("getServletContext", stand(ServletContext.class, ctx));
        cfg.put("getInitParameter", (InvocationHandler) (p, m, a) -> {
            String k = (String) a[0];
            return k.equals("server-timing") ? "true"
                : k.equals("log")           ? log
                : k.equals("routes")        ? "/orders/{id}"
                                            : null;
        });
        Map<String, Object> rq = new HashMap<String, Object>();
        rq.put("getMethod", "GET");
        rq.put("getRequestURI", "/shop/orders/7");
        rq.put("getContextPath", "/shop");
        rq.put("getServletPath", "/orders");
        rq.put("getPathInfo", "/7");
        rq.put("getHeader", (InvocationHandler) (p, m, a) -> "traceparent".equals(a[0])
                                ? "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                                : null);
        Map<String, Object> rs = new HashMap<String, Object>();
        rs.put("getOutputStream", out);
        rs.put("getWriter", writer);
        rs.put("getStatus", 200);
        rs.put("getCharacterEncoding", "UTF-8");
        InvocationHandler put = (p, m, a) -> headers.put((String) a[0], (String) a[1]);
        rs.put("setHeader", put);
        rs.put("addHeader", put);
        HttpServletRequest req = stand(HttpServletRequest.class, rq);
        HttpServletResponse resp = stand(HttpServletResponse.class, rs);
        FilterChain chain = (q, r) -> {
            check(Scope.current() != null && Scope.current().name().equals("GET /orders/{id}"),
                  "the request's scope is open in the chain: " + Scope.current());
            long end = System.nanoTime() + 2000000;
            double x = 0;
            while (System.nanoTime() < end)
                x += Math.sqrt(end + x);
            r.getWriter().write(x > 0 ? "hello" : "?");
            r.getWriter().flush();
        };
        EnergyFilter f = new EnergyFilter();
        f.init(stand(FilterConfig.class, cfg));
        f.doFilter(req, resp, chain);
        f.destroy();
        check(body.toString("UTF-8").equals("hello"), "the body passed on: " + body);
        String st = headers.get("Server-Timing");
        check(st != null && st.contains("dur="), "Server-Timing: " + st);
        List<String> lines = Files.readAllLines(Paths.get(log));
        check(lines.size() == 1, "one log line: " + lines);
        String l = lines.get(0);
        check(l.contains("GET /orders/{id}") && l.contains("4bf92f3577b34da6a3ce929d0e0e4736")
                  && l.contains("00f067aa0ba902b7"),
              "the log line: " + l);
        System.out.println("SERVER-TIMING " + st);
        System.out.println("FILTER OK");
    }
}
