#!/bin/bash
# bench_jalen_jetty_methods.sh - which methods jalen and async-profiler
# credit on the Jetty server under wrk (issue 32): per-method self shares
# (each sample to its deepest Java frame), the distance between two runs
# (half the sum of the absolute differences of the shares), for every
# pair of runs, and the rows where the two profilers differ most.
#
# Usage: bench/bench_jalen_jetty_methods.sh [BUILD_DIR] [SECONDS] [ROUNDS] [MODE]
#   defaults: build, 20, 2, apart
#   MODE apart: each profiler in its own JVM (what a user compares);
#   MODE same: each round one JVM with both profilers (jalen on SIGPROF,
#   async-profiler on signal 40 every 9.7 ms of CPU time), beside a JVM
#   with async-profiler alone: the distance jalen ~ async-profiler in one
#   JVM sees the same compiled code, the same inlining and the same
#   requests, so what is left is the attribution and the sampling noise;
#   it is printed beside the sampling floor (the distance two exact
#   profilers would show at those sample counts) and beside two JVMs of
#   async-profiler.  The two intervals differ so that the samples do not
#   fall in step: with both at 10 ms of the same thread CPU-time clock,
#   async-profiler's signal arrived while jalen's handler ran in 17 % of
#   its samples (its walker does not cross a signal frame).  Its samples
#   that do fall in jalen's handler are left out (counted).
# Environment: ASYNC_PROFILER_LIB (required: libasyncProfiler.so, never
#   downloaded); JALEN_JAVA_OVERRIDE (default: the build's JDK);
#   JALEN_OPTS (default mode=cpu,interval=10ms).
#
# Each run is a fresh JVM (-XX:+DebugNonSafepoints), interval 10 ms,
# wrk -t2 -c16 for SECONDS; the tools alternate within a round.  jalen's
# shares are of energy.collapsed (samples weighed by energy), pseudo-frames
# ([GC], [VM], [JIT compiler], ...) under "(none)", its own thread
# ([agent]) left out: async-profiler's profile holds none of its own work
# either; async-profiler's of its collapsed stacks (ann: Java frames end in
# _[j], _[i], _[0] or _[1]), stacks without a Java frame under "(none)".
# Each distance is given twice: over all samples, and over the samples
# with a Java frame only ("(none)" left out of both sides and the shares
# made to sum to 100 % again): jalen samples its pseudo-threads ([GC],
# [VM], [agent], [JIT compiler]) where async-profiler, which does not
# sample itself and names the VM's threads' stacks by their native frames,
# has a different "(none)" share; the second figure compares the Java
# methods alone.  Then the ranges: jalen~ap over every pair of runs,
# beside ap~ap and jalen~jalen (the criterion: jalen's distance to the
# reference no larger than two runs of the reference differ), and the
# distances between means of rounds, where run-to-run noise averages out.
set -u
BUILD=${1:-build}
SECS=${2:-20}
ROUNDS=${3:-2}
MODE=${4:-apart}
case "$MODE" in apart | same) ;; *) echo "bench_jalen_jetty_methods: MODE is apart or same, not $MODE" >&2; exit 2 ;; esac
ENVF="$BUILD/jalen-agent/jalen-env.sh"
[ -r "$ENVF" ] || { echo "bench_jalen_jetty_methods: $ENVF not found: build first" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENVF"
AP=${ASYNC_PROFILER_LIB:-}
if [ -z "$AP" ] || [ ! -r "$AP" ]; then
    echo "bench_jalen_jetty_methods: ASYNC_PROFILER_LIB not set or not readable: nothing to compare with (skipped)"
    exit 0
fi
command -v wrk >/dev/null || { echo "bench_jalen_jetty_methods: wrk not found" >&2; exit 2; }
[ -n "$JALEN_JETTY_CP" ] || { echo "bench_jalen_jetty_methods: Jetty jars not found" >&2; exit 2; }
JAVA=${JALEN_JAVA_OVERRIDE:-$JALEN_JAVA}
JOPTS=${JALEN_OPTS:-mode=cpu,interval=10ms}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# jalen_shares DIR OUT: jalen's shares ("method percent") from its files
jalen_shares() {
    awk '{ v = $NF; st = $0; sub(/ [0-9]+$/, "", st); if (st == "[agent]") next
           n = split(st, f, ";"); m = "(none)"
           for (i = n; i >= 1; i--) if (substr(f[i], 1, 1) != "[") { m = f[i]; break }
           e[m] += v; t += v }
         END { for (m in e) printf "%s %.3f\n", m, 100 * e[m] / t }' "$1/energy.collapsed" >"$2"
    # the same shares counting stack samples, as async-profiler does
    # (profile.pb.gz's samples column; "(none)": samples of threads
    # with no Java frame)
    go tool pprof -raw "$1/profile.pb.gz" 2>/dev/null | awk '
        /^Locations/ { loc = 1; next }
        /^Mappings/ { loc = 0 }
        loc && /^ +[0-9]+: / { id = $1; sub(/:$/, "", id); f[id] = $4; next }
        !loc && /^ +[0-9]+ +[0-9]+ +[0-9]+: / { if ($1 > 0) { n++; c[n] = $1; st[n] = $0 } }
        END { for (i = 1; i <= n; i++) {
                  split(st[i], w, ": "); k = split(w[2], ids, " "); m = "(none)"
                  for (j = 1; j <= k; j++) if (substr(f[ids[j]], 1, 1) != "[") { m = f[ids[j]]; break }
                  e[m] += c[i]; t += c[i] }
              for (m in e) printf "%s %.3f\n", m, 100 * e[m] / t }' >"$2.samples"
    sed -n 's/.*"samples": *\([0-9]*\).*/\1/p' "$1/summary.json" >"$2.n"
}
# ap_shares FILE OUT: async-profiler's shares from its collapsed stacks;
# a stack through jalen's signal handler (both in one JVM) left out
ap_shares() {
    awk -v nf="$2.n" -v lf="$2.lost" '{ v = $NF; st = $0; sub(/ [0-9]+$/, "", st)
           if (st ~ /(^|;)jl_on_sigprof(;|$)/) { lost += v; next }
           n = split(st, f, ";"); m = "(none)"
           for (i = n; i >= 1; i--) if (f[i] ~ /_\[[ji01]\]$/) {
               m = f[i]; sub(/_\[[ji01]\]$/, "", m); gsub("/", ".", m); break }
           e[m] += v; t += v }
         END { for (m in e) printf "%s %.3f\n", m, 100 * e[m] / t
               print t > nf; printf "%.1f\n", (t + lost > 0 ? 100 * lost / (t + lost) : 0) > lf }' "$1" >"$2"
}
# run TOOL OUT [OUT2]: one JVM under wrk, its shares into OUT ("method
# percent"); TOOL both: jalen's into OUT, async-profiler's into OUT2
run() {
    local port=$((20000 + RANDOM % 20000)) ag
    local apa="-agentpath:$AP=start,event=cpu,interval=10ms,ann,collapsed,file=$TMP/ap.txt"
    local jla="-agentpath:$JALEN_AGENT=$JOPTS,quiet,out=$TMP/jl"
    case "$1" in
        jalen) ag="$jla" ;;
        ap) ag="$apa" ;;
        both) ag="$jla -agentpath:$AP=start,event=cpu,interval=9700us,signal=40,ann,collapsed,file=$TMP/ap.txt" ;;
    esac
    local pid try
    # a server that is not READY in 10 s (its port taken by another
    # program): ended, and started again on another port, 3 tries
    for try in 1 2 3; do
        rm -rf "$TMP/jl" "$TMP/ap.txt"
        # shellcheck disable=SC2086
        "$JAVA" -Xmx256m -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints $ag \
            -cp "$JALEN_JETTY_CP" JettyServer "$port" >"$TMP/srv" 2>&1 &
        pid=$!
        for _ in $(seq 100); do grep -q READY "$TMP/srv" && break; sleep 0.1; done
        grep -q READY "$TMP/srv" && break
        echo "  $1 server not ready on port $port (try $try): $(head -c 200 "$TMP/srv" | tr '\n' ' ')"
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        port=$((20000 + RANDOM % 20000))
    done
    wrk -t2 -c16 -d"${SECS}s" "http://127.0.0.1:$port/" >"$TMP/wrk" 2>&1
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
    case "$1" in
        jalen) jalen_shares "$TMP/jl" "$2" ;;
        ap) ap_shares "$TMP/ap.txt" "$2" ;;
        both) jalen_shares "$TMP/jl" "$2"; ap_shares "$TMP/ap.txt" "$3" ;;
    esac
    printf "  %-6s run: %s requests/s\n" "$1" "$(awk '/Requests\/sec/ { print $2 }' "$TMP/wrk")"
}
# dist A B [java]: the distance of two runs' shares; java: "(none)" left
# out and the rest made to sum to 100 % on each side
dist() {
    awk -v java="${3:-}" '
        NR == FNR { if (!(java && $1 == "(none)")) { a[$1] = $2; s[$1] = 1; ta += $2 }; next }
        { if (!(java && $1 == "(none)")) { b[$1] = $2; s[$1] = 1; tb += $2 } }
        END { for (m in s) { x = 100 * a[m] / ta - 100 * b[m] / tb; d += x < 0 ? -x : x }; printf "%.1f", d / 2 }' "$1" "$2"
}
# avg FILE...: the mean share of each method over the runs' files
avg() { cat "$@" | awk -v n=$# '{ a[$1] += $2 / n } END { for (m in a) print m, a[m] }' | sort; }
# floor A B NA NB [java]: the mean distance between two exact profilers'
# shares drawn with NA and NB samples from the mean of A's and B's shares
# (20 draws each side); java: over the methods only, with the counts
# scaled by the Java share.  jalen weighs its samples by energy, which
# adds to its noise: a lower bound.
floor() {
    awk -v na="$3" -v nb="$4" -v java="${5:-}" '
        NR == FNR { if (!(java && $1 == "(none)")) { a[$1] = $2; s[$1] = 1; ta += $2 }; next }
        { if (!(java && $1 == "(none)")) { b[$1] = $2; s[$1] = 1; tb += $2 } }
        function draw(n, out,    i, r, lo, hi, mid) {
            for (i = 1; i <= k; i++) out[i] = 0
            for (i = 0; i < n; i++) {
                r = rand(); lo = 1; hi = k
                while (lo < hi) { mid = int((lo + hi) / 2); if (c[mid] < r) lo = mid + 1; else hi = mid }
                out[lo]++ }
        }
        END { srand(1); k = 0; acc = 0
              for (m in s) { k++; acc += (a[m] / ta + b[m] / tb) / 2; c[k] = acc }
              c[k] = 1.1
              ka = int(na * (java ? ta / 100 : 1)); kb = int(nb * (java ? tb / 100 : 1))
              if (ka < 1 || kb < 1) { printf "?"; exit }
              for (t = 0; t < 20; t++) {
                  draw(ka, x); draw(kb, y); d = 0
                  for (i = 1; i <= k; i++) { v = x[i] / ka - y[i] / kb; d += v < 0 ? -v : v }
                  sum += 50 * d }
              printf "%.1f", sum / 20 }' "$1" "$2"
}
if [ "$MODE" = same ]; then
    echo "JVM: $("$JAVA" -version 2>&1 | head -1); jalen $JOPTS; $SECS s of wrk a run; $ROUNDS rounds of: one JVM with both profilers, one with async-profiler alone; load $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq "$ROUNDS"); do
        run both "$TMP/j$r" "$TMP/b$r"
        run ap "$TMP/a$r"
    done
    echo "One JVM, jalen ~ async-profiler, beside the sampling floor (points; all samples / Java frames only):"
    for r in $(seq "$ROUNDS"); do
        nj=$(cat "$TMP/j$r.n") nb=$(cat "$TMP/b$r.n")
        printf "  round %s: %s / %s   floor %s / %s   (samples: jalen %s, async-profiler %s; %s %% of async-profiler's in jalen's handler, left out)\n" \
            "$r" "$(dist "$TMP/j$r" "$TMP/b$r")" "$(dist "$TMP/j$r" "$TMP/b$r" java)" \
            "$(floor "$TMP/j$r" "$TMP/b$r" "$nj" "$nb")" "$(floor "$TMP/j$r" "$TMP/b$r" "$nj" "$nb" java)" \
            "$nj" "$nb" "$(cat "$TMP/b$r.lost")"
    done | tee "$TMP/same"
    echo "async-profiler alone, two JVMs (all / Java frames only), beside the sampling floor:"
    for r in $(seq "$ROUNDS"); do for q in $(seq "$ROUNDS"); do
        [ "$r" -lt "$q" ] || continue
        na=$(cat "$TMP/a$r.n") nq=$(cat "$TMP/a$q.n")
        printf "  ap%s ~ ap%s: %s / %s   floor %s / %s\n" "$r" "$q" "$(dist "$TMP/a$r" "$TMP/a$q")" \
            "$(dist "$TMP/a$r" "$TMP/a$q" java)" "$(floor "$TMP/a$r" "$TMP/a$q" "$na" "$nq")" \
            "$(floor "$TMP/a$r" "$TMP/a$q" "$na" "$nq" java)"
    done; done | tee "$TMP/apart"
    echo "Means (all / Java frames only):"
    awk '{ a += $3; j += $5; fa += $7; fj += $9; n++ }
         END { if (n) printf "  jalen ~ async-profiler, one JVM:  %.1f / %.1f   floor %.1f / %.1f   (%d rounds)\n", a / n, j / n, fa / n, fj / n, n }' "$TMP/same"
    awk '{ a += $4; j += $6; fa += $8; fj += $10; n++ }
         END { if (n) printf "  async-profiler ~ itself, two JVMs: %.1f / %.1f   floor %.1f / %.1f   (%d pairs)\n", a / n, j / n, fa / n, fj / n, n }' "$TMP/apart"
    echo "Rows where the mean shares in one JVM differ by 0.3 point or more (jalen | async-profiler | d):"
    join -a1 -a2 -e0 -o 0,1.2,2.2 <(avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/j$r"; done)) \
        <(avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/b$r"; done)) |
        awk '{ d = $2 - $3; if (d >= 0.3 || d <= -0.3) printf "  %-70s %6.2f %6.2f %+6.2f\n", $1, $2, $3, d }' | sort -k4 -g
    exit 0
