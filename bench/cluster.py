#!/usr/bin/env python3
"""Cluster benchmarks on hct-sim with realistic durations and Hetzner's budget
of 3600 requests per hour, each repeated N times (min/median/max):

example  `apply` of the example (3 control planes, 2 pools of 3) ÷ the
         single-chain lower bound: one server's chain in the sim's durations
         (create + attach + power on + Talos boot, + the install reboot when
         configs are applied over the Talos API) plus the bootstrap and join
         waits the sim imposes (none: etcd bootstraps and nodes join as soon
         as their peers run). Target <= 1.25.
scale    the same example with 99 nodes (3 control planes, 4 pools of 24,
         pod CIDR /17; with the seed's NAT gateway the network holds 100
         servers, Hetzner's limit) through override files: apply ÷ the 9-node apply
         (<= 1.3), Hetzner requests per node (<= 6, every request of the
         apply counted by hct-sim, action polls included), 429 answers (0), a
         no-change plan (<= 1 s) and the provider's peak RSS (<= 50 MiB).
upgrade  a Talos upgrade of a 30-node pool with update_strategy
         max_unavailable = "20%" ÷ the same with 1 (<= 0.3); skipped with a
         message while hct_worker_pool has no update_strategy.

Usage: bench/cluster.py [EXAMPLE_DIR] [-n N] [--only example,scale,upgrade] [--check]
       (bench/run.sh builds the release binaries and runs this)
Environment: HCT_BENCH_PROVIDER, HCT_BENCH_SIM (binaries), HCT_CLI (terraform
or tofu, see scripts/ensure-cli).
"""

import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import upgrade  # noqa: E402

EXAMPLE = os.path.join(harness.ROOT, "examples/private-cluster")
PLANS = 5

# Hetzner's limit of 100 servers per network, one of them the seed's NAT
# gateway (hct_cluster_secrets refuses more at plan time): 3 control planes
# (the example's 10.0.128.16/28) and 4 pools of 24 in /27s of the node subnet
# (3 placement groups each); one /24 of pods per node needs a /17. Four pools,
# not ten of 10: Terraform runs at most 10 resource operations at once
# (-parallelism), and hct_cluster with ten pools would make the last pool wait
# for a free slot (docs/guides/parallel-bring-up.md, "Many pools").
SCALE_POOLS = [(f"p{i}", f"10.0.128.{32 + 32 * i}/27", 24) for i in range(4)]
SCALE_NODES = 3 + sum(n for _, _, n in SCALE_POOLS)


def scale_override():
    pools = "\n".join(
        f'    {name} = {{ cidr = "{cidr}", nodes = {n}, sku = "cx23", labels = {{ pool = "{name}" }} }}'
        for name, cidr, n in SCALE_POOLS)
    return f"""# {SCALE_NODES} nodes: bench/cluster.py (scale)
data "hct_network_plan" "this" {{
  pod_cidr = "10.1.0.0/17"
}}

variable "worker_pools" {{
  default = {{
{pools}
  }}
}}
"""


def lower_bound(durations_ms, delivery):
    """One server's chain in the sim's durations, in seconds, and its parts."""
    steps = ["create_server", "attach_to_network", "start_server", "talos_boot"]
    if delivery == "apply":
        steps.append("talos_install")
    # The sim adds no wait of its own for the bootstrap or a join: etcd is
    # founded by the bootstrap call, and nodes join once a control plane runs.
    parts = {step: durations_ms[step] / 1000 for step in steps}
    return sum(parts.values()), parts


def state_of(ws):
    _, out = ws.run("show", "-json")
    resources = json.loads(out.stdout).get("values", {}).get("root_module", {}).get("resources", [])
    return {r["address"]: r["values"] for r in resources}


