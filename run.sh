#!/usr/bin/env bash
# The main job: install what is missing, build, and show which processes of
# this machine burn the watts while a busy workload runs, then which Java
# methods of a bundled workload do (scripts/demo.sh; the Java part when the
# agent is built).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
scripts/demo.sh build
