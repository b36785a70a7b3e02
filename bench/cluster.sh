#!/usr/bin/env bash
# The cluster benchmarks (bench/cluster.py: example apply ÷ its single-chain
# bound, the 100-node apply, the pool upgrade) on hct-sim with realistic
# durations. Builds the release binaries first unless HCT_BENCH_PROVIDER and
# HCT_BENCH_SIM name them.
#
# Usage: bench/cluster.sh [EXAMPLE_DIR] [-n N] [--only example,scale,upgrade] [--check]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${HCT_BENCH_PROVIDER:-} || -z ${HCT_BENCH_SIM:-} ]]; then
  echo "+ cargo build --release --locked -p hct -p hct-sim --bins" >&2
  (cd "$root" && cargo build --release --locked -p hct -p hct-sim --bins)
  target_dir=${CARGO_TARGET_DIR:-target}
  [[ $target_dir = /* ]] || target_dir=$root/$target_dir
  export HCT_BENCH_PROVIDER=$target_dir/release/terraform-provider-hct
  export HCT_BENCH_SIM=$target_dir/release/hct-sim
fi
exec python3 "$root/bench/cluster.py" "$@"
