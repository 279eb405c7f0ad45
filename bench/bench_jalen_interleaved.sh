#!/bin/bash
# bench_jalen_interleaved.sh - the agent's CPU overhead per request on an
# embedded Jetty 9 under wrk, with the host's noise paired out.
#
# Usage: bench/bench_jalen_interleaved.sh [BUILD_DIR] [ROUNDS] [BURST] [CYCLES] [WARMUP]
#   BUILD_DIR  the CMake build folder (default: build), as for bench_jalen.sh.
#   ROUNDS     rounds (default 7); each starts a fresh JVM per configuration.
#   BURST      seconds of one wrk burst (default 2).
#   CYCLES     measured cycles per round (default 10): one burst per
#              configuration each, so BURST x CYCLES measured seconds each.
#   WARMUP     seconds of load per JVM before measuring (default 20), given
#              in bursts round the JVMs as well.
#
# bench_jalen.sh measures one configuration after another, 5 s each, and
# compares runs a minute or more apart; on a shared 2-vCPU host the CPU
# time per request of two runs without the agent then differs by a few
# percent (its "floor").  Here the JVMs of all configurations of a round
# run side by side, all on CPU 0, and wrk (on CPU 1) loads them in turn,
# BURST seconds each, the order rotating every cycle: every configuration
# sees the same minute of the host, in slices a few seconds apart.  A
# round's figure is the sum of its JVM's CPU time (utime+stime of
# /proc/<pid>/stat, read just before and after each burst) over the sum
# of the requests served; the overhead is that figure against the
# geometric mean of the round's JVMs without the agent, one value per
# round; reported: the median and the mean over rounds, each with a 90 %
# bootstrap interval, and min..max, beside the floor (the second JVM
# without the agent, "none-again", against the first).
# A JVM idle between its bursts still runs its own background work (the
# agent's window every second); that work, outside its bursts, is not
# counted against it, while its windows during its bursts are, as on a
# server under constant load.
#
# A configuration "before:OPTIONS" loads the libjalen.so that
# JALEN_BEFORE_AGENT names instead of this build's (an older agent beside
# the new one in the same rounds).  A configuration
# "async-profiler:OPTIONS" loads the peer (ASYNC_PROFILER_LIB) with OPTIONS
# ("start,event=cpu,interval=1ms,collapsed": bench_jalen_cost.sh's Jetty
# leg); its own threads' time is not told apart (agent threads 0).
# JALEN_BENCH_CONFIGS and JALEN_BENCH_RAW as for bench_jalen.sh ("@" adds
# JVM options to a configuration; the first configuration is the baseline;
# none-again is the floor; "paused:mode=cpu" loads the agent with its
# run-time work paused throughout: what being loaded costs); JALEN_BENCH_RAW gets one line per round and
# configuration in bench_jalen.sh's format, plus a sixth column: the CPU
# time of the agent's own threads per request (within the first).
set -u
BUILD=${1:-build}
ROUNDS=${2:-7}
BURST=${3:-2}
CYCLES=${4:-10}
WARM=${5:-20}
JB_NAME=bench_jalen_interleaved
# shellcheck source=bench/jalen_bench_lib.sh
. "$(dirname "$0")/jalen_bench_lib.sh"
[ "$(nproc)" -ge 2 ] || { echo "bench_jalen_interleaved: needs 2 CPUs (the JVMs on one, wrk on the other)" >&2; exit 2; }
PIDS=()
cleanup() {
    [ ${#PIDS[@]} -gt 0 ] && kill -9 "${PIDS[@]}" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
NCFG=${#CONFIGS[@]}

# start CONFIG INDEX: a fresh pinned JVM; sets PID[i] and PORT[i]
declare -a PID PORT
start_jvm() {
    local cfg=${1%%@*} i=$2 jvm=() agent=() pause=""
    [[ $1 == *@* ]] && IFS='@' read -r -a jvm <<<"${1#*@}"
    # "paused:OPTIONS": the agent loaded with OPTIONS, its run-time work
    # paused throughout (JALEN_BENCH_PAUSE_FILE, see bench_jalen_toggle.sh)
    if [[ $cfg == paused:* ]]; then
        cfg=${cfg#paused:}
        pause="$TMP/paused"
        : >"$pause"
    fi
    # "before:OPTIONS": the libjalen.so named by JALEN_BEFORE_AGENT (an
    # older build, as for bench_jalen_recovery.sh) with OPTIONS
    local lib=$JALEN_AGENT
    if [[ $cfg == before:* ]]; then
        cfg=${cfg#before:}
        lib=${JALEN_BEFORE_AGENT:?before: needs JALEN_BEFORE_AGENT=/path/to/libjalen.so}
    fi
    # "async-profiler:OPTIONS": the peer, ASYNC_PROFILER_LIB, with OPTIONS
    # (its collapsed stacks written at exit)
    if [[ $cfg == async-profiler:* ]]; then
        agent=("-agentpath:${ASYNC_PROFILER_LIB:?async-profiler: needs ASYNC_PROFILER_LIB=/path/to/libasyncProfiler.so}=${cfg#async-profiler:},file=$TMP/out.$i.collapsed")
    elif [[ $cfg != none* ]]; then
        agent=("-agentpath:$lib=$cfg,quiet,out=$TMP/out.$i")
    fi
    rm -rf "$TMP/out.$i"
    JALEN_BENCH_PAUSE_FILE=$pause taskset -c 0 "$JALEN_JAVA" -Xms256m -Xmx256m -XX:+AlwaysPreTouch "${jvm[@]}" "${agent[@]}" \
        -cp "$JALEN_JETTY_CP" JettyServer 0 >"$TMP/jetty.$i.out" 2>"$TMP/jetty.$i.err" &
    PID[i]=$!
    PIDS+=("${PID[i]}")
}
wait_ready() {
    local i=$1 k
    for k in $(seq 1 600); do
        PORT[i]=$(awk '/^READY/ { print $2 }' "$TMP/jetty.$i.out" 2>/dev/null)
        [ -n "${PORT[i]}" ] && return 0
        kill -0 "${PID[i]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench_jalen_interleaved: Jetty did not start (${CONFIGS[i]}): $(tr '\n' ' ' <"$TMP/jetty.$i.err")" >&2
    return 1
}
# burst INDEX -> "ticks jit_ticks requests agent_ticks"
burst() {
    local i=$1 c0 c1 n jit ag
    jit_ticks "${PID[i]}" >"$TMP/jit0"
    agent_ticks "${PID[i]}" >"$TMP/ag0"
    c0=$(cpu_ticks "${PID[i]}")
    taskset -c 1 wrk -t2 -c16 -d"${BURST}s" "http://127.0.0.1:${PORT[i]}/hello" >"$TMP/wrk.txt" 2>&1
    c1=$(cpu_ticks "${PID[i]}")
    jit_ticks "${PID[i]}" >"$TMP/jit1"
    agent_ticks "${PID[i]}" >"$TMP/ag1"
    jit=$(ticks_delta "$TMP/jit0" "$TMP/jit1")
    ag=$(ticks_delta "$TMP/ag0" "$TMP/ag1")
    n=$(awk '/ requests in / { print $1 }' "$TMP/wrk.txt")
    [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "bench_jalen_interleaved: wrk failed (${CONFIGS[i]}): $(tr '\n' ' ' <"$TMP/wrk.txt")" >&2; return 1; }
    echo "$((c1 - c0)) $jit $n $ag"
}

echo "bench_jalen_interleaved: Jetty 9 + wrk -t2 -c16 on 127.0.0.1; per round one JVM per configuration side by side on CPU 0, ${WARM}s of warm-up each, then $CYCLES cycles of ${BURST}s bursts; $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
    PIDS=()
    for i in "${!CONFIGS[@]}"; do start_jvm "${CONFIGS[i]}" "$i"; done
    for i in "${!CONFIGS[@]}"; do wait_ready "$i" || exit 1; done
    nwarm=$(((WARM + BURST - 1) / BURST))
    for _ in $(seq 1 "$nwarm"); do
        for i in "${!CONFIGS[@]}"; do
            taskset -c 1 wrk -t2 -c16 -d"${BURST}s" "http://127.0.0.1:${PORT[i]}/hello" >/dev/null 2>&1
        done
    done
    declare -a T J N A
    for i in "${!CONFIGS[@]}"; do T[i]=0 J[i]=0 N[i]=0 A[i]=0; done
    for cyc in $(seq 1 "$CYCLES"); do
        for k in $(seq 0 $((NCFG - 1))); do
            i=$(((k + cyc + r) % NCFG))
            res=$(burst "$i") || exit 1
            read -r t j n a <<<"$res"
            T[i]=$((T[i] + t)) J[i]=$((J[i] + j)) N[i]=$((N[i] + n)) A[i]=$((A[i] + a))
        done
    done
    declare -a RSS
    for i in "${!CONFIGS[@]}"; do RSS[i]=$(rss_kb "${PID[i]}"); done
    kill -TERM "${PIDS[@]}" 2>/dev/null
    wait "${PIDS[@]}" 2>/dev/null
    PIDS=()
    for i in "${!CONFIGS[@]}"; do
        mem=0
        [ -r "$TMP/out.$i/summary.json" ] &&
            mem=$(awk -F': ' '/"agent_memory_bytes"/ { sub(/,/, "", $2); print $2 }' "$TMP/out.$i/summary.json")
        res=$(awk -v c="${T[i]}" -v j="${J[i]}" -v t="$TCK" -v n="${N[i]}" -v s=$((BURST * CYCLES)) \
            -v m="${RSS[i]}" -v a="${mem:-0}" -v g="${A[i]}" \
            'BEGIN { printf "%.3f %.0f %.1f %.2f %.3f %.3f\n", 1e6 * c / t / n, n / s, m / 1024, a / 1048576, 1e6 * (c - j) / t / n, 1e6 * g / t / n }')
        echo "${CONFIGS[i]} $res" >>"$TMP/rounds"
        [ -n "${JALEN_BENCH_RAW:-}" ] && echo "${CONFIGS[i]} $res" >>"$JALEN_BENCH_RAW"
        # shellcheck disable=SC2086
        printf '  round %d %-34s cpu/req %8s us  req/s %7s  rss %7s MiB  agent tables %5s MiB  without JIT %8s us  agent threads %6s us\n' "$r" "${CONFIGS[i]}" $res
    done
done

# one value per round and configuration: the overhead against the round's
# JVMs without the agent (the geometric mean of the plain "none*"
# configurations; the floor compares the second of them with the first);
# median and mean over rounds, each with a 90 % bootstrap interval (rounds
# resampled, 4000 times), and min..max
echo
python3 - "$TMP/rounds" "${CONFIGS[@]}" <<'PY'
import math, random, statistics, sys
path, cfgs = sys.argv[1], sys.argv[2:]
rows = [l.split() for l in open(path)]
n = len(cfgs)
rounds = [{r[0]: [float(v) for v in r[1:]] for r in rows[k:k + n]} for k in range(0, len(rows), n)]
rng = random.Random(1)
none = [c for c in cfgs if c.startswith("none") and "@" not in c] or cfgs[:1]
def boot(x, f):
    bs = sorted(f(rng.choices(x, k=len(x))) for _ in range(4000))
    return f"{f(x):+6.1f} % ({bs[200]:+.1f}..{bs[3799]:+.1f})"
for j, what in ((0, "the JVM's CPU per request"), (4, "the same without the JIT compiler threads")):
    print(f"overhead in {what}, per round against the round's JVMs without the agent "
          f"({' and '.join(none)}), {len(rounds)} rounds:")
    print(f"  {'configuration':34s} {'median (90 % interval)':>26s} {'mean (90 % interval)':>26s}  min..max")
    for c in cfgs:
        if c in none[:1]:
            continue
        if c in none:
            x = [100 * (rd[c][j] / rd[none[0]][j] - 1) for rd in rounds]
            tag = f"  floor: against {none[0]}, no agent either"
        else:
            x = [100 * (rd[c][j] / math.exp(statistics.mean(math.log(rd[b][j]) for b in none)) - 1)
                 for rd in rounds]
            tag = ""
        print(f"  {c:34s} {boot(x, statistics.median):>26s} {boot(x, statistics.mean):>26s}  "
              f"{min(x):+.1f}..{max(x):+.1f}{tag}")
def med(c, j):
    return statistics.median(rd[c][j] for rd in rounds)
print("medians over rounds: CPU per request (us) " + ", ".join(f"{c} {med(c, 0):.3f}" for c in cfgs))
print("  requests/s " + ", ".join(f"{c} {med(c, 1):.0f}" for c in cfgs))
print("  the agent's own threads (jalen-agent, jalen-sampler), CPU per request (us) " +
      ", ".join(f"{c} {med(c, 5):.3f}" for c in cfgs if c not in none))
print("  RSS added (MiB) " + ", ".join(f"{c} {med(c, 2) - med(none[0], 2):+.1f}" for c in cfgs[1:]) +
      "; agent tables (MiB) " + ", ".join(f"{c} {med(c, 3):.2f}" for c in cfgs if c not in none))
PY
