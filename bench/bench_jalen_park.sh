#!/bin/bash
# bench_jalen_park.sh - how much of a pool-like thread's CPU time each
# sampler puts on Unsafe.park (issue 32), against the CPU time measured
# inside park() by the thread's own CPU clock (tests/java/ParkWork.java:
# 10-30 us of work, then park until another thread unparks it).
#
# Usage: bench/bench_jalen_park.sh [BUILD_DIR] [SECONDS] [INTERVAL] [ROUNDS]
#   defaults: build, 6, 4ms, 2
# Environment: JALEN_JAVA_OVERRIDE (default: the build's JDK);
#   ASYNC_PROFILER_LIB adds async-profiler (event=cpu, same interval).
#
# Columns, one JVM each, tools alternating within a round: the measured
# share (CPU time inside park() less one read of the clock, over the
# worker's CPU time, as the program prints it under that tool) and the
# share of the worker's samples (jalen: energy) whose stack holds
# Unsafe.park; jalen with clock=perf (perf's cpu-clock event) and
# clock=timer (POSIX timers on the thread's CPU-time clock).
set -u
BUILD=${1:-build}
SECS=${2:-6}
IV=${3:-4ms}
ROUNDS=${4:-2}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench_jalen_park: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
JAVA=${JALEN_JAVA_OVERRIDE:-$JALEN_JAVA}
AP=${ASYNC_PROFILER_LIB:-}
[ -n "$AP" ] && [ ! -r "$AP" ] && { echo "bench_jalen_park: ASYNC_PROFILER_LIB=$AP not readable: skipped"; AP=; }
[ -z "$AP" ] && echo "bench_jalen_park: ASYNC_PROFILER_LIB not set: async-profiler skipped"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# share of the worker's (lambda$main$0's) stacks that hold Unsafe.park
park_share() {
    awk '$0 ~ /lambda.main.0/ { v = $NF; t += v; if ($0 ~ /Unsafe.park/) p += v }
         END { if (t > 0) printf "%.1f", 100 * p / t; else printf "n/a" }' "$1"
}
echo "JVM: $("$JAVA" -version 2>&1 | head -1); interval $IV; $SECS s per run"
printf "%-22s %12s %12s\n" tool "measured %" "sampled %"
for r in $(seq "$ROUNDS"); do
    for c in perf timer; do
        m=$("$JAVA" "-agentpath:$JALEN_AGENT=mode=cpu,interval=$IV,clock=$c,quiet,out=$TMP/jl" \
            -cp "$JALEN_CLASSES" ParkWork "$SECS" | awk '/^[0-9]/ { printf "%.1f", 100 * $3 }')
        printf "%-22s %12s %12s\n" "jalen clock=$c" "$m" "$(park_share "$TMP/jl/energy.collapsed")"
    done
    if [ -n "$AP" ]; then
        m=$("$JAVA" "-agentpath:$AP=start,event=cpu,interval=$IV,collapsed,file=$TMP/ap.txt" \
            -cp "$JALEN_CLASSES" ParkWork "$SECS" | awk '/^[0-9]/ { printf "%.1f", 100 * $3 }')
        printf "%-22s %12s %12s\n" "async-profiler" "$m" "$(park_share "$TMP/ap.txt")"
    fi
    m=$("$JAVA" -cp "$JALEN_CLASSES" ParkWork "$SECS" | awk '/^[0-9]/ { printf "%.1f", 100 * $3 }')
    printf "%-22s %12s %12s\n" "no profiler" "$m" "-"
done