def one_apply(provider, sim_binary, terraform, example, overrides=None, plans=0):
    """A fresh sim and working directory: apply, count, plan, destroy.
    Returns the measurements of this repetition."""
    work = harness.temp_dir("hct-cluster-bench.")
    sim = harness.Sim(sim_binary)
    try:
        ws = harness.Workspace(work, example, sim, provider, terraform, overrides)
        sim.clear_requests()
        ws.reset_rss()
        wall = ws.apply()
        requests, refused, counts = sim.requests()
        servers = sim.get("/v1/servers?label_selector=managed-by%3Dhct&per_page=1")
        nodes = servers["meta"]["pagination"]["total_entries"]
        states = state_of(ws)
        cluster = next((v for a, v in states.items() if a.startswith("hct_cluster.")), {})
        delivery = cluster.get("config_delivery") or "apply"
        bound, parts = lower_bound(sim.durations_ms(), delivery)
        plan_times = []
        for _ in range(plans):
            elapsed, empty, out = ws.plan_is_empty()
            if not empty:
                sys.exit(f"the plan after apply is not empty:\n{out}")
            plan_times.append(elapsed)
        if plans:  # the provider's RSS during a plan too (untimed)
            ws.plan_is_empty(rss=True)
        peak = ws.peak_rss_mib()
        ws.destroy()
        return dict(wall=wall, requests=requests, refused=refused, counts=counts, nodes=nodes,
                    bound=bound, parts=parts, plans=plan_times, rss=peak)
    finally:
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("example", nargs="?", default=EXAMPLE)
    parser.add_argument("-n", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--only", default="example,scale,upgrade")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()
    only = set(args.only.split(","))
    unknown = only - {"example", "scale", "upgrade"}
    if unknown:
        parser.error(f"unknown benchmarks {sorted(unknown)}")
    example = os.path.abspath(args.example)
    if not os.path.isfile(os.path.join(example, "main.tf")):
        parser.error(f"no main.tf in {example}")
    provider, sim_binary = harness.binaries()
    terraform = harness.cli()
    missed = 0
    print(f"example: {example}")

    small, large = [], []
    if only & {"example", "scale"}:
        for i in range(args.n):  # interleaved, so drift hits both alike
            small.append(one_apply(provider, sim_binary, terraform, example, plans=PLANS))
            print(f"  run {i + 1}: {small[-1]['nodes']} nodes applied in {small[-1]['wall']:.1f} s",
                  file=sys.stderr)
            if "scale" in only:
                large.append(one_apply(provider, sim_binary, terraform, example,
                                       {"bench_scale_override.tf": scale_override()}, plans=PLANS))
                print(f"  run {i + 1}: {large[-1]['nodes']} nodes applied in "
                      f"{large[-1]['wall']:.1f} s", file=sys.stderr)

    if "example" in only:
        bound, parts = small[0]["bound"], small[0]["parts"]
        chain = " + ".join(f"{k} {v:g}" for k, v in parts.items())
        missed += harness.report("example apply", terraform, [
            (f"lower bound: {chain} = {bound:g} s", True),
            harness.row("apply wall time", [r["wall"] for r in small], " s", fmt="{:.1f}"),
            harness.row("apply ÷ single-chain bound", [r["wall"] / r["bound"] for r in small], "",
                        1.25),
            harness.row("Hetzner requests per node", [r["requests"] / r["nodes"] for r in small], "",
                        fmt="{:.1f}"),
            harness.row("no-change plan", [t for r in small for t in r["plans"]], " s"),
            harness.row("provider peak RSS", [r["rss"] for r in small], " MiB", fmt="{:.1f}"),
        ])
    if "scale" in only:
        if any(r["nodes"] != SCALE_NODES for r in large):
            sys.exit(f"the scale run made {[r['nodes'] for r in large]} nodes, not {SCALE_NODES}")
        missed += harness.report(f"{SCALE_NODES}-node apply", terraform, [
            harness.row("apply wall time", [r["wall"] for r in large], " s", fmt="{:.1f}"),
            harness.row(f"apply ÷ {small[0]['nodes']}-node apply",
                        [b["wall"] / s["wall"] for b, s in zip(large, small)], "", 1.3),
            harness.row("Hetzner requests per node", [r["requests"] / r["nodes"] for r in large], "",
                        6, fmt="{:.1f}"),
            harness.row("429 answers", [r["refused"] for r in large], "", 0, fmt="{:.0f}"),
            harness.row("no-change plan", [t for r in large for t in r["plans"]], " s", 1.0),
            harness.row("provider peak RSS", [r["rss"] for r in large], " MiB", 50, fmt="{:.1f}"),
            (f"requests by route (last run): {json.dumps(large[-1]['counts'], sort_keys=True)}", True),
        ])
    if "upgrade" in only:
        missed += upgrade.bench(provider, sim_binary, terraform, example, args.n)
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