fi
echo "JVM: $("$JAVA" -version 2>&1 | head -1); jalen $JOPTS; $SECS s of wrk a run; $ROUNDS rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    run jalen "$TMP/j$r"
    run ap "$TMP/a$r"
done
echo "Distances (half the sum of |share difference|, in points; all samples / Java frames only):"
for x in j a; do for y in j a; do for r in $(seq "$ROUNDS"); do for q in $(seq "$ROUNDS"); do
    [ "$x$r" \< "$y$q" ] || continue
    printf "  %s%s ~ %s%s: %s / %s\n" "$x" "$r" "$y" "$q" "$(dist "$TMP/$x$r" "$TMP/$y$q")" \
        "$(dist "$TMP/$x$r" "$TMP/$y$q" java)"
done; done; done; done | sed 's/ j\([0-9]\)/ jalen\1/g; s/ a\([0-9]\)/ ap\1/g' | tee "$TMP/pairs"
echo "jalen's shares by stack samples (not energy) ~ async-profiler (all / Java frames only):"
for r in $(seq "$ROUNDS"); do for q in $(seq "$ROUNDS"); do
    [ -s "$TMP/j$r.samples" ] || continue
    printf "  jalen%s# ~ ap%s: %s / %s\n" "$r" "$q" "$(dist "$TMP/j$r.samples" "$TMP/a$q")" \
        "$(dist "$TMP/j$r.samples" "$TMP/a$q" java)"
