package org.powerapi;

import java.io.File;
import java.nio.charset.StandardCharsets;

/**
 * The JNI library that cannot be loaded gets an error that names
 * POWERAPI_JNI_LIBRARY (issue 31 item 10: it was the JVM's bare "no
 * powerapi_jni in java.library.path").  Run with
 * -Dorg.powerapi.jni.library=/nonexistent/...; then runs itself again with
 * neither the property nor the variable.
 */
public final class LoaderTest {
    private static String loadError() {
        try {
            PowerAPI.version();
            return null;
        } catch (UnsatisfiedLinkError e) {
            return e.getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        String msg = loadError();
        if (args.length > 0) { // the child: print what happened
            System.out.println(msg == null ? "LOADED" : msg);
            return;
        }
        boolean ok = msg != null && msg.contains("POWERAPI_JNI_LIBRARY")
                     && msg.contains("/nonexistent/libpowerapi_jni.so")
                     && msg.contains("-Dorg.powerapi.jni.library");
        System.out.println("bad path: " + msg);

        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                                               "org.powerapi.LoaderTest", "child");
        pb.environment().remove("POWERAPI_JNI_LIBRARY");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        System.out.println("no path: " + out);
        if (out.startsWith("LOADED"))
            System.out.println("no path: SKIPPED (an installed copy was found)");
        else
            ok &= out.contains("POWERAPI_JNI_LIBRARY") && out.contains("java.library.path");
        System.out.println(ok ? "ok" : "FAIL");
        System.exit(ok ? 0 : 1);
    }
}
