#!/bin/bash
# bench_profile.sh - what `powerapi profile` costs the profiled program, and
# what it costs itself, beside `perf record` at the same rate and call-graph
# mode, measured in the same run.
#
# Usage: bench/bench_profile.sh [BUILD_DIR] [ROUNDS] [FREQ] [WORK]
#   BUILD_DIR  the CMake build folder (default: build)
#   ROUNDS     rounds (default 7)
#   FREQ       samples per second of CPU time, both profilers (default 100)
#   WORK       units of work of one run (default 400, about 2 s of CPU)
#
# The workload (built here, -O2 with frame pointers) does a fixed amount of
# work: a recursion 6 deep through 4 functions chosen by a pseudo-random
# walk, so about 4^6 = 4096 distinct stacks, each leaf burning a loop.  It
# reports its own CPU time (CLOCK_PROCESS_CPUTIME_ID) at exit.
# Configurations, run one after another in a rotating order every round
# (interleaved: each sees the same minute of the host):
#   none        the workload alone
#   powerapi    powerapi profile --frequency FREQ --call-graph fp -- workload
#   perf        perf record -e cpu-clock -F FREQ -g -- workload
#               (Debian linux-perf; writes perf.data, symbolises nothing:
#               perf report would do that afterwards, powerapi during the
#               run)
#   powerapi-dwarf, perf-dwarf
#               the same with --call-graph dwarf (powerapi copies 16 KiB
#               of user stack per sample, perf record --call-graph dwarf
#               its default 8 KiB)
#   none-again  the workload alone again: the floor (host noise)
#   base-dwarf  with BASE_BUILD=DIR in the environment: DIR's powerapi
#               (another build, e.g. the main branch's) with --call-graph
#               dwarf, to weigh a change in the same rounds
# Per round and configuration: the workload's CPU time against the round's
# "none" (overhead on the program, %), and the profiler's own CPU time
# (user+sys of the whole command, from /usr/bin/time, minus the
# workload's).  Printed: medians over rounds, with min..max; and powerapi's
# memory per 1,000 call-tree nodes (distinct stacks and their prefixes),
# from summary.json's profile_memory_bytes and "stacks" in a run at FREQ
# and one at 20 x FREQ, beside its symbol tables (symbols_memory_bytes).
# Run it with nice on a quiet machine; on a shared one say so beside the
# figures.
set -u
BUILD=${1:-build}
ROUNDS=${2:-7}
FREQ=${3:-100}
WORK=${4:-400}
PA=$BUILD/cli/powerapi
[ -x "$PA" ] || { echo "bench_profile: $PA not built (cmake --build $BUILD)" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench_profile: perf not found (Debian linux-perf)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_profile: /usr/bin/time not found (Debian time)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/work.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
volatile double sink;
static unsigned long rng = 88172645463325252ul;
static unsigned next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned)rng; }
void walk(int depth);
#define STEP(name, k) __attribute__((noinline)) void name(int depth) \
{ if (depth == 0) { double x = k; for (int i = 0; i < 2000; i++) x = x * 1.0000001 + k; sink += x; return; } \
  walk(depth - 1); sink += k; }
STEP(s0, 1) STEP(s1, 2) STEP(s2, 3) STEP(s3, 4)
void walk(int depth)
{
    switch (next() & 3) { case 0: s0(depth); break; case 1: s1(depth); break;
                          case 2: s2(depth); break; default: s3(depth); break; }
}
int main(int argc, char **argv)
{
    long units = atol(argv[1]);
    for (long u = 0; u < units; u++)
        for (int i = 0; i < 1000; i++)
            walk(6);
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    FILE *f = fopen(argv[2], "w");
    fprintf(f, "%.6f\n", t.tv_sec + t.tv_nsec / 1e9);
    fclose(f);
    return 0;
}
EOF
cc -O2 -fno-omit-frame-pointer -fno-ipa-icf -o "$TMP/work" "$TMP/work.c" || exit 1

CONFIGS=(none powerapi perf powerapi-dwarf perf-dwarf none-again)
BASE=${BASE_BUILD:-}
if [ -n "$BASE" ]; then
    [ -x "$BASE/cli/powerapi" ] || { echo "bench_profile: $BASE/cli/powerapi not built" >&2; exit 2; }
    CONFIGS+=(base-dwarf)
