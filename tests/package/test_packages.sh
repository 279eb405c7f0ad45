#!/usr/bin/env bash
# The Debian packages end to end (ctest -L package; packaging/CMakeLists.txt):
# builds a tree configured for /usr, makes the .debs with cpack, lints them
# (lintian: no error, no warning that is not overridden with its reason),
# installs them with dpkg -i, uses only the installed files (the command,
# the units, the group powerapi with RAPL and the ring, pkg-config, the CMake
# package, a C program, the agent on a Java program, the Java and Python
# bindings), then purges them and checks that nothing is left behind.
#
# Usage: test_packages.sh SOURCE_DIR BUILD_DIR (scripts/package.sh builds there)
# Exit 77 (skipped, with the reason) when not root or when one of the
# packages or the group powerapi is already on this machine: the test
# never touches what it did not install.
set -euo pipefail

src=$(cd "$1" && pwd)
bld=$2
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
PKGS=(libpowerapi-data libpowerapi0 libpowerapi-dev powerapi jalen-agent python3-powerapi)
MA=$(gcc -print-multiarch)
CLEANPATH=/usr/sbin:/usr/bin:/sbin:/bin

say() { printf 'package test: %s\n' "$*"; }
fail() {
    printf 'package test: FAIL: %s\n' "$*" >&2
    exit 1
}
# a command with nothing of the build tree or the caller's environment
clean() { env -i PATH="$CLEANPATH" HOME="$work" LANG=C.UTF-8 "$@"; }

# ------------------------------------------------------------ build
say "scripts/package.sh $bld"
CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$src/scripts/package.sh" "$bld" >/dev/null || fail "scripts/package.sh"
ver=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$bld/CMakeCache.txt")
dver="$ver-1"
debs=()
for p in "${PKGS[@]}"; do
    d=$(ls "$bld/${p}_${dver}_"*.deb 2>/dev/null || true)
    [ -n "$d" ] || fail "cpack made no $p ${dver} (see $bld/cpack.log)"
    [ "$(dpkg-deb -f "$d" Version)" = "$dver" ] || fail "$p: version $(dpkg-deb -f "$d" Version), not $dver"
    debs+=("$d")
