#!/bin/bash
# bench_jalen_recovery.sh - stacks where AsyncGetCallTrace alone gives up
# (issue 16): the share of each recovery workload's energy (or samples)
# that a profiler could not put on a Java method, and the share under the
# method every sample should land under, for jalen and, side by side,
# async-profiler when ASYNC_PROFILER_LIB names its libasyncProfiler.so
# (never downloaded: without it that column is skipped with a message).
#
# Usage: bench/bench_jalen_recovery.sh [BUILD_DIR] [SECONDS] [WORKLOADS] [RUNS]
#   BUILD_DIR  the CMake build folder (default: build)
#   SECONDS    run length of each workload (default 5)
#   WORKLOADS  space-separated subset of: arraycopy itable vtable intrinsic
#              time deep copy crc clock nano stamp monitor sbdelete arraycut miss
#              (default: all)
#   RUNS       runs of each tool per workload, the tools alternating
#              (default 3): the per-method table gives each tool's mean and
#              range over its runs
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
#
# Then, per workload, the methods each sample is credited to (issue 32):
# of the stacks under Recovery.<workload>Loop, the share of each deepest
# Java frame (jalen: energy.collapsed, whose value is the sample's energy;
# async-profiler: its collapsed stacks with `ann`, Java frames being the
# ones marked _[j], _[i], _[0] or _[1]), side by side with the difference
# in points, and the largest difference of the workload ("max |d|").  A
# sample with no Java frame under the loop counts as "(none)".  With RUNS
# runs, each share is the mean over the runs of one tool, with its lowest
# and highest, and the workload's line adds how far two runs of one tool
# differ ("runs apart": the largest difference of any method's share
# between two runs of the same tool), which is the noise that "max |d|"
# must be read against.
# Known answers (each part of the loop timed by the workload itself): miss
# (java Recovery time-miss: the load's share of an iteration), arraycopy
# (java Recovery time-arraycopy: delete's share) and stamp (java Recovery
# time-stamp: lazySet's share of a call), printed after the table.
set -u
BUILD=${1:-build}
SECS=${2:-5}
WLS=${3:-arraycopy itable vtable intrinsic time deep copy crc clock nano stamp monitor sbdelete arraycut miss}
RUNS=${4:-3}
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
echo "JVM: $("$JAVA" -version 2>&1 | head -1); interval 1 ms; $SECS s per run, $RUNS runs of each tool; load $(cut -d' ' -f1-3 /proc/loadavg)"

# jalen_run AGENT WORKLOAD [RUN] -> "unknown_% expected_% samples"; the
# shares by deepest Java frame into pm.jl.WORKLOAD.RUN
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
    # deepest Java frame under the loop -> share (jalen's frames are Java
    # methods or bracketed pseudo-frames)
    awk -v loop="Recovery.$2Loop" '
        { v = $NF; st = $0; sub(/ [0-9]+$/, "", st); n = split(st, f, ";"); at = 0
          for (i = 1; i <= n; i++) if (f[i] == loop) at = i
          if (!at) next
          m = "(none)"; for (i = n; i >= at; i--) if (substr(f[i], 1, 1) != "[") { m = f[i]; break }
          e[m] += v; t += v }
        END { for (m in e) if (t > 0) printf "%s %.2f\n", m, 100 * e[m] / t }' \
        "$out/energy.collapsed" >"$TMP/pm.jl.$2.${3:-0}"
}

# ap_run WORKLOAD RUN -> "unknown_% expected_% samples"; the shares into
# pm.ap.WORKLOAD.RUN
ap_run() {
    local out="$TMP/ap.$1.collapsed"
    rm -f "$out"
    "$JAVA" "${JOPTS[@]}" "-agentpath:$AP=start,event=cpu,interval=1ms,threads,ann,collapsed,file=$out" \
        -cp "$JALEN_CLASSES" Recovery "$1" "$SECS" >/dev/null 2>"$TMP/ap.err" || { echo "fail fail 0"; return; }
    awk -v want="Recovery.$1Loop" -v th="[$1 tid=" '
        { n = $NF; t += n; st = $0; sub(/ [0-9]+$/, "", st); gsub(/_\[[ji01k]\]/, "", st)
          if (st ~ /(^|;)\[?(unknown_Java|not_walkable_Java|not_walkable_not_Java)\]?(;|$)/) u += n
          if (index(st, th) == 1) {
              tt += n
              if (index(st, ";" want ";") || substr(st, length(st) - length(want)) == ";" want) e += n
          } }
        END { if (t > 0 && tt > 0) printf "%.1f %.1f %d\n", 100 * u / t, 100 * e / tt, t; else print "n/a n/a 0" }' "$out"
    awk -v loop="Recovery.$1Loop" '
        { v = $NF; st = $0; sub(/ [0-9]+$/, "", st); n = split(st, f, ";"); at = 0
          for (i = 1; i <= n; i++) { if (f[i] ~ /_\[[ji01]\]$/) { sub(/_\[[ji01]\]$/, "", f[i]); gsub("/", ".", f[i]); j[i] = 1 } else j[i] = 0
                                     if (f[i] == loop) at = i }
          if (!at) next
          m = "(none)"; for (i = n; i >= at; i--) if (j[i]) { m = f[i]; break }
          e[m] += v; t += v }
        END { for (m in e) if (t > 0) printf "%s %.2f\n", m, 100 * e[m] / t }' \
        "$out" >"$TMP/pm.ap.$1.$2"
}

