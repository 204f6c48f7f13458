#!/usr/bin/env bash
# Fetches Debian's stock kernel (the package linux-image-amd64 depends on) and
# builds the guest's boot files, cached per kernel package version:
#   $cache/<package>_<version>/vmlinux              uncompressed kernel (qboot boots it directly)
#   $cache/<package>_<version>/modules/             the few modules the guest needs
#   $cache/<package>_<version>/initramfs-<key>.cpio.gz  busybox + modules + guest-init.sh
# The package is only unpacked with dpkg -x, never installed into /boot.
#
# Usage: prepare-kernel.sh CACHE_DIR
# Prints `vmlinux=PATH` and `initramfs=PATH` on stdout. Exit 77: the kernel cannot be
# had here (no apt, no network and nothing cached); any other failure is an error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:?usage: prepare-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# Modules the guest loads (in modprobe's dependency order): virtio transport and 9p
# for the shared folders, overlay for a writable root, dummy as rxe's netdev, rxe
# itself, and the user-space verbs/rdma_cm interfaces. crc32_generic must be loaded
# by hand: rxe needs the algorithm but does not depend on the module.
modules=(crc32_generic virtio_pci 9pnet_virtio 9p overlay dummy rdma_rxe ib_uverbs rdma_ucm)

skip() {
  echo "prepare-kernel: $*" >&2
  exit 77
}

# Which kernel package is current: linux-image-amd64 is a metapackage whose
# Depends names it with its exact version, e.g. "linux-image-6.1.0-56-amd64 (= 6.1.192-2)".
resolve() {
  apt-cache show --no-all-versions linux-image-amd64 2>/dev/null |
    sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\) (= \([^)]*\)).*/\1_\2/p' | grep . || return 1
}

# One flock for the whole preparation: concurrent runs wait for the first.
exec 9>"$cache/.lock"
flock 9

command -v apt-get >/dev/null || skip "apt-get is missing"
ready() { [[ -f "$1/modules/ok" && -f "$1/vmlinux" ]]; }

# Resolve the current kernel and download it unless cached. Missing package lists, or
# stale ones naming a kernel the archive no longer has: refresh them once and retry.
dir=""
fetched=0
for attempt in 1 2; do
  key=$(resolve) || key=""
  if [[ -n "$key" ]]; then
    dir=$cache/$key
    ready "$dir" && break
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    echo "prepare-kernel: fetching ${key%%_*} (once; cached in $dir)" >&2
    # Run as root: apt's sandbox user may not write into a root-owned folder.
    if (cd "$dir.tmp" && apt-get download -o APT::Sandbox::User=root "${key%%_*}" >&2); then
      fetched=1
      break
    fi
    rm -rf "$dir.tmp"
    dir=""
  fi
  [[ $attempt -eq 1 ]] || break
  echo "prepare-kernel: refreshing apt's package lists" >&2
  apt-get update -qq >&2 || true
done
if [[ -z "$dir" ]]; then
  # Offline: fall back to the newest kernel already cached.
  for candidate in $(printf '%s\n' "$cache"/linux-image-*_* | sort -rV); do
    if ready "$candidate"; then dir=$candidate; break; fi
  done
  [[ -n "$dir" ]] ||
    skip "cannot fetch linux-image-amd64's kernel with apt and none is cached in $cache"
  echo "prepare-kernel: apt cannot fetch a kernel; using the cached $(basename "$dir")" >&2
fi

if [[ $fetched -eq 1 ]]; then
  dpkg -x "$dir.tmp"/*.deb "$dir.tmp/root"
  kver=$(ls "$dir.tmp/root/lib/modules")
  depmod -b "$dir.tmp/root" "$kver"

  # vmlinuz is a bzImage whose payload is xz: boot the uncompressed ELF instead
  # (qboot + PVH entry), which saves ~3 s of decompression per boot under TCG.
  vmlinuz=$dir.tmp/root/boot/vmlinuz-$kver
  offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | awk -F: 'NR == 1 {print $1}')
  [[ -n "$offset" ]] || { echo "prepare-kernel: no xz payload in $vmlinuz" >&2; exit 1; }
  # (Through a file: xz stops reading after the stream, which would SIGPIPE a pipe.)
  tail -c +$((offset + 1)) "$vmlinuz" >"$dir.tmp/payload.xz"
  xz -dc --single-stream "$dir.tmp/payload.xz" >"$dir.tmp/vmlinux"
  [[ $(head -c4 "$dir.tmp/vmlinux" | od -An -c | tr -d ' ') == '177ELF' ]] ||
    { echo "prepare-kernel: extracted vmlinux is not an ELF file" >&2; exit 1; }

  # Copy the modules in load order; modules/order holds "file [params]" lines.
  mkdir -p "$dir.tmp/modules"
  : >"$dir.tmp/modules/order"
  for m in "${modules[@]}"; do
    modprobe -d "$dir.tmp/root" -S "$kver" --show-depends "$m" | while read -r verb path params; do
      [[ "$verb" == insmod ]] || continue # "builtin X": nothing to load
      name=$(basename "$path")
      grep -q "^$name\b" "$dir.tmp/modules/order" && continue
      cp "$path" "$dir.tmp/modules/$name"
      echo "$name $params" >>"$dir.tmp/modules/order"
    done
  done
  echo "$kver" >"$dir.tmp/modules/kver"
  touch "$dir.tmp/modules/ok"
  rm -rf "$dir"
  mkdir -p "$dir"
  mv "$dir.tmp/vmlinux" "$dir.tmp/modules" "$dir/"
  rm -rf "$dir.tmp"
fi

# The initramfs depends on busybox, the module set and guest-init.sh: key it by them.
ikey=$( (sha256sum "$here/guest-init.sh" /bin/busybox; cat "$dir/modules/order") |
  sha256sum | cut -c1-16)
initramfs=$dir/initramfs-$ikey.cpio.gz
if [[ ! -f "$initramfs" ]]; then
  # The initramfs has no libc: busybox must be the static build (busybox-static).
  [[ -x /bin/busybox ]] || skip "/bin/busybox is missing (install busybox-static)"
  if ldd /bin/busybox >/dev/null 2>&1; then
    skip "/bin/busybox is dynamically linked (install busybox-static)"
  fi
  stage=$(mktemp -d "$dir/stage.XXXXXX")
  mkdir -p "$stage"/{bin,dev,proc,sys,mnt/lower,mnt/upper,newroot,modules}
  cp /bin/busybox "$stage/bin/busybox"
  cp "$dir"/modules/*.ko "$dir/modules/order" "$stage/modules/"
  cp "$here/guest-init.sh" "$stage/init"
  chmod 755 "$stage/init"
  (cd "$stage" && find . -mindepth 1 | cpio -o -H newc --quiet) | gzip -1 >"$initramfs.tmp"
  mv "$initramfs.tmp" "$initramfs"
  rm -rf "$stage"
  # Older initramfs builds of this kernel are no longer used.
  find "$dir" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "$(basename "$initramfs")" -delete
fi

echo "vmlinux=$dir/vmlinux"
echo "initramfs=$initramfs"
