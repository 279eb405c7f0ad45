#!/usr/bin/env bash
# A GPU sensor and formula are two new files, not a change to the core
# (issue 26 item 2, for issue 28): builds a variant of the tree with the
# stand-ins tests/extra/sensors/demo_gpu.c and
# tests/extra/formulas/demo_gpu_power.c built in (-DPA_EXTRA_SOURCES;
# -O0, no agent, bindings, benchmarks or tests), then on a copy of the
# vm-nocpufreq fixture:
#   - with the demo GPU's energy file, `powerapi modules` lists the
#     formula for component gpu, chosen by auto, and monitor's JSON and
#     CSV records carry the gpu component by name with its exact watts;
#   - without it, auto leaves gpu out and the records are as they were.
# Usage: build_with.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 dir=$2
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O0 \
      -DPA_WERROR=ON -DPA_BUILD_AGENT=OFF -DPA_BUILD_BINDINGS=OFF \
      -DPA_BUILD_BENCH=OFF -DPA_BUILD_TESTS=OFF \
      "-DPA_EXTRA_SOURCES=tests/extra/sensors/demo_gpu.c;tests/extra/formulas/demo_gpu_power.c" \
      >/dev/null
cmake --build "$dir" -j2 --target powerapi_cli >/dev/null
pa=$dir/cli/powerapi
fix=$(mktemp -d)
trap 'rm -rf "$fix"' EXIT
cp -r "$src/tests/fixtures/vm-nocpufreq/proc" "$src/tests/fixtures/vm-nocpufreq/sys" "$fix/"
roots=(--procfs "$fix/proc" --sysfs "$fix/sys")
fail() { echo "build_with: $*" >&2; exit 1; }

# no demo GPU: no gpu anywhere
out=$("$pa" modules "${roots[@]}" --format csv)
grep -q '^demo-gpu-power,formula,,true,false,' <<<"$out" || { echo "$out" >&2; fail "demo-gpu-power listed wrong without a GPU"; }
json=$("$pa" monitor "${roots[@]}" --format json -i 100ms -n 1)
grep -q '"gpu"' <<<"$json" && { echo "$json" >&2; fail "a gpu key without a GPU"; }

# a demo GPU: auto picks its formula, the records name the component
mkdir -p "$fix/sys/class/demo-gpu"
echo 1000000 >"$fix/sys/class/demo-gpu/energy_uj"
out=$("$pa" modules "${roots[@]}" --format csv)
grep -q '^demo-gpu-power,formula,gpu,true,true,.*,auto,' <<<"$out" || { echo "$out" >&2; fail "auto did not choose demo-gpu-power"; }
grep -q '^demo-gpu,sensor,,true,true,.*,for,demo-gpu-power,' <<<"$out" || { echo "$out" >&2; fail "demo-gpu not enabled for its formula"; }
json=$("$pa" monitor "${roots[@]}" --format json -i 100ms -n 2)
grep -q '"type":"system".*"power_w":{"cpu":[0-9.]*,"nic":0,"gpu":0,"total":' <<<"$json" || { echo "$json" >&2; fail "no gpu in monitor's JSON"; }
grep -q '"formula":"cpu-curve+demo-gpu-power"' <<<"$json" || { echo "$json" >&2; fail "formulas: $json"; }
csv=$("$pa" monitor "${roots[@]}" --format csv -i 100ms -n 1)
head -1 <<<"$csv" | grep -q ',unit,processes,exits,power_w.gpu,energy_j.gpu$' || { echo "$csv" >&2; fail "no gpu columns in monitor's CSV"; }
echo "build_with: demo GPU sensor and formula built in from tests/extra/;" \
     "auto chose demo-gpu-power; gpu in modules, JSON and CSV; absent without the GPU"
