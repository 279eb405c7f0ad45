#!/usr/bin/env bash
# The main job: install what is missing, build, and show which processes of
# this machine burn the watts (then profile a bundled Java workload, when the
# agent is built).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "== powerapi modules (what works on this machine, and why not)"
./build/cli/powerapi modules
echo
echo "== powerapi monitor --all --top 10 (3 windows of 1 s)"
./build/cli/powerapi monitor --all --top 10 --interval 1s --count 3 --format table
if [ -x jalen-agent/demo.sh ] && [ -f build/jalen-agent/libjalen.so ]; then
  echo
  echo "== jalen: per-method energy of a bundled Java workload"
  jalen-agent/demo.sh build
fi
