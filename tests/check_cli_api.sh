#!/usr/bin/env bash
# The command uses only the public API (issue 26 item 4): no file of cli/
# includes the library's internal header, and the CLI's objects call no
# internal function (pa__*) of the library but the small helpers that
# util.h declares for every layer (escaping, hashing, growable arrays).
# Usage: check_cli_api.sh SOURCE_DIR OBJECT...
set -euo pipefail
src=$1
shift
fail=0
if grep -ln '#include *"internal.h"' "$src"/cli/*.c "$src"/cli/*.h; then
    echo "check_cli_api: the files above include internal.h" >&2
    fail=1
fi
# what util.h declares: pa__name( and PA__NAME macros' targets
allowed=$(grep -oE '\bpa__[a-z0-9_]+\(' "$src/libpowerapi/src/util.h" |
          tr -d '(' | sort -u)
[ -n "$allowed" ] || { echo "check_cli_api: nothing found in util.h" >&2; exit 1; }
used=$(nm -u "$@" | awk '{print $NF}' | grep -E '^pa__' | sort -u || true)
bad=$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$allowed") | grep . || true)
if [ -n "$bad" ]; then
    echo "check_cli_api: the CLI calls internals of the library:" >&2
    printf '  %s\n' $bad >&2
    for f in "$@"; do
        for s in $bad; do
            nm -u "$f" | grep -qw "$s" && echo "    $s in $(basename "$f")" >&2
        done
    done
    fail=1
fi
if [ "$fail" -eq 0 ]; then
    n=$(printf '%s\n' "$used" | grep -c . || true)
    echo "check_cli_api: $# objects: $n util.h helpers, no other pa__ symbol"
fi
exit $fail
