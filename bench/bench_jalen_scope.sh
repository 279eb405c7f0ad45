#!/bin/bash
# bench_jalen_scope.sh - what a jalen scope (org.powerapi.jalen.Scope)
# costs: enter+close in a loop, best of 7 rounds of 200,000, less the same
# loop without scopes, in JVMs with the agent and without it, alternated.
# Usage: bench/bench_jalen_scope.sh [BUILD_DIR] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-3}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench: $ENVF not found: build first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
[ -r "$JALEN_API_JAR" ] || { echo "bench: jalen-api.jar not built" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
CP="$JALEN_CLASSES:$JALEN_API_JAR"
for r in $(seq "$ROUNDS"); do
    "$JALEN_JAVA" -cp "$CP" ScopeWork bench
    "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/r$r,quiet" -cp "$CP" ScopeWork bench
done
