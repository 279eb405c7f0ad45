"""ctypes mirror of libpowerapi/include/powerapi.h and the library loader.

The structures below mirror the C ones field by field, in order.  The test
tests/test_abi.py compares every size and offset with those a small C
program (tests/abi_dump.c) compiled against the header prints, so a header
change that is not mirrored here fails the test suite.
"""

import ctypes
import ctypes.util
import errno as _errno
import os
import threading

from . import _config

c_pid_t = ctypes.c_int  # pid_t is int on Linux (glibc, musl)

# ---------------------------------------------------------------- constants

PA_SENSOR = 1
PA_FORMULA = 2

PA_COMP_NONE = 0
PA_COMP_CPU = 1
PA_COMP_NIC = 2

PA_WATCH_THREADS = 1 << 0
PA_WATCH_CHILDREN = 1 << 1

PA_POWER_MEASURED = 1 << 0
PA_POWER_EXITED = 1 << 1
PA_POWER_FIRST = 1 << 2

PA_TARGET_PROCESS = 1
PA_TARGET_THREAD = 2
PA_TARGET_TREE = 3
PA_TARGET_CGROUP = 4
PA_TARGET_EXITED = 5
PA_TARGET_UNACCOUNTED = 6
PA_EXITED_MAX = 4096
PA_TARGET_VM = 7
PA_VM_MAX_VCPUS = 256

PA_COMM_MAX = 16
PA_MAX_DEVICES = 16

PA_SCOPE_MAX_DEPTH = 64
PA_SCOPE_NAME_MAX = 128
PA_SCOPE_DEFAULT_NAMES = 256
PA_SCOPE_OTHER = "[other scopes]"
PA_SCOPE_NO_WINDOW = 1 << 8
PA_SCOPE_RATE_SYSTEM = 1 << 9
PA_SCOPE_RECURSIVE = 1 << 10
PA_SCOPE_FOLDED = 1 << 11
PA_MODULE_ABI = 3
PA_RING_VERSION = 5
PA_RING_DEFAULT_NAME = "powerapi"

# Checked against the C header by tests/test_abi.py as well.
CONSTANTS = {
    "PA_SENSOR": PA_SENSOR,
    "PA_FORMULA": PA_FORMULA,
    "PA_COMP_NONE": PA_COMP_NONE,
    "PA_COMP_CPU": PA_COMP_CPU,
    "PA_COMP_NIC": PA_COMP_NIC,
    "PA_WATCH_THREADS": PA_WATCH_THREADS,
    "PA_WATCH_CHILDREN": PA_WATCH_CHILDREN,
    "PA_POWER_MEASURED": PA_POWER_MEASURED,
    "PA_POWER_EXITED": PA_POWER_EXITED,
    "PA_POWER_FIRST": PA_POWER_FIRST,
    "PA_TARGET_PROCESS": PA_TARGET_PROCESS,
    "PA_TARGET_THREAD": PA_TARGET_THREAD,
    "PA_TARGET_TREE": PA_TARGET_TREE,
    "PA_TARGET_CGROUP": PA_TARGET_CGROUP,
    "PA_TARGET_EXITED": PA_TARGET_EXITED,
    "PA_TARGET_UNACCOUNTED": PA_TARGET_UNACCOUNTED,
    "PA_EXITED_MAX": PA_EXITED_MAX,
    "PA_TARGET_VM": PA_TARGET_VM,
    "PA_VM_MAX_VCPUS": PA_VM_MAX_VCPUS,
    "PA_COMM_MAX": PA_COMM_MAX,
    "PA_MAX_DEVICES": PA_MAX_DEVICES,
    "PA_MODULE_ABI": PA_MODULE_ABI,
    "PA_RING_VERSION": PA_RING_VERSION,
    "PA_SCOPE_MAX_DEPTH": PA_SCOPE_MAX_DEPTH,
    "PA_SCOPE_NAME_MAX": PA_SCOPE_NAME_MAX,
    "PA_SCOPE_DEFAULT_NAMES": PA_SCOPE_DEFAULT_NAMES,
    "PA_SCOPE_NO_WINDOW": PA_SCOPE_NO_WINDOW,
    "PA_SCOPE_RATE_SYSTEM": PA_SCOPE_RATE_SYSTEM,
    "PA_SCOPE_RECURSIVE": PA_SCOPE_RECURSIVE,
    "PA_SCOPE_FOLDED": PA_SCOPE_FOLDED,
}

