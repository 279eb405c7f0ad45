#!/usr/bin/env python3
"""Writes the fixture replay states of tests/test_cli.c.

For each fixture, states-<fixture>/<k>/ is what changes before tick k
(k = 1, 2, 3; tick 0 is the fixture itself): proc/ and sys/ overlays
written over a copy of the fixture by `powerapi monitor --fixture-states`,
and an optional `remove` list.  Every window is 1 s (--clock-step 1s) and
the CPU times below are in USER_HZ ticks (10 ms), so the expected watts
can be computed by hand: a process's share of the window's capacity
(1 s x online CPUs) times the modelled CPU power.

Run from the repository root:  python3 tests/golden/make_states.py
"""
import os
import re
import shutil

ROOT = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(ROOT, '..', 'fixtures')


def read(fix, rel):
    with open(os.path.join(FIX, fix, rel)) as f:
        return f.read()


class State:
    """The live contents of a fixture's files as ticks go by."""

    def __init__(self, fix):
        self.fix = fix
        self.files = {}

    def get(self, rel):
        if rel not in self.files:
            self.files[rel] = read(self.fix, rel)
        return self.files[rel]

    def put(self, rel, text, out):
        self.files[rel] = text
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # comm names are bytes: surrogateescape carries invalid UTF-8
        with open(path, 'wb') as f:
            f.write(text.encode('utf-8', 'surrogateescape'))


def stat_fields(text):
    """proc(5) stat: fields after the comm (which ends at the LAST ')')."""
    end = text.rindex(')')
    return text[:end + 1], text[end + 2:].split()


def bump_stat(st, out, rel, utime=0, stime=0, cutime=0, cstime=0):
    head, f = stat_fields(st.get(rel))
    # after the comm: f[0] is field 3 (state); utime is field 14
    for field, add in ((14, utime), (15, stime), (16, cutime), (17, cstime)):
        f[field - 3] = str(int(f[field - 3]) + add)
    st.put(rel, head + ' ' + ' '.join(f) + '\n', out)
    # a single-threaded process: its one thread ran the same time
    m = re.match(r'proc/(\d+)/stat$', rel)
    if m and (utime or stime):
        tasks = os.path.join(FIX, st.fix, 'proc', m.group(1), 'task')
        if os.path.isdir(tasks) and os.listdir(tasks) == [m.group(1)]:
            t = 'proc/%s/task/%s/' % (m.group(1), m.group(1))
            bump_stat(st, out, t + 'stat', utime, stime)
            bump_schedstat(st, out, t + 'schedstat',
                           (utime + stime) * 10000000)


def bump_schedstat(st, out, rel, ns):
    f = st.get(rel).split()
    f[0] = str(int(f[0]) + ns)
    st.put(rel, ' '.join(f) + '\n', out)


def bump_proc_stat(st, out, per_cpu):
    """per_cpu: list of (user, system, idle) tick increments per CPU."""
    lines = st.get('proc/stat').split('\n')
    tot = [0, 0, 0]
    for i, l in enumerate(lines):
        m = re.match(r'cpu(\d+) ', l)
        if not m:
            continue
        c = int(m.group(1))
        f = l.split()
        u, s, idle = per_cpu[c]
        f[1] = str(int(f[1]) + u)
        f[3] = str(int(f[3]) + s)
        f[4] = str(int(f[4]) + idle)
        lines[i] = ' '.join(f)
        tot = [tot[0] + u, tot[1] + s, tot[2] + idle]
    for i, l in enumerate(lines):
        if l.startswith('cpu '):
            f = l.split()
            f[1] = str(int(f[1]) + tot[0])
            f[3] = str(int(f[3]) + tot[1])
            f[4] = str(int(f[4]) + tot[2])
            lines[i] = 'cpu  ' + ' '.join(f[1:])
    st.put('proc/stat', '\n'.join(lines), out)


def bump_uptime(st, out, secs, ncpus):
    up, idle = (float(x) for x in st.get('proc/uptime').split())
    st.put('proc/uptime', '%.2f %.2f\n' % (up + secs, idle + secs * ncpus / 2),
           out)


def new_process(st, out, pid, comm, ppid, start_ticks, utime, stime, cgroup):
    base = st.get('proc/1734/stat' if 'vm' in st.fix else 'proc/2210/stat')
    _, f = stat_fields(base)
    f[0] = 'R'
    f[4 - 3] = str(ppid)
    for field, v in ((14, utime), (15, stime), (16, 0), (17, 0),
                     (22, start_ticks), (20, 1)):
        f[field - 3] = str(v)
    text = '%d (%s) %s\n' % (pid, comm, ' '.join(f))
    st.put('proc/%d/stat' % pid, text, out)
    st.put('proc/%d/comm' % pid, comm + '\n', out)
    st.put('proc/%d/cgroup' % pid, '0::%s\n' % cgroup, out)
    st.put('proc/%d/schedstat' % pid,
           '%d 0 1\n' % ((utime + stime) * 10000000), out)
    tdir = 'proc/%d/task/%d/' % (pid, pid)
    st.put(tdir + 'stat', text, out)
    st.put(tdir + 'comm', comm + '\n', out)
    st.put(tdir + 'schedstat', '%d 0 1\n' % ((utime + stime) * 10000000), out)


def fresh(name):
    out = os.path.join(ROOT, 'states-' + name)
    shutil.rmtree(out, ignore_errors=True)
    return out


