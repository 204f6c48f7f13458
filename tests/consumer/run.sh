#!/usr/bin/env bash
# consumer.install_and_use: writ as an installed library, used from outside its tree.
# Usage: run.sh BUILD_DIR WORK_DIR LIBDIR CXX CMAKE RELEASE
# Installs BUILD_DIR to WORK_DIR/prefix, builds tests/consumer/cmake (find_package) and
# tests/consumer/pkgconfig (pkg-config) against it, runs each program's loopback delivery
# and checks that the library and the installed `writ --version` name the same version,
# RELEASE (CMake's project VERSION). WORK_DIR is removed again when all passed.
set -euo pipefail
build=$1 work=$2 libdir=$3 cxx=$4 cmake=$5 release=$6
here=$(cd "$(dirname "$0")" && pwd)
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"/scratch-{cmake,static,pkgconfig}

step() { echo "--- consumer: $*"; }

step "cmake --install to $prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
for f in include/writ/sender.h "$libdir/libwrit.a" "$libdir/libwrit.so" bin/writ \
  "$libdir/cmake/writ/writConfig.cmake" "$libdir/cmake/writ/writConfigVersion.cmake" \
  "$libdir/pkgconfig/writ.pc"; do
  [[ -e $prefix/$f ]] || { echo "not installed: $f" >&2; exit 1; }
done
soname=$(objdump -p "$prefix/$libdir/libwrit.so" | awk '/SONAME/ {print $2}')
[[ $soname =~ ^libwrit\.so\.[0-9]+$ ]] || { echo "soname '$soname'" >&2; exit 1; }
[[ -e $prefix/$libdir/$soname ]] || { echo "no $soname link" >&2; exit 1; }

step "find_package(writ): shared and static"
"$cmake" -S "$here/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/cmake" -j2 >/dev/null
"$work/cmake/loopback" "$work/scratch-cmake" | tee "$work/cmake.out"
"$work/cmake/loopback_static" "$work/scratch-static"

step "pkg-config --cflags --libs writ"
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig make -s -C "$here/pkgconfig" OUT="$work" CXX="$cxx"
# As the README's line builds it: runnable without LD_LIBRARY_PATH.
env -u LD_LIBRARY_PATH "$work/loopback" "$work/scratch-pkgconfig"

step "one version"
installed=$("$prefix/bin/writ" --version)
linked=$(head -n 1 "$work/cmake.out")
[[ $installed == "$linked" ]] || { echo "writ --version '$installed', library '$linked'" >&2; exit 1; }
[[ $installed == "writ $release" || $installed == "writ $release (git "*")" ]] ||
  { echo "writ --version '$installed' is not release $release" >&2; exit 1; }
grep -qx "Version: $release" "$prefix/$libdir/pkgconfig/writ.pc" || { echo "writ.pc version" >&2; exit 1; }
echo "$installed"
rm -rf "$work"
