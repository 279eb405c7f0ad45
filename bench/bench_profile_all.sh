#!/bin/bash
# bench_profile_all.sh - what `powerapi profile --all` costs a busy machine
# when it runs as a continuous whole-machine profiler that pushes to
# Pyroscope, at its default rate (10 ms of CPU between samples, frame
# pointers), beside the same load without it.  The target (issue 42): its
# own CPU at most 1 % of the machine's, the figure the OpenTelemetry eBPF
# profiler states for the same job.
#
# Usage: bench/bench_profile_all.sh [BUILD_DIR] [ROUNDS] [SECONDS]
#   BUILD_DIR  the CMake build folder (default: build)
#   ROUNDS     rounds (default 3)
#   SECONDS    length of each run (default 20)
#
# Root (or CAP_PERFMON): --all samples every CPU.
# The load keeps every CPU busy with both kinds of work a machine has: one
# long-lived loop per CPU (shell arithmetic) and, beside them, a stream of
# short processes (seq | md5sum, a new process pair every few ms: each is
# a new process whose addresses must be named).  Each round runs, in a
# rotating order, the load alone and the load beside
#   powerapi profile --all --duration SECONDS --push pyroscope=URL
# whose receiver is tests/push_receiver.py on loopback (each push decoded
# as pprof).  Printed per configuration, medians over rounds (min..max):
# the profiler's own CPU time (user+sys, /usr/bin/time) as a share of the
# machine's (CPUs x wall), its peak RSS, and the load's work done (loop rounds and short
# processes) against the round's load alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
secs=${3:-20}
cli=$build/cli/powerapi
[ -x "$cli" ] || { echo "bench_profile_all: no $cli (build first)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench_profile_all: needs root (profile --all)" >&2; exit 1; }
ncpu=$(nproc)
tmp=$(mktemp -d)
recv_pid=
cleanup() {
  [ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null || true
  pkill -P $$ 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"$here/../tests/push_receiver.py" --api pyroscope --out "$tmp/pushes.jsonl" \
  >"$tmp/recv.out" 2>"$tmp/recv.err" &
recv_pid=$!
for _ in $(seq 100); do grep -q '^port ' "$tmp/recv.out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/^port /{print $2}' "$tmp/recv.out")
[ -n "$port" ] || { echo "bench_profile_all: the receiver did not start" >&2; cat "$tmp/recv.err" >&2; exit 1; }

# The load for $1 seconds; prints "loops shorts" (work done).
load() {
  local until=$((SECONDS + $1)) pids=() i
  for i in $(seq "$ncpu"); do
    (n=0; while [ $SECONDS -lt $until ]; do
       for _ in $(seq 2000); do n=$((n + 1)); done
     done; echo "$n" >"$tmp/loop.$i") &
    pids+=($!)
  done
  (n=0; while [ $SECONDS -lt $until ]; do
     seq 1 2000 | md5sum >/dev/null; n=$((n + 1))
   done; echo "$n" >"$tmp/short") &
  pids+=($!)
  wait "${pids[@]}"
  echo "$(cat "$tmp"/loop.* | awk '{s += $1} END {print s}') $(cat "$tmp/short")"
}

run() { # config -> "profiler_cpu_s loops shorts"
  case $1 in
    none) echo "0 $(load "$secs")" ;;
    profile)
      /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$cli" profile --all --duration "${secs}s" -q \
        --push "pyroscope=http://127.0.0.1:$port" --push-spool "$tmp/spool" -o "$tmp/prof" &
      local prof=$!
      local work
      work=$(load "$secs")
      wait "$prof"
      awk '{print $3}' "$tmp/time" >>"$tmp/rss"
      echo "$(awk '{print $1 + $2}' "$tmp/time") $work" ;;
  esac
}

declare -A cpu loops shorts
configs=(none profile)
for r in $(seq "$rounds"); do
  for k in 0 1; do
    c=${configs[$(((r + k) % 2))]}
    read -r p l s < <(run "$c")
    cpu[$c]+="$p "; loops[$c]+="$l "; shorts[$c]+="$s "
  done
  printf 'round %d: load alone %s loops %s shorts; beside profile --all %s loops %s shorts, profiler %s s CPU\n' \
    "$r" "$(echo ${loops[none]} | awk '{print $NF}')" "$(echo ${shorts[none]} | awk '{print $NF}')" \
    "$(echo ${loops[profile]} | awk '{print $NF}')" "$(echo ${shorts[profile]} | awk '{print $NF}')" \
    "$(echo ${cpu[profile]} | awk '{print $NF}')" >&2
done

med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%s (%s..%s)", m, v[1], v[NR]}'; }
pushes=$(wc -l <"$tmp/pushes.jsonl" 2>/dev/null || echo 0)
bad=$(grep -c '"error"' "$tmp/pushes.jsonl" 2>/dev/null || true)
share=$(echo ${cpu[profile]} | tr ' ' '\n' | awk -v w="$secs" -v n="$ncpu" \
  'NF {printf "%.2f\n", 100 * $1 / (w * n)}' | med)
loss_l=$(paste -d' ' <(echo ${loops[none]} | tr ' ' '\n') <(echo ${loops[profile]} | tr ' ' '\n') |
  awk 'NF == 2 {print 100 * ($1 - $2) / $1}' | med)
loss_s=$(paste -d' ' <(echo ${shorts[none]} | tr ' ' '\n') <(echo ${shorts[profile]} | tr ' ' '\n') |
  awk 'NF == 2 {print 100 * ($1 - $2) / $1}' | med)
echo "profile --all on $ncpu CPUs kept busy, $secs s a run, $rounds rounds, interleaved (medians, min..max):"
echo "  profiler's own CPU, share of the machine: $share %   target: at most 1 %"
echo "  profiler's own CPU, seconds:              $(echo ${cpu[profile]} | med)"
echo "  the load's loop work lost beside it:      $loss_l %"
echo "  the load's short processes lost beside it: $loss_s %"
echo "  profiler's peak RSS, MiB:                 $(awk '{printf "%.1f\n", $1 / 1024}' "$tmp/rss" | med)"
echo "  pushes received: $pushes, refused by the receiver: ${bad:-0}"
