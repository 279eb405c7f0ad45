import org.powerapi.jalen.http.RequestEnergy;

/**
 * The servlet-free part of jalen's servlet filter (ctest
 * jalen_request_energy, no agent): route templates, W3C traceparent,
 * Server-Timing without the agent (an inert scope: 0 ms, 0 J).
 */
public class RequestEnergyTest {
    static int failed;

    static void eq(Object got, Object want, String what) {
        if (want == null ? got != null : !want.equals(got)) {
            System.out.println("FAIL " + what + ": " + got + ", expected " + want);
            failed++;
        }
    }

    public static void main(String[] args) throws Exception {
        RequestEnergy r = new RequestEnergy(" /users/{id}, /users/{id}/orders,/files/**,/", true,
                                            null, true, RequestEnergyTest.class.getClassLoader());
        eq(r.template("/users/42"), "/users/{id}", "one segment");
        eq(r.template("/users/42/orders"), "/users/{id}/orders", "two segments");
        eq(r.template("/users/42/orders/7"), null, "one segment too many");
        eq(r.template("/users"), null, "one segment short");
        eq(r.template("/files/a/b/c.txt"), "/files/**", "the rest");
        eq(r.template("/files"), "/files/**", "** matches no segment too (as Ant patterns)");
        eq(r.template("/"), "/", "the root");
        eq(r.template("/other"), null, "no template");
        String[] t = RequestEnergy.traceParent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        eq(t == null ? null : t[0] + " " + t[1], "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7",
           "a good traceparent");
        String[] bad = {null, "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
                        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"};
        for (String b : bad)
            eq(RequestEnergy.traceParent(b), null, "malformed traceparent '" + b + "'");
        try (org.powerapi.jalen.Scope s = org.powerapi.jalen.Scope.enter("GET /a")) {
            eq(r.serverTiming(s), "cpu;dur=0.000, energy;desc=\"0.000000 J (estimate)\"",
               "Server-Timing without the agent");
        }
        System.out.println(failed == 0 ? "request energy ok" : failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
