#!/bin/bash
# soak_jalen.sh - the jalen agent on an embedded Jetty 9 under wrk, left
# running (issue 18, soak).
#
# Usage: bench/soak_jalen.sh [BUILD_DIR] [SECONDS] [AGENT_OPTIONS]
#   BUILD_DIR      CMake build folder (default: build) with libjalen.so and
#                  the Jetty workload (Debian libjetty9-java) and wrk.
#   SECONDS        length of the wrk run (default 600).
#   AGENT_OPTIONS  extra agent options (default: mode=cpu,interval=10ms).
#
# Every 10 s: the JVM's RSS (VmRSS), the agent's own tables
# (summary.json agent_memory_bytes, rewritten each 1-s window) and the
# windows written so far.  At the end: the first and last samples, the
# slopes after the first minute (warm-up: the JIT, the heap's first
# collections, the method tables filling) and over the run's second half,
# by least squares in KiB per hour, and whether every window was written
# (a window the agent thread reaches late covers the time since the
# previous one: fewer, longer windows, no time lost): the windows the agent
# counted against the run's length, the distinct windows in timeline.csv,
# and the outputs complete (summary.json "complete": true after SIGTERM).
# The heap is fixed and pre-touched (-Xms = -Xmx), so RSS growth is not
# the heap growing.  Run nice'd on a shared machine: the figures are
# memory and completeness, not speed.  Figures, not a pass/fail test.
set -u
BUILD=${1:-build}
SECS=${2:-600}
OPTS=${3:-mode=cpu,interval=10ms}
JB_NAME=soak_jalen
# shellcheck source=bench/jalen_bench_lib.sh
. "$(dirname "$0")/jalen_bench_lib.sh"
OUT=$TMP/out
JPID=
cleanup() {
    [ -n "$JPID" ] && kill -9 "$JPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$JALEN_JAVA" -Xms256m -Xmx256m -XX:+AlwaysPreTouch \
    "-agentpath:$JALEN_AGENT=$OPTS,window=1s,quiet,out=$OUT" \
    -cp "$JALEN_JETTY_CP" JettyServer 0 >"$TMP/jetty.out" 2>"$TMP/jetty.err" &
JPID=$!
port=
for _ in $(seq 1 300); do
    port=$(awk '/^READY/ { print $2 }' "$TMP/jetty.out" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "soak_jalen: Jetty did not start: $(cat "$TMP/jetty.err")" >&2; exit 1; }
t_start=$(date +%s.%N)
wrk -t2 -c16 -d"${SECS}s" "http://127.0.0.1:$port/hello" >"$TMP/wrk.txt" 2>&1 &
WPID=$!

num() { # key of summary.json, or 0 (none written yet)
    [ -r "$OUT/summary.json" ] || { echo 0; return; }
    awk -F': ' -v k="\"$1\"" '$1 ~ k { sub(/,$/, "", $2); print $2; found = 1 } END { if (!found) print 0 }' \
        "$OUT/summary.json"
}
: >"$TMP/samples"
t0=$(date +%s)
while kill -0 "$WPID" 2>/dev/null; do
    el=$(($(date +%s) - t0))
    echo "$el $(rss_kb "$JPID") $(num agent_memory_bytes) $(num windows)" >>"$TMP/samples"
    sleep 10
done
wait "$WPID"
el=$(($(date +%s) - t0))
echo "$el $(rss_kb "$JPID") $(num agent_memory_bytes) $(num windows)" >>"$TMP/samples"
kill -TERM "$JPID"
wait "$JPID" 2>/dev/null
t_end=$(date +%s.%N)
JPID=

reqs=$(awk '/ requests in / { print $1 }' "$TMP/wrk.txt")
echo "soak_jalen: Jetty 9 + wrk -t2 -c16 for ${SECS} s, agent $OPTS,window=1s ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "requests: ${reqs:-?}"
complete=$(grep -c '"complete": true' "$OUT/summary.json" 2>/dev/null)
windows=$(num windows)
tl=$(awk -F, 'NR > 1 { w[$1] = 1 } END { print length(w) }' "$OUT/timeline.csv" 2>/dev/null)
awk -v s="$t_start" -v e="$t_end" -v w="$windows" -v tl="${tl:-0}" -v c="${complete:-0}" 'BEGIN {
    printf "windows: %d written over the %.1f s from READY to exit (1-s windows: %.0f expected), %d distinct in timeline.csv; summary complete: %s\n",
        w, e - s, e - s, tl, c ? "yes" : "NO" }'
awk -v warm=60 -v half=$((SECS / 2)) '
    { t[NR] = $1; rss[NR] = $2; mem[NR] = $3 / 1024 }
    function slope(a, warm,   i, n, sx, sy, sxx, sxy, x) {
        n = 0; sx = sy = sxx = sxy = 0
        for (i = 1; i <= NR; i++) if (t[i] >= warm) {
            x = t[i] / 3600; n++; sx += x; sy += a[i]; sxx += x * x; sxy += x * a[i]
        }
        if (n < 2 || n * sxx == sx * sx) return "n/a"
        return sprintf("%+.1f", (n * sxy - sx * sy) / (n * sxx - sx * sx))
    }
    function max(a,   i, m) { m = 0; for (i = 1; i <= NR; i++) if (a[i] > m) m = a[i]; return m }
    END {
        printf "JVM RSS: %d -> %d KiB (max %d), slope after %d s: %s KiB/h, over the second half: %s KiB/h\n", rss[1], rss[NR], max(rss), warm, slope(rss, warm), slope(rss, half)
        printf "agent tables: %.0f -> %.0f KiB (max %.0f), slope after %d s: %s KiB/h, over the second half: %s KiB/h\n", mem[1], mem[NR], max(mem), warm, slope(mem, warm), slope(mem, half)
    }' "$TMP/samples"
echo "samples (s jvm_rss_kib agent_bytes windows):"
tr '\n' ';' <"$TMP/samples"; echo
