#!/bin/bash
# demo.sh - runs a bundled Java workload under the jalen agent and prints
# its energy hotspots and where its files (and flame graph) are.
# Usage: jalen-agent/demo.sh [BUILD_DIR] [OUT_DIR]
set -eu
BUILD=${1:-build}
OUT=${2:-$BUILD/jalen-demo}
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "demo: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
rm -rf "$OUT"
echo "jalen demo: java -agentpath:$JALEN_AGENT=out=$OUT -cp $JALEN_CLASSES Known 3"
"$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$OUT" -cp "$JALEN_CLASSES" Known 3 >/dev/null
echo "jalen demo: threads ($OUT/threads.csv):"
if command -v column >/dev/null; then
    column -s, -t <"$OUT/threads.csv" | sed 's/^/  /'
else
    sed 's/^/  /' "$OUT/threads.csv"
fi
echo "jalen demo: top methods by total (inclusive) energy ($OUT/methods.csv):"
tail -n +2 "$OUT/methods.csv" | sort -t, -k3 -g -r | head -8 |
    awk -F, '{ printf "  %10.3f J  %s\n", $3, $1 }'
echo "jalen demo: flame graph: $OUT/flamegraph.html (open it in a browser)"
