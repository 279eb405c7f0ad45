#!/bin/sh
# jalen-repeat.sh - a Java program run N times under the jalen agent
# (issue 44): each run's files in DIR/run-K (the agent's out=), then
# `powerapi diff --summarize DIR` writes DIR/repeat.csv (per method the
# mean energy, its spread and 95 % interval) and DIR/summary.json (the
# same for the whole run, with the total's coefficient of variation).
# Two such folders compare with `powerapi diff A B` (Welch's t-test).
#
#   jalen-agent/jalen-repeat.sh [-n N] [-o DIR] [--agent LIB] [--options OPTS]
#                               [--warmup N] -- java [JVM OPTIONS] CLASS|-jar JAR [ARGS]
#
# OPTS are more agent options (filter=com.acme.,interval=5ms); LIB is
# libjalen.so (default: $JALEN_AGENT, else where the Debian package puts it).
set -eu

n=5 out=jalen-repeat opts= warmup=0
agent=${JALEN_AGENT:-/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/jalen/libjalen.so}
usage() {
    echo "usage: $0 [-n N] [-o DIR] [--agent LIB] [--options OPTS] [--warmup N] -- java ARGS..." >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    --agent) agent=$2; shift 2 ;;
    --options) opts=,$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
    esac
done
[ $# -ge 2 ] || usage
[ -r "$agent" ] || { echo "$0: no agent at $agent (give --agent LIB or JALEN_AGENT)" >&2; exit 2; }
java=$1
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
w=0
while [ "$w" -lt "$warmup" ]; do
    "$java" "$@" >/dev/null
    w=$((w + 1))
done
k=1
while [ "$k" -le "$n" ]; do
    rm -rf "$out/run-$k"
    "$java" "-agentpath:$agent=out=$out/run-$k$opts" "$@"
    k=$((k + 1))
done
exec "${POWERAPI:-powerapi}" diff --summarize "$out"
