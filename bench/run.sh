#!/usr/bin/env bash
# `make bench`: the comparison table (docs/benchmarks.md), the small-delivery table (issue
# #15 targets), writ's own cost per delivery in one process (issue #26), the Python rows
# (issue #29), KV blocks into an exposed paged buffer (issue #32), replicated:K beside one
# copy (issue #27), the sender's two source paths (issue #33), then the micro-benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
bench/compare "$@"
bench/small_compare
bench/inprocess_cost  # issue #26: writ's own CPU per delivery, in one process, no provider
bench/python_compare  # issue #29: the Python package beside C++ and raw fi_write
bench/exposed_target  # issue #32: KV blocks into an exposed paged buffer beside raw fi_write
bench/replicated      # issue #27: replicated:2 and :3 beside one copy of the same class
bench/source_paths    # issue #33: the sender reading from the file's mapping or through staging
build/release/bench/audit_bench --benchmark_min_time=0.5 2>/dev/null || true
