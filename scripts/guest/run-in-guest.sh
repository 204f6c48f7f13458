#!/usr/bin/env bash
# Runs one command inside a qemu guest booted from Debian's stock kernel, where
# Soft-RoCE (rdma_rxe) gives a real verbs device, rxe0. The guest sees the host's
# root file system read-only (with a tmpfs overlay on top), so the build tree and
# the host's libfabric/rdma-core run unchanged inside it.
#
# Usage: run-in-guest.sh [options] -- COMMAND [ARG...]
#        run-in-guest.sh [options] -c 'SHELL COMMAND LINE'
# Options:
#   --timeout SECONDS  limit for the command inside the guest (default 300); the
#                      whole guest gets 90 s more for booting, then qemu is killed
#   --cwd DIR          directory to run in (default: the current one)
#   --env NAME=VALUE   extra environment for the command (repeatable)
#   --keep             keep the job folder (console log, outputs) and print its path
# Environment: WRIT_GUEST_CACHE (kernel/initramfs cache, default <repo>/build/guest-cache),
#   WRIT_GUEST_ACCEL=auto|tcg|kvm, WRIT_GUEST_MEMORY (MiB, 2048), WRIT_GUEST_CPUS (2),
#   WRIT_GUEST_QEMU (the qemu-system-x86_64 binary).
#
# Inside the guest the command runs as root with `ulimit -l unlimited`,
# FI_UNIVERSE_SIZE=64, WRIT_GUEST=1, WRIT_GUEST_RXE_DEVICE=rxe0 and
# WRIT_GUEST_RXE_ADDRESS=10.77.0.1 (the address of rxe0's netdev).
#
# Exit status: the command's own; 77 when the guest cannot start here at all (no
# qemu, no kernel to be had: the reason is printed, CTest counts it as skipped);
# 124 on timeout; 125 when the guest started but broke (boot or rxe setup failed).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

timeout_seconds=300
cwd=$PWD
keep=0
envs=()
command_text=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --timeout) timeout_seconds=$2; shift 2 ;;
    --cwd) cwd=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -c) command_text=$2; shift 2 ;;
    --) shift; command_text="exec$(printf ' %q' "$@")"; break ;;
    *) echo "run-in-guest: unknown option $1 (use -- before the command)" >&2; exit 2 ;;
  esac
done
[[ -n "$command_text" ]] || { echo "run-in-guest: no command given" >&2; exit 2; }

say() { echo "run-in-guest: $*" >&2; }
skip() {
  # Printed on stdout too: CTest keeps a skipped test's output in its log.
  echo "run-in-guest: SKIP: the guest cannot start here: $*"
  say "SKIP: the guest cannot start here: $*"
  exit 77
}

# Everything the guest needs from the host; without it there is no guest at all.
qemu=${WRIT_GUEST_QEMU:-$(command -v qemu-system-x86_64 || true)}
[[ -n "$qemu" && -x "$qemu" ]] || skip "qemu-system-x86_64 is missing (install qemu-system-x86)"
qboot=/usr/share/qemu/qboot.rom
[[ -f "$qboot" ]] || skip "$qboot is missing (install qemu-system-data)"
for tool in cpio xz depmod modprobe dpkg gzip; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
[[ $(id -u) -eq 0 ]] || skip "must run as root (the guest shares / with security_model=none)"

cache=${WRIT_GUEST_CACHE:-$repo/build/guest-cache}
set +e
boot_files=$(bash "$here/prepare-kernel.sh" "$cache")
prepared=$?
set -e
[[ $prepared -eq 77 ]] && skip "no Debian kernel could be fetched or found in $cache"
[[ $prepared -eq 0 ]] || { say "preparing the kernel failed ($prepared)"; exit 125; }
vmlinux=$(sed -n 's/^vmlinux=//p' <<<"$boot_files")
initramfs=$(sed -n 's/^initramfs=//p' <<<"$boot_files")

# KVM only where it can run Debian's kernel: a real VMX/SVM host. A PVM /dev/kvm
# (kvm_pvm, as on these machines: no vmx/svm flag) aborts with -cpu host, so TCG.
accel=${WRIT_GUEST_ACCEL:-auto}
if [[ $accel == auto ]]; then
  accel=tcg
  if [[ -r /dev/kvm && -w /dev/kvm && ! -d /sys/module/kvm_pvm ]] &&
    grep -qwE 'vmx|svm' /proc/cpuinfo; then
    accel=kvm
  fi
