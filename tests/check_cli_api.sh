#!/usr/bin/env bash
# The command uses only the public API (issue 26 item 4; DESIGN.md section
# 3): cli/ is built against the library's public header
# (libpowerapi/include/powerapi.h) and the public headers of the layers
# below it that it uses (profcore/, engines/perf/, report/), never the
# library's private folder; it names no private header and no pa__
# function, and its objects call no pa__ symbol.
# Usage: check_cli_api.sh SOURCE_DIR INCLUDE_DIRS_FILE OBJECT...
#   INCLUDE_DIRS_FILE: the include directories of the cli/ sources, one a
#   line (tests/CMakeLists.txt writes them from the target's property).
set -euo pipefail
src=$1
incs=$2
shift 2
fail=0
# 1. the include path: no folder of private headers
private_dirs="libpowerapi/src sensors formulas jalen-agent/src"
for d in $private_dirs; do
    if grep -qxF "$src/$d" "$incs"; then
        echo "check_cli_api: cli/ is compiled with -I $src/$d (private headers)" >&2
        fail=1
    fi
done
# 2. the sources: no private header named, no pa__ identifier
private_headers=$(cd "$src" && find $private_dirs -name '*.h' -printf '%f\n' | sort -u)
for h in $private_headers; do
    if grep -ln "#include *\"$h\"" "$src"/cli/*.c "$src"/cli/*.h; then
        echo "check_cli_api: the files above include $h, a private header" >&2
        fail=1
    fi
done
if grep -nE '\b(pa__|PA__)[A-Za-z0-9_]+' "$src"/cli/*.c "$src"/cli/*.h; then
    echo "check_cli_api: the lines above use internals of the library (pa__)" >&2
    fail=1
fi
# 3. the objects: no pa__ symbol called
used=$(nm -u "$@" | awk '{print $NF}' | grep -E '^pa__' | sort -u || true)
if [ -n "$used" ]; then
    echo "check_cli_api: the CLI calls internals of the library:" >&2
    for s in $used; do
        for f in "$@"; do
            nm -u "$f" | grep -qw "$s" && echo "    $s in $(basename "$f")" >&2
        done
    done
    fail=1
fi
if [ "$fail" -eq 0 ]; then
    echo "check_cli_api: $# objects of cli/ built with $(grep -c . "$incs") include" \
        "folders, none private; no private header, no pa__ symbol"
fi
exit $fail
