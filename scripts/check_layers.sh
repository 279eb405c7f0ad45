#!/bin/bash
# check_layers.sh - the layering rule of DESIGN.md section 3: no source
# file includes a header of a higher layer, and no two folders include
# each other's headers.
#
#   0  libpowerapi/                         the library
#  10  sensors/ formulas/                   plugins of the library
#  20  profcore/ engines/ report/           the profiling core, its engines
#                                           and the report writers (an engine
#                                           or a writer may include the core,
#                                           the core neither)
#  30  cli/ jalen-agent/ bindings/          the command, the agent, bindings
#
# Tests, benchmarks and fuzz targets are outside the rule.  A quoted
# include ("x.h") is resolved to the project's header of that name (the
# including file's own folder first); system headers (<x.h>) are not
# looked at.  Prints each violation as FILE:LINE: what and why; exit
# status 1 when there is one.  Usage: scripts/check_layers.sh [ROOT]
set -u
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT" || exit 2

layer() {
    case $1 in
    libpowerapi/*) echo 0 ;;
    sensors/* | formulas/*) echo 10 ;;
    profcore/*) echo 20 ;;
    engines/* | report/*) echo 25 ;;
    cli/* | jalen-agent/* | bindings/*) echo 30 ;;
    *) echo - ;;
    esac
}
top() { echo "${1%%/*}"; }

mapfile -t headers < <(find libpowerapi sensors formulas profcore engines report cli jalen-agent bindings \
    -name '*.h' -not -path '*/tests/*' 2>/dev/null | sort)
bad=0
declare -A edge
while IFS= read -r src; do
    ls=$(layer "$src")
    [ "$ls" = - ] && continue
    dir=$(dirname "$src")
    while IFS=: read -r line inc; do
        hit=""
        if [ -f "$dir/$inc" ]; then
            hit="$dir/$inc"
        else
            for h in "${headers[@]}"; do
                if [ "${h##*/}" = "$inc" ]; then
                    hit=$h
                    break
                fi
            done
        fi
        [ -z "$hit" ] && continue # generated or system header
        lh=$(layer "$hit")
        if [ "$lh" -gt "$ls" ]; then
            echo "$src:$line: includes $hit, a higher layer ($lh > $ls)"
            bad=1
        fi
        a=$(top "$src") b=$(top "$hit")
        [ "$a" != "$b" ] && edge["$a>$b"]="$src:$line"
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src" |
        sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
done < <(find libpowerapi sensors formulas profcore engines report cli jalen-agent bindings \
    \( -name '*.c' -o -name '*.h' \) -not -path '*/tests/*' 2>/dev/null | sort)
for e in "${!edge[@]}"; do
    a=${e%%>*} b=${e##*>}
    if [ -n "${edge[$b>$a]:-}" ] && [[ "$a" < "$b" ]]; then
        echo "${edge[$e]}: $a and $b include each other (also ${edge[$b>$a]})"
        bad=1
    fi
done
[ $bad = 0 ] && echo "check_layers: no include upward, no two folders including each other"
exit $bad