# ---------------------------------------------------------------- structures


class pa_ctx_opts(ctypes.Structure):
    _fields_ = [
        ("procfs", ctypes.c_char_p),
        ("sysfs", ctypes.c_char_p),
        ("devfs", ctypes.c_char_p),
        ("hwdb", ctypes.c_char_p),
        ("rootfs", ctypes.c_char_p),
    ]


class pa_module_info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("component", ctypes.c_int),
        ("available", ctypes.c_int),
        ("enabled", ctypes.c_int),
        ("failing", ctypes.c_int),
        ("why", ctypes.c_char * 256),
        ("options", ctypes.c_char * 256),
        ("user", ctypes.c_int),
        ("by_auto", ctypes.c_int),
        ("required_by", ctypes.c_char * 256),
        ("requires", ctypes.POINTER(ctypes.c_char_p)),
        ("uses", ctypes.POINTER(ctypes.c_char_p)),
        ("auto_why", ctypes.c_char * 256),
    ]


class pa_power(ctypes.Structure):
    _fields_ = [
        ("cpu_w", ctypes.c_double),
        ("nic_w", ctypes.c_double),
        ("total_w", ctypes.c_double),
        ("idle_w", ctypes.c_double),
        ("cpu_j", ctypes.c_double),
        ("nic_j", ctypes.c_double),
        ("total_j", ctypes.c_double),
        ("interval_s", ctypes.c_double),
        ("cpu_time_s", ctypes.c_double),
        ("time_ns", ctypes.c_uint64),
        ("flags", ctypes.c_uint),
    ]


class pa_cgroup_names(ctypes.Structure):
    _fields_ = [
        ("runtime", ctypes.c_char * 16),
        ("container_id", ctypes.c_char * 72),
        ("container_name", ctypes.c_char * 128),
        ("pod_name", ctypes.c_char * 128),
        ("pod_namespace", ctypes.c_char * 64),
        ("pod_uid", ctypes.c_char * 40),
        ("unit", ctypes.c_char * 128),
        ("source", ctypes.c_char * 64),
    ]


class pa_vm_info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 128),
        ("uuid", ctypes.c_char * 40),
        ("hypervisor", ctypes.c_char * 24),
        ("manager", ctypes.c_char * 16),
        ("id", ctypes.c_char * 72),
        ("source", ctypes.c_char * 64),
        ("cgroup", ctypes.c_char * 256),
        ("pid", c_pid_t),
        ("nthreads", ctypes.c_uint),
        ("nvcpus", ctypes.c_uint),
        ("vcpu_tids", c_pid_t * PA_VM_MAX_VCPUS),
    ]


class pa_target_info(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("pid", c_pid_t),
        ("tid", c_pid_t),
        ("ppid", c_pid_t),
        ("comm", ctypes.c_char * PA_COMM_MAX),
        ("cgroup", ctypes.c_char_p),
        ("power", pa_power),
        ("net_rx_bytes", ctypes.c_uint64),
        ("net_tx_bytes", ctypes.c_uint64),
        ("has_net", ctypes.c_int),
        ("counters", ctypes.POINTER(ctypes.c_double)),
        ("multiplex", ctypes.c_double),
        ("names", ctypes.POINTER(pa_cgroup_names)),
        ("processes", ctypes.c_uint),
        ("vm", ctypes.POINTER(pa_vm_info)),
        ("vcpu_w", ctypes.c_double),
        ("emulator_w", ctypes.c_double),
        ("vcpu_j", ctypes.c_double),
        ("emulator_j", ctypes.c_double),
    ]


