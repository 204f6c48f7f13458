#!/usr/bin/env bash
# `make bench`: the comparison table (docs/benchmarks.md), the small-delivery table (issue
# #15 targets), then the micro-benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
bench/compare "$@"
bench/small_compare
build/release/bench/audit_bench --benchmark_min_time=0.5 2>/dev/null || true
