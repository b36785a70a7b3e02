#!/usr/bin/env bash
# Benchmark of the example cluster on hct-sim with realistic durations (see
# bench/cluster.py for what it measures). Builds release binaries first.
#
# Usage: bench/cluster.sh [--plans N] [--check]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
echo "+ cargo build --release --locked -p hct -p hct-sim --bins" >&2
(cd "$root" && cargo build --release --locked -p hct -p hct-sim --bins)
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir = /* ]] || target_dir=$root/$target_dir
export HCT_BENCH_PROVIDER=${HCT_BENCH_PROVIDER:-$target_dir/release/terraform-provider-hct}
export HCT_BENCH_SIM=${HCT_BENCH_SIM:-$target_dir/release/hct-sim}
exec python3 "$root/bench/cluster.py" "$@"
