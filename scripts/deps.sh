#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build and the tests need and
# this machine lacks.  Safe to run again: it installs only what is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  check                  # unit tests (Check)
  libpfm4-dev            # perf event names (libpfm4)
  libmicrohttpd-dev      # powerapi serve (Prometheus exporter)
  libncurses-dev         # powerapi top
  libjson-c-dev          # container and pod names from the runtimes' state files
  podman runc busybox-static  # the live container test: a real container, named
  chromium               # profile's flame graph loaded by a real browser (headless)
  openjdk-17-jdk-headless # jalen agent (jvmti.h), Java binding
  python3 python3-pip    # Python binding, its tests (offline pip install)
  libjetty9-java libservlet-api-java wrk  # agent load test and benchmark; jalen-api.jar's
  libjakarta-servlet-api-java  # servlet filter (javax) and its jakarta.servlet twin
  libasm-java            # jalen trace=: the bytecode rewriter (ObjectWeb ASM)
  prometheus             # promtool and a real scraper for the exporter tests
  tmux                   # powerapi top tests
  mandoc zsh             # man pages linted (mandoc -T lint); zsh completion checked
  iproute2               # network namespace test of the nic sensor
  libdw-dev libelf-dev   # powerapi profile: symbols, DWARF lines, inlined frames
  libiberty-dev          # powerapi profile: C++ and Rust (legacy, v0) demangling
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev  # profile: pprof output; OTLP metrics
  libcurl4-openssl-dev   # serve/daemon --otlp, profile --push: the HTTP client; the
                         # redfish and http-meter sensors (libcurl.so.4, dlopen'd)
  openssl                # test_redfish: the loopback BMC's test CA and certificate
  protobuf-compiler python3-protobuf  # the OTLP test receiver (tests/otlp_receiver.py)
  golang-go              # profile tests: go tool pprof reads profile.pb.gz
  linux-perf             # profile benchmark: perf record at the same rate
  clang-format           # test.sh: every C file formatted as .clang-format says
  clang libclang-rt-14-dev # fuzz targets (tests/fuzz/run.sh): libFuzzer and
                         # the sanitizer runtimes are in libclang-rt-14-dev,
                         # only recommended by clang
  lintian                # the package test (tests/package/): checks the .debs
  systemd                # systemd-analyze verify/security of the units
  adduser                # the package test installs powerapi (addgroup)
  qemu-system-x86        # the live VM test: a real qemu-system-x86_64 -accel tcg, named
)

# The live VM test's guest kernel (tests/vm_guest.sh): Debian's own, the
# package linux-image-amd64 depends on, downloaded by apt-get (never
# installed) into /var/cache/powerapi-tests, once.
guest_kernel() {
  local dir=/var/cache/powerapi-tests pkg
  ls "$dir"/linux-image-*-amd64_*.deb >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || { echo "deps: the VM test's kernel needs root to download" >&2; return 0; }
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  [ -n "$pkg" ] || { echo "deps: no linux-image-amd64 in apt's lists (apt-get update)" >&2; return 0; }
  mkdir -p "$dir" && (cd "$dir" && apt-get download -qq "$pkg" 2>/dev/null) ||
    echo "deps: could not download $pkg (the real VM case of test_live_host will skip)" >&2
}
trap guest_kernel EXIT

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
