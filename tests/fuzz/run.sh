#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz/ for a bounded time each and
# fails on the first crash, leak, timeout or broken contract.
#
#   tests/fuzz/run.sh [-t SECONDS] [-j JOBS] [-b BUILD] [-o OUT] [-m] [-n] [TARGET...]
#
#   -t  seconds per target (default 10)
#   -j  targets run at once (default: the number of CPUs)
#   -b  the clang build (default build-fuzz, configured and built here with
#       CC=clang -DPA_FUZZ=ON when missing)
#   -o  where new inputs, crashes and logs go (default BUILD/fuzz-out)
#   -m  afterwards, merge the new inputs into tests/fuzz/corpus/ (minimal:
#       libFuzzer -merge=1 keeps only inputs that add coverage)
#   -n  build the targets, run none (test.sh builds them early)
#   TARGET  names without fuzz_ (default: every target)
#
# Each target starts from its committed corpus (tests/fuzz/corpus/NAME)
# and dictionary (tests/fuzz/dict/NAME.dict, when there is one).  A table
# of executions and coverage (libFuzzer's cov and ft) is printed at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
secs=10
jobs=$(nproc)
build="$src/build-fuzz"
out=""
merge=0
build_only=0
while getopts "t:j:b:o:mn" opt; do
  case $opt in
    t) secs=$OPTARG ;;
    j) jobs=$OPTARG ;;
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    m) merge=1 ;;
    n) build_only=1 ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
out=${out:-$build/fuzz-out}

# A target is a directory of tests/fuzz/corpus/: check the names before building.
for name in "$@"; do
  if [ ! -d "$here/corpus/$name" ]; then
    echo "fuzz: no target '$name' (targets: $(cd "$here/corpus" && echo *))" >&2
    exit 2
  fi
done

if ! command -v clang >/dev/null; then
  echo "fuzz: clang is missing (scripts/deps.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang cmake -S "$src" -B "$build" -DPA_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPA_BUILD_AGENT=OFF -DPA_BUILD_BINDINGS=OFF -DPA_BUILD_BENCH=OFF >/dev/null
fi
if ! cmake --build "$build" --target pa_fuzz -j"$(nproc)" >"$build/fuzz-build.log" 2>&1; then
  tail -40 "$build/fuzz-build.log" >&2
  echo "fuzz: the clang build failed ($build/fuzz-build.log)" >&2
  exit 1
fi
[ "$build_only" -eq 0 ] || exit 0

if [ $# -eq 0 ]; then
  set -- $(cd "$here/corpus" && ls)
fi
mkdir -p "$out"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run_one() { # name
  local name=$1 bin="$build/tests/fuzz/fuzz_$1"
  local work="$out/corpus/$name" dict=()
  mkdir -p "$work" "$out/crashes"
  [ -f "$here/dict/$name.dict" ] && dict=(-dict="$here/dict/$name.dict")
  if [ ! -x "$bin" ]; then
    echo "missing $bin" >"$out/$name.log"
    echo 1 >"$out/$name.rc"
    return
  fi
  local rc=0
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/crashes/$name-" "${dict[@]}" \
    "$work" "$here/corpus/$name" >"$out/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$name.rc"
}

start=$(date +%s)
running=0
for name in "$@"; do
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-16s %12s %9s %7s %7s %7s  %s\n' target executions exec/s cov ft corpus result
for name in "$@"; do
  log="$out/$name.log"
  rc=$(cat "$out/$name.rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc, $log)"
    failed=1
  fi
  printf '%-16s %12s %9s %7s %7s %7s  %s\n' "$name" "${execs:-?}" "${eps:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$result"
done
echo "fuzz: $# targets, $((($(date +%s) - start))) s"
if [ "$failed" -ne 0 ]; then
  for name in "$@"; do
    if [ "$(cat "$out/$name.rc")" != 0 ]; then
      echo "== $name (last lines of $out/$name.log)" >&2
      tail -40 "$out/$name.log" >&2
    fi
  done
  ls "$out/crashes" >&2 || true
  exit 1
fi
if [ "$merge" -eq 1 ]; then
  for name in "$@"; do
    "$build/tests/fuzz/fuzz_$name" -merge=1 -rss_limit_mb=2048 -max_len=65536 \
      "$here/corpus/$name" "$out/corpus/$name" >"$out/$name.merge.log" 2>&1
    echo "fuzz: merged $name: $(ls "$here/corpus/$name" | wc -l) inputs"
  done
fi
