#!/usr/bin/env bash
# The whole test suite: install what is missing, build with warnings as
# errors, run every test (ctest), then again under ASan/UBSan.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
jobs=$(nproc)

echo "== layers (DESIGN.md section 3: no include upward, no two folders including each other)"
failed=0
scripts/check_layers.sh || failed=1

echo "== format (.clang-format: every C file of the tree as clang-format writes it)"
if ! git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run --Werror; then
  echo "test.sh: files above are not formatted: git ls-files '*.c' '*.h' | xargs clang-format -i" >&2
  failed=1
fi

echo "== build (warnings are errors)"
cmake -S . -B build-test -DPA_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-test -j"$jobs"
# Unit tests run in parallel; live tests (real processes, JVMs, sockets, with
# expected rates and ratios) run one at a time so they do not load each other
# (but for those labelled shared: run_live below).
run_ctest() { # dir label jobs
  echo "== $2 tests ($1)"
  (cd "$1" && ctest -L "$2" --output-on-failure -j"$3" --timeout 600) || failed=1
}
run_ctest build-test unit "$jobs"
# Live tests: those that measure, one at a time; then those that only wait
# on windows, sockets and servers (label shared, tests/CMakeLists.txt), two
# at a time.
run_live() { # dir
  echo "== live tests ($1): one at a time, then those labelled shared two at a time"
  (cd "$1" && ctest -L live -LE shared --output-on-failure -j1 --timeout 600) || failed=1
  (cd "$1" && ctest -L shared --output-on-failure -j2 --timeout 600) || failed=1
}
run_live build-test
# The Debian packages: built, linted, installed with dpkg -i, used, purged
# (tests/package/; skipped, saying why, when not root); and the variants
# built without a built-in formula and with extra modules
# (tests/build_without.sh, tests/build_with.sh).
#
# The sanitizer and fuzz builds compile meanwhile: these tests check files,
# commands, permissions and module tables, no figure that a busy machine
# moves, and the package test mostly waits on one process at a time
# (lintian, dpkg, a JVM).
# The JVM and Python load our shared objects into their own processes, where
# the sanitizer runtime would have to be preloaded: those parts are checked
# by the plain run above, the C library and the CLI under ASan/UBSan.
mkdir -p build-asan
echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer, and the fuzz targets (clang), beside the package test (log: build-asan/bg.log)"
(
  cmake -S . -B build-asan -DPA_WERROR=ON -DPA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
        -DPA_BUILD_AGENT=OFF -DPA_BUILD_BINDINGS=OFF -DPA_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  tests/fuzz/run.sh -n -b build-fuzz
) >build-asan/bg.log 2>&1 &
bg=$!
run_ctest build-test 'build|package' "$jobs"
if ! wait "$bg"; then
  tail -60 build-asan/bg.log >&2
  echo "test.sh: the sanitizer or fuzz build failed (build-asan/bg.log)" >&2
  exit 1
fi
# Every fuzz target for a bounded time (clang, libFuzzer + ASan/UBSan),
# beside the sanitized unit tests (neither measures time; the corpora
# themselves are replayed by both ctest runs); its table printed after them.
fuzz_secs=${PA_FUZZ_SECONDS:-1}
echo "== tests under ASan/UBSan; the fuzz targets meanwhile (libFuzzer, ${fuzz_secs} s each)"
tests/fuzz/run.sh -t "$fuzz_secs" -b build-fuzz >build-fuzz/run.log 2>&1 &
fuzz=$!
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build-asan unit "$jobs"
echo "== fuzz targets (libFuzzer, ${fuzz_secs} s each)"
wait "$fuzz" || failed=1
cat build-fuzz/run.log
run_live build-asan
if [ "$failed" -ne 0 ]; then
  echo "test.sh: some tests failed (see above)" >&2
  exit 1
fi
echo "test.sh: every test passed"
