"""The upgrade benchmark of bench/cluster.py: a Talos upgrade (v1.12.6 →
v1.13.9) of the example reduced to one pool of 30 nodes (plus its 3 control
planes), timed with the pool's `update_strategy { max_unavailable = "20%" }`
and with `max_unavailable = 1`: the ratio (target <= 0.3). Each measurement
starts from a fresh sim. Skipped with a message while the provider's
hct_worker_pool has no update_strategy.
"""

import os
import shutil
import sys

import harness

FROM, TO = "v1.12.6", "v1.13.9"
POOL_NODES = 30
TARGET = 0.3


def pool_override():
    return f"""# One pool of {POOL_NODES}: bench/cluster.py (upgrade)
data "hct_network_plan" "this" {{
  pod_cidr = "10.1.0.0/17"
}}

variable "worker_pools" {{
  default = {{
    big = {{ cidr = "10.0.128.64/26", nodes = {POOL_NODES}, sku = "cx23", labels = {{ pool = "big" }} }}
  }}
}}

variable "talos_version" {{
  default = "{FROM}"
}}
"""


def strategy_override(max_unavailable, as_block):
    value = f'"{max_unavailable}"' if isinstance(max_unavailable, str) else str(max_unavailable)
    body = f"max_unavailable = {value}"
    strategy = f"update_strategy {{ {body} }}" if as_block else f"update_strategy = {{ {body} }}"
    return f"""resource "hct_worker_pool" "this" {{
  {strategy}
}}
"""


def strategy_shape(provider, sim_binary, terraform, example):
    """'block', 'attribute', or None when hct_worker_pool has no update_strategy."""
    work = harness.temp_dir("hct-upgrade-bench.")
    sim = harness.Sim(sim_binary)
    try:
        ws = harness.Workspace(work, example, sim, provider, terraform)
        block = ws.resource_schema("hct_worker_pool")
        if "update_strategy" in block.get("block_types", {}):
            return "block"
        if "update_strategy" in block.get("attributes", {}):
            return "attribute"
        return None
    finally:
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)


def timed_upgrade(provider, sim_binary, terraform, example, max_unavailable, as_block):
    work = harness.temp_dir("hct-upgrade-bench.")
    sim = harness.Sim(sim_binary)
    try:
        overrides = {
            "bench_pool_override.tf": pool_override(),
            "bench_strategy_override.tf": strategy_override(max_unavailable, as_block),
        }
        ws = harness.Workspace(work, example, sim, provider, terraform, overrides)
        ws.apply()
        wall = ws.apply(f"-var=talos_version={TO}")
        _, empty, out = ws.plan_is_empty(f"-var=talos_version={TO}")
        if not empty:
            sys.exit(f"the plan after the upgrade is not empty:\n{out}")
        ws.destroy(f"-var=talos_version={TO}")
        return wall
    finally:
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)


def bench(provider, sim_binary, terraform, example, n):
    """Runs the upgrade benchmark; returns 1 if its target was missed."""
    shape = strategy_shape(provider, sim_binary, terraform, example)
    if shape is None:
        print(f"== {POOL_NODES}-node pool upgrade: skipped, hct_worker_pool has no update_strategy "
              "in this provider's schema")
        return 0
    wide, narrow = [], []
    for i in range(n):
        wide.append(timed_upgrade(provider, sim_binary, terraform, example, "20%", shape == "block"))
        narrow.append(timed_upgrade(provider, sim_binary, terraform, example, 1, shape == "block"))
        print(f"  upgrade run {i + 1}: 20% {wide[-1]:.1f} s, 1 {narrow[-1]:.1f} s", file=sys.stderr)
    return harness.report(f"Talos upgrade {FROM} → {TO} of a {POOL_NODES}-node pool", terraform, [
        harness.row('max_unavailable = "20%"', wide, " s", fmt="{:.1f}"),
        harness.row("max_unavailable = 1", narrow, " s", fmt="{:.1f}"),
        harness.row('"20%" ÷ 1', [w / s for w, s in zip(wide, narrow)], "", TARGET),
    ])


if __name__ == "__main__":
    sys.exit("run it through bench/cluster.py --only upgrade")