class pa_device_info(ctypes.Structure):
    _fields_ = [
        ("component", ctypes.c_char * 16),
        ("index", ctypes.c_int),
        ("vendor", ctypes.c_char * 16),
        ("name", ctypes.c_char * 64),
        ("uuid", ctypes.c_char * 48),
        ("bus", ctypes.c_char * 32),
        ("source", ctypes.c_char * 16),
        ("power_w", ctypes.c_double),
        ("idle_w", ctypes.c_double),
        ("energy_j", ctypes.c_double),
        ("split", ctypes.c_int),
    ]


class pa_report(ctypes.Structure):
    _fields_ = [
        ("tick", ctypes.c_uint64),
        ("time_ns", ctypes.c_uint64),
        ("interval_s", ctypes.c_double),
        ("system", pa_power),
        ("formula", ctypes.c_char_p),
        ("sensors", ctypes.c_char_p),
        ("cpu_source", ctypes.c_char_p),
        ("assumed", ctypes.c_char_p),
        ("ntargets", ctypes.c_size_t),
        ("targets", ctypes.POINTER(pa_target_info)),
        ("ncounters", ctypes.c_size_t),
        ("counter_names", ctypes.POINTER(ctypes.c_char_p)),
        ("dram_w", ctypes.c_double),
        ("psys_w", ctypes.c_double),
        ("model_error", ctypes.c_double),
        ("ncomponents", ctypes.c_size_t),
        ("component_names", ctypes.POINTER(ctypes.c_char_p)),
        ("system_component_w", ctypes.POINTER(ctypes.c_double)),
        ("system_component_j", ctypes.POINTER(ctypes.c_double)),
        ("target_component_w", ctypes.POINTER(ctypes.c_double)),
        ("target_component_j", ctypes.POINTER(ctypes.c_double)),
        ("ndevices", ctypes.c_size_t),
        ("devices", ctypes.POINTER(pa_device_info)),
        ("exits_source", ctypes.c_char_p),
        ("exits_lost", ctypes.c_uint64),
        ("nexited", ctypes.c_size_t),
        ("exited", ctypes.POINTER(pa_target_info)),
    ]


# Module callbacks.  Opaque handles are void pointers.
PROBE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_size_t)
START_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
SAMPLE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
COMPUTE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_void_p)
CONFIGURE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                ctypes.c_void_p)
STOP_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class pa_module_ops(ctypes.Structure):
    _fields_ = [
        ("abi", ctypes.c_uint),
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("component", ctypes.c_int),
        ("description", ctypes.c_char_p),
        ("options", ctypes.POINTER(ctypes.c_char_p)),
        ("probe", PROBE_FN),
        ("start", START_FN),
        ("sample", SAMPLE_FN),
        ("compute", COMPUTE_FN),
        ("configure", CONFIGURE_FN),
        ("stop", STOP_FN),
        ("requires", ctypes.POINTER(ctypes.c_char_p)),
        ("uses", ctypes.POINTER(ctypes.c_char_p)),
        ("flags", ctypes.c_uint),
        ("component_name", ctypes.c_char_p),
        ("auto_rank", ctypes.c_int),
        ("fits", PROBE_FN),  # same signature: env, why, len
    ]


c_gid_t = ctypes.c_uint  # gid_t is unsigned int on Linux


class pa_ring_opts(ctypes.Structure):
    _fields_ = [
        ("capacity", ctypes.c_uint32),
        ("max_targets", ctypes.c_uint32),
        ("mode", ctypes.c_uint32),
        ("set_gid", ctypes.c_int),
        ("gid", c_gid_t),
        ("interval_ns", ctypes.c_uint64),
    ]


