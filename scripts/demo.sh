#!/usr/bin/env bash
# demo.sh - the main job's demo (run.sh): which processes burn the watts
# while a busy workload runs, which functions of a bundled C workload do,
# then which Java methods of a bundled Java workload do (when the jalen
# agent is built); and where the command is.  Checked by
# tests/test_live_demo.c.
# Usage: scripts/demo.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-$build/jalen-demo}
powerapi=$build/cli/powerapi
[ -x "$powerapi" ] || { echo "demo: $powerapi not found: build first" >&2; exit 2; }

echo "== powerapi modules (what works on this machine, and why not)"
"$powerapi" modules
echo

# Two busy processes, so that the table has an answer to show (on an idle
# machine every row reads 0.00 W, in pid order); ended with the script.
busy=()
trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT
sha256sum /dev/zero & busy+=($!)
gzip -1 -c </dev/zero >/dev/null & busy+=($!)
echo "== powerapi monitor --all --top 8 (3 windows of 1 s, sorted by power; busy: sha256sum and gzip, started by this demo)"
"$powerapi" monitor --all --top 8 --interval 1s --count 3 --format table
kill "${busy[@]}" 2>/dev/null || true
wait "${busy[@]}" 2>/dev/null || true
busy=()

# Per function: a C workload built with -g (primes, sorting, hashing),
# profiled by powerapi profile; its closing lines are the answer.
prof=$out-profile
rm -rf "$prof" && mkdir -p "$prof"
echo
echo "== powerapi profile: energy per function of a C workload (scripts/demo/busy.c)"
if cc -O2 -g -o "$prof/busy" "$src/scripts/demo/busy.c"; then
    echo "powerapi profile -o $prof -- $prof/busy 20"
    if "$powerapi" profile -o "$prof" -- "$prof/busy" 20 >/dev/null 2>"$prof/log"; then
        grep '^profile:' "$prof/log" | head -7
    else
        cat "$prof/log" # why not, in one line (perf_event_paranoid, say)
    fi
fi

next() {
    echo
    echo "the command is $(cd "$build/cli" && pwd)/powerapi; for README.md's first answers:"
    echo "  export PATH=\"$(cd "$build/cli" && pwd):\$PATH\""
}
[ -f "$build/jalen-agent/libjalen.so" ] && [ -r "$build/jalen-agent/jalen-env.sh" ] || { next; exit 0; }
# shellcheck disable=SC1091
. "$build/jalen-agent/jalen-env.sh"
echo
echo "== jalen: energy per Java method of a workload that sorts, counts primes and hashes (scripts/demo/Busy.java)"
rm -rf "$out" && mkdir -p "$out/classes"
"$(dirname "$JALEN_JAVA")/javac" -d "$out/classes" "$src/scripts/demo/Busy.java"
echo "java -agentpath:$JALEN_AGENT=out=$out,filter=Busy -cp $out/classes Busy 25"
"$JALEN_JAVA" "-agentpath:$JALEN_AGENT=out=$out,filter=Busy" -cp "$out/classes" Busy 25 2>"$out/agent.log"
# methods-filtered.csv charges each sample to the innermost method of the
# workload (filter=Busy); the rows in brackets (the JVM's own threads, the
# agent's, code outside Java) are summed apart.
f="$out/methods-filtered.csv"
# (a CSV reader: names such as "[not walkable, not Java]" are quoted)
python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
total = sum(float(r[1]) for r in rows) or 1.0
for r in sorted((r for r in rows if not r[0].startswith("[")), key=lambda r: -float(r[1])):
    print("  %8.3f J  %5.1f %%  %s" % (float(r[1]), 100 * float(r[1]) / total, r[0]))
rest = sum(float(r[1]) for r in rows if r[0].startswith("["))
print("  %8.3f J  %5.1f %%  [the rest: the JVM's threads (JIT, GC), the agent's, code outside Java]"
      % (rest, 100 * rest / total))
PY
echo "files in $out/ (flame graph: $out/flamegraph.html; the agent's summary: $out/agent.log)"
next
