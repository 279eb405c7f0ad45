"""User modules written in Python (pa_module_register).

    class Busy(powerapi.Module):
        name = "py-busy"
        kind = powerapi.PA_FORMULA
        component = powerapi.PA_COMP_CPU
        options = ("watts",)
        requires = ("procfs-cpu",)   # enabled with it (see ctx.enable)

        def start(self, options):
            self.watts = options.get_float("watts", 10.0)

        def compute(self, delta, table):
            for i in range(len(delta)):
                table.set_target_w(i, self.watts * delta.cpu_s(i)
                                   / delta.interval_s)

    ctx.register(Busy())
    ctx.enable("py-busy", "watts=20")

Callbacks run on the thread that ticks (the caller of tick(), or the
sampler thread of start()).  An exception in a callback becomes the
module's failure (its message is the module's last error, as for a C
module); it never unwinds into the library.
"""

import ctypes
import errno as _errno

from . import _lib


def _lib_bytes(s):
    return s if isinstance(s, bytes) else str(s).encode()


def _err(e):
    """Negative errno for an exception raised by a callback."""
    n = getattr(e, "errno", None)
    return -n if isinstance(n, int) and n > 0 else -_errno.EIO


class Options:
    """The parsed options a module receives in start()/configure()."""

    def __init__(self, handle):
        self._h = handle

    def get(self, key, default=None):
        v = _lib.load().pa_options_get(self._h, key.encode())
        return default if v is None else v.decode()

    def get_float(self, key, default=0.0):
        out = ctypes.c_double()
        rc = _lib.load().pa_options_get_double(self._h, key.encode(),
                                               float(default),
                                               ctypes.byref(out))
        if rc < 0:
            raise ValueError(_lib.load().pa_last_error().decode())
        return out.value


class Frame:
    """One tick's raw readings, given to a sensor's sample()."""

    def __init__(self, handle):
        self._h = handle

    def set_cpu_ns(self, pid, tid, cpu_ns):
        """Cumulative CPU time (ns) of a watched pid (tid 0) or thread."""
        rc = _lib.load().pa_frame_set_cpu_ns(self._h, int(pid), int(tid),
                                             int(cpu_ns))
        if rc < 0:
            raise OSError(-rc, _lib.load().pa_last_error().decode())

    def put(self, key, data):
        """Hands bytes to the formulas of this sensor's kind for this tick
        (they read them with Delta.get(key))."""
        data = bytes(data)
        rc = _lib.load().pa_frame_put(self._h, key.encode(), data, len(data))
        if rc < 0:
            raise OSError(-rc, _lib.load().pa_last_error().decode())


class Delta:
    """A window: the difference of two frames, given to compute()."""

    def __init__(self, handle):
        self._h = handle
        lib = _lib.load()
        self.interval_s = lib.pa_delta_interval_s(handle)
        self.capacity_s = lib.pa_delta_capacity_s(handle)
        self.busy_s = lib.pa_delta_busy_s(handle)
        self._n = lib.pa_delta_count(handle)

    def __len__(self):
        return self._n

    def cpu_s(self, i):
        """CPU time (s) of target i in the window."""
        if not 0 <= i < self._n:
            raise IndexError(i)
        return _lib.load().pa_delta_cpu_s(self._h, i)

    def pid(self, i):
        """Process id of target i (its type: target_type(i))."""
        if not 0 <= i < self._n:
            raise IndexError(i)
        return _lib.load().pa_delta_pid(self._h, i)

    def target_type(self, i):
        if not 0 <= i < self._n:
            raise IndexError(i)
        return _lib.load().pa_delta_type(self._h, i)

    def get(self, key):
        """(this tick's bytes, the previous tick's) a sensor put under
        key; None where there were none."""
        size, psize = ctypes.c_size_t(0), ctypes.c_size_t(0)
        prev = ctypes.c_void_p()
        cur = _lib.load().pa_delta_get(self._h, key.encode(),
                                       ctypes.byref(size), ctypes.byref(prev),
                                       ctypes.byref(psize))
        return (ctypes.string_at(cur, size.value) if cur else None,
                ctypes.string_at(prev.value, psize.value)
                if prev.value else None)


class Table:
    """A formula's output."""

    def __init__(self, handle):
        self._h = handle

    def set_target_w(self, i, watts):
        _lib.load().pa_table_set_target_w(self._h, int(i), float(watts))

    def set_system_w(self, watts, idle_w=0.0):
        _lib.load().pa_table_set_system_w(self._h, float(watts),
                                          float(idle_w))

    def assume(self, text):
        """Records a constant not read from the machine."""
        _lib.load().pa_table_assume(ctypes.c_void_p(self._h), b"%s",
                                    str(text).encode())


