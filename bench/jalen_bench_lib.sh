# shellcheck shell=bash disable=SC2034
# jalen_bench_lib.sh - what bench_jalen.sh and bench_jalen_interleaved.sh
# share; sourced, with BUILD and JB_NAME (the script's name for messages)
# set.  Loads the build's jalen-env.sh, checks wrk and the Jetty jars,
# creates TMP, reads JALEN_BENCH_CONFIGS into CONFIGS.
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "$JB_NAME: $ENVF not found: build first (cmake --build $BUILD)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
command -v wrk >/dev/null || { echo "$JB_NAME: wrk not found (apt-get install wrk)" >&2; exit 2; }
[ -n "$JALEN_JETTY_CP" ] || { echo "$JB_NAME: Jetty jars not found (apt-get install libjetty9-java)" >&2; exit 2; }
TMP=$(mktemp -d)
TCK=$(getconf CLK_TCK)

# "none-again" is a second no-agent configuration, measured like the
# others: its "overhead" is the noise floor of this very run (A/A)
CONFIGS=("none" "none-again" "mode=cpu,interval=10ms" "mode=jvmti,interval=10ms" "mode=cpu,interval=10ms,net=off")
# JALEN_BENCH_CONFIGS="none;mode=cpu,interval=10ms" measures only these (the
# first is the baseline), to spend a long run's rounds on one question.
# JVM options follow the agent's after "@", "@"-separated:
# "mode=cpu@-XX:+UnlockDiagnosticVMOptions@-XX:-DebugNonSafepoints"; a
# "none@..." configuration runs without the agent but is not pooled with
# the baseline.
if [ -n "${JALEN_BENCH_CONFIGS:-}" ]; then
    IFS=';' read -r -a CONFIGS <<<"$JALEN_BENCH_CONFIGS"
fi

# utime+stime of a process, in ticks
cpu_ticks() { awk '{ s=$0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
# task_ticks PID REGEX: "tid ticks" of the threads whose "(comm)" matches,
# one line each, so that a thread started between two readings counts
# from 0 (see ticks_delta)
task_ticks() {
    awk -v re="$2" '$0 ~ re { t = FILENAME; sub(/\/stat$/, "", t); sub(/.*\//, "", t)
                             s = $0; sub(/.*\) /, "", s); split(s, f, " "); print t, f[12] + f[13] }' \
        /proc/"$1"/task/*/stat 2>/dev/null
}
# the JIT compiler threads (C1/C2 CompilerThreadN)
jit_ticks() { task_ticks "$1" '\\(C[12] CompilerThre'; }
# the agent's own threads (jalen-agent, jalen-sampler)
agent_ticks() { task_ticks "$1" '\\(jalen-'; }
# ticks_delta BEFORE AFTER: the ticks gained between two task_ticks files
ticks_delta() { awk 'NR == FNR { a[$1] = $2; next } { d += $2 - a[$1] } END { print d + 0 }' "$1" "$2"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