done
n=$(ls "$bld"/*.deb | wc -l)
[ "$n" -eq ${#PKGS[@]} ] || fail "$n packages, expected ${#PKGS[@]}"
say "built ${#debs[@]} packages, version $dver"

# what each package must hold (and where)
has() { # package path...
    local debf=("$bld/${1}_${dver}_"*.deb) f list deb
    deb=${debf[0]}
    shift
    list=$(dpkg-deb -c "$deb" | awk '{print $6}')
    for f in "$@"; do
        grep -qx "\\.$f" <<<"$list" || fail "$deb lacks $f"
    done
}
has libpowerapi0 /usr/lib/$MA/libpowerapi.so.$ver /usr/lib/$MA/libpowerapi.so.0
has libpowerapi-data /usr/share/powerapi/hwdb.txt
has libpowerapi-dev /usr/include/powerapi.h /usr/include/powerapi_module.h /usr/lib/$MA/libpowerapi.a /usr/lib/$MA/libpowerapi.so \
    /usr/lib/$MA/pkgconfig/powerapi.pc /usr/lib/$MA/cmake/powerapi/powerapiConfig.cmake
has powerapi /usr/bin/powerapi /lib/systemd/system/powerapi-daemon.service \
    /lib/systemd/system/powerapi-serve.service /etc/powerapi/powerapi.conf \
    /lib/udev/rules.d/60-powerapi-rapl.rules
has jalen-agent /usr/lib/$MA/jalen/libjalen.so /usr/share/java/powerapi-$ver.jar \
    /usr/share/java/powerapi.jar /usr/lib/$MA/jni/libpowerapi_jni.so \
    /usr/share/java/jalen-api-$ver.jar /usr/share/java/jalen-api.jar \
    /usr/share/jalen/jalen-trace.jar /usr/share/jalen/jalen-trace-rt.jar
has python3-powerapi /usr/lib/python3/dist-packages/powerapi/__init__.py
shlibs=$(dpkg-deb --ctrl-tarfile "$bld"/libpowerapi0_*.deb | tar -xO ./shlibs)
[ "$shlibs" = "libpowerapi 0 libpowerapi0 (>= $ver)" ] || fail "libpowerapi0 shlibs: $shlibs"
dpkg-deb -f "$bld"/python3-powerapi_*.deb Depends | grep -q "libpowerapi0 (= $dver)" ||
    fail "python3-powerapi does not depend on libpowerapi0 (= $dver)"
dpkg-deb -f "$bld"/powerapi_*.deb Depends | grep -q "libmicrohttpd" ||
    fail "powerapi: shlibdeps found no libmicrohttpd"

# ------------------------------------------------------------ lintian
say "lintian"
lint=$(lintian --fail-on error,warning "${debs[@]}" 2>&1) || {
    printf '%s\n' "$lint"
    fail "lintian found errors or warnings"
}
if printf '%s\n' "$lint" | grep -E '^(E|W):'; then
    fail "lintian: errors or warnings above"
fi
say "lintian: no error, no warning ($(lintian --show-overrides "${debs[@]}" 2>/dev/null | grep -c '^O:') overridden, each with its reason)"

# ------------------------------------------------------------ install
if [ "$(id -u)" -ne 0 ]; then
    say "skipped the install: dpkg -i into /usr needs root (CI runs as root)"
    exit 77
fi
for p in "${PKGS[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$'; then
        say "skipped the install: $p is already installed here, not by this test"
        exit 77
    fi
done
if getent group powerapi >/dev/null; then
    say "skipped the install: the group powerapi exists already, not made by this test"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/pa-pkgtest.XXXXXX")
chmod 755 "$work"
installed=0
pids=()
ring="pa-pkgtest-$$"
# Folders the packages bring that were not here before must be gone after
# the purge (files are checked one by one).
before="$work/dirs-before"
for d in "${debs[@]}"; do
    dpkg-deb -c "$d" | awk '$1 ~ /^d/ {print substr($6, 2)}' | sed 's:/$::'
done | sort -u | while read -r dir; do
    [ -z "$dir" ] || [ ! -e "$dir" ] || printf '%s\n' "$dir"
done >"$before"

dpkg_do() { # retried while another dpkg holds the lock
    local out
    for _ in $(seq 1 60); do
        if out=$(dpkg "$@" 2>&1); then
            return 0
        fi
        if grep -qi 'lock' <<<"$out"; then
            sleep 5
            continue
        fi
        printf '%s\n' "$out" >&2
        return 1
    done
    printf '%s\n' "$out" >&2
    return 1
}
cleanup() {
    local rc=$? p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -f "/dev/shm/$ring"
    if [ "$installed" -eq 1 ]; then
        say "cleanup: purging the packages"
        dpkg_do --purge python3-powerapi jalen-agent powerapi libpowerapi-dev libpowerapi0 \
            libpowerapi-data || true
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

say "dpkg -i"
installed=1
dpkg_do -i "${debs[@]}" || fail "dpkg -i"
for p in "${PKGS[@]}"; do
    st=$(dpkg-query -W -f='${Status} ${Version}' "$p")
    [ "$st" = "install ok installed $dver" ] || fail "$p: $st"
done
gid=$(getent group powerapi | cut -d: -f3)
[ -n "$gid" ] && [ "$gid" -lt 1000 ] || fail "no system group powerapi (gid '$gid')"
dpkg-query -W -f='${Conffiles}' powerapi | grep -q '/etc/powerapi/powerapi.conf' ||
    fail "/etc/powerapi/powerapi.conf is not a conffile"
say "installed; system group powerapi is gid $gid"

# ------------------------------------------------------------ units
units=(/lib/systemd/system/powerapi-daemon.service /lib/systemd/system/powerapi-serve.service)
v=$(systemd-analyze verify "${units[@]}" 2>&1) || { printf '%s\n' "$v"; fail "systemd-analyze verify"; }
if grep -i powerapi <<<"$v"; then
    fail "systemd-analyze verify complains about the units (above)"
fi
for u in "${units[@]}"; do
    score=$(systemd-analyze security --offline=yes "$u" 2>&1 |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || fail "no exposure level for $u"
    awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "$u: exposure $score > 2.0"
    say "$(basename "$u"): verify clean, exposure $score"
done
grep -qx 'CapabilityBoundingSet=CAP_PERFMON' "${units[0]}" || fail "daemon: capabilities"
grep -qx 'CapabilityBoundingSet=' "${units[1]}" || fail "serve: capabilities"

# ------------------------------------------------------------ the command
out=$(cd "$work" && clean powerapi modules 2>&1) || { printf '%s\n' "$out"; fail "powerapi modules"; }
grep -q 'procfs-cpu' <<<"$out" || fail "powerapi modules lists no procfs-cpu: $out"
grep -q 'chosen by auto' <<<"$out" || fail "powerapi modules: auto chose nothing: $out"
out=$(cd "$work" && clean powerapi monitor --all --top 3 --count 1 --interval 300ms 2>&1) ||
    { printf '%s\n' "$out"; fail "powerapi monitor"; }
grep -q '^system .* W' <<<"$out" || fail "powerapi monitor printed no system power: $out"
say "powerapi modules and monitor run from /usr/bin"

# The daemon and the exporter as their units run them: the configuration
# file's values, users of their own in the group powerapi, no capability.
uid_d=64901 uid_r=64902 uid_x=64903
(
    set -a
    . /etc/powerapi/powerapi.conf
    set +a
    # shellcheck disable=SC2086 # split like systemd's $VAR
    exec setpriv --reuid=$uid_d --regid=$uid_d --groups="$gid" --inh-caps=-all \
        env -i PATH="$CLEANPATH" /usr/bin/powerapi daemon --quiet --ring "$ring" --group powerapi \
        --interval "$POWERAPI_INTERVAL" $POWERAPI_MODULES $POWERAPI_DAEMON_OPTIONS $POWERAPI_EXPORT_OPTIONS --count 30
) &
pids+=($!)
for _ in $(seq 50); do
    [ -e "/dev/shm/$ring" ] && break
    sleep 0.1
done
sleep 2.5
mode=$(stat -c '%a %g' "/dev/shm/$ring")
[ "$mode" = "640 $gid" ] || fail "ring /dev/shm/$ring: mode and group '$mode', expected '640 $gid'"
out=$(setpriv --reuid=$uid_r --regid=$uid_r --groups="$gid" --inh-caps=-all \
    env -i PATH="$CLEANPATH" powerapi monitor --ring "$ring" --count 1 --top 2 2>&1) ||
    { printf '%s\n' "$out"; fail "a member of powerapi cannot read the ring"; }
grep -q '^system .* W' <<<"$out" || fail "ring reader: no system power: $out"
if out=$(setpriv --reuid=$uid_x --regid=$uid_x --clear-groups --inh-caps=-all \
    env -i PATH="$CLEANPATH" powerapi monitor --ring "$ring" --count 1 2>&1); then
    fail "a user in no group read the ring: $out"
fi
port=$((20000 + $$ % 20000))
setpriv --reuid=$uid_r --regid=$uid_r --groups="$gid" --inh-caps=-all \
    env -i PATH="$CLEANPATH" powerapi serve --ring "$ring" --listen "127.0.0.1:$port" \
    >"$work/serve.log" 2>&1 &
pids+=($!)
metrics=""
for _ in $(seq 50); do
    metrics=$(curl -sf "http://127.0.0.1:$port/metrics" || true)
    [ -n "$metrics" ] && break
    sleep 0.1
done
grep -q '^powerapi_' <<<"$metrics" || { cat "$work/serve.log"; fail "serve: no powerapi_ metric"; }
say "daemon ring mode 640 group powerapi: read by a member (monitor, serve /metrics: $(grep -c '^powerapi_' <<<"$metrics") series), refused to a user in no group"

# RAPL without root: energy_uj as the kernel makes it (0400 root), then as
# the installed udev rule's commands leave it (run on a copy of a RAPL
# sysfs: this machine may have no RAPL).
fake="$work/rapl"
mkdir -p "$fake"
cp -r "$src/tests/fixtures/rapl-wrap/sys" "$fake/"
chmod -R a+rX "$fake"
zone="$fake/sys/class/powercap/intel-rapl:0"
chmod 0400 "$zone/energy_uj"
as_user() { # groups command...
    local g=$1
    shift
    if [ -n "$g" ]; then
        setpriv --reuid=$uid_x --regid=$uid_x --groups="$g" --inh-caps=-all env -i PATH="$CLEANPATH" "$@"
    else
        setpriv --reuid=$uid_x --regid=$uid_x --clear-groups --inh-caps=-all env -i PATH="$CLEANPATH" "$@"
    fi
}
out=$(cd "$work" && as_user "" powerapi monitor --sysfs "$fake/sys" --count 1 --interval 200ms --top 1 2>&1) ||
    { printf '%s\n' "$out"; fail "monitor without the group"; }
grep -q '(modelled)' <<<"$out" || fail "without the group: not modelled: $out"
[ "$(grep -c 'for measured power join the group powerapi' <<<"$out")" -eq 1 ] ||
    fail "without the group: no line saying how to get measured power: $out"
rule=/lib/udev/rules.d/60-powerapi-rapl.rules
grep -o 'RUN+="[^"]*"' "$rule" | sed 's/^RUN+="//; s/"$//' | while read -r cmd; do
    # shellcheck disable=SC2086 # the rule's own words
    ${cmd//\/sys%p/$zone}
done
[ "$(stat -c '%a %G' "$zone/energy_uj")" = "440 powerapi" ] ||
    fail "the udev rule's commands left energy_uj $(stat -c '%a %G' "$zone/energy_uj")"
out=$(cd "$work" && as_user "$gid" powerapi monitor --sysfs "$fake/sys" --count 1 --interval 200ms --top 1 2>&1) ||
    { printf '%s\n' "$out"; fail "monitor in the group"; }
grep -q '(measured)' <<<"$out" || fail "in the group powerapi: not measured: $out"
if grep -q 'join the group' <<<"$out"; then fail "in the group: the hint is printed: $out"; fi
say "RAPL: a user in no group gets modelled power and one line how to get measured; in powerapi, measured"

# ------------------------------------------------------------ library
pc=$(clean pkg-config --libs powerapi | xargs)
[ "$pc" = "-lpowerapi" ] || fail "pkg-config --libs powerapi: '$pc'"
[ "$(clean pkg-config --modversion powerapi)" = "$ver" ] || fail "pkg-config --modversion"
cat >"$work/prog.c" <<'EOF'
#include <powerapi.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    pa_ctx *ctx;
    pa_power p;
    volatile double x = 0;
    if (pa_ctx_new(&ctx, NULL) < 0 || pa_module_enable(ctx, "cpu-tdp", "tdp=45") < 0 ||
        pa_watch_pid(ctx, getpid(), 0) < 0 || pa_tick(ctx) < 0)
        return 2;
    for (long i = 0; i < 100000000; i++)
        x += (double)i * 0.5;
    if (pa_tick(ctx) < 0 || pa_pid_power(ctx, getpid(), &p) < 0)
        return 3;
    printf("%s %.3f %.3f\n", pa_version(), p.cpu_time_s, p.cpu_w);
    pa_ctx_free(ctx);
    return 0;
}
EOF
# shellcheck disable=SC2046 # pkg-config's flags are words
(cd "$work" && clean cc -std=c11 -Wall -Werror prog.c $(clean pkg-config --cflags --libs powerapi) -o prog) ||
    fail "a C program does not build against the installed files"
deps=$(ldd "$work/prog")
grep -Eq "libpowerapi\.so\.0 => (/usr)?/lib/$MA/libpowerapi\.so\.0" <<<"$deps" ||
    fail "prog does not load the installed library: $deps"
read -r pv pcpu pw < <(clean "$work/prog") || fail "prog failed"
[ "$pv" = "$ver" ] || fail "prog: library version $pv"
awk -v t="$pcpu" -v w="$pw" 'BEGIN { exit !(t > 0.02 && w > 0) }' || fail "prog: cpu time $pcpu s, $pw W"
say "C program (pkg-config, shared): library $pv, its own CPU time $pcpu s at $pw W"

mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(user C)
find_package(powerapi $ver REQUIRED)
add_executable(user_shared ../prog.c)
target_link_libraries(user_shared PRIVATE powerapi::powerapi)
add_executable(user_static ../prog.c)
target_link_libraries(user_static PRIVATE powerapi::powerapi_static)
EOF
(cd "$work/cm" && clean cmake -S . -B b >/dev/null && clean cmake --build b >/dev/null) ||
    fail "find_package(powerapi): a CMake project does not build against the installed files"
for t in user_shared user_static; do
    read -r pv pcpu pw < <(clean "$work/cm/b/$t") || fail "$t failed"
    [ "$pv" = "$ver" ] && awk -v t="$pcpu" 'BEGIN { exit !(t > 0.02) }' || fail "$t: $pv $pcpu"
done
deps=$(ldd "$work/cm/b/user_static")
if grep -q libpowerapi <<<"$deps"; then fail "user_static loads libpowerapi.so"; fi
say "CMake package: powerapi::powerapi and powerapi::powerapi_static build and run"

# ------------------------------------------------------------ Java
mkdir -p "$work/classes"
cat >"$work/Ver.java" <<'EOF'
public class Ver {
    public static void main(String[] args) {
        System.out.println(org.powerapi.PowerAPI.version());
    }
}
EOF
clean javac -nowarn -d "$work/classes" -cp /usr/share/java/powerapi.jar "$src/scripts/demo/Busy.java" \
    "$work/Ver.java" || fail "javac"
jv=$(cd "$work" && clean java -cp "/usr/share/java/powerapi.jar:$work/classes" Ver) || fail "Java binding"
[ "$jv" = "$ver" ] || fail "Java binding: version '$jv'"
(cd "$work" && clean java "-agentpath:/usr/lib/$MA/jalen/libjalen.so=out=$work/jalen,filter=Busy,trace=Busy.hashBlocks" \
    -cp "$work/classes" Busy 3 >/dev/null 2>"$work/jalen.log") || { cat "$work/jalen.log"; fail "java with the agent"; }
# trace=: the agent's private jars from /usr/share/jalen, ASM from libasm-java
grep -q '^Busy.hashBlocks(.*,\[all threads\],' "$work/jalen/calls.csv" 2>/dev/null ||
    { cat "$work/jalen.log"; fail "agent: trace=Busy.hashBlocks gave no calls.csv row"; }
nm=$(grep -c '^"\?Busy\.' "$work/jalen/methods-filtered.csv" || true)
[ "$nm" -ge 3 ] || { head "$work/jalen/methods-filtered.csv"; fail "agent: $nm Busy methods"; }
say "jalen agent: $nm methods of Busy in methods-filtered.csv, Busy.hashBlocks traced ($(grep -m1 '^Busy.hashBlocks(' "$work/jalen/calls.csv" | cut -d, -f4) calls); Java binding $jv through /usr/share/java/powerapi.jar"
# the installed command finds the installed agent (issue 43): attach to a
# running JVM, ask its status, stop it, with no --agent
(cd "$work" && exec env -i PATH="$CLEANPATH" HOME="$work" LANG=C.UTF-8 java -cp "$work/classes" Busy 400 \
    >/dev/null 2>&1) &
jvm=$!
sleep 1 # the JVM up; `powerapi jalen` waits for its attach socket itself
att=$(clean /usr/bin/powerapi jalen "$jvm" start -o "$work/attached" 2>&1) ||
    { kill "$jvm"; fail "powerapi jalen $jvm start (installed): $att"; }
sleep 2
ast=$(clean /usr/bin/powerapi jalen "$jvm" status 2>&1) || { kill "$jvm"; fail "jalen status: $ast"; }
asp=$(clean /usr/bin/powerapi jalen "$jvm" stop 2>&1) || { kill "$jvm"; fail "jalen stop: $asp"; }
kill "$jvm" 2>/dev/null
wait "$jvm" 2>/dev/null || true
[ -s "$work/attached/summary.json" ] || fail "powerapi jalen: no summary.json in $work/attached"
say "powerapi jalen from the packages: attached to pid $jvm, status and stop, $(ls "$work/attached" | wc -l) files"

# ------------------------------------------------------------ Python
py=$(cd "$work" && clean /usr/bin/python3 -c 'import powerapi; print(powerapi.__file__, powerapi.version(), powerapi.library_path())') ||
    fail "python3 -c 'import powerapi'"
read -r pyf pyv pyl <<<"$py"
[ "$pyf" = /usr/lib/python3/dist-packages/powerapi/__init__.py ] || fail "python imported $pyf"
[ "$pyv" = "$ver" ] || fail "python: version $pyv"
case "$pyl" in "/usr/lib/$MA/libpowerapi.so.0" | "/lib/$MA/libpowerapi.so.0") ;; *) fail "python loaded $pyl" ;; esac
say "python3: import powerapi from $pyf, library $pyl"

# ------------------------------------------------------------ purge
for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
done
pids=()
say "dpkg --purge"
dpkg_do --purge python3-powerapi jalen-agent powerapi libpowerapi-dev libpowerapi0 libpowerapi-data ||
    fail "dpkg --purge"
installed=0
for p in "${PKGS[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed'; then
        fail "$p still known to dpkg: $(dpkg-query -W -f='${Status}' "$p")"
    fi
done
left=()
for d in "${debs[@]}"; do
    while read -r f; do
        [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
    done < <(dpkg-deb -c "$d" | awk '$1 !~ /^d/ {print substr($6, 2)}')
    while read -r dir; do
        [ -n "$dir" ] || continue
        grep -qxF "$dir" "$before" && continue
        [ -e "$dir" ] && left+=("$dir/ ($(ls -A "$dir" | head -3 | tr '\n' ' '))")
    done < <(dpkg-deb -c "$d" | awk '$1 ~ /^d/ {print substr($6, 2)}' | sed 's:/$::')
done
[ ${#left[@]} -eq 0 ] || fail "left behind: ${left[*]}"
if getent group powerapi >/dev/null; then fail "the group powerapi is left behind"; fi
cache=$(ldconfig -p)
if grep -q libpowerapi <<<"$cache"; then fail "ld.so.cache still names libpowerapi"; fi
say "purged: no file, folder, group or ld.so.cache entry left behind"
