#!/bin/bash
# bench_jalen_cost.sh - jalen's cost per stack sample and its fixed cost,
# apart, beside async-profiler's, measured in the same interleaved run.
#
# Usage: bench/bench_jalen_cost.sh [BUILD_DIR] [ROUNDS] [SHORT] [LONG]
#   BUILD_DIR  the CMake build folder (default: build): libjalen.so and the
#              FixedWork workload (jalen-agent/tests/java/FixedWork.java).
#   ROUNDS     rounds (default 6); each round runs every configuration at
#              both lengths, a fresh JVM each, the order rotating.
#   SHORT LONG the two lengths of the same work, in rounds of FixedWork
#              (defaults 150000 and 750000: about 1 and 5 s of CPU).
# Environment:
#   ASYNC_PROFILER_LIB  libasyncProfiler.so, the peer (built from its public
#              source: make -j2 JAVA_HOME=...); without it, jalen alone.
#   JALEN_COST_SHAPES   "THREADSxDEPTH ..." (default "2x40"; "none": the
#              Jetty leg alone).
#   JALEN_COST_INTERVAL the sampling interval of both profilers (default 1ms).
#   JALEN_COST_AGENT    the libjalen.so to measure (default the build's; a
#              copy keeps a rebuild during the run out of it).
#   JALEN_BEFORE_AGENT  another libjalen.so (an earlier build), measured as
#              "jalen-before" in the same rounds, to show a change.
#   JALEN_COST_JETTY    ROUNDS: then the same profilers at the same interval
#              on Jetty under wrk (bench_jalen_interleaved.sh), CPU per
#              request beside no profiler's (default 0: left out).
#   JALEN_TIMED_AGENT   a libjalen.so built with -DJL_TIME_HANDLER: run once
#              a round at the long length (outside the figures above), its
#              summary.json gives the handler's own time per sample
#              (mean, median, p99, the share of its time in samples of 50
#              us or more) to print beside the cost per sample; with
#              async-profiler, the peer runs once a round too, with
#              features=stats: the mean time of its stack walk and storing
#              per sample (its own log), printed beside jalen's.  It is
#              also "floor", a configuration of the rounds: the same agent
#              with JALEN_TIME_EMPTY=1, whose handler returns at once, so
#              its cost per sample is perf's clock and the signal alone,
#              what any profiler that samples with them pays (its samples:
#              the handler's calls).
#
# The figure is the CPU time of the whole JVM (utime + stime of the child,
# /usr/bin/time), so everything a profiler costs counts: loading, its
# threads, the signals, the handler, the JIT's extra debug information,
# writing its outputs at exit.  Samples: jalen's summary.json "samples",
# async-profiler's collapsed counts.  With two lengths of the same work
# W_S and W_L, and the medians over the rounds:
#   cost per sample = ((cpu_L - cpu_S) - (none_L - none_S)) / (n_L - n_S)
#   fixed cost      = (cpu_S - none_S) - cost per sample x n_S
# each with a 90 % bootstrap interval (rounds resampled).  Every JVM runs
# with -XX:+DebugNonSafepoints (jalen asks for it; async-profiler is given
# the same), -Xmx256m.  RSS: the peak (maxrss) beside no profiler's.
# $res (a run's figures) is split into printf's fields on purpose
# shellcheck disable=SC2086
set -u
BUILD=${1:-build}
ROUNDS=${2:-6}
SHORT=${3:-150000}
LONG=${4:-750000}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench_jalen_cost: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
[ -x /usr/bin/time ] || { echo "bench_jalen_cost: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
[ -r "$JALEN_CLASSES/FixedWork.class" ] || { echo "bench_jalen_cost: FixedWork.class not in $JALEN_CLASSES: build first" >&2; exit 2; }
IV=${JALEN_COST_INTERVAL:-1ms}
AP=${ASYNC_PROFILER_LIB:-}
if [ -n "$AP" ] && [ ! -r "$AP" ]; then
    echo "bench_jalen_cost: ASYNC_PROFILER_LIB=$AP not readable: async-profiler left out"
    AP=
fi
[ -z "$AP" ] && echo "bench_jalen_cost: ASYNC_PROFILER_LIB not set: jalen alone (point it to libasyncProfiler.so to compare)"
TIMED=${JALEN_TIMED_AGENT:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
JOPTS=(-Xmx256m -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)
AGENT=${JALEN_COST_AGENT:-$JALEN_AGENT}
BEFORE=${JALEN_BEFORE_AGENT:-}
# powerapi.jar (the MXBean) for every agent, as an installed one finds it
# beside itself: a copied agent would run without it
if [ -z "${JALEN_MXBEAN_JAR:-}" ] && [ -r "$BUILD/bindings/java/powerapi.jar" ]; then
    export JALEN_MXBEAN_JAR=$BUILD/bindings/java/powerapi.jar
fi
CONFIGS=(none jalen)
[ -n "$BEFORE" ] && CONFIGS+=(jalen-before)
[ -n "$AP" ] && CONFIGS+=(async-profiler)
[ -n "$TIMED" ] && CONFIGS+=(floor)

# one_run CONFIG THREADS DEPTH LENGTH -> "cpu_s samples maxrss_kib wall_s"
one_run() {
    local agent=() out="$TMP/out" n=0 envs=()
    rm -rf "$out" "$out.collapsed"
    case $1 in
        floor)
            agent=("-agentpath:$TIMED=mode=cpu,interval=$IV,quiet,out=$out")
            envs=(JALEN_TIME_EMPTY=1)
            ;;
        jalen) agent=("-agentpath:$AGENT=mode=cpu,interval=$IV,quiet,out=$out") ;;
        jalen-before) agent=("-agentpath:$BEFORE=mode=cpu,interval=$IV,quiet,out=$out") ;;
        timed) agent=("-agentpath:$TIMED=mode=cpu,interval=$IV,quiet,out=$out") ;;
        async-profiler) agent=("-agentpath:$AP=start,event=cpu,interval=$IV,collapsed,file=$out.collapsed") ;;
        ap-timed) agent=("-agentpath:$AP=start,event=cpu,interval=$IV,collapsed,file=$out.collapsed,features=stats,loglevel=INFO") ;;
    esac
    env "${envs[@]}" /usr/bin/time -o "$TMP/time" -f '%U %S %M %e' "$JALEN_JAVA" "${JOPTS[@]}" "${agent[@]}" \
        -cp "$JALEN_CLASSES" FixedWork "$2" "$3" "$4" >"$TMP/stdout" 2>"$TMP/err" ||
        { echo "bench_jalen_cost: $1 failed: $(tail -3 "$TMP/err")" >&2; return 1; }
    case $1 in
        jalen | jalen-before | timed) n=$(sed -n 's/.*"samples": *\([0-9]*\).*/\1/p' "$out/summary.json") ;;
        async-profiler | ap-timed) n=$(awk '{ s += $NF } END { print s + 0 }' "$out.collapsed") ;;
        floor) n=$(sed -n 's/.*"handler_timed_samples": *\([0-9]*\).*/\1/p' "$out/summary.json") ;;
    esac
    [ "$1" = timed ] && sed -n 's/.*"handler_\(us_median\|us_p99\|us_mean\|slow_share\)": *\([0-9.]*\).*/\2/p' "$out/summary.json" |
        paste -sd' ' >>"$TMP/handler"
    # async-profiler's own figure: its stack walk and the storing of the
    # trace, a mean (not its whole handler: its entry and perf's ioctls)
    [ "$1" = ap-timed ] && sed -n 's/.*Collected [0-9]* stacks, avg time = \([0-9]*\) ns.*/\1/p' "$TMP/stdout" "$TMP/err" |
        head -1 >>"$TMP/ap-handler"
    awk -v n="${n:-0}" '{ printf "%.3f %d %d %.2f\n", $1 + $2, n, $3, $4 }' "$TMP/time"
}