class Module:
    """Base class of Python modules.  Set name, kind (PA_SENSOR or
    PA_FORMULA), component (formulas: PA_COMP_CPU, PA_COMP_NIC, or any
    component by name, "gpu"), auto_rank (formulas: auto's preference in
    the component, 0 never), description and options (accepted
    keys; None accepts none) and override the callbacks you need: sample()
    for a sensor, compute() for a formula, optionally probe(), start(),
    configure() and stop().  A formula may also set requires (names of the
    sensors it needs: enabling it enables them, pa_module_ops.requires) and
    uses (sensors it reads when enabled, never enabled for it)."""

    name = None
    kind = _lib.PA_SENSOR
    component = _lib.PA_COMP_NONE
    description = ""
    options = None
    requires = None
    uses = None
    auto_rank = 0

    def probe(self, procfs, sysfs, devfs):
        """Returns None when the module can run, else the reason why not."""
        return None

    def start(self, options):
        pass

    def sample(self, frame):
        pass

    def compute(self, delta, table):
        pass

    def configure(self, options):
        pass

    def stop(self):
        pass

    # Builds the pa_module_ops table; the Context keeps it alive.
    def _ops(self):
        if not self.name:
            raise ValueError("powerapi.Module: name is required")
        lib = _lib.load()
        me = self

        def fail(m, e):
            if m:
                lib.pa_module_errorf(ctypes.c_void_p(m), b"%s",
                                     ("%s: %s" % (me.name, e)).encode())
            return _err(e)

        def probe(env, why, why_len):
            try:
                def s(f):
                    v = f(env)
                    return v.decode() if v else None
                reason = me.probe(s(lib.pa_env_procfs), s(lib.pa_env_sysfs),
                                  s(lib.pa_env_devfs))
            except Exception as e:
                reason = "%s: %s" % (me.name, e)
            if reason is None:
                return 0
            if why and why_len:
                data = str(reason).encode()[:why_len - 1] + b"\0"
                ctypes.memmove(why, data, len(data))
            return -_errno.ENODEV

        def start(m, opts):
            try:
                me.start(Options(opts))
                return 0
            except Exception as e:
                return fail(m, e)

        def sample(m, frame):
            try:
                me.sample(Frame(frame))
                return 0
            except Exception as e:
                return fail(m, e)

        def compute(m, delta, table):
            try:
                me.compute(Delta(delta), Table(table))
                return 0
            except Exception as e:
                return fail(m, e)

        def configure(m, opts):
            try:
                me.configure(Options(opts))
                return 0
            except Exception as e:
                return fail(m, e)

        def stop(m):
            try:
                me.stop()
            except Exception:
                pass

        def overridden(name):
            return getattr(type(self), name) is not getattr(Module, name)

        def names(seq, what):
            if not seq:
                return None
            if isinstance(seq, (str, bytes)):
                raise TypeError("powerapi.Module %s: %s must be a sequence "
                                "of names, not a string" % (self.name, what))
            return (ctypes.c_char_p * (len(seq) + 1))(
                *[_lib_bytes(k) for k in seq], None)

        keys = names(self.options, "options")
        requires = names(self.requires, "requires")
        uses = names(self.uses, "uses")
        ops = _lib.pa_module_ops()
        ops.abi = _lib.PA_MODULE_ABI
        ops.name = self.name.encode()
        ops.kind = self.kind
        comp_name = None
        if isinstance(self.component, str):
            comp_name = self.component.encode()
            ops.component_name = comp_name
        else:
            ops.component = self.component
        ops.auto_rank = int(self.auto_rank or 0)
        ops.description = (self.description or "").encode()
        if keys is not None:
            ops.options = ctypes.cast(keys, ctypes.POINTER(ctypes.c_char_p))
        if requires is not None:
            ops.requires = ctypes.cast(requires,
                                       ctypes.POINTER(ctypes.c_char_p))
        if uses is not None:
            ops.uses = ctypes.cast(uses, ctypes.POINTER(ctypes.c_char_p))
        ops.probe = _lib.PROBE_FN(probe)
        ops.start = _lib.START_FN(start)
        if self.kind == _lib.PA_SENSOR:
            ops.sample = _lib.SAMPLE_FN(sample)
        else:
            ops.compute = _lib.COMPUTE_FN(compute)
        if overridden("configure"):
            ops.configure = _lib.CONFIGURE_FN(configure)
        ops.stop = _lib.STOP_FN(stop)
        # Keep the name lists alive with the table.
        ops._keep = (keys, requires, uses, comp_name)
        return ops
