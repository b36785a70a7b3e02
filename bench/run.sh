#!/usr/bin/env bash
# Every benchmark of bench/README.md in one run: the release binaries are
# built once, then the cluster benchmarks and the network-plan benchmark run
# under each CLI (default: terraform, then tofu).
#
# Usage: bench/run.sh [-n N] [--clis "terraform tofu"] [--only example,scale,upgrade] [--check]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=3
clis="terraform tofu"
only=example,scale,upgrade
check=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    --clis) clis=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --check) check=(--check); shift ;;
    *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
  esac
done
echo "+ cargo build --release --locked -p hct -p hct-sim --bins" >&2
(cd "$root" && cargo build --release --locked -p hct -p hct-sim --bins)
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir = /* ]] || target_dir=$root/$target_dir
export HCT_BENCH_PROVIDER=$target_dir/release/terraform-provider-hct
export HCT_BENCH_SIM=$target_dir/release/hct-sim
status=0
for cli in $clis; do
  echo "==== HCT_CLI=$cli"
  HCT_CLI=$cli python3 "$root/bench/cluster.py" -n "$n" --only "$only" "${check[@]}" || status=1
  HCT_CLI=$cli "$root/bench/network-plan.sh" -n $((n * 3)) "${check[@]}" || status=1
done
exit $status