class pa_ring_info(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("capacity", ctypes.c_uint32),
        ("max_targets", ctypes.c_uint32),
        ("mode", ctypes.c_uint32),
        ("writer_pid", c_pid_t),
        ("alive", ctypes.c_int),
        ("interval_ns", ctypes.c_uint64),
        ("newest", ctypes.c_uint64),
        ("oldest", ctypes.c_uint64),
        ("heartbeat_age_ns", ctypes.c_uint64),
        ("lost", ctypes.c_uint64),
        ("windows", ctypes.c_uint64),
        ("truncated", ctypes.c_uint64),
    ]


class pa_scope_opts(ctypes.Structure):
    _fields_ = [
        ("max_names", ctypes.c_size_t),
        ("pid", c_pid_t),
        ("carbon_g_per_kwh", ctypes.c_double),
    ]


class pa_scope_result(ctypes.Structure):
    _fields_ = [
        ("cpu_time_s", ctypes.c_double),
        ("self_cpu_time_s", ctypes.c_double),
        ("energy_j", ctypes.c_double),
        ("self_energy_j", ctypes.c_double),
        ("j_per_cpu_s", ctypes.c_double),
        ("depth", ctypes.c_uint),
        ("flags", ctypes.c_uint),
    ]


class pa_scope_stats(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("calls", ctypes.c_uint64),
        ("rated_calls", ctypes.c_uint64),
        ("measured_calls", ctypes.c_uint64),
        ("cpu_time_s", ctypes.c_double),
        ("self_cpu_time_s", ctypes.c_double),
        ("energy_j", ctypes.c_double),
        ("self_energy_j", ctypes.c_double),
        ("mean_j", ctypes.c_double),
        ("p50_j", ctypes.c_double),
        ("p95_j", ctypes.c_double),
        ("p99_j", ctypes.c_double),
        ("self_mean_j", ctypes.c_double),
        ("self_p50_j", ctypes.c_double),
        ("self_p95_j", ctypes.c_double),
        ("self_p99_j", ctypes.c_double),
        ("flags", ctypes.c_uint),
        ("note", ctypes.c_char_p),
        ("carbon_g_per_kwh", ctypes.c_double),
        ("co2e_g", ctypes.c_double),
        ("self_co2e_g", ctypes.c_double),
        ("mean_co2e_g", ctypes.c_double),
    ]


REPORT_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p,
                             ctypes.POINTER(pa_report), ctypes.c_void_p)

# Every mirrored structure, by its C name (for the ABI test).
STRUCTS = {
    "pa_ctx_opts": pa_ctx_opts,
    "pa_module_info": pa_module_info,
    "pa_power": pa_power,
    "pa_target_info": pa_target_info,
    "pa_cgroup_names": pa_cgroup_names,
    "pa_vm_info": pa_vm_info,
    "pa_device_info": pa_device_info,
    "pa_report": pa_report,
    "pa_module_ops": pa_module_ops,
    "pa_ring_opts": pa_ring_opts,
    "pa_ring_info": pa_ring_info,
    "pa_scope_opts": pa_scope_opts,
    "pa_scope_result": pa_scope_result,
    "pa_scope_stats": pa_scope_stats,
}

# ---------------------------------------------------------------- functions

_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p
_U64 = ctypes.c_uint64

