/*
 * abi_dump - prints the sizes and field offsets of the public structures
 * of powerapi.h, and its constants, as JSON.  tests/test_abi.py compares
 * them with the ctypes mirror of the Python binding, so a change of the
 * header that the binding does not follow fails the test suite.
 *
 * When a field is added to a structure of powerapi.h, add it here too: the
 * size check fails until then, and the field check fails until the binding
 * mirrors it.
 */
#include <stddef.h>
#include <stdio.h>

#include "powerapi.h"

static int first;

static void begin(const char *name, size_t size)
{
    printf("%s\n  \"%s\": {\"size\": %zu, \"fields\": [", first ? "" : ",", name, size);
    first = 0;
}

static void field(const char *name, size_t off, size_t size, int last)
{
    printf("[\"%s\", %zu, %zu]%s", name, off, size, last ? "" : ", ");
}

#define F(type, f) field(#f, offsetof(type, f), sizeof(((type *)0)->f), 0)
#define L(type, f) field(#f, offsetof(type, f), sizeof(((type *)0)->f), 1)
#define END() printf("]}")

int main(void)
{
    printf("{\"structs\": {");
    first = 1;

    begin("pa_ctx_opts", sizeof(pa_ctx_opts));
    F(pa_ctx_opts, procfs);
    F(pa_ctx_opts, sysfs);
    F(pa_ctx_opts, devfs);
    F(pa_ctx_opts, hwdb);
    L(pa_ctx_opts, rootfs);
    END();

    begin("pa_module_info", sizeof(pa_module_info));
    F(pa_module_info, name);
    F(pa_module_info, description);
    F(pa_module_info, kind);
    F(pa_module_info, component);
    F(pa_module_info, available);
    F(pa_module_info, enabled);
    F(pa_module_info, failing);
    F(pa_module_info, why);
    F(pa_module_info, options);
    F(pa_module_info, user);
    F(pa_module_info, by_auto);
    F(pa_module_info, required_by);
    F(pa_module_info, requires);
    F(pa_module_info, uses);
    L(pa_module_info, auto_why);
    END();

    begin("pa_power", sizeof(pa_power));
    F(pa_power, cpu_w);
    F(pa_power, nic_w);
    F(pa_power, total_w);
    F(pa_power, idle_w);
    F(pa_power, cpu_j);
    F(pa_power, nic_j);
    F(pa_power, total_j);
    F(pa_power, interval_s);
    F(pa_power, cpu_time_s);
    F(pa_power, time_ns);
    L(pa_power, flags);
    END();

    begin("pa_target_info", sizeof(pa_target_info));
    F(pa_target_info, type);
    F(pa_target_info, pid);
    F(pa_target_info, tid);
    F(pa_target_info, ppid);
    F(pa_target_info, comm);
    F(pa_target_info, cgroup);
    F(pa_target_info, power);
    F(pa_target_info, net_rx_bytes);
    F(pa_target_info, net_tx_bytes);
    F(pa_target_info, has_net);
    F(pa_target_info, counters);
    F(pa_target_info, multiplex);
    F(pa_target_info, names);
    F(pa_target_info, processes);
    F(pa_target_info, vm);
    F(pa_target_info, vcpu_w);
    F(pa_target_info, emulator_w);
    F(pa_target_info, vcpu_j);
    L(pa_target_info, emulator_j);
    END();

    begin("pa_vm_info", sizeof(pa_vm_info));
    F(pa_vm_info, name);
    F(pa_vm_info, uuid);
    F(pa_vm_info, hypervisor);
    F(pa_vm_info, manager);
    F(pa_vm_info, id);
    F(pa_vm_info, source);
    F(pa_vm_info, cgroup);
    F(pa_vm_info, pid);
    F(pa_vm_info, nthreads);
    F(pa_vm_info, nvcpus);
    L(pa_vm_info, vcpu_tids);
    END();

    begin("pa_cgroup_names", sizeof(pa_cgroup_names));
    F(pa_cgroup_names, runtime);
    F(pa_cgroup_names, container_id);
    F(pa_cgroup_names, container_name);
    F(pa_cgroup_names, pod_name);
    F(pa_cgroup_names, pod_namespace);
    F(pa_cgroup_names, pod_uid);
    F(pa_cgroup_names, unit);
    L(pa_cgroup_names, source);
    END();

    begin("pa_device_info", sizeof(pa_device_info));
    F(pa_device_info, component);
    F(pa_device_info, index);
    F(pa_device_info, vendor);
    F(pa_device_info, name);
    F(pa_device_info, uuid);
    F(pa_device_info, bus);
    F(pa_device_info, source);
    F(pa_device_info, power_w);
    F(pa_device_info, idle_w);
    F(pa_device_info, energy_j);
    L(pa_device_info, split);
    END();

    begin("pa_report", sizeof(pa_report));
    F(pa_report, tick);
    F(pa_report, time_ns);
    F(pa_report, interval_s);
    F(pa_report, system);
    F(pa_report, formula);
    F(pa_report, sensors);
    F(pa_report, cpu_source);
    F(pa_report, assumed);
    F(pa_report, ntargets);
    F(pa_report, targets);
    F(pa_report, ncounters);
    F(pa_report, counter_names);
    F(pa_report, dram_w);
    F(pa_report, psys_w);
    F(pa_report, model_error);
    F(pa_report, ncomponents);
    F(pa_report, component_names);
    F(pa_report, system_component_w);
    F(pa_report, system_component_j);
    F(pa_report, target_component_w);
    F(pa_report, target_component_j);
    F(pa_report, ndevices);
    F(pa_report, devices);
    F(pa_report, exits_source);
    F(pa_report, exits_lost);
    F(pa_report, nexited);
    L(pa_report, exited);
    END();

    begin("pa_module_ops", sizeof(pa_module_ops));
    F(pa_module_ops, abi);
    F(pa_module_ops, name);
    F(pa_module_ops, kind);
    F(pa_module_ops, component);
    F(pa_module_ops, description);
    F(pa_module_ops, options);
    F(pa_module_ops, probe);
    F(pa_module_ops, start);
    F(pa_module_ops, sample);
    F(pa_module_ops, compute);
    F(pa_module_ops, configure);
    F(pa_module_ops, stop);
    F(pa_module_ops, requires);
    F(pa_module_ops, uses);
    F(pa_module_ops, flags);
    F(pa_module_ops, component_name);
    F(pa_module_ops, auto_rank);
    L(pa_module_ops, fits);
    END();

    begin("pa_ring_opts", sizeof(pa_ring_opts));
    F(pa_ring_opts, capacity);
    F(pa_ring_opts, max_targets);
    F(pa_ring_opts, mode);
    F(pa_ring_opts, set_gid);
    F(pa_ring_opts, gid);
    L(pa_ring_opts, interval_ns);
    END();

    begin("pa_ring_info", sizeof(pa_ring_info));
    F(pa_ring_info, version);
    F(pa_ring_info, capacity);
    F(pa_ring_info, max_targets);
    F(pa_ring_info, mode);
    F(pa_ring_info, writer_pid);
    F(pa_ring_info, alive);
    F(pa_ring_info, interval_ns);
    F(pa_ring_info, newest);
    F(pa_ring_info, oldest);
    F(pa_ring_info, heartbeat_age_ns);
    F(pa_ring_info, lost);
    F(pa_ring_info, windows);
    L(pa_ring_info, truncated);
    END();

    begin("pa_scope_opts", sizeof(pa_scope_opts));
    F(pa_scope_opts, max_names);
    F(pa_scope_opts, pid);
    L(pa_scope_opts, carbon_g_per_kwh);
    END();

    begin("pa_scope_result", sizeof(pa_scope_result));
    F(pa_scope_result, cpu_time_s);
    F(pa_scope_result, self_cpu_time_s);
    F(pa_scope_result, energy_j);
    F(pa_scope_result, self_energy_j);
    F(pa_scope_result, j_per_cpu_s);
    F(pa_scope_result, depth);
    L(pa_scope_result, flags);
    END();

    begin("pa_scope_stats", sizeof(pa_scope_stats));
    F(pa_scope_stats, name);
    F(pa_scope_stats, calls);
    F(pa_scope_stats, rated_calls);
    F(pa_scope_stats, measured_calls);
    F(pa_scope_stats, cpu_time_s);
    F(pa_scope_stats, self_cpu_time_s);
    F(pa_scope_stats, energy_j);
    F(pa_scope_stats, self_energy_j);
    F(pa_scope_stats, mean_j);
    F(pa_scope_stats, p50_j);
    F(pa_scope_stats, p95_j);
    F(pa_scope_stats, p99_j);
    F(pa_scope_stats, self_mean_j);
    F(pa_scope_stats, self_p50_j);
    F(pa_scope_stats, self_p95_j);
    F(pa_scope_stats, self_p99_j);
    F(pa_scope_stats, flags);
    F(pa_scope_stats, note);
    F(pa_scope_stats, carbon_g_per_kwh);
    F(pa_scope_stats, co2e_g);
    F(pa_scope_stats, self_co2e_g);
    L(pa_scope_stats, mean_co2e_g);
    END();

    printf("},\n \"constants\": {\n");
#define C(name) printf("  \"%s\": %lld,\n", #name, (long long)(name))
    C(PA_SENSOR);
    C(PA_FORMULA);
    C(PA_COMP_NONE);
    C(PA_COMP_CPU);
    C(PA_COMP_NIC);
    C(PA_WATCH_THREADS);
    C(PA_WATCH_CHILDREN);
    C(PA_POWER_MEASURED);
    C(PA_POWER_EXITED);
    C(PA_POWER_FIRST);
    C(PA_TARGET_PROCESS);
    C(PA_TARGET_THREAD);
    C(PA_TARGET_TREE);
    C(PA_TARGET_CGROUP);
    C(PA_TARGET_EXITED);
    C(PA_TARGET_UNACCOUNTED);
    C(PA_EXITED_MAX);
    C(PA_TARGET_VM);
    C(PA_VM_MAX_VCPUS);
    C(PA_COMM_MAX);
    C(PA_MAX_DEVICES);
    C(PA_RING_VERSION);
    C(PA_SCOPE_MAX_DEPTH);
    C(PA_SCOPE_NAME_MAX);
    C(PA_SCOPE_DEFAULT_NAMES);
    C(PA_SCOPE_NO_WINDOW);
    C(PA_SCOPE_RATE_SYSTEM);
    C(PA_SCOPE_RECURSIVE);
    C(PA_SCOPE_FOLDED);
    printf("  \"PA_MODULE_ABI\": %d\n }}\n", PA_MODULE_ABI);
    return 0;
}
