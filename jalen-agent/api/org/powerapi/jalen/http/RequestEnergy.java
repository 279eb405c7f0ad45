package org.powerapi.jalen.http;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.powerapi.jalen.Scope;

/**
 * What the servlet filters (org.powerapi.jalen.servlet.EnergyFilter, and
 * its jakarta.servlet twin) do that does not depend on a servlet API:
 * route names from path templates, W3C trace context, the Server-Timing
 * value, the per-request JSON lines and OpenTelemetry span attributes
 * (by reflection: no dependency).
 */
public final class RequestEnergy {
    private final List<String[]> templates = new ArrayList<String[]>();
    private final List<String> names = new ArrayList<String>();
    private final boolean serverTiming;
    private final Writer log;
    private final Method spanCurrent, spanSetDouble, spanSetLong, spanSetString;

    /**
     * @param routes path templates, comma-separated ("/users/{id},/files/**"):
     *     a {name} segment matches one segment, a last "**" the rest; null
     *     or empty: none; "**" also matches no segment
     * @param serverTiming add a Server-Timing header
     * @param logFile a file to append one JSON line per request to, or null
     * @param otel set the request's figures on the current OpenTelemetry
     *     span when the OpenTelemetry API is on loader's class path
     */
    public RequestEnergy(String routes, boolean serverTiming, String logFile, boolean otel,
                         ClassLoader loader) throws IOException {
        if (routes != null)
            for (String t : routes.split(",")) {
                t = t.trim();
                if (t.isEmpty())
                    continue;
                templates.add(segments(t));
                names.add(t);
            }
        this.serverTiming = serverTiming;
        this.log = logFile == null || logFile.isEmpty() ? null
            : new OutputStreamWriter(new FileOutputStream(logFile, true), StandardCharsets.UTF_8);
        Method cur = null, sd = null, sl = null, ss = null;
        if (otel) {
            try {
                Class<?> span = Class.forName("io.opentelemetry.api.trace.Span", true, loader);
                cur = span.getMethod("current");
                sd = span.getMethod("setAttribute", String.class, double.class);
                sl = span.getMethod("setAttribute", String.class, long.class);
                ss = span.getMethod("setAttribute", String.class, String.class);
            } catch (ReflectiveOperationException | LinkageError e) {
                cur = null; /* no OpenTelemetry API: nothing to set */
            }
        }
        spanCurrent = cur;
        spanSetDouble = sd;
        spanSetLong = sl;
        spanSetString = ss;
    }

    private static String[] segments(String path) {
        String p = path.startsWith("/") ? path.substring(1) : path;
        return p.isEmpty() ? new String[0] : p.split("/", -1);
    }

    /** The template path matches, or null. */
    public String template(String path) {
        String[] seg = segments(path == null ? "" : path);
        for (int t = 0; t < templates.size(); t++) {
            String[] tp = templates.get(t);
            int i = 0;
            boolean ok = true;
            for (; i < tp.length && ok; i++) {
                if (tp[i].equals("**") && i == tp.length - 1)
                    return names.get(t);
                ok = i < seg.length
                     && (tp[i].equals(seg[i]) || (tp[i].startsWith("{") && tp[i].endsWith("}")));
            }
            if (ok && i == seg.length)
                return names.get(t);
        }
        return null;
    }

    /**
     * The trace and parent ids of a W3C traceparent header, or null when it
     * is absent or malformed: version 00 only, 55 characters, lowercase
     * hex, ids not all zeros.
     */
    public static String[] traceParent(String h) {
        if (h == null)
            return null;
        h = h.trim();
        if (h.length() != 55 || h.charAt(2) != '-' || h.charAt(35) != '-' || h.charAt(52) != '-'
            || !h.startsWith("00"))
            return null;
        for (int i = 0; i < 55; i++) {
            char c = h.charAt(i);
            if (i != 2 && i != 35 && i != 52 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                return null;
        }
        String trace = h.substring(3, 35), span = h.substring(36, 52);
        if (trace.matches("0+") || span.matches("0+"))
            return null;
        return new String[] {trace, span};
    }

    /** Whether a Server-Timing header is asked for. */
    public boolean serverTimingOn() {
        return serverTiming;
    }

    /** The Server-Timing value of a closed scope, or null when not asked for. */
    public String serverTiming(Scope s) {
        if (!serverTiming)
            return null;
        StringBuilder b = new StringBuilder(64).append("cpu;dur=");
        fixed(b, s.cpuTimeSeconds() * 1e3, 3).append(", energy;desc=\"");
        return fixed(b, s.estimatedEnergyJoules(), 6).append(" J (estimate)\"").toString();
    }

    /* v >= 0 with dec decimals (String.format costs microseconds a call) */
    static StringBuilder fixed(StringBuilder b, double v, int dec) {
        long scale = 1;
        for (int i = 0; i < dec; i++)
            scale *= 10;
        if (!(v >= 0) || v * scale >= Long.MAX_VALUE)
            return b.append(v >= 0 ? Double.toString(v) : "0");
        long n = Math.round(v * scale);
        b.append(n / scale).append('.');
        String frac = Long.toString(n % scale);
        for (int i = frac.length(); i < dec; i++)
            b.append('0');
        return b.append(frac);
    }

    /** After the request: the JSON line and the span's attributes. */
    public void end(Scope s, String route, int status, String[] trace) {
        if (spanCurrent != null)
            try {
                Object span = spanCurrent.invoke(null);
                spanSetString.invoke(span, "jalen.route", route);
                spanSetDouble.invoke(span, "jalen.cpu_time_s", s.cpuTimeSeconds());
                spanSetDouble.invoke(span, "jalen.energy_j", s.estimatedEnergyJoules());
                spanSetLong.invoke(span, "jalen.net_bytes", s.netBytes());
            } catch (ReflectiveOperationException | RuntimeException e) {
                /* a span that refuses attributes: the request goes on */
            }
        if (log == null)
            return;
        StringBuilder b = new StringBuilder(256);
        b.append("{\"time\":\"").append(Instant.now()).append("\",\"route\":");
        quote(b, route);
        b.append(",\"status\":").append(status);
        b.append(",\"trace_id\":").append(trace == null ? "null" : "\"" + trace[0] + "\"");
        b.append(",\"span_id\":").append(trace == null ? "null" : "\"" + trace[1] + "\"");
        fixed(b.append(",\"cpu_time_s\":"), s.cpuTimeSeconds(), 9);
        fixed(b.append(",\"energy_j\":"), s.estimatedEnergyJoules(), 9);
        b.append(",\"net_bytes\":").append(s.netBytes()).append("}\n");
        synchronized (log) {
            try {
                log.write(b.toString());
                log.flush();
            } catch (IOException e) {
                /* a full disk loses lines, not requests */
            }
        }
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else
                b.append(c);
        }
        b.append('"');
    }

    /** Closes the log. */
    public void close() throws IOException {
        if (log != null)
            log.close();
    }
}
