"""What the cluster benchmarks share: hct-sim started with realistic durations
and Hetzner's request budget, the provider behind a wrapper that records its
peak RSS, a Terraform/OpenTofu working directory made from an example plus
override files, and min/median/max over repetitions.

Not a benchmark itself: bench/cluster.py and bench/upgrade.py
import it (bench/run.sh builds the binaries and starts them).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-token"
SEED_NETWORK = "the private network"
# Hetzner's budget: 3600 requests per hour per project.
HETZNER_RATE_LIMIT = 3600


def binaries():
    """The provider and hct-sim binaries (bench/run.sh sets them)."""
    try:
        return os.environ["HCT_BENCH_PROVIDER"], os.environ["HCT_BENCH_SIM"]
    except KeyError as missing:
        sys.exit(f"{missing} is not set: run the benchmarks through bench/run.sh")


def cli():
    """The Terraform or OpenTofu binary that HCT_CLI picks."""
    return subprocess.check_output([os.path.join(ROOT, "scripts/ensure-cli")], text=True).strip()


def cli_version(terraform):
    out = subprocess.run([terraform, "version"], capture_output=True, text=True,
                         env={**os.environ, "CHECKPOINT_DISABLE": "1"})
    # OpenTofu may print a warning (e.g. no CLI configuration file) first.
    lines = [line for line in out.stdout.splitlines() if line.startswith(("Terraform v", "OpenTofu v"))]
    return lines[0] if lines else terraform


class Sim:
    """hct-sim on loopback, seeded, with realistic durations and the rate limit."""

    def __init__(self, binary, extra=()):
        cmd = [binary, "serve", "--token", TOKEN, "--seed", "--durations", "realistic",
               "--rate-limit", str(HETZNER_RATE_LIMIT), *extra]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        lines = dict(self.process.stdout.readline().strip().split("=", 1) for _ in range(2))
        self.endpoint = lines["HCLOUD_ENDPOINT"]
        self.proxy = lines["HCT_TALOS_PROXY"]
        self.base = self.endpoint[: -len("/v1")]

    def _call(self, method, path):
        request = urllib.request.Request(self.base + path, method=method,
                                         headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(request) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def get(self, path):
        return self._call("GET", path)

    def network_id(self):
        query = urllib.parse.quote(SEED_NETWORK)
        return self.get(f"/v1/networks?name={query}")["networks"][0]["id"]

    def durations_ms(self):
        """Each command's duration in this sim (its profile and overrides)."""
        return self.get("/_sim/durations")["milliseconds"]

    def clear_requests(self):
        self._call("DELETE", "/_sim/requests")

    def requests(self):
        """(API requests, 429 answers, counts by route) since the last clear."""
        log = self.get("/_sim/requests")
        counts = {route: n for route, n in log["counts"].items() if "/_sim" not in route}
        refused = int(log.get("statuses", {}).get("429", 0))
        return sum(counts.values()), refused, counts

    def stop(self):
        self.process.terminate()
        self.process.wait()


def declares(directory, variable):
    """Whether a .tf file of `directory` declares `variable`."""
    needle = f'variable "{variable}"'
    for name in os.listdir(directory):
        if name.endswith(".tf"):
            with open(os.path.join(directory, name)) as f:
                if needle in f.read():
                    return True
    return False


