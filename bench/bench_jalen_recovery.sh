#!/bin/bash
# bench_jalen_recovery.sh - stacks where AsyncGetCallTrace alone gives up
# (issue 16): the share of each recovery workload's energy (or samples)
# that a profiler could not put on a Java method, and the share under the
# method every sample should land under, for jalen and, side by side,
# async-profiler when ASYNC_PROFILER_LIB names its libasyncProfiler.so
# (never downloaded: without it that column is skipped with a message).
#
# Usage: bench/bench_jalen_recovery.sh [BUILD_DIR] [SECONDS] [WORKLOADS]
#   BUILD_DIR  the CMake build folder (default: build)
#   SECONDS    run length of each workload (default 5)
#   WORKLOADS  space-separated subset of: arraycopy itable vtable intrinsic
#              time deep (default: all)
# Environment: JALEN_JAVA_OVERRIDE (default: the build's JDK) picks the JVM;
#   ASYNC_PROFILER_LIB the async-profiler library to compare with;
#   JALEN_BEFORE_AGENT another libjalen.so (e.g. built from an older
#   commit) measured the same way, in a "before" column.
#
# Both tools run in the same JVM version, at the same interval (1 ms of CPU
# time), with -XX:+DebugNonSafepoints, on tests/java/Recovery.java, one
# fresh JVM per tool and workload, tools alternating.  jalen's figures come
# from its files: unknown = self energy of [unknown Java] and
# [not walkable ...] over the process's energy (summary.json), expected =
# the inclusive energy of Recovery.<workload>Loop over the energy of the
# workload's thread (threads.csv; the JIT compiler's and the VM's threads
# are not the workload's: on a loaded machine they are most of a short
# run's process).
# async-profiler's come from its collapsed stacks (option threads: the
# root frame names the thread): unknown = samples whose stack holds its
# unknown_Java, not_walkable_Java or not_walkable_not_Java frame (with
# or without brackets)
# over all samples, expected = the workload thread's samples whose stack
# holds Recovery.<workload>Loop over that thread's samples.
set -u
BUILD=${1:-build}
SECS=${2:-5}
WLS=${3:-arraycopy itable vtable intrinsic time deep}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench_jalen_recovery: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
JAVA=${JALEN_JAVA_OVERRIDE:-$JALEN_JAVA}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
JOPTS=(-Xmx256m -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)
AP=${ASYNC_PROFILER_LIB:-}
if [ -z "$AP" ]; then
    echo "bench_jalen_recovery: ASYNC_PROFILER_LIB not set: async-profiler column skipped (point it to libasyncProfiler.so to compare)"
elif [ ! -r "$AP" ]; then
    echo "bench_jalen_recovery: ASYNC_PROFILER_LIB=$AP not readable: async-profiler column skipped"
    AP=
fi
echo "JVM: $("$JAVA" -version 2>&1 | head -1); interval 1 ms; $SECS s per run"

# jalen_run AGENT WORKLOAD -> "unknown_% expected_% samples"
jalen_run() {
    local out="$TMP/jl.$2"
    rm -rf "$out"
    "$JAVA" "${JOPTS[@]}" "-agentpath:$1=mode=cpu,interval=1ms,quiet,out=$out" \
        -cp "$JALEN_CLASSES" Recovery "$2" "$SECS" >/dev/null 2>"$TMP/jl.err" || { echo "fail fail 0"; return; }
    local pj te
    pj=$(sed -n 's/.*"process_energy_j": *\([0-9.eE+-]*\).*/\1/p' "$out/summary.json")
    te=$(awk -F, -v w="$2" '$2 == w { print $4 }' "$out/threads.csv")
    awk -F, -v pj="$pj" -v te="${te:-0}" -v want="Recovery.$2Loop" '
        NR > 1 && ($1 ~ /^\[unknown Java\]/ || $1 ~ /^\[not walkable/) { u += $2 }
        NR > 1 && $1 == want { e = $3 }
        NR > 1 { s += $6 }
        END { if (pj > 0 && te > 0) printf "%.1f %.1f %d\n", 100 * u / pj, 100 * e / te, s; else print "n/a n/a 0" }' \
        "$out/methods.csv"
}

# ap_run WORKLOAD -> "unknown_% expected_% samples"
ap_run() {
    local out="$TMP/ap.$1.collapsed"
    rm -f "$out"
    "$JAVA" "${JOPTS[@]}" "-agentpath:$AP=start,event=cpu,interval=1ms,threads,collapsed,file=$out" \
        -cp "$JALEN_CLASSES" Recovery "$1" "$SECS" >/dev/null 2>"$TMP/ap.err" || { echo "fail fail 0"; return; }
    awk -v want="Recovery.$1Loop" -v th="[$1 tid=" '
        { n = $NF; t += n; st = $0; sub(/ [0-9]+$/, "", st)
          if (st ~ /(^|;)\[?(unknown_Java|not_walkable_Java|not_walkable_not_Java)\]?(;|$)/) u += n
          if (index(st, th) == 1) {
              tt += n
              if (index(st, ";" want ";") || substr(st, length(st) - length(want)) == ";" want) e += n
          } }
        END { if (t > 0 && tt > 0) printf "%.1f %.1f %d\n", 100 * u / t, 100 * e / tt, t; else print "n/a n/a 0" }' "$out"
}

BEFORE=${JALEN_BEFORE_AGENT:-}
printf "%-10s | %-29s | %-29s | %s\n" "" "jalen before" "jalen" "async-profiler"
printf "%-10s | %9s %9s %9s | %9s %9s %9s | %9s %9s %9s\n" workload unknown% expected% samples \
    unknown% expected% samples unknown% expected% samples
for w in $WLS; do
    bu=- be=- bs=-
    [ -n "$BEFORE" ] && read -r bu be bs <<<"$(jalen_run "$BEFORE" "$w")"
    read -r ju je js <<<"$(jalen_run "$JALEN_AGENT" "$w")"
    if [ -n "$AP" ]; then
        read -r au ae as <<<"$(ap_run "$w")"
    else
        au=skipped ae=skipped as=-
    fi
    printf "%-10s | %9s %9s %9s | %9s %9s %9s | %9s %9s %9s\n" "$w" "$bu" "$be" "$bs" "$ju" "$je" "$js" "$au" "$ae" "$as"
done
