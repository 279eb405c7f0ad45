#!/usr/bin/env bash
# check_names.sh - one prefix per room (DESIGN.md section 3, "Names"): the
# headers of the rooms above the library declare nothing named pa_/PA_
# but what the library's public headers declare (profcore pc_, report
# rp_, the perf engine pf_, the command cli_, the agent jl_/jalen_).
# Include guards (*_H) and the library's internals (pa__, which the layers
# above may call, DESIGN.md section 3) are left out.  Prints each stray name with where it
# is, and exits 1 if any.
# Usage: scripts/check_names.sh [SOURCE_DIR]
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"
api=$(grep -ohE '\b(pa|PA)_[A-Za-z0-9_]+' libpowerapi/include/*.h | sort -u)
bad=0
for room in profcore:pc_ report:rp_ engines/perf:pf_ cli:cli_ jalen-agent/src:jl_; do
    dir=${room%%:*}
    want=${room##*:}
    for h in "$dir"/*.h; do
        [ -e "$h" ] || continue
        while read -r name; do
            case $name in *_H | pa__* | PA__*) continue ;; esac # guards; the library's internals
            if ! grep -qx -- "$name" <<<"$api"; then
                line=$(grep -nw -- "$name" "$h" | head -1 | cut -d: -f1)
                echo "$h:$line: $name: not the library's; this room's names begin with $want"
                bad=1
            fi
        done < <(grep -ohE '\b(pa|PA)_[A-Za-z0-9_]+' "$h" | sort -u)
    done
done
if [ "$bad" -ne 0 ]; then
    echo "check_names: names above (DESIGN.md section 3, \"Names\")" >&2
    exit 1
fi
echo "check_names: every room's names are its own"
