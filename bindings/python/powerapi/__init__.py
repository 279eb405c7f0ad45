"""Python binding of libpowerapi: per-process power (W) and energy (J).

    import powerapi

    with powerapi.measure() as m:
        work()
    print(m.energy_j, m.power_w)

    with powerapi.scope("checkout") as s:    # a block of this thread
        handle(request)
    print(s.energy_j, s.cpu_time_s)

    with powerapi.RingReader("powerapi") as ring:   # a `powerapi daemon`
        for report in ring.follow():
            print(report.system.total_w)

    with powerapi.Context() as ctx:
        ctx.watch_pid(pid)
        ctx.tick()              # the first tick only primes the readings
        time.sleep(1)
        ctx.tick()
        p = ctx.pid_power(pid)  # p.cpu_w, p.nic_w, p.total_w, p.total_j ...

Pure ctypes over libpowerapi.so, no third-party dependency.  The library is
found through $POWERAPI_LIBRARY, then the installed location (baked by
CMake), then the build tree, then the dynamic loader.  Every failure raises
PowerAPIError (an OSError) carrying the library's detailed message.
"""

import atexit
import ctypes
import os
import threading
import time as _time

from . import _lib
from ._lib import (PA_COMP_CPU, PA_COMP_NIC, PA_COMP_NONE, PA_FORMULA,
                   PA_SENSOR, PA_TARGET_CGROUP, PA_TARGET_EXITED,
                   PA_TARGET_PROCESS, PA_TARGET_THREAD, PA_TARGET_TREE,
                   PA_TARGET_UNACCOUNTED, PA_TARGET_VM)
from ._module import Module, Frame, Delta, Table, Options  # noqa: F401

__all__ = [
    "PowerAPIError", "Power", "Target", "Report", "ModuleInfo", "Context",
    "Measurement", "measure", "version", "library_path", "parse_duration_ns",
    "cgroup_names", "vms",
    "Module", "Frame", "Delta", "Table", "Options", "RingReader",
    "RingWriter", "RingInfo", "Scope", "ScopeStats", "scope", "scopes",
    "carbon_intensity", "carbon_g",
    "scope_context",
    "PA_SENSOR", "PA_FORMULA", "PA_COMP_NONE", "PA_COMP_CPU", "PA_COMP_NIC",
    "PA_TARGET_PROCESS", "PA_TARGET_THREAD", "PA_TARGET_TREE",
    "PA_TARGET_CGROUP", "PA_TARGET_EXITED", "PA_TARGET_UNACCOUNTED",
    "PA_TARGET_VM",
]

__version__ = "0.3.0"


class PowerAPIError(OSError):
    """A libpowerapi call failed.  .errno is the positive errno value,
    .strerror the library's detailed message (pa_last_error(), which names
    what failed and how to fix it), .function the C function."""

    def __init__(self, errno, message, function=None):
        super().__init__(errno, message)
        self.function = function


def _check(rc, function):
    """Raises PowerAPIError for a negative return, else returns rc."""
    if rc >= 0:
        return rc
    lib = _lib.load()
    msg = lib.pa_last_error()
    msg = msg.decode("utf-8", "replace") if msg else ""
    if not msg:
        msg = lib.pa_strerror(rc).decode("utf-8", "replace")
    raise PowerAPIError(-rc, msg, function)