echo "bench_jalen_cost: FixedWork (lengths $SHORT and $LONG), interval $IV, $ROUNDS rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "JVM: $("$JALEN_JAVA" -version 2>&1 | head -1)"
for shape in ${JALEN_COST_SHAPES:-2x40}; do
    [ "$shape" = none ] && continue # the Jetty leg alone
    th=${shape%x*} dp=${shape#*x}
    rm -f "$TMP"/res.* "$TMP/handler" "$TMP/ap-handler"
    echo
    echo "== $th threads, depth $dp"
    one_run none "$th" "$dp" "$SHORT" >/dev/null || exit 1 # warms the page cache
    cells=()
    for c in "${CONFIGS[@]}"; do cells+=("$c:$SHORT" "$c:$LONG"); done
    NC=${#cells[@]}
    for r in $(seq 1 "$ROUNDS"); do
        for k in $(seq 0 $((NC - 1))); do
            cell=${cells[$(((k + r - 1) % NC))]}
            res=$(one_run "${cell%:*}" "$th" "$dp" "${cell#*:}") || res=$(one_run "${cell%:*}" "$th" "$dp" "${cell#*:}") || exit 1
            echo "$r $res" >>"$TMP/res.$cell"
            printf '  round %d %-15s %7s rounds: cpu %7s s  samples %6s  maxrss %7s KiB  wall %6s s\n' "$r" "${cell%:*}" "${cell#*:}" $res
        done
        if [ -n "$TIMED" ]; then
            res=$(one_run timed "$th" "$dp" "$LONG") && printf '  round %d %-15s %7s rounds: cpu %7s s  samples %6s  maxrss %7s KiB  wall %6s s\n' "$r" timed "$LONG" $res
            if [ -n "$AP" ]; then
                res=$(one_run ap-timed "$th" "$dp" "$LONG") && printf '  round %d %-15s %7s rounds: cpu %7s s  samples %6s  maxrss %7s KiB  wall %6s s\n' "$r" ap-timed "$LONG" $res
            fi
        fi
    done
    python3 - "$TMP" "$SHORT" "$LONG" "${CONFIGS[@]}" <<'PY'
import os, random, statistics as st, sys
tmp, S, L, cfgs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def load(c, n):
    return {int(l.split()[0]): [float(x) for x in l.split()[1:]] for l in open(f"{tmp}/res.{c}:{n}")}
runs = {c: (load(c, S), load(c, L)) for c in cfgs}
rounds = sorted(set.intersection(*[set(runs[c][0]) & set(runs[c][1]) for c in cfgs]))
def med(c, k, col, rs):
    return st.median(runs[c][k][r][col] for r in rs)
def est(c, rs):
    cs, cl = med(c, 0, 0, rs) - med("none", 0, 0, rs), med(c, 1, 0, rs) - med("none", 1, 0, rs)
    ns, nl = med(c, 0, 1, rs), med(c, 1, 1, rs)
    per = (cl - cs) / (nl - ns) if nl > ns else float("nan")
    return per * 1e6, cs - per * ns, 100 * (med(c, 1, 0, rs) / med("none", 1, 0, rs) - 1)
rng = random.Random(1)
def interval(c, i):
    v = sorted(est(c, rng.choices(rounds, k=len(rounds)))[i] for _ in range(2000))
    return v[len(v) // 20], v[-len(v) // 20 - 1]
print(f"\n{'':15} {'cost per sample (us)':>28} {'fixed cost (s)':>28} {'CPU over none, long':>20} {'samples S/L':>14} {'maxrss over none (MiB)':>23}")
base_rss = st.median(runs["none"][1][r][2] for r in rounds)
print(f"{'none':15} {'':>28} {'':>28} {'%.2f s' % med('none', 1, 0, rounds):>20} {'':>14} {'%.1f MiB' % (base_rss / 1024):>23}")
for c in cfgs[1:]:
    per, fix, ov = est(c, rounds)
    plo, phi = interval(c, 0)
    flo, fhi = interval(c, 1)
    rss = (st.median(runs[c][1][r][2] for r in rounds) - base_rss) / 1024
    n = f"{med(c, 0, 1, rounds):.0f}/{med(c, 1, 1, rounds):.0f}"
    print(f"{c:15} {'%6.1f (%.1f..%.1f)' % (per, plo, phi):>28} {'%6.3f (%.3f..%.3f)' % (fix, flo, fhi):>28} {'%+.1f %%' % ov:>20} {n:>14} {'%+.1f' % rss:>23}")
# each cost per sample over async-profiler's, both from the same resampled
# rounds (the issue's bound: jalen's at most half of the peer's)
if "async-profiler" in cfgs:
    for c in cfgs[1:]:
        if c == "async-profiler":
            continue
        def ratio(rs):
            a = est("async-profiler", rs)[0]
            return est(c, rs)[0] / a if a > 0 else float("nan")
        v = sorted(ratio(rng.choices(rounds, k=len(rounds))) for _ in range(2000))
        v = [x for x in v if x == x]
        if v:
            print(f"{c}'s cost per sample over async-profiler's: {ratio(rounds):.2f} ({v[len(v) // 20]:.2f}..{v[-len(v) // 20 - 1]:.2f})")
if os.path.exists(f"{tmp}/handler"):
    h = [list(map(float, l.split())) for l in open(f"{tmp}/handler") if len(l.split()) == 4]
    if h:
        print(f"jalen's handler alone (timing build, long length, {len(h)} runs): mean {st.median(x[2] for x in h):.1f} us, median {st.median(x[0] for x in h):.1f} us, p99 {st.median(x[1] for x in h):.1f} us a sample, {100 * st.median(x[3] for x in h):.0f} % of its time in samples of 50 us or more (medians over the runs)")
if os.path.exists(f"{tmp}/ap-handler"):
    a = [float(l) / 1000 for l in open(f"{tmp}/ap-handler") if l.strip()]
    if a:
        print(f"async-profiler's stack walk and storing (features=stats, long length, {len(a)} runs): mean {st.median(a):.1f} us a sample (median over the runs; {min(a):.1f}..{max(a):.1f})")
PY
done

# Jetty under wrk (JALEN_COST_JETTY=ROUNDS, 0 or unset: left out):
# bench_jalen_interleaved.sh's pinned JVMs, each profiler at the same
# interval beside no profiler, CPU per request; its agent threads column
# is jalen's own threads (the peer's are not told apart).
if [ "${JALEN_COST_JETTY:-0}" -gt 0 ]; then
    echo
    echo "== Jetty under wrk, interval $IV, ${JALEN_COST_JETTY} rounds (bench_jalen_interleaved.sh)"
    dns="@-XX:+UnlockDiagnosticVMOptions@-XX:+DebugNonSafepoints" # both profilers, as above
    cfgs="none;mode=cpu,interval=$IV$dns"
    [ -n "$AP" ] && cfgs="$cfgs;async-profiler:start,event=cpu,interval=$IV,collapsed$dns"
    ASYNC_PROFILER_LIB=$AP JALEN_BENCH_CONFIGS="$cfgs;none-again" \
        "$(dirname "$0")/bench_jalen_interleaved.sh" "$BUILD" "$JALEN_COST_JETTY" 2 5 10
fi
