#!/bin/bash
# bench_jalen_trace.sh - what trace= costs per call (DESIGN.md 11.2): an
# empty static method called in a tight loop (TraceWork bench: best of 7
# rounds of N calls), in ns per call, traced (trace=TraceWork.nop) beside
# the same JVM with the agent and no trace, and without the agent; and an
# empty native method (NativeBurn.nop, libjalen_testnative.so) traced at
# its call site (trace=NativeBurn.nop) beside the agent without trace: the
# five alternated, ROUNDS times, in one run.
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
ns() { "$@" | sed -n 's/^\(native \)\{0,1\}nop: \([0-9.]*\) ns.*/\2/p'; }
for r in $(seq "$ROUNDS"); do
    a=$(ns "$JALEN_JAVA" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    b=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/u$r,quiet" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    c=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/t$r,quiet,trace=TraceWork.nop" -cp "$JALEN_CLASSES" TraceWork bench "$N")
    echo "round $r: traced $c ns/call; untraced $b ns/call (agent loaded), $a ns/call (no agent): cost $(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.1f", c - b }') ns per call"
    if [ -r "${JALEN_TEST_NATIVE:-}" ]; then
        d=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/nu$r,quiet" -cp "$JALEN_CLASSES" TraceWork bench "$N" "$JALEN_TEST_NATIVE")
        e=$(ns "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/nt$r,quiet,trace=NativeBurn.nop" -cp "$JALEN_CLASSES" TraceWork bench "$N" "$JALEN_TEST_NATIVE")
        echo "round $r: native nop() traced at its call site $e ns/call; untraced $d ns/call (agent loaded): cost $(awk -v e="$e" -v d="$d" 'BEGIN { printf "%.1f", e - d }') ns per call"
    fi
done
