package org.powerapi;

/**
 * A libpowerapi call failed. {@link #errno()} is the positive errno value
 * the library returned, {@link #getMessage()} its detailed message (what
 * failed and how to fix it).
 */
public class PowerAPIException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public PowerAPIException(int errno, String message) {
        super(message);
        this.errno = errno;
    }

    /** The positive errno value (2 = ENOENT, 22 = EINVAL, 3 = ESRCH...). */
    public int errno() {
        return errno;
    }
}