def _b(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def _options(options):
    """None, "k=v,k=v" or a mapping {k: v} -> bytes or None."""
    if options is None:
        return None
    if isinstance(options, dict):
        return ",".join("%s=%s" % (k, v) for k, v in options.items()).encode()
    return _b(options)


def _names(p):
    """A NULL-terminated char ** as a list of str ([] for NULL)."""
    out = []
    i = 0
    while p and p[i] is not None:
        out.append(_s(p[i]))
        i += 1
    return out


def version():
    """The library's version string."""
    return _s(_lib.load().pa_version())


def library_path():
    """Where the library was loaded from."""
    return _lib.library_path()


def cgroup_names(path, rootfs=None):
    """The container, pod or systemd unit a cgroup path is, as a dict of
    the fields known (runtime, container_id, container_name, pod_name,
    pod_namespace, pod_uid, unit, source); {} when the path names nothing.
    rootfs: where the runtimes' state is (default "/")."""
    n = _lib.pa_cgroup_names()
    rc = _lib.load().pa_cgroup_names_resolve(_b(rootfs) if rootfs else None,
                                             _b(path), ctypes.byref(n))
    if rc == -2:  # -ENOENT: nothing to name
        return {}
    _check(rc, "pa_cgroup_names_resolve")
    return {f: _s(getattr(n, f)) for f, _ in _lib.pa_cgroup_names._fields_
            if _s(getattr(n, f))}


def _vm_dict(v):
    """A pa_vm_info as a dict: its strings, pid, nthreads and vcpu_tids."""
    d = {f: _s(getattr(v, f)) for f in ("name", "uuid", "hypervisor",
                                       "manager", "id", "source", "cgroup")}
    d["pid"] = v.pid
    d["nthreads"] = v.nthreads
    d["vcpu_tids"] = [v.vcpu_tids[i] for i in range(v.nvcpus)]
    return d


def vms(procfs=None, rootfs=None):
    """The virtual machines running on this host (pa_vm_list; DESIGN.md
    section 18), one dict each: name, uuid, hypervisor, manager, id,
    source (where the name came from), cgroup, pid, nthreads, vcpu_tids.
    procfs: "/proc" by default; rootfs: where Proxmox's etc/pve and the
    container runtimes' state are, "/" by default."""
    lib = _lib.load()
    out = ctypes.POINTER(_lib.pa_vm_info)()
    n = ctypes.c_size_t(0)
    rc = lib.pa_vm_list(_b(procfs) if procfs else None,
                        _b(rootfs) if rootfs else None,
                        ctypes.byref(out), ctypes.byref(n))
    _check(rc, "pa_vm_list")
    try:
        return [_vm_dict(out[i]) for i in range(n.value)]
    finally:
        if out:
            ctypes.CDLL(None).free(ctypes.cast(out, ctypes.c_void_p))


def carbon_intensity(value):
    """A carbon intensity in grams of CO2e per kWh (385, 56.5, "385g/kWh"),
    checked by the library's parser as powerapi's --carbon-intensity:
    returns it as a float; raises PowerAPIError (EINVAL not a number,
    ERANGE not more than 0 and at most 5000) whose message names the
    forms."""
    out = ctypes.c_double()
    _check(_lib.load().pa_carbon_intensity_parse(_b(str(value)),
                                                  ctypes.byref(out)),
           "pa_carbon_intensity_parse")
    return out.value


_carbon_intensity = carbon_intensity  # scope_configure's argument hides it


def carbon_g(energy_j, g_per_kwh):
    """Grams of CO2e of energy_j joules at g_per_kwh (the library's one
    conversion, pa_carbon_g): energy_j / 3.6e6 * g_per_kwh.  The intensity
    is the user's figure, an assumption to state beside the grams."""
    out = ctypes.c_double()
    _check(_lib.load().pa_carbon_g(float(energy_j), float(g_per_kwh),
                                   ctypes.byref(out)), "pa_carbon_g")
    return out.value


def parse_duration_ns(s):
    """Parses "500ms", "2s", "10us", "1m" into nanoseconds."""
    out = ctypes.c_uint64()
    _check(_lib.load().pa_parse_duration_ns(_b(s), ctypes.byref(out)),
           "pa_parse_duration_ns")
    return out.value


class Power:
    """Power of a target over the last window (W) and its energy since it
    was first seen (J)."""

    __slots__ = ("cpu_w", "nic_w", "total_w", "idle_w", "cpu_j", "nic_j",
                 "total_j", "interval_s", "cpu_time_s", "time_ns", "flags")

    def __init__(self, c):
        for name in self.__slots__:
            setattr(self, name, getattr(c, name))

    @property
    def measured(self):
        """The CPU figure is scaled from a measured counter (RAPL)."""
        return bool(self.flags & _lib.PA_POWER_MEASURED)

    @property
    def exited(self):
        return bool(self.flags & _lib.PA_POWER_EXITED)

    @property
    def first(self):
        return bool(self.flags & _lib.PA_POWER_FIRST)

    def as_dict(self):
        return {n: getattr(self, n) for n in self.__slots__}

    def __repr__(self):
        return ("Power(cpu_w=%.6g, nic_w=%.6g, total_w=%.6g, total_j=%.6g, "
                "interval_s=%.6g)" % (self.cpu_w, self.nic_w, self.total_w,
                                      self.total_j, self.interval_s))


class Target:
    """One target of a report: a process, thread, process tree or cgroup."""

    def __init__(self, c, counter_names, components=None):
        self.type = c.type
        self.pid = c.pid
        self.tid = c.tid
        self.ppid = c.ppid
        self.comm = _s(c.comm)
        self.cgroup = _s(c.cgroup) or ""
        self.power = Power(c.power)
        self.net_rx_bytes = c.net_rx_bytes
        self.net_tx_bytes = c.net_tx_bytes
        self.has_net = bool(c.has_net)
        self.counters = ({n: c.counters[i] for i, n in enumerate(counter_names)}
                         if c.counters else {})
        self.multiplex = c.multiplex
        # TARGET_EXITED: how many processes it sums (0: an estimate)
        self.processes = c.processes
        # every component of the report by name: {"cpu": (w, j), ...}
        self.components = components or {}
        # the container, pod or systemd unit of its cgroup ({} when none)
        self.names = ({f: _s(getattr(c.names.contents, f))
                       for f, _ in _lib.pa_cgroup_names._fields_
                       if _s(getattr(c.names.contents, f))}
                      if c.names else {})
        # TARGET_VM (a report grouped by VM): the VM ({} for the processes
        # in no VM) and its power split between vCPUs and the emulator
        self.vm = _vm_dict(c.vm.contents) if c.vm else {}
        self.vcpu_w, self.emulator_w = c.vcpu_w, c.emulator_w
        self.vcpu_j, self.emulator_j = c.vcpu_j, c.emulator_j

    def __repr__(self):
        return "Target(type=%d, pid=%d, tid=%d, comm=%r, %r)" % (
            self.type, self.pid, self.tid, self.comm, self.power)


class Report:
    """What one tick produced (a copy: it stays valid)."""

    def __init__(self, c):
        self.tick = c.tick
        self.time_ns = c.time_ns
        self.interval_s = c.interval_s
        self.system = Power(c.system)
        self.formula = _s(c.formula) or ""
        self.sensors = _s(c.sensors) or ""
        self.cpu_source = _s(c.cpu_source) or ""
        assumed = _s(c.assumed) or ""
        self.assumed = [a.strip() for a in assumed.split(";") if a.strip()]
        # relative error the CPU model states (0.05 = 5 %), None unknown
        self.model_error = c.model_error if c.model_error >= 0 else None
        # how processes that exited inside the window were counted:
        # "taskstats", "children-time" (an estimate) or "none"
        self.exits_source = _s(c.exits_source) or "none"
        self.exits_lost = c.exits_lost
        # the processes TARGET_EXITED sums, one Target each (at most 4096)
        self.exited = [Target(c.exited[i], []) for i in range(c.nexited)]
        self.counter_names = [_s(c.counter_names[i])
                              for i in range(c.ncounters)]
        # the context's components (cpu, nic, then registered formulas'),
        # each with (watts of the window, cumulative joules)
        nc = c.ncomponents if c.component_names else 0
        self.components = [_s(c.component_names[k]) for k in range(nc)]

        def comps(w, j, row):
            return {n: (w[row * nc + k], j[row * nc + k])
                    for k, n in enumerate(self.components)}

        self.system_components = (
            comps(c.system_component_w, c.system_component_j, 0) if nc else {})
        self.targets = [
            Target(c.targets[i], self.counter_names,
                   comps(c.target_component_w, c.target_component_j, i)
                   if nc else {})
            for i in range(c.ntargets)]

    def __repr__(self):
        return "Report(tick=%d, targets=%d, system=%r)" % (
            self.tick, len(self.targets), self.system)


class ModuleInfo:
    """A known module and its state in a context."""

    def __init__(self, c):
        self.name = _s(c.name)
        self.description = _s(c.description) or ""
        self.kind = c.kind
        self.component = c.component
        self.available = bool(c.available)
        self.enabled = bool(c.enabled)
        self.failing = bool(c.failing)
        self.why = _s(c.why)
        self.options = _s(c.options)
        self.user = bool(c.user)          # enabled by name
        self.by_auto = bool(c.by_auto)    # a formula chosen by "auto"
        # sensors: the enabled formulas that require it
        self.required_by = [n for n in (_s(c.required_by) or "").split(",")
                            if n]
        self.requires = _names(c.requires)  # formulas: sensors needed
        self.uses = _names(c.uses)          # formulas: sensors used
        self.auto_why = _s(c.auto_why)  # chosen by "auto": why

    def __repr__(self):
        return "ModuleInfo(%r, available=%s, enabled=%s)" % (
            self.name, self.available, self.enabled)


class Context:
    """One monitoring session (pa_ctx).  procfs, sysfs, devfs: roots of the
    file systems read (default /proc, /sys, /dev); hwdb: hardware database
    file.  Usable as a context manager; close() frees it.  Methods may be
    called from any thread."""

    def __init__(self, procfs=None, sysfs=None, devfs=None, hwdb=None):
        self._lib = _lib.load()
        self._ctx = None
        # close() waits for the calls in flight (ctypes releases the GIL
        # during a call: another thread may be inside the library).
        self._cv = threading.Condition()
        self._inflight = 0
        self._keep = []  # ctypes objects the C side points to
        self._cb = None
        opts = _lib.pa_ctx_opts(_b(procfs), _b(sysfs), _b(devfs), _b(hwdb))
        ctx = ctypes.c_void_p()
        _check(self._lib.pa_ctx_new(ctypes.byref(ctx), ctypes.byref(opts)),
               "pa_ctx_new")
        self._ctx = ctx

    # -- lifecycle
    def close(self):
        """Stops the sampler if running and frees the context, once the
        calls other threads are making return.  Idempotent.  Not from a
        start() callback."""
        with self._cv:
            if self._ctx is None:
                return
            ctx, self._ctx = self._ctx, None
            while self._inflight:
                self._cv.wait()
        self._lib.pa_ctx_free(ctx)
        self._cb = None
        self._keep = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _call(self, fn, *args):
        """fn(ctx, *args), the context kept alive during the call."""
        with self._cv:
            if self._ctx is None:
                raise ValueError("powerapi: context is closed")
            h = self._ctx
            self._inflight += 1
        try:
            return fn(h, *args)
        finally:
            with self._cv:
                self._inflight -= 1
                if not self._inflight:
                    self._cv.notify_all()

    # -- modules
    def enable(self, name, options=None):
        """Enables a module ("procfs-cpu", "cpu-tdp", "auto"...) with
        options "k=v,k=v" or a dict.  A formula brings the sensors it
        requires; "auto" fills every component no enabled formula computes
        (see pa_module_enable in powerapi.h)."""
        _check(self._call(self._lib.pa_module_enable, _b(name),
                                          _options(options)),
               "pa_module_enable")

    def disable(self, name):
        """Disables a module (and the sensors enabled only for it, when a
        formula); auto will not bring it back.  A sensor that a formula you
        enabled requires raises PowerAPIError (EBUSY) naming the formula.
        "auto" stops auto."""
        _check(self._call(self._lib.pa_module_disable, _b(name)),
               "pa_module_disable")

    def configure(self, name, options):
        """Changes some options of an enabled module."""
        _check(self._call(self._lib.pa_module_configure, _b(name),
                                             _options(options)),
               "pa_module_configure")

    def modules(self):
        """Every known module (list of ModuleInfo), sensors first."""
        n = _check(self._call(self._lib.pa_module_list, None, 0),
                   "pa_module_list")
        while True:
            arr = (_lib.pa_module_info * max(n, 1))()
            m = _check(self._call(self._lib.pa_module_list, arr, n),
                       "pa_module_list")
            if m <= n:
                return [ModuleInfo(arr[i]) for i in range(m)]
            n = m

    def module(self, name):
        """One module's ModuleInfo, probing only that module; an unknown
        name raises PowerAPIError (ENOENT) listing the known ones."""
        info = _lib.pa_module_info()
        _check(self._call(self._lib.pa_module_get, _b(name),
                          ctypes.byref(info)), "pa_module_get")
        return ModuleInfo(info)

    def register(self, module):
        """Registers a Python Module (sensor or formula) in this context;
        it can then be enabled by its name."""
        ops = module._ops()
        _check(self._call(self._lib.pa_module_register, ctypes.byref(ops)),
               "pa_module_register")
        self._keep.append((module, ops))

    # -- targets
    def watch_pid(self, pid, threads=False, children=False):
        flags = ((_lib.PA_WATCH_THREADS if threads else 0)
                 | (_lib.PA_WATCH_CHILDREN if children else 0))
        _check(self._call(self._lib.pa_watch_pid, int(pid), flags),
               "pa_watch_pid")

    def unwatch_pid(self, pid):
        _check(self._call(self._lib.pa_unwatch_pid, int(pid)),
               "pa_unwatch_pid")

    def watch_all(self, on=True):
        _check(self._call(self._lib.pa_watch_all, 1 if on else 0),
               "pa_watch_all")

    def report_cgroups(self, on=True):
        _check(self._call(self._lib.pa_report_cgroups, 1 if on else 0),
               "pa_report_cgroups")

    # -- ticks
    def tick(self, time_ns=None):
        """Samples now (or at the explicit clock time_ns, strictly
        increasing, for replays and tests).  The first tick only primes."""
        if time_ns is None:
            rc = self._call(self._lib.pa_tick)
        else:
            rc = self._call(self._lib.pa_tick_at, int(time_ns))
        _check(rc, "pa_tick")

    def start(self, period_s, callback=None):
        """Starts a background sampler ticking every period_s seconds;
        callback(report) is called after each tick on the sampler thread.
        Exceptions raised by the callback are kept in .callback_errors."""
        period_ns = int(round(period_s * 1e9))
        self.callback_errors = []
        if callback is None:
            cb = _lib.REPORT_CB()
        else:
            def trampoline(_ctx, rep, _user):
                try:
                    callback(Report(rep.contents))
                except BaseException as e:  # never unwind into C
                    self.callback_errors.append(e)
            cb = _lib.REPORT_CB(trampoline)
        _check(self._call(self._lib.pa_start, period_ns, cb, None), "pa_start")
        self._cb = cb

    def stop(self):
        """Stops the background sampler and waits for it."""
        _check(self._call(self._lib.pa_stop), "pa_stop")
        self._cb = None

    # -- results
    def _power(self, fn, name, key):
        out = _lib.pa_power()
        _check(self._call(fn, key, ctypes.byref(out)), name)
        return Power(out)

    def pid_power(self, pid):
        """Last window's power and cumulative energy of a watched pid."""
        return self._power(self._lib.pa_pid_power, "pa_pid_power", int(pid))

    def tid_power(self, tid):
        return self._power(self._lib.pa_tid_power, "pa_tid_power", int(tid))

    def tree_power(self, pid):
        return self._power(self._lib.pa_tree_power, "pa_tree_power",
                           int(pid))

    def cgroup_power(self, cgroup):
        return self._power(self._lib.pa_cgroup_power, "pa_cgroup_power",
                           _b(cgroup))

    def system_power(self):
        """The whole machine (idle_w: CPU power no task caused)."""
        out = _lib.pa_power()
        _check(self._call(self._lib.pa_system_power, ctypes.byref(out)),
               "pa_system_power")
        return Power(out)

    def report(self):
        """A copy of the last report."""
        rep = ctypes.POINTER(_lib.pa_report)()
        _check(self._call(self._lib.pa_report_get, ctypes.byref(rep)),
               "pa_report_get")
        try:
            return Report(rep.contents)
        finally:
            self._lib.pa_report_free(rep)


    # -- scopes
    def scope_configure(self, max_names=None, pid=None, carbon_intensity=None):
        """Scope options: max_names (distinct names kept, default 256; set
        before the first scope), pid (the process whose energy per
        CPU-second prices the scopes: None/0 this process, -1 the
        machine's), carbon_intensity (grams of CO2e per kWh, as
        powerapi.carbon_intensity takes it: the stats then give co2e_g,
        self_co2e_g and mean_co2e_g at it, and carbon_g_per_kwh; None: no
        grams)."""
        g = 0.0 if carbon_intensity is None else \
            _carbon_intensity(carbon_intensity)
        opts = _lib.pa_scope_opts(int(max_names or 0), int(pid or 0), g)
        _check(self._call(self._lib.pa_scope_configure, ctypes.byref(opts)),
               "pa_scope_configure")

    def scope_begin(self, name, cpu_ns=None):
        """Opens scope name on the calling thread (cpu_ns: an explicit
        thread CPU clock, for tests and replays).  Prefer scope()."""
        if cpu_ns is None:
            rc = self._call(self._lib.pa_scope_begin, _b(name))
        else:
            rc = self._call(self._lib.pa_scope_begin_at, _b(name),
                            int(cpu_ns))
        _check(rc, "pa_scope_begin")

    def scope_end(self, name=None, cpu_ns=None):
        """Closes the innermost scope of the calling thread (which must be
        name, unless None) and returns its Scope figures."""
        out = _lib.pa_scope_result()
        if cpu_ns is None:
            rc = self._call(self._lib.pa_scope_end, _b(name),
                            ctypes.byref(out))
        else:
            rc = self._call(self._lib.pa_scope_end_at, _b(name),
                            int(cpu_ns), ctypes.byref(out))
        _check(rc, "pa_scope_end")
        s = Scope(self, name)
        s._fill(out)
        return s

    def scope(self, name):
        """A context manager measuring a block of this thread:

            with ctx.scope("checkout") as s:
                handle(request)
            s.energy_j, s.cpu_time_s, s.self_energy_j, s.measured
        """
        return Scope(self, name)

    def scopes(self):
        """Every scope name's aggregates (list of ScopeStats), in the
        order of first use, "[other scopes]" last."""
        n = _check(self._call(self._lib.pa_scope_list, None, 0),
                   "pa_scope_list")
        while True:
            arr = (_lib.pa_scope_stats * max(n, 1))()
            m = _check(self._call(self._lib.pa_scope_list, arr, n),
                       "pa_scope_list")
            if m <= n:
                return [ScopeStats(arr[i]) for i in range(m)]
            n = m

    def scope_stats(self, name):
        """One name's aggregates (ScopeStats); PowerAPIError (ENOENT) when
        no scope of that name ran."""
        out = _lib.pa_scope_stats()
        _check(self._call(self._lib.pa_scope_get, _b(name),
                          ctypes.byref(out)), "pa_scope_get")
        return ScopeStats(out)


class Scope:
    """One scope: opened by `with`, its figures filled when the block ends
    (also when it raises).  energy_j and cpu_time_s are inclusive of the
    scopes nested in it, self_energy_j and self_cpu_time_s are not."""

    def __init__(self, ctx, name):
        self._ctx = ctx
        self.name = name
        self.cpu_time_s = self.self_cpu_time_s = None
        self.energy_j = self.self_energy_j = None
        self.j_per_cpu_s = None
        self.depth = None
        self.flags = 0

    def _fill(self, c):
        for f in ("cpu_time_s", "self_cpu_time_s", "energy_j",
                  "self_energy_j", "j_per_cpu_s", "depth", "flags"):
            setattr(self, f, getattr(c, f))

    @property
    def measured(self):
        """Priced from a measured counter (RAPL); modelled otherwise."""
        return bool(self.flags & _lib.PA_POWER_MEASURED)

    @property
    def rated(self):
        """False when it ended before the context's first window (its
        energy is then 0)."""
        return not self.flags & _lib.PA_SCOPE_NO_WINDOW

    @property
    def system_price(self):
        """Priced from the machine's power, not this process's."""
        return bool(self.flags & _lib.PA_SCOPE_RATE_SYSTEM)

    def __enter__(self):
        self._ctx.scope_begin(self.name)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            out = _lib.pa_scope_result()
            _check(self._ctx._call(self._ctx._lib.pa_scope_end,
                                   _b(self.name), ctypes.byref(out)),
                   "pa_scope_end")
            self._fill(out)
        except PowerAPIError:
            if exc_type is None:
                raise
        return False

    def __repr__(self):
        return "Scope(%r, energy_j=%r, cpu_time_s=%r)" % (
            self.name, self.energy_j, self.cpu_time_s)


class ScopeStats:
    """One scope name's aggregates: calls, CPU time and energy (inclusive
    and self), energy per call (mean, p50, p95, p99 of the rated calls;
    the quantiles within 6.25 %); with a carbon intensity
    (scope_configure), the grams of CO2e of energy_j, self_energy_j and
    mean_j and the intensity assumed (all 0 without one)."""

    __slots__ = ("name", "calls", "rated_calls", "measured_calls",
                 "cpu_time_s", "self_cpu_time_s", "energy_j",
                 "self_energy_j", "mean_j", "p50_j", "p95_j", "p99_j",
                 "self_mean_j", "self_p50_j", "self_p95_j", "self_p99_j",
                 "flags", "note", "carbon_g_per_kwh", "co2e_g",
                 "self_co2e_g", "mean_co2e_g")

    def __init__(self, c):
        for n in self.__slots__:
            setattr(self, n, getattr(c, n))
        self.name = _s(c.name)
        self.note = _s(c.note)

    @property
    def measured(self):
        """Every rated call was priced from RAPL."""
        return bool(self.flags & _lib.PA_POWER_MEASURED)

    def as_dict(self):
        return {n: getattr(self, n) for n in self.__slots__}

    def __repr__(self):
        return "ScopeStats(%r, calls=%d, energy_j=%.6g, mean_j=%.6g)" % (
            self.name, self.calls, self.energy_j, self.mean_j)


_scope_ctx = None
_scope_lock = threading.Lock()


def scope_context(interval_s=1.0):
    """The context that powerapi.scope() uses, made at its first call: this
    process watched, priced by the best formula auto finds, sampled every
    interval_s by a background sampler.  Making it takes a first window (50
    ms to 1 s: until the machine ran), so that the first
    scope is priced."""
    global _scope_ctx
    with _scope_lock:
        if _scope_ctx is None:
            ctx = Context()
            try:
                pid = os.getpid()
                ctx.watch_pid(pid)
                ctx.tick()
                for _ in range(20):  # a window in which something ran
                    _time.sleep(0.05)
                    ctx.tick()
                    if ctx.system_power().cpu_time_s > 0:
                        break
                ctx.scope_configure()  # reads that window's price
                ctx.start(interval_s)
            except BaseException:
                ctx.close()
                raise
            _scope_ctx = ctx
            atexit.register(ctx.close)
        return _scope_ctx


def scope(name, ctx=None):
    """with powerapi.scope("checkout") as s: ... then s.energy_j: the
    energy of a block of this thread (see Context.scope).  ctx: a Context
    of yours, else scope_context()."""
    return (ctx or scope_context()).scope(name)


def scopes(ctx=None):
    """Every scope name's aggregates (see Context.scopes)."""
    return (ctx or scope_context()).scopes()


class Measurement:
    """Result of measure(): filled when the block ends."""

    def __init__(self):
        self.energy_j = None     # total energy of the process in the block
        self.cpu_j = None
        self.nic_j = None
        self.power_w = None      # mean power over the block
        self.duration_s = None
        self.cpu_time_s = None
        self.assumed = []        # constants the estimate assumed

    def __repr__(self):
        return "Measurement(energy_j=%r, power_w=%r, duration_s=%r)" % (
            self.energy_j, self.power_w, self.duration_s)


class measure:
    """Context manager measuring the energy of a process (default: this
    one) during a block:

        with powerapi.measure() as m:
            work()
        m.energy_j, m.power_w, m.duration_s

    modules: an iterable of names or (name, options) to enable (a formula
    brings its sensors; "auto" fills what they leave); other keyword
    arguments go to Context()."""

    def __init__(self, pid=None, modules=None, **context_kwargs):
        self.pid = os.getpid() if pid is None else int(pid)
        self._modules = modules
        self._kwargs = context_kwargs
        self._ctx = None
        self.result = Measurement()

    def __enter__(self):
        ctx = Context(**self._kwargs)
        try:
            for m in self._modules or ():
                if isinstance(m, (tuple, list)):
                    ctx.enable(m[0], m[1])
                else:
                    ctx.enable(m)
            ctx.watch_pid(self.pid)
            ctx.tick()
        except BaseException:
            ctx.close()
            raise
        self._ctx = ctx
        self._t0 = _time.monotonic()
        return self.result

    def __exit__(self, exc_type, exc, tb):
        ctx, self._ctx = self._ctx, None
        try:
            ctx.tick()
            p = ctx.pid_power(self.pid)
            r = self.result
            # The block is the context's only window: cumulative energy is
            # the block's energy.
            r.energy_j = p.total_j
            r.cpu_j = p.cpu_j
            r.nic_j = p.nic_j
            r.duration_s = p.interval_s
            r.power_w = p.total_j / p.interval_s if p.interval_s > 0 else 0.0
            r.cpu_time_s = p.cpu_time_s
            try:
                r.assumed = ctx.report().assumed
            except PowerAPIError:
                pass
        except PowerAPIError:
            if exc_type is None:
                raise
        finally:
            ctx.close()
        return False


from ._ring import RingInfo, RingReader, RingWriter  # noqa: E402