def vm():
    """vm-nocpufreq: 2 CPUs, no cpufreq; java (1801) is the busy one."""
    fix = 'vm-nocpufreq'
    out = fresh(fix)
    st = State(fix)
    # tick 1: java 90 ticks (threads 1802: 78, 1803: 12), sshd 1733 4,
    # bash 1734 2, journald 351 1; 3 more busy ticks in the kernel.
    d = os.path.join(out, '1')
    bump_stat(st, d, 'proc/1801/stat', 80, 10)
    bump_stat(st, d, 'proc/1801/task/1802/stat', 70, 8)
    bump_schedstat(st, d, 'proc/1801/task/1802/schedstat', 780000000)
    bump_stat(st, d, 'proc/1801/task/1803/stat', 10, 2)
    bump_schedstat(st, d, 'proc/1801/task/1803/schedstat', 120000000)
    bump_stat(st, d, 'proc/1733/stat', 3, 1)
    bump_stat(st, d, 'proc/1734/stat', 1, 1)
    bump_stat(st, d, 'proc/351/stat', 1, 0)
    bump_proc_stat(st, d, [(60, 10, 30), (25, 5, 70)])  # busy 100, idle 100
    bump_uptime(st, d, 1, 2)
    # tick 2: java 150 (1802: 130, 1806 (C2 compiler): 20); a new process
    # "my (odd) app" (pid 1900, born in the window) 25; bash 2.
    d = os.path.join(out, '2')
    bump_stat(st, d, 'proc/1801/stat', 135, 15)
    bump_stat(st, d, 'proc/1801/task/1802/stat', 118, 12)
    bump_schedstat(st, d, 'proc/1801/task/1802/schedstat', 1300000000)
    bump_stat(st, d, 'proc/1801/task/1806/stat', 17, 3)
    bump_schedstat(st, d, 'proc/1801/task/1806/schedstat', 200000000)
    bump_stat(st, d, 'proc/1734/stat', 1, 1)
    new_process(st, d, 1900, 'my (odd) app', 1734, 860480, 20, 5,
                '/user.slice/user-1000.slice/session-3.scope')
    # a name with a quote, a backslash, an invalid byte, UTF-8 and a
    # control character: JSON must stay valid (a sleeping process)
    new_process(st, d, 1950, 'q"b\\\udcff\u00e9\x01', 1734, 860490, 0, 0,
                '/user.slice/user-1000.slice/session-3.scope')
    bump_proc_stat(st, d, [(95, 5, 0), (75, 10, 15)])  # busy 185, idle 15
    bump_uptime(st, d, 1, 2)
    # tick 3: 1900 exits (reaped by bash: cutime), pid 1729 is reused by
    # a new "cron" process; java 40 (1802: 40).
    d = os.path.join(out, '3')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'remove'), 'w') as f:
        f.write('proc/1900\nproc/1729\n')
    bump_stat(st, d, 'proc/1801/stat', 36, 4)
    bump_stat(st, d, 'proc/1801/task/1802/stat', 36, 4)
    bump_schedstat(st, d, 'proc/1801/task/1802/schedstat', 400000000)
    bump_stat(st, d, 'proc/1734/stat', 0, 0, 30, 6)  # 1900: 25 before + 11
    new_process(st, d, 1729, 'cron', 1, 860590, 3, 1, '/system.slice/cron.service')
    bump_proc_stat(st, d, [(30, 6, 64), (14, 4, 82)])  # busy 54, idle 146
    bump_uptime(st, d, 1, 2)


def desktop():
    """desktop-cpufreq: 4 CPUs (i5-6500) with time_in_state per policy."""
    fix = 'desktop-cpufreq'
    out = fresh(fix)
    st = State(fix)

    def tis(d, policy, khz_ticks):
        rel = 'sys/devices/system/cpu/cpufreq/policy%d/stats/time_in_state' % policy
        rows = [l.split() for l in st.get(rel).strip().split('\n')]
        for r in rows:
            r[1] = str(int(r[1]) + khz_ticks.get(int(r[0]), 0))
        st.put(rel, '\n'.join(' '.join(r) for r in rows) + '\n', d)

    # tick 1: "my prog) (x" (3021) spins one CPU at 3.2 GHz, firefox 50%.
    d = os.path.join(out, '1')
    bump_stat(st, d, 'proc/3021/stat', 95, 5)
    bump_stat(st, d, 'proc/3100/stat', 40, 10)
    bump_stat(st, d, 'proc/2188/stat', 3, 2)
    bump_proc_stat(st, d, [(95, 5, 0), (40, 10, 50), (3, 2, 95), (0, 0, 100)])
    tis(d, 0, {3201000: 100})
    tis(d, 1, {2400000: 50, 800000: 50})
    tis(d, 2, {800000: 100})
    tis(d, 3, {800000: 100})
    bump_uptime(st, d, 1, 4)
    # tick 2: everything idles at 800 MHz but firefox (10%).
    d = os.path.join(out, '2')
    bump_stat(st, d, 'proc/3100/stat', 8, 2)
    bump_proc_stat(st, d, [(0, 0, 100), (8, 2, 90), (0, 0, 100), (0, 0, 100)])
    for p in range(4):
        tis(d, p, {800000: 100})
    bump_uptime(st, d, 1, 4)
    # tick 3: 3021 and firefox both spin a CPU at 3.2 GHz.
    d = os.path.join(out, '3')
    bump_stat(st, d, 'proc/3021/stat', 90, 10)
    bump_stat(st, d, 'proc/3100/stat', 85, 15)
    bump_proc_stat(st, d, [(90, 10, 0), (85, 15, 0), (0, 0, 100), (0, 0, 100)])
    tis(d, 0, {3201000: 100})
    tis(d, 1, {3201000: 100})
    tis(d, 2, {800000: 100})
    tis(d, 3, {800000: 100})
    bump_uptime(st, d, 1, 4)


if __name__ == '__main__':
    vm()
    desktop()
