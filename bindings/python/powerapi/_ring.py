"""Shared-memory ring of tumbling windows (pa_ring_* API).

A `powerapi daemon --ring NAME` samples the whole machine once and
publishes each window; any number of unprivileged readers follow it:

    with powerapi.RingReader("powerapi") as ring:
        for report in ring.follow(timeout_s=10):
            print(report.system.total_w)

        ten = ring.aggregate(span_s=10)  # a 10 s view of the newest windows
"""

import ctypes
import errno as _errno
import time as _time

from . import _lib


def _api():
    lib = _lib.load()
    if not hasattr(lib, "pa_ring_open"):
        raise OSError(_errno.ENOSYS, "powerapi: this libpowerapi (%s) has no "
                      "ring API (pa_ring_open)" % _lib.library_path())
    return lib


class RingInfo:
    """State of a ring and of this reader (pa_ring_info)."""

    def __init__(self, c):
        for name, _ in _lib.pa_ring_info._fields_:
            setattr(self, name, getattr(c, name))
        self.alive = bool(self.alive)

    def __repr__(self):
        return ("RingInfo(version=%d, capacity=%d, writer_pid=%d, alive=%s, "
                "newest=%d, lost=%d)" % (self.version, self.capacity,
                                         self.writer_pid, self.alive,
                                         self.newest, self.lost))


class RingReader:
    """A read-only reader of the ring `name` (default "powerapi").

    read() returns the next window as a powerapi.Report, or None when no
    newer one was published yet.  The reader remembers the last sequence
    number it returned (.seq), so successive reads never repeat a window;
    windows overwritten before they were read are skipped and counted
    (info().lost).  Errors raise PowerAPIError: ENOENT no such ring (no
    daemon), EPROTO another layout version, EOWNERDEAD the daemon died or
    stopped.  One reader per thread."""

    def __init__(self, name=_lib.PA_RING_DEFAULT_NAME):
        from . import _check, _b
        self._check = _check
        self._lib = _api()
        self._h = None
        h = ctypes.c_void_p()
        _check(self._lib.pa_ring_open(_b(name), ctypes.byref(h)),
               "pa_ring_open")
        self._h = h
        self.name = name
        self.seq = 0

    def close(self):
        if self._h is not None:
            self._lib.pa_ring_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if self._h is None:
            raise ValueError("powerapi: ring reader is closed")
        return self._h

    def _get(self, fn, name, *args):
        from . import Report
        seq = ctypes.c_uint64(self.seq)
        rep = ctypes.POINTER(_lib.pa_report)()
        rc = fn(self._handle(), ctypes.byref(seq), *args, ctypes.byref(rep))
        if rc == -_errno.EAGAIN:
            return None
        self._check(rc, name)
        self.seq = seq.value
        return Report(rep.contents)  # a copy: the C one lives until the next read

    def read(self):
        """The next window after .seq (the newest one on the first call),
        or None if there is no newer window yet."""
        return self._get(self._lib.pa_ring_read, "pa_ring_read")

    def aggregate(self, span_s=None):
        """One report averaging every window after .seq that ends within
        span_s of the newest (None: no bound), or None if there is none:
        a reader's own interval (1 s, 10 s views)."""
        span_ns = 0 if span_s is None else int(round(span_s * 1e9))
        return self._get(self._lib.pa_ring_aggregate, "pa_ring_aggregate",
                         ctypes.c_uint64(span_ns))

    def follow(self, timeout_s=None, poll_s=0.05):
        """Yields each new window as it is published; stops after timeout_s
        without a new window (None: never) or when the daemon stops."""
        last = _time.monotonic()
        while True:
            from . import PowerAPIError
            try:
                r = self.read()
            except PowerAPIError as e:
                if e.errno == _errno.EOWNERDEAD:
                    return
                raise
            if r is not None:
                last = _time.monotonic()
                yield r
                continue
            if timeout_s is not None and _time.monotonic() - last >= timeout_s:
                return
            _time.sleep(poll_s)

    def info(self):
        out = _lib.pa_ring_info()
        self._check(self._lib.pa_ring_get_info(self._handle(),
                                               ctypes.byref(out)),
                    "pa_ring_get_info")
        return RingInfo(out)


class RingWriter:
    """Creates the ring `name` and publishes a Context's reports into it
    (what `powerapi daemon` does), for Python-driven daemons and tests.
    capacity: windows kept; mode: permission bits (0o644); interval_s:
    the window length readers expect (staleness checks)."""

    def __init__(self, name=_lib.PA_RING_DEFAULT_NAME, capacity=100,
                 max_targets=1024, mode=0o644, interval_s=1.0, gid=None):
        from . import _check, _b
        self._check = _check
        self._lib = _api()
        self._h = None
        o = _lib.pa_ring_opts(capacity, max_targets, mode,
                              0 if gid is None else 1,
                              0 if gid is None else gid,
                              int(round(interval_s * 1e9)))
        h = ctypes.c_void_p()
        _check(self._lib.pa_ring_create(_b(name), ctypes.byref(o),
                                        ctypes.byref(h)), "pa_ring_create")
        self._h = h
        self.name = name

    def publish(self, ctx):
        """Publishes ctx's last report as the next window."""
        rep = ctypes.POINTER(_lib.pa_report)()
        self._check(ctx._call(self._lib.pa_report_get, ctypes.byref(rep)),
                    "pa_report_get")
        try:
            if self._h is None:
                raise ValueError("powerapi: ring writer is closed")
            self._check(self._lib.pa_ring_publish(self._h, rep),
                        "pa_ring_publish")
        finally:
            self._lib.pa_report_free(rep)

    def heartbeat(self):
        if self._h is not None:
            self._lib.pa_ring_heartbeat(self._h)

    def close(self):
        """Marks the ring stopped and removes its name."""
        if self._h is not None:
            self._lib.pa_ring_destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
