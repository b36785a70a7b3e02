#!/usr/bin/env bash
# Benchmark: `terraform plan` of examples/network-plan (hct_network_plan, run by
# the release build of the provider through dev_overrides) against the same plan
# done with Terraform's built-in terraform_data and functions
# (bench/network-plan-baseline). Prints median wall times, the ratio
# hct/baseline (target <= 1.2) and the provider's peak RSS (target <= 20 MiB).
# With Go on PATH it also times the yardstick: a plan of the smallest provider
# built on HashiCorp's terraform-plugin-go (bench/reference-provider), and the
# CLI's own cryptography for each provider start.
#
# Usage: bench/network-plan.sh [-n RUNS] [--rss-plans K] [--no-reference] [--check]
#   -n RUNS         timed plans of each config, after one warm-up each (default 10)
#   --rss-plans K   plans run through the RSS-recording wrapper (default 3)
#   --no-reference  skip the yardstick (it needs Go and its module proxy)
#   --check         exit 1 if a target is missed
# Environment:
#   HCT_BENCH_PROVIDER  provider binary to use instead of `cargo build --release --locked`
#   HCT_BENCH_EXAMPLE   config dir to use instead of examples/network-plan
#   HCT_CLI             terraform (default) or tofu (see scripts/ensure-cli)
#   HCT_TERRAFORM       Terraform CLI (see scripts/ensure-terraform)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=10
rss_plans=3
reference=1
check=0
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) runs=$2; shift 2 ;;
    --rss-plans) rss_plans=$2; shift 2 ;;
    --no-reference) reference=0; shift ;;
    --check) check=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ && $rss_plans =~ ^[1-9][0-9]*$ ]] || { echo "RUNS and K must be positive integers" >&2; exit 2; }

example=${HCT_BENCH_EXAMPLE:-$root/examples/network-plan}
baseline=$root/bench/network-plan-baseline
[[ -f $example/main.tf ]] || { echo "no $example/main.tf" >&2; exit 1; }

