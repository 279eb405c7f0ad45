#!/bin/bash
# bench_jalen_filter.sh - the CPU a request costs with jalen's servlet filter
# (EnergyFilter, jalen-api.jar) and without it: two ScopeServer JVMs side
# by side, both under the agent, one with the filter (server-timing and
# the JSON log on), one without, loaded in turn by wrk (/a, /b, /c/N)
# round after round; each round's CPU time of each JVM (utime + stime)
# over the requests wrk completed.
# Usage: bench/bench_jalen_filter.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-6}
SECS=${3:-2}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench: $ENVF not found: build first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
command -v wrk >/dev/null || { echo "bench: needs wrk" >&2; exit 2; }
[ -n "$JALEN_JETTY_CP" ] && [ -r "$JALEN_API_JAR" ] || { echo "bench: needs libjetty9-java and jalen-api.jar" >&2; exit 2; }
OUT=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"' EXIT
start() { # name extra
    "$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT/$1,quiet" -cp "$JALEN_JETTY_CP:$JALEN_API_JAR" \
        ScopeServer 0 "$OUT/$1.jsonl" $2 >"$OUT/$1.out" 2>"$OUT/$1.err" &
    PIDS+=($!)
}
start filter ""
start bare nofilter
for name in filter bare; do
    for _ in $(seq 300); do grep -q '^READY ' "$OUT/$name.out" && break; sleep 0.1; done
done
port() { awk '/^READY / { print $2 }' "$OUT/$1.out"; }
LUA_PATHS="$(dirname "$0")/../jalen-agent/tests/jetty/paths.lua"
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A pid=([filter]=${PIDS[0]} [bare]=${PIDS[1]})
# a warm-up burst each (JIT), not counted
for name in filter bare; do wrk -t1 -c4 "-d${SECS}s" -s "$LUA_PATHS" "http://127.0.0.1:$(port $name)/" >/dev/null; done
ratios=()
for r in $(seq "$ROUNDS"); do
    order="filter bare"
    [ $((r % 2)) -eq 0 ] && order="bare filter"
    declare -A per
    for name in $order; do
        t0=$(ticks "${pid[$name]}")
        n=$(wrk -t1 -c4 "-d${SECS}s" -s "$LUA_PATHS" "http://127.0.0.1:$(port $name)/" |
            awk '/requests in/ { print $1 }')
        t1=$(ticks "${pid[$name]}")
        per[$name]=$(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", 1e6 * d / hz / n }')
    done
    ratio=$(awk -v a="${per[filter]}" -v b="${per[bare]}" 'BEGIN { printf "%.4f", a / b }')
    ratios+=("$ratio")
    echo "round $r: CPU per request with the filter ${per[filter]} us, without ${per[bare]} us: x$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "median: the filter adds %+.1f %% CPU per request (%d rounds)\n", 100 * (m - 1), NR }'