class Workspace:
    """A Terraform working directory for one example, run against one sim,
    with the provider behind an RSS-recording wrapper."""

    def __init__(self, work, example, sim, provider, terraform, overrides=None):
        self.dir = os.path.join(work, "config")
        self.terraform = terraform
        self.rss_log = os.path.join(work, "rss.log")
        shutil.copytree(example, self.dir, ignore=shutil.ignore_patterns(
            ".terraform*", "terraform.tfstate*", "*.tfvars"))
        for name, text in (overrides or {}).items():
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        with open(os.path.join(self.dir, "network.auto.tfvars"), "w") as f:
            f.write(f"network_id = {sim.network_id()}\n")
        # The lower bound is one server's chain: an example whose default
        # endpoint is a load balancer (made before the control plane) is
        # measured with the first control plane as its endpoint.
        if declares(self.dir, "api_endpoint"):
            with open(os.path.join(self.dir, "endpoint.auto.tfvars"), "w") as f:
                f.write('api_endpoint = "first_control_plane"\n')
        bin_dir = os.path.join(work, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        wrapper = os.path.join(bin_dir, "terraform-provider-hct")
        with open(wrapper, "w") as f:
            # PR_SET_PDEATHSIG(SIGKILL): the provider dies with the wrapper;
            # ru_maxrss of the child (KiB) is its peak RSS.
            f.write(f"""#!/usr/bin/env python3
import ctypes, resource, subprocess, sys
die_with_parent = lambda: ctypes.CDLL(None).prctl(1, 9)
rc = subprocess.call([{provider!r}] + sys.argv[1:], preexec_fn=die_with_parent)
with open({self.rss_log!r}, "a") as f:
    f.write("%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)
""")
        os.chmod(wrapper, 0o755)
        # Timed plans run the provider itself: the wrapper's Python start-up
        # would add a few hundred milliseconds to each of its launches.
        direct_dir = os.path.join(work, "direct")
        os.makedirs(direct_dir, exist_ok=True)
        os.symlink(provider, os.path.join(direct_dir, "terraform-provider-hct"))
        self.cli_configs = {}
        for kind, directory in (("rss", bin_dir), ("direct", direct_dir)):
            self.cli_configs[kind] = os.path.join(work, f"{kind}.tfrc")
            with open(self.cli_configs[kind], "w") as f:
                f.write('provider_installation {\n  dev_overrides {\n'
                        f'    "registry.hct.internal/hct/hct" = "{directory}"\n'
                        '  }\n  direct {}\n}\n')
        cli_config = self.cli_configs["rss"]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
        self.env.update(HCLOUD_ENDPOINT=sim.endpoint, HCLOUD_TOKEN=TOKEN,
                        HCT_TALOS_PROXY=sim.proxy, TF_CLI_CONFIG_FILE=cli_config,
                        TF_IN_AUTOMATION="1", CHECKPOINT_DISABLE="1")
        self.env.pop("HCT_POLL_INTERVAL", None)  # the provider's defaults, as users get them

    def run(self, *argv, ok=(0,), rss=True):
        """Runs the CLI (the provider behind the RSS wrapper unless `rss` is
        false); returns (wall seconds, completed process)."""
        env = dict(self.env, TF_CLI_CONFIG_FILE=self.cli_configs["rss" if rss else "direct"])
        started = time.monotonic()
        out = subprocess.run([self.terraform, f"-chdir={self.dir}", *argv, "-no-color"],
                             env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - started
        if out.returncode not in ok:
            sys.exit(f"{self.terraform} {' '.join(argv)} failed ({out.returncode}):\n"
                     f"{out.stdout[-6000:]}\n{out.stderr[-6000:]}")
        return elapsed, out

    def apply(self, *args):
        return self.run("apply", "-auto-approve", "-input=false", *args)[0]

    def plan_is_empty(self, *args, rss=False):
        """A `plan -detailed-exitcode`: (wall seconds, whether nothing changes)."""
        elapsed, out = self.run("plan", "-detailed-exitcode", "-input=false", *args, ok=(0, 2),
                                rss=rss)
        return elapsed, out.returncode == 0, out.stdout

    def destroy(self, *args):
        self.run("destroy", "-auto-approve", "-input=false", *args)

    def reset_rss(self):
        open(self.rss_log, "w").close()

    def peak_rss_mib(self):
        """The highest peak RSS of the provider processes since reset_rss."""
        with open(self.rss_log) as f:
            values = [int(line) for line in f if line.strip()]
        return max(values) / 1024 if values else float("nan")

    def resource_schema(self, resource):
        """The provider schema's block of `resource` ({} if it has none)."""
        _, out = self.run("providers", "schema", "-json")
        for provider in json.loads(out.stdout)["provider_schemas"].values():
            if resource in provider.get("resource_schemas", {}):
                return provider["resource_schemas"][resource]["block"]
        return {}


def temp_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix)


def spread(values):
    """(min, median, max)."""
    return min(values), statistics.median(values), max(values)


def row(name, values, unit, target=None, fmt="{:.2f}"):
    """One line of the report: min/median/max, the target and whether the
    median meets it (target: (op, bound) with op '<=')."""
    lo, mid, hi = spread(values)
    text = f"{name:42} median {fmt.format(mid)}{unit} (min {fmt.format(lo)}, max {fmt.format(hi)}; n={len(values)})"
    if target is None:
        return text, True
    ok = mid <= target
    return f"{text}  target <= {target:g}{unit}: {'ok' if ok else 'MISSED'}", ok


def report(title, terraform, lines):
    """Prints the rows; returns 1 if a target was missed, else 0."""
    print(f"== {title} ({cli_version(terraform)})")
    missed = 0
    for text, ok in lines:
        print("  " + text)
        missed += not ok
    return 1 if missed else 0
