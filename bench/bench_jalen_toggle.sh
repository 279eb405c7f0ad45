#!/bin/bash
# bench_jalen_toggle.sh - what the agent's run-time work costs, weighed in
# one and the same JVM: its stack samples, socket counting and windows
# switched off and on between bursts of wrk on an embedded Jetty 9.
#
# Usage: bench/bench_jalen_toggle.sh [BUILD_DIR] [JVMS] [CYCLES] [BURST] [WARMUP]
#   BUILD_DIR  the CMake build folder (default: build).
#   JVMS       fresh JVMs, one after another (default 4).
#   CYCLES     cycles per JVM (default 20): one burst with the agent's work
#              on and one with it off, the order alternating.
#   BURST      seconds of one wrk burst (default 2).
#   WARMUP     seconds of load before the first cycle (default 20).
# JALEN_BENCH_CONFIG: the agent's options (default mode=cpu,interval=10ms).
#
# bench_jalen_interleaved.sh compares JVMs with and without the agent; two
# JVMs differ by a few percent whatever the agent does (what the JIT made of
# each), which takes dozens of rounds to average out.  Here the agent is
# loaded the whole time and its run-time work is paused through the
# benchmark hook JALEN_BENCH_PAUSE_FILE (while the file exists: no stack
# samples, the SIGPROF handler returns at once; no socket counting, the
# wrappers call the JDK's natives and return; no windows), so each on/off
# pair runs the same compiled code a few seconds apart.  What the pause
# leaves in place (the agent loaded, its JVMTI events and capabilities, the
# code compiled for it, the timers' signals) is not in this figure: the
# interleaved benchmark's overhead minus this one is that part.
# CPU time: the sum over the JVM's threads of the scheduler's
# se.sum_exec_runtime (/proc/<pid>/task/*/sched, nanoseconds), read before
# and after each burst; overhead per pair = (CPU/request on) / (CPU/request
# off) - 1; reported: median and mean over the pairs (each JVM's first pair
# dropped: it follows the warm-up), each with a 90 % bootstrap interval.
set -u
BUILD=${1:-build}
NJVM=${2:-4}
CYCLES=${3:-20}
BURST=${4:-2}
WARM=${5:-20}
JB_NAME=bench_jalen_toggle
# shellcheck source=bench/jalen_bench_lib.sh
. "$(dirname "$0")/jalen_bench_lib.sh"
[ "$(nproc)" -ge 2 ] || { echo "$JB_NAME: needs 2 CPUs (the JVM on one, wrk on the other)" >&2; exit 2; }
[ -r /proc/self/sched ] || { echo "$JB_NAME: /proc/<pid>/sched not available (kernel without CONFIG_SCHED_DEBUG)" >&2; exit 2; }
OPTS=${JALEN_BENCH_CONFIG:-mode=cpu,interval=10ms}
PAUSE="$TMP/paused"
JPID=""
cleanup() {
    [ -n "$JPID" ] && kill -9 "$JPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# "tid nanoseconds" per thread of process $1
run_ns() {
    local f t
    for f in /proc/"$1"/task/*/sched; do
        t=${f%/sched}
        awk -v t="${t##*/}" '/^se.sum_exec_runtime/ { printf "%s %.0f\n", t, $3 * 1e6 }' "$f" 2>/dev/null
    done
}

echo "$JB_NAME: Jetty 9 + wrk -t2 -c16 on 127.0.0.1, agent $OPTS; $NJVM JVMs on CPU 0 (wrk on CPU 1), ${WARM}s of warm-up each, then $CYCLES cycles of a ${BURST}s burst with the agent's run-time work on and one with it paused"
for j in $(seq 1 "$NJVM"); do
    rm -f "$PAUSE" "$TMP/jetty.out"
    JALEN_BENCH_PAUSE_FILE=$PAUSE taskset -c 0 "$JALEN_JAVA" -Xms256m -Xmx256m -XX:+AlwaysPreTouch \
        "-agentpath:$JALEN_AGENT=$OPTS,quiet,out=$TMP/out" -cp "$JALEN_JETTY_CP" JettyServer 0 \
        >"$TMP/jetty.out" 2>"$TMP/jetty.err" &
    JPID=$!
    port=""
    for _ in $(seq 1 600); do
        port=$(awk '/^READY/ { print $2 }' "$TMP/jetty.out" 2>/dev/null)
        [ -n "$port" ] && break
        kill -0 "$JPID" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "$JB_NAME: Jetty did not start: $(tr '\n' ' ' <"$TMP/jetty.err")" >&2; exit 1; }
    taskset -c 1 wrk -t2 -c16 -d"${WARM}s" "http://127.0.0.1:$port/hello" >/dev/null 2>&1
    for c in $(seq 1 "$CYCLES"); do
        if ((c % 2)); then order="on off"; else order="off on"; fi
        for st in $order; do
            if [ "$st" = off ]; then : >"$PAUSE"; else rm -f "$PAUSE"; fi
            sleep 0.2 # the agent looks at the file 20 times a second
            run_ns "$JPID" >"$TMP/ns0"
            taskset -c 1 wrk -t2 -c16 -d"${BURST}s" "http://127.0.0.1:$port/hello" >"$TMP/wrk.txt" 2>&1
            run_ns "$JPID" >"$TMP/ns1"
            n=$(awk '/ requests in / { print $1 }' "$TMP/wrk.txt")
            [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "$JB_NAME: wrk failed: $(tr '\n' ' ' <"$TMP/wrk.txt")" >&2; exit 1; }
            ns=$(awk 'NR == FNR { a[$1] = $2; next } { d += $2 - a[$1] } END { printf "%.0f\n", d }' "$TMP/ns0" "$TMP/ns1")
            echo "$j $c $st $ns $n" >>"$TMP/bursts"
            [ -n "${JALEN_BENCH_RAW:-}" ] && echo "$j $c $st $ns $n" >>"$JALEN_BENCH_RAW"
        done
    done
    rm -f "$PAUSE"
    kill -TERM "$JPID" 2>/dev/null
    wait "$JPID" 2>/dev/null
    JPID=""
    echo "  JVM $j: $CYCLES pairs done"
done

python3 - "$TMP/bursts" <<'PY'
import random, statistics, sys
per = {}
for line in open(sys.argv[1]):
    j, c, st, ns, n = line.split()
    per.setdefault((j, c), {})[st] = (int(ns), int(n))
pairs = [v for k, v in per.items() if k[1] != "1" and "on" in v and "off" in v]
x = [100 * (v["on"][0] / v["on"][1]) / (v["off"][0] / v["off"][1]) - 100 for v in pairs]
rng = random.Random(1)
def boot(f):
    bs = sorted(f(rng.choices(x, k=len(x))) for _ in range(4000))
    return f"{f(x):+.2f} % ({bs[200]:+.2f}..{bs[3799]:+.2f})"
def us(st):
    return statistics.median(v[st][0] / v[st][1] / 1000 for v in pairs)
def rps(st):
    return statistics.median(v[st][1] for v in pairs)
print(f"the agent's run-time work, CPU per request with it on against paused, {len(x)} pairs:")
print(f"  median {boot(statistics.median)}   mean {boot(statistics.mean)}   "
      f"min..max {min(x):+.1f}..{max(x):+.1f}")
print(f"  CPU per request (medians): on {us('on'):.3f} us, paused {us('off'):.3f} us; "
      f"requests per burst: on {rps('on'):.0f}, paused {rps('off'):.0f}")
PY
