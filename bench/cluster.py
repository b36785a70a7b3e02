#!/usr/bin/env python3
"""Benchmark: `terraform apply` of examples/private-cluster (3 control planes,
2 pools of 3 workers) on hct-sim with realistic action durations.

Reports, against the targets of the cluster issue:
- apply wall time / the critical-path lower bound (<= 1.2): the lower bound is
  the sum of the simulated durations along the longest dependency chain, the
  control plane (create, attach, power on, Talos boot) and then, after it, a
  worker pool (the same chain again);
- Hetzner API requests per node (<= 8), counted by hct-sim (everything the
  provider asked during the apply, data sources and preflight included);
- the median wall time of a no-change `terraform plan` (<= 1 s);
- the provider's peak RSS during the apply (<= 50 MiB).

Usage: bench/cluster.py [--plans N] [--check]   (bench/cluster.sh builds first)
Environment: HCT_BENCH_PROVIDER, HCT_BENCH_SIM (binaries), HCT_CLI (terraform or
tofu, see scripts/ensure-cli), HCT_TERRAFORM.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-token"
# The chain's steps and their durations in hct-sim's realistic profile, set
# explicitly so the lower bound is known by construction.
CHAIN = {"create_server": 12.0, "attach_to_network": 3.0, "start_server": 5.0, "talos_boot": 3.0}
NODES = 9


def sim_get(endpoint, path):
    base = endpoint[: -len("/v1")]
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + TOKEN})
    return json.load(urllib.request.urlopen(request))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plans", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    provider = os.environ["HCT_BENCH_PROVIDER"]
    sim_binary = os.environ["HCT_BENCH_SIM"]
    terraform = subprocess.check_output([os.path.join(ROOT, "scripts/ensure-cli")], text=True).strip()
    work = tempfile.mkdtemp(prefix="hct-cluster-bench.")
    try:
        return run(args, provider, sim_binary, terraform, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, provider, sim_binary, terraform, work):
    # The provider behind a wrapper that records its peak RSS when it exits.
    os.makedirs(os.path.join(work, "bin"))
    wrapper = os.path.join(work, "bin", "terraform-provider-hct")
    rss_log = os.path.join(work, "rss.log")
    with open(wrapper, "w") as f:
        f.write(f"""#!/usr/bin/env python3
import ctypes, resource, subprocess, sys
die_with_parent = lambda: ctypes.CDLL(None).prctl(1, 9)
rc = subprocess.call([{provider!r}] + sys.argv[1:], preexec_fn=die_with_parent)
with open({rss_log!r}, "a") as f:
    f.write("%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)
""")
    os.chmod(wrapper, 0o755)
    cli_config = os.path.join(work, "cli.tfrc")
    with open(cli_config, "w") as f:
        f.write('provider_installation {\n  dev_overrides {\n'
                f'    "registry.hct.internal/hct/hct" = "{os.path.join(work, "bin")}"\n'
                '  }\n  direct {}\n}\n')
    config_dir = os.path.join(work, "cluster")
    os.makedirs(config_dir)
    shutil.copy(os.path.join(ROOT, "examples/private-cluster/main.tf"), config_dir)

    sim_cmd = [sim_binary, "serve", "--token", TOKEN, "--seed", "--durations", "realistic",
               "--rate-limit", "3600"]
    for command, seconds in CHAIN.items():
        sim_cmd += ["--duration", f"{command}={seconds:g}s"]
    sim = subprocess.Popen(sim_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        env_lines = dict(sim.stdout.readline().strip().split("=", 1) for _ in range(2))
        endpoint = env_lines["HCLOUD_ENDPOINT"]
        network = sim_get(endpoint, "/v1/networks?name=the%20private%20network")["networks"][0]["id"]
        with open(os.path.join(config_dir, "network.auto.tfvars"), "w") as f:
            f.write(f"network_id = {network}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
        env.update(HCLOUD_ENDPOINT=endpoint, HCLOUD_TOKEN=TOKEN,
                   HCT_TALOS_PROXY=env_lines["HCT_TALOS_PROXY"], TF_CLI_CONFIG_FILE=cli_config,
                   TF_IN_AUTOMATION="1", CHECKPOINT_DISABLE="1")
        env.pop("HCT_POLL_INTERVAL", None)  # the provider's defaults, as users get them

        def tf(*argv):
            started = time.monotonic()
            out = subprocess.run([terraform, f"-chdir={config_dir}", *argv, "-no-color", "-input=false"],
                                 env=env, capture_output=True, text=True)
            elapsed = time.monotonic() - started
            if out.returncode not in (0, 2) or (out.returncode == 2 and "-detailed-exitcode" not in argv):
                sys.exit(f"terraform {' '.join(argv)} failed:\n{out.stdout}\n{out.stderr}")
            return elapsed, out

        # Data sources and the image lookup need the provider too; count only the apply.
        urllib.request.urlopen(urllib.request.Request(
            endpoint[: -len("/v1")] + "/_sim/requests", method="DELETE",
            headers={"Authorization": "Bearer " + TOKEN}))
        open(rss_log, "w").close()
        wall, _ = tf("apply", "-auto-approve")
        requests = sim_get(endpoint, "/_sim/requests")
        api_requests = sum(n for route, n in requests["counts"].items() if "/_sim" not in route)
        with open(rss_log) as f:
            peak_mib = max(int(line) for line in f if line.strip()) / 1024

        plans = []
        for _ in range(args.plans):
            elapsed, out = tf("plan", "-detailed-exitcode")
            if out.returncode != 0:
                sys.exit(f"the plan after apply is not empty:\n{out.stdout}")
            plans.append(elapsed)
        tf("destroy", "-auto-approve")
    finally:
        sim.terminate()
        sim.wait()

    bound = 2 * sum(CHAIN.values())
    ratio = wall / bound
    per_node = api_requests / NODES
    plan_median = statistics.median(plans)
    results = [
        ("apply wall / critical path", f"{wall:.1f} s / {bound:.1f} s = {ratio:.2f}", ratio <= 1.2, "<= 1.2"),
        ("Hetzner requests per node", f"{api_requests} / {NODES} = {per_node:.1f}", per_node <= 8, "<= 8"),
        ("no-change plan (median)", f"{plan_median * 1000:.0f} ms of {len(plans)}", plan_median <= 1.0, "<= 1 s"),
        ("provider peak RSS", f"{peak_mib:.1f} MiB", peak_mib <= 50, "<= 50 MiB"),
    ]
    print(f"cli: {terraform}")
    print("requests by route:", json.dumps(requests["counts"], sort_keys=True))
    missed = 0
    for name, value, ok, target in results:
        print(f"{name:28} {value:32} target {target:10} {'ok' if ok else 'MISSED'}")
        missed += not ok
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