# name: (restype, argtypes).  Required: the binding refuses a library
# without them.
_PROTOTYPES = {
    "pa_version": (_S, []),
    "pa_cgroup_parse": (_I, [_S, ctypes.POINTER(pa_cgroup_names)]),
    "pa_cgroup_names_resolve": (_I, [_S, _S, ctypes.POINTER(pa_cgroup_names)]),
    "pa_vm_list": (_I, [_S, _S, ctypes.POINTER(ctypes.POINTER(pa_vm_info)),
                        ctypes.POINTER(ctypes.c_size_t)]),
    "pa_strerror": (_S, [_I]),
    "pa_last_error": (_S, []),
    "pa_ctx_new": (_I, [ctypes.POINTER(_P), ctypes.POINTER(pa_ctx_opts)]),
    "pa_ctx_free": (None, [_P]),
    "pa_module_enable": (_I, [_P, _S, _S]),
    "pa_module_disable": (_I, [_P, _S]),
    "pa_module_configure": (_I, [_P, _S, _S]),
    "pa_module_list": (_I, [_P, ctypes.POINTER(pa_module_info),
                            ctypes.c_size_t]),
    "pa_module_get": (_I, [_P, _S, ctypes.POINTER(pa_module_info)]),
    "pa_module_register": (_I, [_P, ctypes.POINTER(pa_module_ops)]),
    "pa_watch_pid": (_I, [_P, c_pid_t, ctypes.c_uint]),
    "pa_unwatch_pid": (_I, [_P, c_pid_t]),
    "pa_watch_all": (_I, [_P, _I]),
    "pa_tick": (_I, [_P]),
    "pa_tick_at": (_I, [_P, _U64]),
    "pa_start": (_I, [_P, _U64, REPORT_CB, _P]),
    "pa_stop": (_I, [_P]),
    "pa_pid_power": (_I, [_P, c_pid_t, ctypes.POINTER(pa_power)]),
    "pa_tid_power": (_I, [_P, c_pid_t, ctypes.POINTER(pa_power)]),
    "pa_tree_power": (_I, [_P, c_pid_t, ctypes.POINTER(pa_power)]),
    "pa_cgroup_power": (_I, [_P, _S, ctypes.POINTER(pa_power)]),
    "pa_system_power": (_I, [_P, ctypes.POINTER(pa_power)]),
    "pa_report_get": (_I, [_P, ctypes.POINTER(ctypes.POINTER(pa_report))]),
    "pa_report_free": (None, [ctypes.POINTER(pa_report)]),
    "pa_report_cgroups": (_I, [_P, _I]),
    "pa_module_priv": (_P, [_P]),
    "pa_module_set_priv": (None, [_P, _P]),
    "pa_module_env": (_P, [_P]),
    "pa_env_procfs": (_S, [_P]),
    "pa_env_sysfs": (_S, [_P]),
    "pa_env_devfs": (_S, [_P]),
    "pa_options_get": (_S, [_P, _S]),
    "pa_options_get_double": (_I, [_P, _S, ctypes.c_double,
                                   ctypes.POINTER(ctypes.c_double)]),
    "pa_frame_set_cpu_ns": (_I, [_P, c_pid_t, c_pid_t, _U64]),
    "pa_delta_interval_s": (ctypes.c_double, [_P]),
    "pa_delta_count": (ctypes.c_size_t, [_P]),
    "pa_delta_cpu_s": (ctypes.c_double, [_P, ctypes.c_size_t]),
    "pa_delta_capacity_s": (ctypes.c_double, [_P]),
    "pa_delta_busy_s": (ctypes.c_double, [_P]),
    "pa_frame_put": (_I, [_P, _S, _P, ctypes.c_size_t]),
    "pa_delta_get": (_P, [_P, _S, ctypes.POINTER(ctypes.c_size_t),
                          ctypes.POINTER(_P),
                          ctypes.POINTER(ctypes.c_size_t)]),
    "pa_delta_type": (_I, [_P, ctypes.c_size_t]),
    "pa_delta_pid": (c_pid_t, [_P, ctypes.c_size_t]),
    "pa_delta_in_tree": (_I, [_P, ctypes.c_size_t, c_pid_t]),
    "pa_table_set_target_w": (None, [_P, ctypes.c_size_t, ctypes.c_double]),
    "pa_table_set_system_w": (None, [_P, ctypes.c_double, ctypes.c_double]),
    "pa_table_device": (None, [_P, ctypes.POINTER(pa_device_info)]),
    "pa_parse_duration_ns": (_I, [_S, ctypes.POINTER(_U64)]),
    "pa_carbon_intensity_parse": (_I, [_S, ctypes.POINTER(ctypes.c_double)]),
    "pa_carbon_g": (_I, [ctypes.c_double, ctypes.c_double,
                         ctypes.POINTER(ctypes.c_double)]),
}

