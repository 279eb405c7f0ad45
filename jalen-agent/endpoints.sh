#!/bin/bash
# endpoints.sh - per-endpoint energy of a servlet application: the bundled
# Jetty application (tests/jetty/ScopeServer.java: /a spins 3 ms of CPU a
# request, /b 1 ms, /c/{id} sends 100,000 bytes, /z nothing), behind jalen's
# EnergyFilter, under load for a few seconds, as a table from scopes.csv.
# Usage: jalen-agent/endpoints.sh [BUILD_DIR] [SECONDS] [OUT_DIR]
set -eu
BUILD=${1:-build}
SECS=${2:-2}
OUT=${3:-$BUILD/jalen-endpoints}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "endpoints: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
if [ -z "$JALEN_JETTY_CP" ] || [ ! -r "$JALEN_API_JAR" ]; then
    echo "endpoints: needs Debian's libjetty9-java and a built jalen-api.jar" >&2
    exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT"
"$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT,quiet" -cp "$JALEN_JETTY_CP:$JALEN_API_JAR" \
    ScopeServer 0 "$OUT/requests.jsonl" >"$OUT/server.out" 2>"$OUT/server.err" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 300); do
    grep -q '^READY ' "$OUT/server.out" && break
    kill -0 $SERVER 2>/dev/null || { cat "$OUT/server.err" >&2; exit 1; }
    sleep 0.1
done
PORT=$(awk '/^READY / { print $2 }' "$OUT/server.out")
[ -n "$PORT" ] || { echo "endpoints: the server did not start" >&2; exit 1; }
if command -v wrk >/dev/null; then
    LUA_PATHS="$(dirname "$0")/tests/jetty/paths.lua"
    wrk -t1 -c4 "-d${SECS}s" -s "$LUA_PATHS" "http://127.0.0.1:$PORT/" | grep 'requests in'
else # one request at a time over bash's /dev/tcp
    end=$((SECONDS + SECS))
    n=0
    while [ $SECONDS -lt $end ]; do
        for path in /a /b "/c/$n"; do
            exec 3<>"/dev/tcp/127.0.0.1/$PORT"
            printf 'GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$path" >&3
            cat <&3 >/dev/null
            exec 3<&-
        done
        n=$((n + 1))
    done
    echo "  $((3 * n)) requests in ${SECS}s (no wrk: one at a time)"
fi
kill $SERVER
wait $SERVER 2>/dev/null || true
trap - EXIT
echo "per-endpoint energy ($OUT/scopes.csv; energy per call from each power window's price):"
awk -F, 'NR > 1 {
    printf "  %-14s %7d calls  %9.3f mJ/call (p95 %8.3f)  %7.3f ms CPU/call  %8.0f bytes/call\n",
        $1, $2, 1e3 * $8, 1e3 * $10, 1e3 * $3 / $2, $7 / $2
}' "$OUT/scopes.csv"
grep -E '"(process|scoped|unscoped)_energy_j"' "$OUT/summary.json" | tr -d ' ,' | sed 's/^/  /'
