#!/bin/bash
# bench_jalen_trace.sh - what trace= costs per call (DESIGN.md 11.2): an
# empty static method called in a tight loop (TraceWork bench: best of 7
# rounds of N calls), in ns per call, traced (trace=TraceWork.nop) beside
# the same JVM with the agent and no trace, and without the agent: the
# three alternated, ROUNDS times, in one run.
# Usage: bench/bench_jalen_trace.sh [BUILD_DIR] [ROUNDS] [N]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-3}
N=${3:-2000000}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench: $ENVF not found: build first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
[ -r "$(dirname "$JALEN_AGENT")/jalen-trace.jar" ] || { echo "bench: jalen-trace.jar not built (libasm-java?)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ns() { "$@" | sed -n 's/^nop: \([0-9.]*\) ns.*/\1/p'; }
for r in $(seq "$ROUNDS"); do
    a=$(ns "$JALEN_JAVA" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    b=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/u$r,quiet" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    c=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/t$r,quiet,trace=TraceWork.nop" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    echo "round $r: traced $c ns/call; untraced $b ns/call (agent loaded), $a ns/call (no agent): cost $(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.1f", c - b }') ns per call"
done