# Optional: set up when the library has them (older builds lack the ring).
_OPTIONAL = {
    "pa_ring_create": (_I, [_S, ctypes.POINTER(pa_ring_opts),
                            ctypes.POINTER(_P)]),
    "pa_ring_publish": (_I, [_P, ctypes.POINTER(pa_report)]),
    "pa_ring_heartbeat": (None, [_P]),
    "pa_ring_destroy": (None, [_P]),
    "pa_ring_open": (_I, [_S, ctypes.POINTER(_P)]),
    "pa_ring_read": (_I, [_P, ctypes.POINTER(_U64),
                          ctypes.POINTER(ctypes.POINTER(pa_report))]),
    "pa_ring_aggregate": (_I, [_P, ctypes.POINTER(_U64), _U64,
                               ctypes.POINTER(ctypes.POINTER(pa_report))]),
    "pa_ring_get_info": (_I, [_P, ctypes.POINTER(pa_ring_info)]),
    "pa_ring_close": (None, [_P]),
    "pa_scope_configure": (_I, [_P, ctypes.POINTER(pa_scope_opts)]),
    "pa_scope_begin": (_I, [_P, _S]),
    "pa_scope_end": (_I, [_P, _S, ctypes.POINTER(pa_scope_result)]),
    "pa_scope_begin_at": (_I, [_P, _S, _U64]),
    "pa_scope_end_at": (_I, [_P, _S, _U64, ctypes.POINTER(pa_scope_result)]),
    "pa_scope_list": (_I, [_P, ctypes.POINTER(pa_scope_stats),
                           ctypes.c_size_t]),
    "pa_scope_get": (_I, [_P, _S, ctypes.POINTER(pa_scope_stats)]),
}

# Variadic functions: argtypes left unset (ctypes passes the arguments as
# given; callers pass bytes only).
_VARIADIC = {
    "pa_module_errorf": (None,),
    "pa_table_assume": (None,),
}

_lock = threading.Lock()
_lib = None
_lib_path = None


def _candidates():
    """Paths tried in order: $POWERAPI_LIBRARY alone when set, else the
    paths CMake baked into _config (build tree or installed location),
    then the dynamic loader's own search."""
    env = os.environ.get("POWERAPI_LIBRARY")
    if env:
        return [env]
    paths = [p for p in _config.SEARCH if p]
    found = ctypes.util.find_library("powerapi")
    if found:
        paths.append(found)
    paths.append("libpowerapi.so.0")
    return paths


def load():
    """Returns the loaded library (a ctypes.CDLL), loading it on first use.
    Raises OSError naming every path tried when none loads."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append("%s (no such file)" % path)
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
                continue
            missing = [n for n in _PROTOTYPES if not hasattr(lib, n)]
            if missing:
                tried.append("%s (not libpowerapi: lacks %s)"
                             % (path, ", ".join(missing[:3])))
                continue
            for name, (res, args) in _PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.restype = res
                fn.argtypes = args
            for name, (res, args) in _OPTIONAL.items():
                if hasattr(lib, name):
                    fn = getattr(lib, name)
                    fn.restype = res
                    fn.argtypes = args
            for name, (res,) in _VARIADIC.items():
                if hasattr(lib, name):
                    getattr(lib, name).restype = res
            _lib, _lib_path = lib, path
            return lib
        raise OSError(_errno.ENOENT,
                      "powerapi: cannot load libpowerapi.so; tried: %s. "
                      "Set POWERAPI_LIBRARY to the library's path"
                      % "; ".join(tried))


def library_path():
    """The path (or soname) the library was loaded from."""
    load()
    return _lib_path


def has(name):
    """True when the loaded library exports the function name (optional
    parts of the API, such as the ring reader)."""
    return hasattr(load(), name)