fi
# shellcheck disable=SC2054 # the commas belong to qemu's options
case $accel in
  kvm) accel_args=(-accel kvm -cpu host) ;;
  tcg) accel_args=(-accel tcg,thread=multi -cpu max) ;;
  *) echo "run-in-guest: WRIT_GUEST_ACCEL must be auto, tcg or kvm" >&2; exit 2 ;;
esac

job=$(mktemp -d "${TMPDIR:-/tmp}/writ-guest.XXXXXX")
qemu_pid=""
# shellcheck disable=SC2317 # called through the trap
cleanup() {
  # Never leave qemu running, whatever ended this script.
  if [[ -n "$qemu_pid" ]]; then kill -KILL "$qemu_pid" 2>/dev/null || true; fi
  if [[ $keep -eq 1 ]]; then say "job folder kept: $job"; else rm -rf "$job"; fi
}
# Interrupted: show what the command had written so far, then clean up.
# shellcheck disable=SC2317 # called through the trap
interrupted() {
  say "interrupted; output so far:"
  if [[ -f "$job/stdout" ]]; then cat "$job/stdout"; fi
  if [[ -f "$job/stderr" ]]; then cat "$job/stderr" >&2; fi
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

cp "$here/guest-run.sh" "$job/runner.sh"
echo "$timeout_seconds" >"$job/timeout"
{
  echo "cd $(printf '%q' "$cwd")"
  for e in "${envs[@]}"; do echo "export $(printf '%q' "$e")"; done
  echo "$command_text"
} >"$job/command.sh"

say "booting $(basename "$(dirname "$vmlinux")") under $accel"
start_ns=$(date +%s%N)
# setpriv --pdeathsig: qemu dies with its parent even if this script is SIGKILLed
# (e.g. by a CTest timeout); `timeout` bounds the guest's whole life.
setpriv --pdeathsig KILL timeout -k 5 $((timeout_seconds + 90)) \
  setpriv --pdeathsig KILL "$qemu" \
  -nodefaults -no-user-config -no-reboot -display none -monitor none \
  -machine pc "${accel_args[@]}" \
  -smp "${WRIT_GUEST_CPUS:-2}" -m "${WRIT_GUEST_MEMORY:-2048}" \
  -bios "$qboot" -kernel "$vmlinux" -initrd "$initramfs" \
  -append "console=ttyS0 panic=-1 quiet loglevel=4" \
  -serial "file:$job/console.log" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$job,mount_tag=writjob,security_model=none,multidevs=remap" \
  </dev/null >"$job/qemu.log" 2>&1 &
qemu_pid=$!
set +e
wait "$qemu_pid"
qemu_status=$?
set -e
qemu_pid=""
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
elapsed=$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))

if [[ -f "$job/stdout" ]]; then cat "$job/stdout"; fi
if [[ -f "$job/stderr" ]]; then cat "$job/stderr" >&2; fi

diagnose() {
  say "$1"
  for f in qemu.log setup.log; do
    if [[ -s "$job/$f" ]]; then say "--- $f"; cat "$job/$f" >&2; fi
  done
  if [[ -s "$job/console.log" ]]; then
    say "--- console.log (last 40 lines)"
    tail -n 40 "$job/console.log" >&2
  fi
}

if [[ -f "$job/setup-failed" ]]; then
  diagnose "the guest booted but its setup failed"
  exit 125
fi
if [[ ! -f "$job/rc" ]]; then
  if [[ $qemu_status -eq 124 || $qemu_status -eq 137 ]]; then
    diagnose "the guest did not finish within $((timeout_seconds + 90)) s; qemu was killed"
    exit 124
  fi
  diagnose "the guest ended (qemu status $qemu_status) without running the command"
  exit 125
fi
rc=$(cat "$job/rc")
say "command exited $rc; guest wall time ${elapsed} s ($accel)"
if [[ $rc -eq 124 ]]; then say "the command hit its ${timeout_seconds} s timeout inside the guest"; fi
if [[ $rc -eq 77 ]]; then
  # 77 is reserved for "no guest"; a command's own 77 must not turn into a skip.
  say "the command itself exited 77; reported as 1 so that it is not taken for a skip"
  exit 1
fi
exit "$rc"
