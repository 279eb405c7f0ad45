#!/usr/bin/env bash
# The library is open to its modules (issue 26 item 2): it builds and
# passes its tests with a built-in formula left out of the build
# (PA_EXCLUDE_SOURCES).  Configures and builds a variant of the tree
# without formulas/FORMULA.c (-O0, no agent, bindings or benchmarks), runs
# the tests that do not name that formula, and checks that `powerapi
# modules` no longer lists it while auto still fills the component.
# Usage: build_without.sh SOURCE_DIR BUILD_DIR FORMULA TEST...
set -euo pipefail
src=$1 dir=$2 formula=$3
shift 3
name=${formula//_/-}
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O0 \
      -DPA_WERROR=ON -DPA_BUILD_AGENT=OFF -DPA_BUILD_BINDINGS=OFF \
      -DPA_BUILD_BENCH=OFF "-DPA_EXCLUDE_SOURCES=formulas/$formula\\.c$" \
      "-DPA_EXCLUDE_TESTS=test_$formula\\.c$" >/dev/null
if grep -q "($formula)" "$dir/generated/builtin_modules.h"; then
    echo "build_without: $formula is still in the module table" >&2
    exit 1
fi
cmake --build "$dir" -j2 --target powerapi_cli "$@" >/dev/null
for t in "$@"; do
    "$dir/tests/$t" >/dev/null 2>"$dir/$t.err" || {
        cat "$dir/$t.err" >&2
        echo "build_without: $t failed without $formula" >&2
        exit 1
    }
done
fix=$src/tests/fixtures/vm-nocpufreq
out=$("$dir/cli/powerapi" modules --procfs "$fix/proc" --sysfs "$fix/sys" \
      --format csv)
if grep -q "^$name," <<<"$out"; then
    echo "build_without: powerapi modules lists $name" >&2
    exit 1
fi
# every component keeps a formula chosen by auto (the cpu one here)
grep -E '^[a-z0-9-]+,formula,cpu,true,true,.*,auto,' <<<"$out" >/dev/null || {
    echo "$out" >&2
    echo "build_without: auto filled no cpu formula without $name" >&2
    exit 1
}
echo "build_without: built without formulas/$formula.c; $# tests passed;" \
     "auto's cpu formula: $(grep -oE '^[a-z0-9-]+,formula,cpu,true,true' <<<"$out" | cut -d, -f1)"
