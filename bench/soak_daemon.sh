#!/bin/bash
# soak_daemon.sh - `powerapi daemon` left running with 4 ring readers and
# `powerapi serve --ring` scraped every second (issue 18, soak).
#
# Usage: bench/soak_daemon.sh [BUILD_DIR] [SECONDS] [INTERVAL]
#   BUILD_DIR  CMake build folder (default: build) with cli/powerapi and
#              bench/bench_soak_reader.
#   SECONDS    length of the run (default 600).
#   INTERVAL   the daemon's window (default 1s).
#
# Every 10 s the anonymous RSS (RssAnon: the heap, without the ring's
# shared pages, RssShmem, which grow until the ring is full once and with
# the machine's process count), and the open fds (the daemon keeps one
# stat file per process) of the daemon and of serve are sampled; at the end
# it prints the first and last samples, the slope of the anonymous RSS
# after the first minute (warm-up: the target tables grow to the machine's
# process count), in KiB per hour by least squares, and each reader's count of windows, gaps and
# windows lost.  "No missed window": every reader read every window the
# daemon published while it ran (gaps=0, lost=0), and every scrape got a
# page.  Run nice'd on a shared machine: the figures are the process's
# memory and completeness, not timings.  Figures, not a pass/fail test.
set -u
BUILD=${1:-build}
SECS=${2:-600}
IVAL=${3:-1s}
PA=$BUILD/cli/powerapi
READER=$BUILD/bench/bench_soak_reader
for f in "$PA" "$READER"; do
    [ -x "$f" ] || { echo "soak_daemon: $f missing (build first)" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "soak_daemon: needs curl" >&2; exit 2; }
TMP=$(mktemp -d)
RING=soak-$$
PORT=$((20000 + $$ % 20000))
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$PA" daemon --ring "$RING" --interval "$IVAL" -q 2>"$TMP/daemon.err" &
DPID=$!
pids+=("$DPID")
sleep 2
for i in 1 2 3 4; do
    "$READER" "$RING" $((SECS + 5)) >"$TMP/reader$i.out" 2>&1 &
    pids+=($!)
done
"$PA" serve --ring "$RING" --listen "127.0.0.1:$PORT" 2>"$TMP/serve.err" &
SPID=$!
pids+=("$SPID")
sleep 1

sample() { # pid -> "anon_kib fds shmem_kib"
    local anon shm
    anon=$(awk '/^RssAnon:/{print $2}' "/proc/$1/status" 2>/dev/null)
    shm=$(awk '/^RssShmem:/{print $2}' "/proc/$1/status" 2>/dev/null)
    echo "${anon:-0} $(ls "/proc/$1/fd" 2>/dev/null | wc -l) ${shm:-0}"
}
t0=$(date +%s)
scrapes=0 failed=0 next_sample=0
: >"$TMP/rss"
while :; do
    el=$(( $(date +%s) - t0 ))
    [ "$el" -ge "$SECS" ] && break
    if [ "$el" -ge "$next_sample" ]; then
        echo "$el $(sample "$DPID") $(sample "$SPID")" >>"$TMP/rss"
        next_sample=$((next_sample + 10))
    fi
    scrapes=$((scrapes + 1))
    if ! curl -sf -m 5 "http://127.0.0.1:$PORT/metrics" -o "$TMP/page" ||
        ! grep -q '^powerapi_system_power_watts' "$TMP/page"; then
        failed=$((failed + 1))
    fi
    sleep 1
done
echo "$SECS $(sample "$DPID") $(sample "$SPID")" >>"$TMP/rss"
kill -0 "$DPID" 2>/dev/null || echo "soak_daemon: the daemon died: $(cat "$TMP/daemon.err")"
kill -0 "$SPID" 2>/dev/null || echo "soak_daemon: serve died: $(cat "$TMP/serve.err")"
for p in "${pids[@]:1:4}"; do kill "$p" 2>/dev/null; done
sleep 1

echo "soak_daemon: ${SECS} s, interval $IVAL, 4 readers, serve scraped every second ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "scrapes: $scrapes, failed: $failed"
cat "$TMP"/reader*.out
awk -v warm=60 -v half=$((SECS / 2)) '
    { t[NR] = $1; drss[NR] = $2; dfd[NR] = $3; dshm[NR] = $4; srss[NR] = $5; sfd[NR] = $6; sshm[NR] = $7 }
    function slope(a, warm,   i, n, sx, sy, sxx, sxy, x) {
        n = 0; sx = sy = sxx = sxy = 0
        for (i = 1; i <= NR; i++) if (t[i] >= warm) {
            x = t[i] / 3600; n++; sx += x; sy += a[i]; sxx += x * x; sxy += x * a[i]
        }
        if (n < 2 || n * sxx == sx * sx) return "n/a"
        return sprintf("%+.1f", (n * sxy - sx * sy) / (n * sxx - sx * sx))
    }
    END {
        printf "daemon: anonymous RSS %d -> %d KiB (max %d), slope after %d s: %s KiB/h, over the second half: %s KiB/h; ring pages %d -> %d KiB; fds %d -> %d\n",
            drss[1], drss[NR], max(drss), warm, slope(drss, warm), slope(drss, half), dshm[1], dshm[NR], dfd[1], dfd[NR]
        printf "serve:  anonymous RSS %d -> %d KiB (max %d), slope after %d s: %s KiB/h, over the second half: %s KiB/h; ring pages %d -> %d KiB; fds %d -> %d\n",
            srss[1], srss[NR], max(srss), warm, slope(srss, warm), slope(srss, half), sshm[1], sshm[NR], sfd[1], sfd[NR]
    }
    function max(a,   i, m) { m = 0; for (i = 1; i <= NR; i++) if (a[i] > m) m = a[i]; return m }
' "$TMP/rss"
echo "samples (s daemon_anon_kib daemon_fds daemon_ring_kib serve_anon_kib serve_fds serve_ring_kib):"
tr '\n' ';' <"$TMP/rss"; echo
