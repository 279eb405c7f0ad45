package org.powerapi.jalen.servlet;

import java.io.IOException;
import java.util.HashSet;
import java.util.Set;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.FilterConfig;
import javax.servlet.ServletContext;
import javax.servlet.ServletException;
import javax.servlet.ServletRegistration;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.powerapi.jalen.Scope;
import org.powerapi.jalen.http.RequestEnergy;

/**
 * One jalen scope per HTTP request, named "METHOD ROUTE": the first of
 * the init parameter {@code routes} (path templates, "/users/{id}") that
 * matches the path within the application, else the servlet mapping that
 * served it ("/api/*", "*.jsp", "/"), else "[unmapped]": never the raw
 * path. The response's output is closed inside the scope (except where a
 * Server-Timing header is still to be set); a container may still send a
 * small response after the filter returns (Jetty 9 does: those few bytes
 * are then no request's). Init
 * parameters: {@code server-timing} (true: a Server-Timing header with
 * the request's CPU time and estimated energy, on responses not yet
 * committed when the application returns), {@code log} (a file:
 * one JSON line per request with the W3C traceparent's ids),
 * {@code otel} (default true: the figures as attributes of the current
 * OpenTelemetry span, when its API is on the class path). Without the
 * jalen agent it passes requests through.
 */
public class EnergyFilter implements Filter {
    private RequestEnergy rec;
    private ServletContext ctx;
    private volatile boolean noMapping; /* the container has no getHttpServletMapping */
    private volatile Set<String> mappings; /* every servlet's url patterns */

    @Override
    public void init(FilterConfig cfg) throws ServletException {
        ctx = cfg.getServletContext();
        String otel = cfg.getInitParameter("otel");
        try {
            rec = new RequestEnergy(cfg.getInitParameter("routes"),
                                    "true".equals(cfg.getInitParameter("server-timing")),
                                    cfg.getInitParameter("log"), !"false".equals(otel),
                                    Thread.currentThread().getContextClassLoader());
        } catch (IOException e) {
            throw new ServletException("jalen EnergyFilter: log: " + e.getMessage(), e);
        }
    }

    /* The servlet mapping that served r, or null. */
    private String mapping(HttpServletRequest r) {
        if (!noMapping) {
            try {
                String p = r.getHttpServletMapping().getPattern();
                if (p != null && !p.isEmpty())
                    return p;
            } catch (LinkageError | UnsupportedOperationException e) {
                noMapping = true; /* a Servlet 3 container */
            }
        }
        Set<String> m = mappings;
        if (m == null) /* at the first request: the servlets are all registered */
            mappings = m = registered();
        String sp = r.getServletPath();
        String want = r.getPathInfo() == null ? sp : sp + "/*";
        if (m.contains(want))
            return want;
        int dot = sp.lastIndexOf('.');
        if (dot > sp.lastIndexOf('/') && m.contains("*" + sp.substring(dot)))
            return "*" + sp.substring(dot);
        return m.contains("/") ? "/" : null;
    }

    private Set<String> registered() {
        Set<String> m = new HashSet<String>();
        for (ServletRegistration reg : ctx.getServletRegistrations().values())
            m.addAll(reg.getMappings());
        return m;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
        throws IOException, ServletException {
        if (!Scope.active() || !(req instanceof HttpServletRequest)
            || !(resp instanceof HttpServletResponse)) {
            chain.doFilter(req, resp);
            return;
        }
        HttpServletRequest hr = (HttpServletRequest) req;
        HttpServletResponse hs = (HttpServletResponse) resp;
        String path = hr.getRequestURI().substring(hr.getContextPath().length());
        String route = rec.template(path);
        if (route == null)
            route = mapping(hr);
        route = hr.getMethod() + " " + (route == null ? "[unmapped]" : route);
        String[] trace = RequestEnergy.traceParent(hr.getHeader("traceparent"));
        Scope s = Scope.enter(route);
        boolean ok = false, timing = false;
        try {
            chain.doFilter(req, resp);
            ok = true;
            timing = rec.serverTimingOn() && !hs.isCommitted();
            if (!timing)
                finish(hs);
        } finally {
            /* whatever happened: the scope closed, one log line a call (an
             * exception's status is the 500 the container will send) */
            s.close();
            if (timing)
                hs.setHeader("Server-Timing", rec.serverTiming(s));
            rec.end(s, route, ok ? hs.getStatus() : 500, trace);
        }
    }

    /* Completes the response (its last buffer, the last chunk) so that its
     * bytes are sent inside the scope: the container would do it right
     * after the filter returns, on this thread. */
    private static void finish(HttpServletResponse hs) throws IOException {
        try {
            hs.getOutputStream().close();
        } catch (IllegalStateException e) { /* the application used the writer */
            hs.getWriter().close();
        }
    }

    @Override
    public void destroy() {
        try {
            rec.close();
        } catch (IOException e) {
            /* nothing left to do */
        }
    }
}