# per_method WORKLOAD: the two profilers' mean shares side by side (methods
# with 0.5 % or more in either), each with its range over the runs, the
# difference of the means, the largest one, and how far apart two runs of
# one tool are
per_method() {
    ls "$TMP"/pm.jl."$1".* >/dev/null 2>&1 || return
    echo "  $1: share of the loop's samples by deepest Java frame, mean [lowest-highest] of $RUNS runs (jalen | async-profiler | d)"
    for f in "$TMP"/pm.jl."$1".* "$TMP"/pm.ap."$1".*; do
        awk -v t="${f##*/pm.}" '{ print t, $1, $2 }' "$f"
    done | awk -v runs="$RUNS" '
        { split($1, k, "."); tool = k[1]; run = k[length(k)]; v[tool, run, $2] = $3; seen[$2] = 1; R[tool, run] = 1 }
        END {
              T["jl"] = 1; T["ap"] = 1
              for (m in seen) for (tool in T) {
                  n = 0; s = 0; lo = 1e9; hi = -1
                  for (r = 1; r <= runs; r++) if ((tool, r) in R) { x = v[tool, r, m] + 0; n++; s += x; if (x < lo) lo = x; if (x > hi) hi = x }
                  mean[tool, m] = n ? s / n : 0; L[tool, m] = n ? lo : 0; H[tool, m] = n ? hi : 0 }
              mx = 0
              for (m in seen) { d = mean["jl", m] - mean["ap", m]; a = d < 0 ? -d : d; if (a > mx) { mx = a; mm = m }
                  if (mean["jl", m] >= 0.5 || mean["ap", m] >= 0.5)
                      printf "1     %-56s %6.2f [%5.2f-%5.2f] | %6.2f [%5.2f-%5.2f] | %+6.2f\n", m, mean["jl", m], L["jl", m], H["jl", m], mean["ap", m], L["ap", m], H["ap", m], d }
              for (tool in T) { sp[tool] = 0
                  for (r = 1; r <= runs; r++) for (q = r + 1; q <= runs; q++) if ((tool, r) in R && (tool, q) in R)
                      for (m in seen) { d = v[tool, r, m] - v[tool, q, m]; if (d < 0) d = -d; if (d > sp[tool]) sp[tool] = d } }
              printf "2     max |d| %.2f points (%s); runs apart: jalen %.2f, async-profiler %.2f points\n", mx, mm, sp["jl"], sp["ap"] }' | LC_ALL=C sort -k1,2 | cut -c3-
}

BEFORE=${JALEN_BEFORE_AGENT:-}
printf "%-10s | %-29s | %-29s | %s\n" "" "jalen before" "jalen" "async-profiler"
printf "%-10s | %9s %9s %9s | %9s %9s %9s | %9s %9s %9s\n" workload unknown% expected% samples \
    unknown% expected% samples unknown% expected% samples
for w in $WLS; do
    for r in $(seq "$RUNS"); do
        bu=- be=- bs=-
        [ -n "$BEFORE" ] && read -r bu be bs <<<"$(jalen_run "$BEFORE" "$w")"
        read -r ju je js <<<"$(jalen_run "$JALEN_AGENT" "$w" "$r")"
        if [ -n "$AP" ]; then
            read -r au ae as <<<"$(ap_run "$w" "$r")"
        else
            au=skipped ae=skipped as=-
        fi
        printf "%-10s | %9s %9s %9s | %9s %9s %9s | %9s %9s %9s\n" "$w" "$bu" "$be" "$bs" "$ju" "$je" "$js" "$au" "$ae" "$as"
    done
done
if [ -n "$AP" ]; then
    echo
    echo "Per method, under each workload's loop (load now $(cut -d' ' -f1-3 /proc/loadavg)):"
    for w in $WLS; do per_method "$w"; done
fi
for w in $WLS; do
    case $w in
    miss | arraycopy | stamp)
        echo "Known answer, $w (each part of the loop timed):"
        "$JAVA" -Xmx256m -cp "$JALEN_CLASSES" Recovery "time-$w" | tail -1 | sed 's/^/  /' ;;
    esac
done
