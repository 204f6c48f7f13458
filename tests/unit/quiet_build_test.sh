#!/usr/bin/env bash
# make.demo_build_is_quiet: `make demo` builds writ through scripts/quiet-build.sh, which
# prints nothing when the build succeeds (no compiler lines, no "gmake[1]: Entering
# directory" lines) and the whole output when it fails.
# Usage: quiet_build_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
grep -q 'quiet-build.sh $(RELEASE) writ' "$src/Makefile" ||
  { echo "the Makefile's writ target does not build through quiet-build.sh" >&2; exit 1; }
said=$(bash "$src/scripts/quiet-build.sh" "$build" writ 2>&1) ||
  { echo "quiet-build.sh failed: $said" >&2; exit 1; }
[[ -z $said ]] || { echo "a successful build printed: $said" >&2; exit 1; }
if said=$(bash "$src/scripts/quiet-build.sh" "$build" writ_no_such_target 2>&1); then
  echo "a failing build exited 0" >&2
  exit 1
fi
[[ $said == *"building writ_no_such_target failed"* ]] ||
  { echo "a failing build did not say so: $said" >&2; exit 1; }
echo "quiet when built, the log when not"