provider=${HCT_BENCH_PROVIDER:-}
if [[ -z $provider ]]; then
  echo "+ cargo build --release --locked" >&2
  (cd "$root" && cargo build --release --locked)
  target_dir=${CARGO_TARGET_DIR:-target}
  [[ $target_dir = /* ]] || target_dir=$root/$target_dir
  provider=$target_dir/release/terraform-provider-hct
fi
[[ -x $provider ]] || { echo "provider binary $provider is not executable" >&2; exit 1; }
tf=$("$root/scripts/ensure-cli")

work=$(mktemp -d "${TMPDIR:-/tmp}/hct-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ $reference = 1 ]] && ! command -v go >/dev/null; then
  echo "no go on PATH: the yardstick is skipped (--no-reference to silence this)" >&2
  reference=0
fi
configs=(hct baseline)
[[ $reference = 1 ]] && configs+=(reference)

# Working copies of the configs (no state, no .terraform from the repo).
for name in "${configs[@]}"; do
  case $name in
    hct) src=$example ;;
    baseline) src=$baseline ;;
    reference) src=$root/bench/network-plan-reference ;;
  esac
  mkdir "$work/$name"
  cp -R "$src/." "$work/$name/"
  rm -rf "$work/$name/.terraform" "$work/$name"/terraform.tfstate*
done

# Two dev_overrides dirs: the binary itself (for timing) and a wrapper that
# records the provider's peak RSS (ru_maxrss of its child, KiB) after it exits.
mkdir "$work/bin" "$work/rss-bin"
cp "$provider" "$work/bin/terraform-provider-hct"
if [[ $reference = 1 ]]; then
  echo "+ go build bench/reference-provider" >&2
  (cd "$root/bench/reference-provider" && go build -o "$work/bin/terraform-provider-reference" .)
fi
cat >"$work/rss-bin/terraform-provider-hct" <<EOF
#!/usr/bin/env python3
import ctypes, resource, subprocess, sys
# PR_SET_PDEATHSIG(SIGKILL): the provider dies with this wrapper if Terraform kills it.
die_with_parent = lambda: ctypes.CDLL(None).prctl(1, 9)
rc = subprocess.call(["$work/bin/terraform-provider-hct"] + sys.argv[1:], preexec_fn=die_with_parent)
with open("$work/rss.log", "a") as f:
    f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)
EOF
chmod +x "$work/rss-bin/terraform-provider-hct"
for kind in bin rss-bin; do
  cat >"$work/$kind.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "registry.hct.internal/hct/hct" = "$work/$kind"
    "registry.hct.internal/hct/reference" = "$work/bin"
  }
  direct {}
}
EOF
done

# plan DIR CLI_CONFIG: runs one plan, prints its wall time in microseconds.
plan() {
  local log start end
  log=$work/$(basename "$1").log
  start=$(date +%s%N)
  if ! (cd "$1" && env -u TF_LOG -u TF_LOG_PATH -u TF_DATA_DIR -u TF_CLI_ARGS -u TF_CLI_ARGS_plan \
    TF_CLI_CONFIG_FILE="$2" TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1 \
    "$tf" plan -input=false -no-color >"$log" 2>&1); then
    echo "terraform plan failed in $1:" >&2
    cat "$log" >&2
    exit 1
  fi
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}

# stats FILE: "median min max" in ms of the microsecond values in FILE.
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f %.1f %.1f\n", m / 1000, v[1] / 1000, v[NR] / 1000 }'
}

echo "cli:       $(TF_CLI_CONFIG_FILE=$work/bin.tfrc CHECKPOINT_DISABLE=1 "$tf" version | grep -m 1 -E '^(Terraform|OpenTofu) v') ($tf)"
echo "provider:  $provider"
echo "configs:   $example vs $baseline$([[ $reference = 1 ]] && echo " and $root/bench/network-plan-reference")"

summary=()
for name in "${configs[@]}"; do
  plan "$work/$name" "$work/bin.tfrc" >/dev/null
  summary+=("$name: $(grep -E '^(Plan|No changes|Changes to Outputs)' "$work/$name.log" | head -n 1)")
  : >"$work/$name.times"
done
echo "warm-up:   $(IFS='|'; echo "${summary[*]}" | sed 's/|/ | /g')"

for ((i = 1; i <= runs; i++)); do # interleaved, so drift hits all alike
  for name in "${configs[@]}"; do
    plan "$work/$name" "$work/bin.tfrc" >>"$work/$name.times"
  done
done
paste "$work/hct.times" "$work/baseline.times" | awk '{ printf "%d\n", 1000000 * $1 / $2 }' >"$work/ratio.times"
read -r ratio_med ratio_min ratio_max < <(stats "$work/ratio.times")
read -r hct_med hct_min hct_max < <(stats "$work/hct.times")
read -r base_med base_min base_max < <(stats "$work/baseline.times")

: >"$work/rss.log"
for ((i = 1; i <= rss_plans; i++)); do
  plan "$work/hct" "$work/rss-bin.tfrc" >/dev/null
done
launches=$(grep -c . "$work/rss.log" || true)
peak_kib=$(sort -n "$work/rss.log" | tail -n 1)

verdict() { if [[ $1 = 1 ]]; then echo ok; else echo "MISSED"; fi; }
ratio=$(awk -v a="$hct_med" -v b="$base_med" 'BEGIN { printf "%.2f", a / b }')
ratio_ok=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.2) ? 1 : 0 }')
echo
printf '%-9s median %8.1f ms   (min %.1f, max %.1f; %d runs)\n' hct "$hct_med" "$hct_min" "$hct_max" "$runs"
printf '%-9s median %8.1f ms   (min %.1f, max %.1f; %d runs)\n' baseline "$base_med" "$base_min" "$base_max" "$runs"
echo "ratio hct/baseline: $ratio (target <= 1.2): $(verdict "$ratio_ok")"
awk -v m="$ratio_med" -v a="$ratio_min" -v b="$ratio_max" -v n="$runs" 'BEGIN {
  printf "ratio of each interleaved pair: median %.2f (min %.2f, max %.2f; %d pairs)\n", m / 1000, a / 1000, b / 1000, n }'
if [[ $reference = 1 ]]; then
  read -r ref_med ref_min ref_max < <(stats "$work/reference.times")
  printf '%-9s median %8.1f ms   (min %.1f, max %.1f; %d runs)\n' reference "$ref_med" "$ref_min" "$ref_max" "$runs"
  echo "yardstick: reference/baseline $(awk -v a="$ref_med" -v b="$base_med" 'BEGIN { printf "%.2f", a / b }')," \
    "hct/reference $(awk -v a="$hct_med" -v b="$ref_med" 'BEGIN { printf "%.2f", a / b }')"
  # The CLI's cryptography per provider start, as Go's benchmarks measure it here.
  cost=$(cd "$root/bench/reference-provider" && go test -run '^$' -bench . -benchtime 100x . |
    awk '/^BenchmarkClient/ { ns += $3 } END { printf "%.1f", ns / 1e6 }')
  echo "CLI cryptography per provider start (P-521 key, certificate, handshake signature): $cost ms;" \
    "three starts per plan: $(awk -v c="$cost" -v b="$base_med" 'BEGIN { printf "%.0f%% of the baseline plan", 300 * c / b }')"
fi
if [[ -z $peak_kib ]]; then
  rss_ok=0
  echo "provider peak RSS: not recorded (no provider process ran to its end under the wrapper;" \
    "does the example use hct, and does the provider exit when Terraform shuts it down?)"
else
  peak_mib=$(awk -v k="$peak_kib" 'BEGIN { printf "%.1f", k / 1024 }')
  rss_ok=$(awk -v k="$peak_kib" 'BEGIN { print (k <= 20 * 1024) ? 1 : 0 }')
  echo "provider peak RSS: $peak_mib MiB, highest of $launches provider processes in $rss_plans plans" \
    "(target <= 20 MiB): $(verdict "$rss_ok")"
fi
if [[ $check = 1 && ($ratio_ok != 1 || $rss_ok != 1) ]]; then
  exit 1
fi
