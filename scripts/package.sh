#!/usr/bin/env bash
# The Debian packages (cpack -G DEB) of this tree, built for /usr in
# BUILD_DIR (default build-deb): libpowerapi0, libpowerapi-data,
# libpowerapi-dev, powerapi, jalen-agent, python3-powerapi.  Prints the
# paths of the .deb files.  Installs nothing: `sudo apt install ./BUILD_DIR/*.deb`.
# Logs: BUILD_DIR/{configure,build,cpack}.log.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bld=${1:-$src/build-deb}
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
mkdir -p "$bld"
bld=$(cd "$bld" && pwd)
# /usr/bin/python3: the binding goes where Debian's Python looks
# (/usr/lib/python3/dist-packages), whatever python3 comes first on PATH.
cmake -S "$src" -B "$bld" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPA_WERROR=ON -DPA_BUILD_TESTS=OFF -DPA_BUILD_BENCH=OFF \
    -DPython3_EXECUTABLE=/usr/bin/python3 >"$bld/configure.log" 2>&1 ||
    { cat "$bld/configure.log" >&2; echo "package.sh: cmake configure failed" >&2; exit 1; }
cmake --build "$bld" -j"$jobs" >"$bld/build.log" 2>&1 ||
    { tail -50 "$bld/build.log" >&2; echo "package.sh: build failed" >&2; exit 1; }
rm -f "$bld"/*.deb
(cd "$bld" && cpack -G DEB) >"$bld/cpack.log" 2>&1 ||
    { cat "$bld/cpack.log" >&2; echo "package.sh: cpack failed" >&2; exit 1; }
ls "$bld"/*.deb