done; done | tee "$TMP/spairs"
echo "Ranges (lowest-highest and mean over the pairs; all samples / Java frames only):"
for k in "ap.*~ ap" "jalen.*~ jalen" "ap.*~ jalen\|jalen[0-9]* ~ ap" "jalen.*# ~ ap"; do
    grep -h "^  $k" "$TMP/pairs" "$TMP/spairs" | sed 's/.*: //' | awk -v k="$k" '
        { if (NR == 1 || $1 < l1) l1 = $1; if ($1 > h1) h1 = $1; if (NR == 1 || $3 < l2) l2 = $3; if ($3 > h2) h2 = $3
          s1 += $1; s2 += $3 }
        END { n = k ~ /#/ ? "jalen# ~ ap  " : k ~ /jalen.*ap/ ? "jalen ~ ap   " : k ~ /^ap/ ? "ap ~ ap      " : "jalen ~ jalen"
              if (NR) printf "  %s %4.1f-%4.1f (mean %4.1f) / %4.1f-%4.1f (mean %4.1f)  (%d pairs)\n", n, l1, h1, s1 / NR, l2, h2, s2 / NR, NR }'
done
printf "  the \"(none)\" share (no Java frame): jalen"
for r in $(seq "$ROUNDS"); do printf " %s" "$(awk '$1 == "(none)" { printf "%.1f", $2 }' "$TMP/j$r")"; done
printf " %%, async-profiler"
for r in $(seq "$ROUNDS"); do printf " %s" "$(awk '$1 == "(none)" { printf "%.1f", $2 }' "$TMP/a$r")"; done
echo " %"
# the systematic part: the distance between the tools' mean shares, beside
# the distance between the means of one tool's odd and even rounds (what
# run-to-run noise leaves in a mean of half as many runs)
if [ "$ROUNDS" -ge 2 ]; then
    odd=$(seq 1 2 "$ROUNDS") even=$(seq 2 2 "$ROUNDS")
    avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/j$r"; done) >"$TMP/mj"
    avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/a$r"; done) >"$TMP/ma"
    for t in j a; do
        avg $(for r in $odd; do echo "$TMP/$t$r"; done) >"$TMP/m${t}o"
        avg $(for r in $even; do echo "$TMP/$t$r"; done) >"$TMP/m${t}e"
    done
    echo "Means of the rounds (all samples / Java frames only):"
    echo "  jalen ~ ap, all rounds:          $(dist "$TMP/mj" "$TMP/ma") / $(dist "$TMP/mj" "$TMP/ma" java)"
    avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/j$r.samples"; done) >"$TMP/mjs"
    echo "  jalen by samples ~ ap, all rounds: $(dist "$TMP/mjs" "$TMP/ma") / $(dist "$TMP/mjs" "$TMP/ma" java)"
    echo "  ap odd ~ ap even rounds:         $(dist "$TMP/mao" "$TMP/mae") / $(dist "$TMP/mao" "$TMP/mae" java)"
    echo "  jalen odd ~ jalen even rounds:   $(dist "$TMP/mjo" "$TMP/mje") / $(dist "$TMP/mjo" "$TMP/mje" java)"
    echo "  jalen odd ~ ap even rounds:      $(dist "$TMP/mjo" "$TMP/mae") / $(dist "$TMP/mjo" "$TMP/mae" java)"
    echo "  jalen even ~ ap odd rounds:      $(dist "$TMP/mje" "$TMP/mao") / $(dist "$TMP/mje" "$TMP/mao" java)"
fi
echo "Rows where the mean shares differ by 0.5 point or more (jalen | async-profiler | d | jalen by samples):"
join -a1 -a2 -e0 -o 0,1.2,1.3,2.2 <(join -a1 -a2 -e0 -o 0,1.2,2.2 <(avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/j$r"; done)) \
        <(avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/j$r.samples"; done))) \
    <(avg $(for r in $(seq "$ROUNDS"); do echo "$TMP/a$r"; done)) |
    awk '{ d = $2 - $4; if (d >= 0.5 || d <= -0.5) printf "  %-70s %6.2f %6.2f %+6.2f %6.2f\n", $1, $2, $4, d, $3 }' | sort -k4 -g