fi
run() { # config round -> "workload_cpu total_cpu"
    local cfg=$1 r=$2 cmd=()
    case $cfg in
    none|none-again) cmd=("$TMP/work" "$WORK" "$TMP/wcpu") ;;
    powerapi) cmd=("$PA" profile -q --frequency "$FREQ" --call-graph fp --out "$TMP/prof-$r"
                   -- "$TMP/work" "$WORK" "$TMP/wcpu") ;;
    perf) cmd=(perf record -q -e cpu-clock -F "$FREQ" -g -o "$TMP/perf-$r.data"
               -- "$TMP/work" "$WORK" "$TMP/wcpu") ;;
    powerapi-dwarf) cmd=("$PA" profile -q --frequency "$FREQ" --call-graph dwarf
                         --out "$TMP/profd-$r" -- "$TMP/work" "$WORK" "$TMP/wcpu") ;;
    base-dwarf) cmd=("$BASE/cli/powerapi" profile -q --frequency "$FREQ" --call-graph dwarf
                     --out "$TMP/profb-$r" -- "$TMP/work" "$WORK" "$TMP/wcpu") ;;
    perf-dwarf) cmd=(perf record -q -e cpu-clock -F "$FREQ" --call-graph dwarf,8192
                     -o "$TMP/perfd-$r.data" -- "$TMP/work" "$WORK" "$TMP/wcpu") ;;
    esac
    /usr/bin/time -f "%U %S" -o "$TMP/time" "${cmd[@]}" >/dev/null 2>"$TMP/err" ||
        { echo "bench_profile: $cfg failed: $(cat "$TMP/err")" >&2; exit 1; }
    echo "$(cat "$TMP/wcpu") $(awk '{print $1 + $2}' "$TMP/time")"
}

declare -A W T
for ((r = 0; r < ROUNDS; r++)); do
    for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
        cfg=${CONFIGS[$(((k + r) % ${#CONFIGS[@]}))]}
        read -r w t < <(run "$cfg" "$r")
        W[$cfg,$r]=$w
        T[$cfg,$r]=$t
    done
    rm -f "$TMP"/perf-*.data "$TMP"/perfd-*.data
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s..%s", lo, hi}'; }
echo "bench_profile: $ROUNDS rounds, $FREQ Hz, workload $WORK units"
echo "  (host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf "  %-14s %18s %22s %24s\n" config "workload CPU (s)" "overhead vs none (%)" "profiler's own CPU (ms)"
for cfg in "${CONFIGS[@]}"; do
    ws="" os="" ps=""
    for ((r = 0; r < ROUNDS; r++)); do
        ws+="${W[$cfg,$r]}"$'\n'
        os+=$(awk -v a="${W[$cfg,$r]}" -v b="${W[none,$r]}" 'BEGIN {printf "%.2f", 100 * (a / b - 1)}')$'\n'
        ps+=$(awk -v t="${T[$cfg,$r]}" -v w="${W[$cfg,$r]}" 'BEGIN {printf "%.0f", 1000 * (t - w)}')$'\n'
    done
    printf "  %-14s %18s %10s (%s) %12s (%s)\n" "$cfg" "$(printf %s "$ws" | median)" \
        "$(printf %s "$os" | median)" "$(printf %s "$os" | range)" \
        "$(printf %s "$ps" | median)" "$(printf %s "$ps" | range)"
done
# memory: what the profile grows by per 1,000 call-tree nodes, from a run
# at the rate above and one at 20x it (many more distinct stacks)
memrun() { # freq dir -> "profile_memory_bytes stacks symbols_memory_bytes"
    "$PA" profile -q --frequency "$1" --call-graph fp --out "$2" -- "$TMP/work" "$WORK" "$TMP/wcpu" \
        >/dev/null 2>&1 || { echo "bench_profile: memory run failed" >&2; exit 1; }
    awk -F': ' '/"profile_memory_bytes"/ {m = $2 + 0} /"stacks"/ {s = $2 + 0}
                /"symbols_memory_bytes"/ {y = $2 + 0} END {print m, s, y}' "$2/summary.json"
}
read -r m1 n1 y1 < <(memrun "$FREQ" "$TMP/mem1")
read -r m2 n2 y2 < <(memrun $((FREQ * 20)) "$TMP/mem2")
echo "  powerapi memory: profile $m1 bytes for $n1 call-tree nodes, $m2 bytes for $n2;" \
     "$(awk -v a="$m1" -v b="$m2" -v x="$n1" -v y="$n2" 'BEGIN {if (y > x) printf "%.0f", (b - a) / (y - x) * 1000; else print "?"}')" \
     "bytes per 1,000 more nodes; symbol tables $y2 bytes (kallsyms when kernel frames are sampled)"
echo "  (none-again is the floor: two runs without a profiler differ by that much)"
