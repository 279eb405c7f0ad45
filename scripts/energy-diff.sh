#!/bin/sh
# energy-diff.sh - the energy of two commits compared, per function
# (issue 44): each commit is exported (git archive: no worktree, no
# checkout of yours is touched), built with BUILD, and its COMMAND
# profiled N times with `powerapi profile --repeat N`; then `powerapi diff`
# prints the change and writes OUT/diff/{diff.csv,diff.json,diff.md,
# flamegraph.html}.  With --fail-above, the exit status is diff's: 1 when
# the second commit burns more beyond the threshold, significantly.
#
#   scripts/energy-diff.sh [--repeat N] [--fail-above PCT|J] [--build CMD]
#                          [--out DIR] BASE HEAD -- COMMAND [ARGS...]
#
# BUILD runs in each commit's tree (default: make); COMMAND runs there too.
# Example: scripts/energy-diff.sh --build 'cc -O2 -g -o busy busy.c' \
#              origin/main HEAD -- ./busy 3
set -eu

repeat=5 fail= build=make out=energy-diff
usage() {
    echo "usage: $0 [--repeat N] [--fail-above PCT|J] [--build CMD] [--out DIR] BASE HEAD -- COMMAND [ARGS...]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --fail-above) fail=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) usage ;;
    *) break ;;
    esac
done
[ $# -ge 4 ] && [ "$3" = "--" ] || usage
base=$1 head=$2
shift 3
powerapi=${POWERAPI:-powerapi}

mkdir -p "$out"
out=$(cd "$out" && pwd)
for side in base head; do
    eval rev=\$$side
    rm -rf "$out/$side-src" "$out/$side"
    mkdir -p "$out/$side-src"
    git archive --format=tar "$rev" | tar -x -C "$out/$side-src"
    echo "energy-diff: $side = $rev ($(git rev-parse --short "$rev")): building" >&2
    (cd "$out/$side-src" && sh -c "$build")
    (cd "$out/$side-src" && "$powerapi" profile --quiet --repeat "$repeat" -o "$out/$side" -- "$@" >&2)
done
set -- "$out/base" "$out/head" -o "$out/diff"
[ -n "$fail" ] && set -- "$@" --fail-above "$fail"
exec "$powerapi" diff "$@"
