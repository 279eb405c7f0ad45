#!/bin/bash
# bench_jalen.sh - overhead of the jalen agent on an embedded Jetty 9 under wrk.
#
# Usage: bench/bench_jalen.sh [BUILD_DIR] [RUNS] [SECONDS] [WARMUP]
#   BUILD_DIR  the CMake build folder (default: build); needs libjalen.so, the
#              Jetty workload (Debian libjetty9-java) and wrk.
#   RUNS       measured runs per configuration (default 5), a fresh JVM each,
#              configurations alternating run after run.
#   SECONDS    measured wrk run (default 5).
#   WARMUP     wrk warm-up before it (default 20 s).  The JIT compiler
#              threads, pinned with the JVM to one CPU, used 5-9 us per
#              request in the first 5 s of load, 1.3-3.3 in the next 5,
#              0.2-1.4 from 10 to 15 s and under 0.35 after 15 s, with or
#              without the agent (on a busy host still 1.0-1.5 after
#              20 s); with the agent they also record debug
#              information at non-safepoints (the price of exact inlined
#              frames, see CompiledMethodLoad in events.c), so a measure
#              inside the first 15 s counts compile work a server in its
#              steady state does not do.  The CPU time without the
#              compiler threads is printed as well.
#
# Runs a minute apart differ here by several percent, more than the agent's
# cost: bench_jalen_interleaved.sh measures the same figure with the JVMs of
# all configurations side by side, loaded in turn, which pairs that noise
# out; this script also measures start-up, RSS and two direct costs.
#
# On shared 2-vCPU machines requests/s swings by tens of percent from run to
# run, so the figure that counts is the JVM's CPU time per request
# (utime+stime of /proc/<pid>/stat over the measured run, divided by the
# requests served).  Printed: per configuration the median CPU time per
# request and its overhead against no agent (each run against the no-agent
# run of its round: median, and min..max over the rounds), requests/s, RSS
# (heap fixed and pre-touched, so the difference to no agent is the
# agent's), and the agent's own tables as it counts them (summary.json
# agent_memory_bytes); then the ratio of medians against every no-agent run
# with a bootstrap interval, beside the floor (the second no-agent
# configuration against the first); then the start-up time the agent adds
# (median of alternating `java Hello` runs) and the time its exit adds.
set -u
BUILD=${1:-build}
RUNS=${2:-5}
SECS=${3:-5}
WARM=${4:-20}
JB_NAME=bench_jalen
# shellcheck source=bench/jalen_bench_lib.sh
. "$(dirname "$0")/jalen_bench_lib.sh"
trap 'rm -rf "$TMP"' EXIT
# The JVM runs on CPU 0 and wrk on CPU 1 (JALEN_BENCH_PIN=0: both float).
# Pinned, two fresh JVMs without the agent differed by 12.4..14.2 us per
# request over 6 rounds, floating by 12.1..16.0: the floor falls from
# about +-5 % to +-3 %.  Pinned, the JVM sees one CPU (it then picks the
# serial GC and fewer compiler threads), the same for every configuration.
JPIN=() WPIN=()
if [ "${JALEN_BENCH_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ]; then
    JPIN=(taskset -c 0) WPIN=(taskset -c 1)
fi

# one_run CONFIG -> "cpu_us_per_req req_per_s rss_mib tables_mib cpu_us_per_req_without_jit"
one_run() {
    local cfg=${1%%@*} jvm=() agent=() out="$TMP/out.$RANDOM"
    [[ $1 == *@* ]] && IFS='@' read -r -a jvm <<<"${1#*@}"
    [[ $cfg != none* ]] && agent=("-agentpath:$JALEN_AGENT=$cfg,quiet,out=$out")
    # a fixed, pre-touched heap: RSS then differs by what the agent adds
    "${JPIN[@]}" "$JALEN_JAVA" -Xms256m -Xmx256m -XX:+AlwaysPreTouch "${jvm[@]}" "${agent[@]}" -cp "$JALEN_JETTY_CP" JettyServer 0 >"$TMP/jetty.out" 2>"$TMP/jetty.err" &
    local pid=$! port="" i
    for i in $(seq 1 300); do
        port=$(awk '/^READY/ { print $2 }' "$TMP/jetty.out" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "bench_jalen: Jetty did not start ($cfg)" >&2; kill -9 $pid; return 1; }
    "${WPIN[@]}" wrk -t2 -c16 -d"${WARM}s" "http://127.0.0.1:$port/hello" >/dev/null 2>&1
    local c0 c1 reqs rps rss
    jit_ticks $pid >"$TMP/jit0"
    c0=$(cpu_ticks $pid)
    "${WPIN[@]}" wrk -t2 -c16 -d"${SECS}s" "http://127.0.0.1:$port/hello" >"$TMP/wrk.txt" 2>&1
    c1=$(cpu_ticks $pid)
    jit_ticks $pid >"$TMP/jit1"
    # compiler threads' ticks over the run (one started meanwhile from 0)
    local jit
    jit=$(ticks_delta "$TMP/jit0" "$TMP/jit1")
    rss=$(rss_kb $pid)
    kill -TERM $pid
    wait $pid 2>/dev/null
    local mem=0
    [ -r "$out/summary.json" ] && mem=$(awk -F': ' '/"agent_memory_bytes"/ { sub(/,/, "", $2); print $2 }' "$out/summary.json")
    rm -rf "$out"
    reqs=$(awk '/ requests in / { print $1 }' "$TMP/wrk.txt")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$TMP/wrk.txt")
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || { echo "bench_jalen: wrk failed ($cfg): $(tr '\n' ' ' <"$TMP/wrk.txt")" >&2; return 1; }
    awk -v c=$((c1 - c0)) -v j="$jit" -v t="$TCK" -v n="$reqs" -v r="$rps" -v m="$rss" -v a="${mem:-0}" \
        'BEGIN { printf "%.3f %.0f %.1f %.2f %.3f\n", 1e6 * c / t / n, r, m / 1024, a / 1048576, 1e6 * (c - j) / t / n }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "bench_jalen: Jetty 9 + wrk -t2 -c16 on 127.0.0.1, $RUNS runs x ${SECS}s (after ${WARM}s of warm-up) per configuration, alternating, $(nproc) CPUs"
echo "warm-up run (discarded)"
one_run none >/dev/null || exit 1
NCFG=${#CONFIGS[@]}
for r in $(seq 1 "$RUNS"); do
    # the order rotates every round, so that no configuration always runs
    # in the same place (right after a JVM exits, say): a fixed order
    # biased one place by several percent
    for k in $(seq 0 $((NCFG - 1))); do
        c=$(((k + r - 1) % NCFG))
        # one retry: a run can fail on a machine this busy
        res=$(one_run "${CONFIGS[$c]}") || res=$(one_run "${CONFIGS[$c]}") || exit 1
        echo "$res" >>"$TMP/res.$c"
        # JALEN_BENCH_RAW=FILE keeps every run ("configuration figures"),
        # to pool several sessions' runs
        [ -n "${JALEN_BENCH_RAW:-}" ] && echo "${CONFIGS[$c]} $res" >>"$JALEN_BENCH_RAW"
        printf '  run %d %-34s cpu/req %8s us  req/s %7s  rss %7s MiB  agent tables %5s MiB  without JIT %8s us\n' "$r" "${CONFIGS[$c]}" $res
    done
done

base_rss=$(awk '{ print $3 }' "$TMP/res.0" | median)
echo
printf '%-34s %14s %30s %10s %10s %10s %12s\n' configuration "cpu/req (us)" "paired overhead med (min..max)" "req/s" "RSS MiB" "RSS+ MiB" "tables MiB"
for c in "${!CONFIGS[@]}"; do
    med=$(awk '{ print $1 }' "$TMP/res.$c" | median)
    rps=$(awk '{ print $2 }' "$TMP/res.$c" | median)
    rss=$(awk '{ print $3 }' "$TMP/res.$c" | median)
    tab=$(awk '{ print $4 }' "$TMP/res.$c" | median)
    # paired: each run against the no-agent run of the same round (the
    # rounds alternate, so both saw about the same machine)
    paste -d' ' "$TMP/res.$c" "$TMP/res.0" | awk '{ print 100 * ($1 / $6 - 1) }' >"$TMP/ov.$c"
    ov=$(median <"$TMP/ov.$c")
    lo=$(sort -g "$TMP/ov.$c" | head -1)
    hi=$(sort -g "$TMP/ov.$c" | tail -1)
    printf '%-34s %14.3f %+16.1f%% (%+.1f..%+.1f) %10.0f %10.1f %+10.1f %12.2f\n' "${CONFIGS[$c]}" "$med" "$ov" "$lo" "$hi" "$rps" "$rss" \
        "$(awk -v a="$rss" -v b="$base_rss" 'BEGIN { print a - b }')" "$tab"
done

# The overhead as the ratio of the medians of CPU per request, with a 90 %
# bootstrap interval (runs resampled within each configuration, 4000
# times): the paired figure above carries the noise of both runs of a
# pair, this one the noise of the medians only.  The baseline is every
# no-agent run (all "none*" configurations without "@" pooled); the floor is the same
# figure between the two no-agent configurations: what this method
# reports when there is nothing to find.
echo
python3 - "$TMP" "${CONFIGS[@]}" <<'PY'
import random, statistics, sys
tmp, cfgs = sys.argv[1], sys.argv[2:]
rows = [[l.split() for l in open(f"{tmp}/res.{i}")] for i in range(len(cfgs))]
rng = random.Random(1)
def ratio(r, base):
    est = 100 * (statistics.median(r) / statistics.median(base) - 1)
    bs = sorted(100 * (statistics.median(rng.choices(r, k=len(r))) /
                       statistics.median(rng.choices(base, k=len(base))) - 1)
                for _ in range(4000))
    return f"{est:+6.1f} % ({bs[200]:+.1f}..{bs[3799]:+.1f})"
none = [i for i, c in enumerate(cfgs) if c.startswith("none") and "@" not in c]
for col, what in ((0, "the JVM's CPU per request"),
                  (4, "the same without the JIT compiler threads")):
    runs = [[float(r[col]) for r in rs] for rs in rows]
    base = [v for i in none for v in runs[i]]
    print(f"overhead in {what}: median / median of the {len(base)} no-agent runs - 1,"
          " 90 % bootstrap interval")
    for i, c in enumerate(cfgs):
        if i not in none:
            print(f"  {c:34s} {ratio(runs[i], base)}")
    if len(none) >= 2:
        print(f"  floor: {cfgs[none[1]]} against {cfgs[none[0]]}, both without the agent:"
              f" {ratio(runs[none[1]], runs[none[0]])}")
PY

# JALEN_BENCH_SERVER_ONLY=1 stops here
[ "${JALEN_BENCH_SERVER_ONLY:-0}" = 1 ] && exit 0

# start-up time: java Hello, alternating, 10 runs each.  Start-up is the
# time until Hello's first line reaches the pipe; the whole run (start-up,
# main, and the agent's final write of the output files at VMDeath) apart.
echo
for i in $(seq 1 10); do
    for a in none agent; do
        opts=()
        [ $a = agent ] && opts=("-agentpath:$JALEN_AGENT=quiet,out=$TMP/hello.$i")
        t0=$(date +%s%N)
        "$JALEN_JAVA" "${opts[@]}" -cp "$JALEN_CLASSES" Hello 2>/dev/null |
            { read -r _; date +%s%N >"$TMP/t1"; cat >/dev/null; }
        t2=$(date +%s%N)
        echo $((($(cat "$TMP/t1") - t0) / 1000)) >>"$TMP/start.$a"
        echo $(((t2 - t0) / 1000)) >>"$TMP/whole.$a"
    done
done
s0=$(median <"$TMP/start.none")
s1=$(median <"$TMP/start.agent")
w0=$(median <"$TMP/whole.none")
w1=$(median <"$TMP/whole.agent")
awk -v a="$s0" -v b="$s1" 'BEGIN { printf "start-up (java Hello to its first line, median of 10): %.1f ms without, %.1f ms with the agent: %+.1f ms\n", a / 1000, b / 1000, (b - a) / 1000 }'
awk -v a="$w0" -v b="$w1" 'BEGIN { printf "whole run (java Hello incl. exit and final write, median of 10): %.1f ms without, %.1f ms with the agent: %+.1f ms\n", a / 1000, b / 1000, (b - a) / 1000 }'

# Direct costs, with far less noise than the server: the CPU time of one
# 100-byte loopback write (NetBench, the socket wrappers' cost) and of a
# CPU-bound computation 61 frames deep (SpinBench, the sampling's cost), on
# the measuring thread itself; 5 alternating runs each, medians.
echo
for i in $(seq 1 5); do
    for cfg in none "mode=cpu" "mode=cpu,net=off"; do
        opts=()
        [ "$cfg" != none ] && opts=("-agentpath:$JALEN_AGENT=$cfg,quiet,out=$TMP/nb")
        "$JALEN_JAVA" "${opts[@]}" -cp "$JALEN_CLASSES" NetBench 1000000 >>"$TMP/nb.$cfg"
    done
    for cfg in none "interval=10ms" "interval=1ms"; do
        opts=()
        [ "$cfg" != none ] && opts=("-agentpath:$JALEN_AGENT=$cfg,quiet,out=$TMP/sb")
        "$JALEN_JAVA" "${opts[@]}" -cp "$JALEN_CLASSES" SpinBench >>"$TMP/sb.$cfg"
    done
done
n0=$(median <"$TMP/nb.none")
for cfg in "mode=cpu" "mode=cpu,net=off"; do
    awk -v a="$n0" -v b="$(median <"$TMP/nb.$cfg")" -v c="$cfg" \
        'BEGIN { printf "socket write (100 B, loopback): %.1f ns without, %.1f ns with %s: %+.1f ns (%+.1f%%)\n", a, b, c, b - a, 100 * (b / a - 1) }'
done
s0=$(median <"$TMP/sb.none")
for cfg in "interval=10ms" "interval=1ms"; do
    awk -v a="$s0" -v b="$(median <"$TMP/sb.$cfg")" -v c="$cfg" \
        'BEGIN { printf "CPU-bound, 61 frames deep: %.1f ms without, %.1f ms with mode=cpu,%s: %+.2f%%\n", a, b, c, 100 * (b / a - 1) }'
done
