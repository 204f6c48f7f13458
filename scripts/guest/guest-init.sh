#!/bin/busybox sh
# shellcheck shell=dash
# PID 1 of the guest's initramfs (busybox only). Loads the modules, builds the root
# the job runs in -- the host's root shared read-only over 9p, made writable by an
# overlay whose upper layer is a tmpfs -- mounts the job share (read-write), runs
# the job's runner.sh in that root, and ends the guest. qemu runs with -no-reboot,
# so `reboot -f` (or a panic) makes it exit; no ACPI is needed.
# Changing this file rebuilds the cached initramfs (prepare-kernel.sh keys it).
/bin/busybox --install -s /bin
export PATH=/bin

mount -t devtmpfs dev /dev
# The kernel found no /dev/console in the initramfs: attach stdio now.
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys

finish() {
  sync
  reboot -f
}
fail() {
  echo "guest-init: FAILED: $*"
  finish
}

while read -r name params; do
  # shellcheck disable=SC2086 # params are module options, split on purpose
  insmod "/modules/$name" $params || fail "insmod $name"
done </modules/order

# Host root, read-only; 9p with a large msize and cached reads (it never changes
# under the guest during a run), then an overlay so programs may write anywhere.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /mnt/lower ||
  fail "mount hostroot"
mount -t tmpfs -o mode=755 upper /mnt/upper || fail "mount tmpfs"
mkdir -p /mnt/upper/data /mnt/upper/work
mount -t overlay -o lowerdir=/mnt/lower,upperdir=/mnt/upper/data,workdir=/mnt/upper/work \
  overlay /newroot || fail "mount overlay"

# Fresh kernel file systems inside the new root (the host's /proc, /sys, /dev, /run
# seen through 9p would be the host's, not the guest's).
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
# What udev would add: bash's <(...) needs /dev/fd.
ln -sf /proc/self/fd /newroot/dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 shm /newroot/dev/shm
mount -t tmpfs -o mode=755 run /newroot/run
mkdir -p /newroot/run/writ-job
# The job share: command, environment and results. No caching: the host reads the
# files the moment qemu exits.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none writjob /newroot/run/writ-job ||
  fail "mount job share"

chroot /newroot /bin/bash /run/writ-job/runner.sh
echo "guest-init: runner exited with $?"
umount /newroot/run/writ-job
finish
