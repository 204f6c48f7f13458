#!/usr/bin/env bash
# Installs the Debian packages writ needs to build, test and run its demo.
# Idempotent: silent when everything is present; runs `apt-get update` only
# when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config make
  clang libclang-rt-14-dev clang-format
  lld  # make test links with it (scripts/run-tests.sh)
  libfabric-dev libfabric-bin
  libsqlite3-dev sqlite3
  libxxhash-dev libisal-dev
  libssl-dev libcurl4-openssl-dev
  etcd-server etcd-client  # replicated:K membership (docs/operating.md, "A cluster")
  nlohmann-json3-dev libsimdjson-dev libcli11-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libfuse3-dev fuse3
  pybind11-dev python3-dev python3-pytest python3-numpy
  universal-ctags
  strace valgrind  # bench/syscall_count without perf (strace -c -f); receipt-writer instruction counts (callgrind)
  prometheus
  qemu-system-x86 busybox-static kmod cpio xz-utils iproute2
  rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
  libibverbs-dev  # writ capture observes programs that use libibverbs directly (src/capture)
  systemd  # systemd-analyze: tests check packaging/systemd/writ-serve.service
  strace   # Startup.TheWritProgramNeverScansKallsyms counts the opens of /proc/kallsyms
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "writ: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
