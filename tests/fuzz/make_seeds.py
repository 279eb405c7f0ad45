#!/usr/bin/env python3
"""Writes the first seeds of the sensor fuzz targets from tests/fixtures/.

A seed is the target's pieces (fuzz.h) joined by FZ_SEP: the fixture's own
files, then the same with the counters of tick 1 advanced, so that the
first runs reach a window.  The corpus kept in tests/fuzz/corpus/ grew from
these (libFuzzer -merge=1 keeps it minimal); rerunning this script only
adds seeds.
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")
SEP = b"\n~~~\n"


def rd(fixture, rel):
    p = os.path.join(FIX, fixture, rel)
    return open(p, "rb").read() if os.path.exists(p) else b""


def bump(b, k=1):
    """Every decimal number of b plus k times its own tenth (a later tick)."""
    return re.sub(rb"\d+", lambda m: str(int(m.group()) + k * (int(m.group()) // 10 + 1)).encode(), b)


def put(target, name, pieces):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(SEP.join(pieces))


def two_ticks(target, fixture, rels, t1):
    """rels: files in piece order; t1: indexes of pieces that are tick 1."""
    base = [rd(fixture, r) for r in rels]
    put(target, "seed-fixture", base)
    put(target, "seed-advanced", [bump(b) if i in t1 else b for i, b in enumerate(base)])


two_ticks("proc_pid_stat", "rapl-laptop",
          ["proc/300/stat", "proc/300/stat", "proc/300/task/300/stat", "proc/300/task/300/stat"], {1, 3})
put("proc_pid_stat", "seed-name-with-parens",
    [b"300 (a) b (c)) R 1 300 300 0 -1 4194560 100 0 0 0 2000 300 0 0 20 0 1 0 40300 17530880 1043 18446744073709551615 0 0 0 0 0 0 0 4096 0 0 0 0 17 3 0 0 0 0 0"])
two_ticks("schedstat", "vm-nocpufreq",
          ["proc/1734/task/1734/schedstat", "proc/1734/task/1734/schedstat"], {1})
two_ticks("proc_stat", "rapl-laptop", ["proc/stat", "proc/stat", "proc/uptime", "proc/uptime"], {1, 3})
put("cpuinfo", "seed-fixture", [rd("rapl-laptop", "proc/cpuinfo"), rd("rapl-laptop", "sys/devices/system/cpu/online")])
put("cpuinfo", "seed-vm", [rd("vm-nocpufreq", "proc/cpuinfo"), b"0-1\n"])
put("cpuinfo", "seed-amd", [rd("rapl-amd", "proc/cpuinfo"), b"0-3,8,10-11\n"])
pol = "sys/devices/system/cpu/cpufreq/"
two_ticks("time_in_state", "desktop-cpufreq",
          [pol + "policy0/stats/time_in_state", pol + "policy0/stats/time_in_state",
           pol + "policy0/affected_cpus", pol + "policy0/base_frequency",
           pol + "policy1/stats/time_in_state"], {1})
pc = "sys/class/powercap/"
two_ticks("powercap", "rapl-laptop",
          [pc + "intel-rapl:0/energy_uj", pc + "intel-rapl:0/energy_uj",
           pc + "intel-rapl:0/max_energy_range_uj", pc + "intel-rapl:0/name",
           pc + "intel-rapl:0:0/energy_uj", pc + "intel-rapl:0:0/energy_uj",
           pc + "intel-rapl:0:0/name",
           "sys/devices/system/cpu/cpu0/topology/physical_package_id",
           "sys/devices/system/cpu/online"], {1, 5})
put("powercap", "seed-wrap", [rd("rapl-wrap", pc + "intel-rapl:0/energy_uj"), b"1000\n",
                              rd("rapl-wrap", pc + "intel-rapl:0/max_energy_range_uj"), b"package-0\n"])
netdev = rd("net-server", "proc/net/dev")
put("net_dev", "seed-fixture", [netdev, netdev])
put("net_dev", "seed-advanced", [netdev, bump(netdev)])
nic = "sys/class/net/"
two_ticks("nic_sysfs", "net-server",
          [nic + "eth0/statistics/rx_bytes", nic + "eth0/statistics/rx_bytes",
           nic + "eth0/statistics/tx_bytes", nic + "eth0/statistics/tx_bytes",
           nic + "eth0/statistics/rx_packets", nic + "eth0/statistics/tx_packets",
           nic + "eth0/speed", nic + "eth0/type", nic + "eth0/operstate", nic + "lo/type"], {1, 3})
socks = rd("net-server", "sockets.txt")
put("nic_sockets", "seed-fixture", [socks, socks, rd("net-server", "proc/net/route"),
                                    rd("net-server", "proc/net/ipv6_route")])
put("nic_sockets", "seed-advanced", [socks, bump(socks), rd("net-server", "proc/net/route"),
                                     rd("net-server", "proc/net/ipv6_route")])
put("cgroup", "seed-fixture", [rd("cgroups-server", "proc/3001/cgroup"), rd("cgroups-server", "proc/5001/cgroup")])
put("cgroup", "seed-hybrid", [b"12:cpu,cpuacct:/user.slice\n1:name=systemd:/x\n0::/system.slice/a b\\n.service\n",
                              b"0::/\n"])

# ---- targets of raw values and strings ----
import struct


def msr_at(fixture, off):
    p = os.path.join(FIX, fixture, "dev/cpu/0/msr")
    b = open(p, "rb").read()
    return (b[off:off + 8] + bytes(8))[:8]


regs = [0x606, 0x611, 0x611, 0x639, 0x639, 0x619, 0x619, 0x64d, 0x64d]
vals = [msr_at("rapl-msr", r) for r in regs]
adv = list(vals)
for i in (2, 4, 6, 8):
    adv[i] = struct.pack("<Q", struct.unpack("<Q", vals[i])[0] + 123456)
cpuinfo = rd("rapl-msr", "proc/cpuinfo")
put("msr", "seed-fixture", vals + [bytes(8)] * 3 + [cpuinfo])
put("msr", "seed-advanced", adv + [bytes(8)] * 3 + [cpuinfo])
put("msr", "seed-wrap", adv[:1] + [struct.pack("<Q", 0xfffffff0)] + [struct.pack("<Q", 0x10)]
    + adv[3:] + [bytes(8)] * 3 + [cpuinfo])
put("msr", "seed-amd", [bytes(8)] * 9 + [struct.pack("<Q", 0x000a1003), struct.pack("<Q", 5000000),
                                          struct.pack("<Q", 5100000), rd("rapl-amd", "proc/cpuinfo")])

hw = open(os.path.join(HERE, "..", "..", "data", "hwdb.txt"), "rb").read()
recs = [l for l in hw.split(b"\n") if l.startswith(b"cpu ") or l.startswith(b"nic ")]
put("hwdb", "seed-installed", [hw, b"Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", b"e1000e",
                               b"800:0.70,3200:1.05"])
put("hwdb", "seed-records", [b"\n".join(recs[:3] + [r for r in recs if r.startswith(b"nic ")][:2]) + b"\n",
                             b"AMD EPYC 7502 32-Core Processor", b"default", b"800:0.7+1600:0.9"])
put("hwdb", "seed-errors", [b'cpu "X" tdp=abc mhz=1 source="s"\ncpu "Y" tdp=15 mhz=2000 volt=1:2,0:1 source="\\"q\\\\"\n',
                            b"  X  ", b"", b"1:1,1:1"])

for i, s in enumerate([b"0-3,8,10-11", b"500ms", b"1.5s", b"18446744073709551615", b"10us", b"3m",
                       b"42", b"0", b"-1", b"1e400s", b"2h"]):
    put("numbers", "seed-%d" % i, [s])

for i, s in enumerate([[b"rapl:path=powercap", b"path=msr", b"path=auto,tdp=1"],
                       [b"cpu-tdp:tdp=15,volt=800:0.8+3000:1.1", b"share=0.5", b"tdp=x"],
                       [b"nic:sockdiag=off", b"sockdiag=auto", b"events=a+b,events=c"],
                       [b"perf:events=task-clock+context-switches", b"group=off", b""],
                       [b"procfs-cpu"], [b"nic-linear:power=1,speed=1000", b"loopback=on"],
                       [b"rapl-share:idle=2", b"idle=auto"], [b"auto"], [b":x"],
                       [b"cpu-tdp:model=Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz,ftdp=3000"]]):
    put("module_options", "seed-%d" % i, s)

for i, s in enumerate([b"interval=10ms,window=1s,out=/tmp/x-%p,format=csv+json,filter=com/acme/+org.x.,"
                       b"mode=jvmti,net=off,sensors=procfs-cpu+nic,formula=cpu-tdp,quiet,fail=abort,top=5",
                       b"", b"intervl=5ms", b"format=", b"top=1001,fail=abort", b"out=%p%p%p%p%p%p%p%p%p%p%p%p"]):
    put("jalen_options", "seed-%d" % i, [s])


def nlmsg(typ, seq, payload):
    n = 16 + len(payload)
    return struct.pack("<IHHII", n, typ, 2, seq, 0) + payload + bytes((4 - n % 4) % 4)


def diag(cookie, inode, rx, tx, fam=2):
    idm = struct.pack("<BBBB", fam, 1, 0, 0) + struct.pack(">HH", 40000, 443) + bytes([10, 0, 0, 5]) + bytes(12) \
        + bytes([93, 184, 216, 34]) + bytes(12) + struct.pack("<III", 2, cookie & 0xffffffff, cookie >> 32) \
        + struct.pack("<IIIII", 0, 0, 0, 0, inode)
    ti = bytearray(232)
    struct.pack_into("<QQ", ti, 120, tx, rx)
    rta = struct.pack("<HH", 4 + len(ti), 2) + bytes(ti)
    return nlmsg(20, 7, idm + rta)


seqb = struct.pack("<I", 7)
put("sock_diag", "seed-two-and-done", [seqb + diag(11, 50001, 1000, 500) + diag(12, 50002, 7, 9, 10)
                                       + nlmsg(3, 7, struct.pack("<i", 0))])
put("sock_diag", "seed-error", [seqb + nlmsg(2, 7, struct.pack("<i", -13) + bytes(16))])
put("sock_diag", "seed-other-seq", [seqb + nlmsg(20, 8, bytes(72))])

put("ring", "seed-untouched", [b""])
put("ring", "seed-head", [struct.pack("<IB", 64, 8) + struct.pack("<Q", 1000)])
put("ring", "seed-capacity", [struct.pack("<IB", 24, 4) + struct.pack("<I", 0)])
put("ring", "seed-ntargets", [struct.pack("<IB", 4216, 16) + struct.pack("<IIII", 0xffffffff, 7, 0xffffffff, 0xffffffff)])

put("serve", "seed-metrics", [b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"java", b"/system.slice/a.service", b"tdp=15W"])
put("serve", "seed-hostile-names", [b"GET /metrics?x=1&y=%ff HTTP/1.1\r\nHost: x\r\n\r\n",
                                    b'ev"il\\\nn\xc3\xa9\xff', b"/a\xed\xa0\x80b\xf0\x9f\x98\x80", b'a"b\nc'])
put("serve", "seed-head-root", [b"HEAD / HTTP/1.0\r\n\r\n"])
put("serve", "seed-post", [b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"])
put("serve", "seed-not-found", [b"GET /metricsx/../%2e%2e?a[]=b HTTP/1.1\r\nHost: x\r\n\r\n"])


# nvml: the answers of an NVML, call by call (fuzz_nvml.c): a code byte
# (0: success; 0xad: NVML_ERROR_NOT_SUPPORTED), then the call's values.
def nv_str(s):
    return bytes([0, len(s)]) + s


def nv_gpu(uuid, bus, energy, mig, samples, procs):
    b = bytes([0]) + nv_str(uuid) + nv_str(bus) + nv_str(b"NVIDIA H100")  # handle uuid pci name
    b += (bytes([0]) + struct.pack("<Q", energy)) if energy is not None else \
        bytes([0xad]) + bytes(8) + bytes([0]) + struct.pack("<I", 50000)  # energy, else power
    b += bytes([0, mig])  # MIG mode
    if mig:
        b += bytes([0]) + struct.pack("<I", 2) + bytes([0]) + nv_str(b"MIG-a") + bytes([0]) + nv_str(b"MIG-b")
    else:
        b += bytes([0, 0, len(samples)]) + b"".join(struct.pack("<HBBB", p, 9, sm, 1) for p, sm in samples)
    b += bytes([0, 0, len(procs)]) + b"".join(struct.pack("<HQ", p, 1 << 20) for p in procs)
    return b + bytes([0, 0, 0])  # no graphics process


def nv_window(e0, ts_back=False):
    gpus = nv_gpu(b"GPU-0", b"00000000:3B:00.0", e0, 0, [(41, 75), (42, 25)], [41, 42]) \
        + nv_gpu(b"GPU-1", b"00000000:5E:00.0", None, 0, [(43, 40)], [43]) \
        + nv_gpu(b"GPU-2", b"00000000:86:00.0", 7000, 1, [], [44])
    return bytes([0, 0, 3]) + gpus  # count


put("nvml", "seed-three-gpus", [bytes([0]) + nv_window(1000) + nv_window(101000) + nv_window(5)])
put("nvml", "seed-lost", [bytes([0, 0, 0, 2, 0xa5]) + nv_window(1000)])  # 0xa5: GPU_IS_LOST at the handle
put("nvml", "seed-huge-count", [bytes([0, 0, 1]) + struct.pack("<I", 0xffffffff) + bytes([0xa6] * 64)])
