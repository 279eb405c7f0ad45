package io.opentelemetry.api.trace;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A stand-in for OpenTelemetry's Span (the methods the jalen filter finds
 * by reflection), so that ScopeServer can count the attributes it sets.
 */
public class Span {
    public static final AtomicLong ENERGY_SET = new AtomicLong();
    private static final Span CURRENT = new Span();

    public static Span current() {
        return CURRENT;
    }

    public Span setAttribute(String key, double value) {
        if (key.equals("jalen.energy_j") && value >= 0)
            ENERGY_SET.incrementAndGet();
        return this;
    }

    public Span setAttribute(String key, long value) {
        return this;
    }

    public Span setAttribute(String key, String value) {
        return this;
    }
}
