"""Drives a running hct-sim with Hetzner's own Python library, `hcloud`.

What the library parses and which errors it raises are the measure of the
emulator's fidelity: if hcloud-python reads our answers the way it reads
Hetzner's, hct's client will too.

Environment: HCLOUD_ENDPOINT and HCLOUD_TOKEN (as `hct-sim serve` prints and
is given). The emulator must run with `--seed`, fast actions and a
`create_image` that takes at least a second, e.g.

    hct-sim serve --token T --seed --durations fast --duration create_image=1500ms

Exits non-zero at the first failing step, after printing what failed.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

import requests
from hcloud import APIException, Client
from hcloud.actions.domain import ActionFailedException
from hcloud.images import Image
from hcloud.load_balancer_types import LoadBalancerType
from hcloud.load_balancers.domain import (
    LoadBalancerAlgorithm,
    LoadBalancerHealthCheck,
    LoadBalancerService,
    LoadBalancerTarget,
    LoadBalancerTargetLabelSelector,
)
from hcloud.locations import Location
from hcloud.networks.domain import NetworkRoute, NetworkSubnet
from hcloud.server_types import ServerType
from hcloud.servers.domain import ServerCreatePublicNetwork

ENDPOINT = os.environ["HCLOUD_ENDPOINT"]
TOKEN = os.environ["HCLOUD_TOKEN"]
ADMIN = ENDPOINT.rsplit("/v1", 1)[0] + "/_sim"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# An ed25519 public key (its key bytes are arbitrary; only the format matters).
SSH_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH "
    "fidelity@hct"
)

client = Client(token=TOKEN, api_endpoint=ENDPOINT, poll_interval=0.05)
ctx: dict = {}


def expect_api_error(code: str, call, *args, **kwargs) -> APIException:
    try:
        call(*args, **kwargs)
    except APIException as e:
        assert e.code == code, f"expected {code}, got {e.code}: {e.message}"
        assert e.correlation_id, "every answer carries X-Correlation-Id"
        return e
    raise AssertionError(f"expected APIException {code}, the call succeeded")


def admin_state() -> dict:
    answer = requests.get(f"{ADMIN}/state", headers=AUTH, timeout=10)
    answer.raise_for_status()
    return answer.json()


def admin_server(server_id: int) -> dict:
    return next(s for s in admin_state()["servers"] if s["id"] == server_id)


def step_catalog():
    cx23 = client.server_types.get_by_name("cx23")
    assert cx23.architecture == "x86" and cx23.cores == 2 and cx23.disk == 40
    assert {l.location.name for l in cx23.locations} == {"fsn1", "nbg1", "hel1"}
    assert cx23.prices and cx23.prices[0]["price_monthly"]["net"]
    cax11 = client.server_types.get_by_name("cax11")
    assert cax11.architecture == "arm"
    cx22 = client.server_types.get_by_name("cx22")
    assert cx22.locations[0].deprecation is not None, "cx22 is deprecated"
    assert cx22.locations[0].deprecation.unavailable_after is not None
    fsn1 = client.locations.get_by_name("fsn1")
    assert fsn1.network_zone == "eu-central" and fsn1.country == "DE"
    assert client.locations.get_by_name("ash").network_zone == "us-east"
    assert client.locations.get_by_name("sin").network_zone == "ap-southeast"
    debian = client.images.get_all(name="debian-12", architecture="arm")
    assert len(debian) == 1 and debian[0].type == "system" and debian[0].os_flavor == "debian"


def step_seed():
    seeded = client.networks.get_by_name("the private network")
    assert seeded.ip_range == "10.0.0.0/16"
    assert [(s.ip_range, s.network_zone, s.type) for s in seeded.subnets] == [
        ("10.0.128.0/24", "eu-central", "cloud")
    ]
    assert [(r.destination, r.gateway) for r in seeded.routes] == [("0.0.0.0/0", "10.0.128.2")]
    talos = client.images.get_all(
        label_selector="os=talos,type=infra,version=v1.12.6,arch=amd64", type="snapshot"
    )
    assert len(talos) == 1, talos
    assert talos[0].architecture == "x86"
    assert talos[0].labels["schematic"].startswith("376567988ad3")
    assert "v1.12.6" in talos[0].description
    ctx["talos_image"] = talos[0]
    assert len(client.images.get_all(label_selector="os=talos", type="snapshot")) == 8
    assert len(client.images.get_all(label_selector="os=talos,version=v1.13.9", type="snapshot")) == 2
    assert len(client.images.get_all(label_selector="os=talos,version=v1.14.0", type="snapshot")) == 2


def step_network():
    response = client.networks.create(
        name="fidelity", ip_range="10.1.0.0/16", labels={"suite": "fidelity"}
    )
    network = response if not hasattr(response, "network") else response.network
    assert network.ip_range == "10.1.0.0/16" and network.subnets == []
    subnet = NetworkSubnet(ip_range="10.1.1.0/24", network_zone="eu-central", type="cloud")
    client.networks.add_subnet(network, subnet).wait_until_finished()
    client.networks.add_route(
        network, NetworkRoute(destination="0.0.0.0/0", gateway="10.1.1.2")
    ).wait_until_finished()
    network = client.networks.get_by_id(network.id)
    assert [(s.ip_range, s.gateway) for s in network.subnets] == [("10.1.1.0/24", "10.1.0.1")]
    assert network.routes[0].gateway == "10.1.1.2"
    assert network.labels == {"suite": "fidelity"}
    assert network.protection["delete"] is False
    ctx["network"] = network
    expect_api_error("uniqueness_error", client.networks.create, name="fidelity", ip_range="10.2.0.0/16")
    e = expect_api_error("invalid_input", client.networks.create, name="public", ip_range="8.8.0.0/16")
    assert e.details["fields"][0]["name"] == "ip_range"


def step_ssh_key_and_placement_group():
    key = client.ssh_keys.create(name="fidelity", public_key=SSH_KEY, labels={"suite": "fidelity"})
    assert key.fingerprint.count(":") == 15
    ctx["ssh_key"] = key
    expect_api_error("uniqueness_error", client.ssh_keys.create, name="fidelity", public_key=SSH_KEY)
    expect_api_error("uniqueness_error", client.ssh_keys.create, name="other", public_key=SSH_KEY)
    created = client.placement_groups.create(name="fidelity", type="spread")
    assert created.action is None
    assert created.placement_group.type == "spread" and created.placement_group.servers == []
    ctx["group"] = created.placement_group


def step_private_server():
    response = client.servers.create(
        name="cp-1",
        server_type=ServerType(name="cx23"),
        image=Image(id=ctx["talos_image"].id),
        location=Location(name="fsn1"),
        start_after_create=False,
        public_net=ServerCreatePublicNetwork(enable_ipv4=False, enable_ipv6=False),
        placement_group=ctx["group"],
        ssh_keys=[ctx["ssh_key"]],
        labels={"suite": "fidelity", "role": "control-plane"},
        user_data="#cloud-config\n",
    )
    server = response.server
    assert response.root_password is None, "no root password when SSH keys are given"
    assert response.next_actions == [], "nothing starts the server"
    assert server.status == "initializing"
    assert server.public_net.ipv4 is None and server.public_net.ipv6 is None
    assert server.location.name == "fsn1" and server.location.network_zone == "eu-central"
    assert server.server_type.name == "cx23"
    response.action.wait_until_finished()
    assert response.action.status == "success" and response.action.progress == 100
    server = client.servers.get_by_id(server.id)
    assert server.status == "off"
    assert server.placement_group.id == ctx["group"].id
    assert server.image.id == ctx["talos_image"].id

    client.servers.attach_to_network(server, ctx["network"], ip="10.1.1.10").wait_until_finished()
    expect_api_error("server_already_attached", client.servers.attach_to_network, server, ctx["network"])
    client.servers.power_on(server).wait_until_finished()
    server = client.servers.get_by_id(server.id)
    assert server.status == "running"
    private = server.private_net_for(ctx["network"])
    assert private.ip == "10.1.1.10" and private.alias_ips == [] and private.mac_address
    network = client.networks.get_by_id(ctx["network"].id)
    assert [s.id for s in network.servers] == [server.id]
    state = admin_server(server.id)
    assert state["user_data"] == "#cloud-config\n"
    assert state["talos"]["version"] == "v1.12.6" and state["talos"]["boots"] == 1
    assert state["boot"] == "disk"
    ctx["server"] = server


def step_workers_and_placement_limit():
    workers = []
    for i in range(9):
        response = client.servers.create(
            name=f"worker-{i}",
            server_type=ServerType(name="cx23"),
            image=Image(name="debian-12"),
            location=Location(name="nbg1"),
            placement_group=ctx["group"],
            networks=[ctx["network"]],
            labels={"suite": "fidelity", "role": "worker", "index": str(i)},
        )
        assert response.root_password, "a root password without SSH keys"
        assert [a.command for a in response.next_actions] == ["start_server"]
        assert response.server.public_net.ipv4.ip and response.server.public_net.ipv6.ip
        workers.append(response)
    for response in workers:
        response.action.wait_until_finished()
        for action in response.next_actions:
            action.wait_until_finished()
    ctx["workers"] = [w.server for w in workers]
    group = client.placement_groups.get_by_id(ctx["group"].id)
    assert len(group.servers) == 10
    e = expect_api_error(
        "placement_group_member_limit_reached",
        client.servers.create,
        name="worker-10",
        server_type=ServerType(name="cx23"),
        image=Image(name="debian-12"),
        placement_group=ctx["group"],
    )
    assert "10 servers" in e.message
    worker = client.servers.get_by_id(ctx["workers"][0].id)
    assert worker.status == "running"
    assert worker.private_net[0].ip.startswith("10.1.1.")


def step_label_selectors_and_paging():
    first = client.servers.get_list(label_selector="suite=fidelity,role=worker", per_page=4, page=1)
    pagination = first.meta.pagination
    assert len(first.servers) == 4
    assert (pagination.total_entries, pagination.last_page, pagination.next_page) == (9, 3, 2)
    assert pagination.previous_page is None
    last = client.servers.get_list(label_selector="suite=fidelity,role=worker", per_page=4, page=3)
    assert len(last.servers) == 1 and last.meta.pagination.next_page is None
    names = [s.name for s in client.servers.get_all(label_selector="role in (worker)")]
    assert sorted(names) == [f"worker-{i}" for i in range(9)], names
    assert [s.name for s in client.servers.get_all(label_selector="role notin (worker),suite")] == ["cp-1"]
    assert len(client.servers.get_all(label_selector="!role")) == 0
    assert len(client.servers.get_all(label_selector="role!=control-plane,suite==fidelity")) == 9
    assert [s.name for s in client.servers.get_all(name="worker-3")] == ["worker-3"]
    running = client.servers.get_all(status=["running"], label_selector="suite=fidelity")
    assert len(running) == 10
    # The library has no `sort` for servers; ask the API directly.
    newest = client.request("GET", "/servers", params={"sort": "id:desc", "per_page": 1})
    assert newest["servers"][0]["name"] == "worker-8"
    by_name = client.request("GET", "/servers", params={"sort": ["name:desc"], "label_selector": "role=worker"})
    assert [s["name"] for s in by_name["servers"]][:2] == ["worker-8", "worker-7"]
    expect_api_error("invalid_input", client.servers.get_all, label_selector="role in worker")


def step_errors():
    e = expect_api_error(
        "invalid_input",
        client.servers.create,
        name="too-much-user-data",
        server_type=ServerType(name="cx23"),
        image=Image(name="debian-12"),
        user_data="x" * (32 * 1024 + 1),
    )
    assert [f["name"] for f in e.details["fields"]] == ["user_data"], e.details
    e = expect_api_error(
        "invalid_input",
        client.servers.create,
        name="not a hostname",
        server_type=ServerType(name="cx99"),
        image=Image(name="debian-12"),
    )
    assert {f["name"] for f in e.details["fields"]} >= {"name", "server_type"}
    expect_api_error("uniqueness_error", client.servers.update, ctx["workers"][1], name="worker-2")
    expect_api_error("not_found", client.servers.get_by_id, 1)
    expect_api_error("not_found", client.networks.get_by_id, ctx["server"].id)
    expect_api_error("server_not_stopped", client.servers.change_type, ctx["server"], ServerType(name="cx33"), upgrade_disk=False)
    other = ctx["workers"][0]
    client.servers.detach_from_network(other, ctx["network"]).wait_until_finished()
    expect_api_error("ip_not_available", client.servers.attach_to_network, other, ctx["network"], ip="10.1.1.10")
    expect_api_error("ip_not_available", client.servers.attach_to_network, other, ctx["network"], ip="10.1.0.1")
    expect_api_error("no_subnet_available", client.servers.attach_to_network, other, ctx["network"], ip="10.1.9.9")
    expect_api_error("unauthorized", Client(token="wrong", api_endpoint=ENDPOINT).servers.get_all)

    raw = requests.post(f"{ENDPOINT}/servers", headers=AUTH, data="{not json", timeout=10)
    assert raw.status_code == 400 and raw.json()["error"]["code"] == "json_error"
    listed = requests.get(f"{ENDPOINT}/servers", headers=AUTH, timeout=10)
    limit = int(listed.headers["RateLimit-Limit"])
    remaining = int(listed.headers["RateLimit-Remaining"])
    assert 0 < remaining < limit, listed.headers
    assert int(listed.headers["RateLimit-Reset"]) >= int(time.time())
    assert listed.headers["X-Correlation-Id"]


def step_shutdown_and_resize():
    server = ctx["workers"][2]
    client.servers.shutdown(server).wait_until_finished()
    deadline = time.time() + 30
    while client.servers.get_by_id(server.id).status != "off":
        assert time.time() < deadline, "the server never stopped after the ACPI shutdown"
        time.sleep(0.05)
    disk = client.servers.get_by_id(server.id).primary_disk_size
    client.servers.change_type(server, ServerType(name="cx33"), upgrade_disk=False).wait_until_finished()
    # Hetzner starts the server again once its disk is copied.
    resized = client.servers.get_by_id(server.id)
    assert resized.server_type.name == "cx33", resized.server_type.name
    assert resized.primary_disk_size == disk and resized.status == "running", resized.status


def step_rescue_and_snapshot():
    server = ctx["server"]
    rescue = client.servers.enable_rescue(server, type="linux64", ssh_keys=[ctx["ssh_key"].id])
    assert isinstance(rescue.root_password, str) and rescue.root_password
    rescue.action.wait_until_finished()
    assert client.servers.get_by_id(server.id).rescue_enabled is True
    client.servers.reset(server).wait_until_finished()
    state = admin_server(server.id)
    assert state["boot"] == "rescue" and state["rescue_enabled"] is False

    created = client.servers.create_image(
        server, description="fidelity snapshot", type="snapshot", labels={"suite": "fidelity", "kind": "golden"}
    )
    assert created.image.status == "creating" and created.image.type == "snapshot"
    e = expect_api_error("locked", client.servers.power_off, server)
    assert "locked" in e.message
    assert client.servers.get_by_id(server.id).locked is True
    created.action.wait_until_finished()
    assert client.servers.get_by_id(server.id).locked is False
    found = client.images.get_all(label_selector="suite=fidelity,kind=golden", type="snapshot")
    assert len(found) == 1
    image = found[0]
    assert image.id == created.image.id and image.status == "available"
    assert image.created_from.id == server.id and image.created_from.name == "cp-1"
    assert image.architecture == "x86" and image.disk_size == 40 and image.image_size > 0
    assert image.description == "fidelity snapshot"
    client.images.update(image, labels={"suite": "fidelity", "kind": "golden", "checked": "yes"})
    assert len(client.images.get_all(label_selector="checked")) == 1
    ctx["snapshot"] = image


def step_faults():
    counts = lambda: requests.get(f"{ADMIN}/requests", headers=AUTH, timeout=10).json()["counts"]
    before = counts().get("GET /servers/{id}", 0)
    injected = requests.post(
        f"{ADMIN}/faults",
        headers=AUTH,
        json={"route": "GET /servers/{id}", "respond": "rate_limited", "count": 1},
        timeout=10,
    )
    assert injected.status_code == 200, injected.text
    # The library retries rate_limit_exceeded by itself.
    assert client.servers.get_by_id(ctx["server"].id).name == "cp-1"
    assert counts()["GET /servers/{id}"] == before + 2

    requests.post(f"{ADMIN}/faults", headers=AUTH, json={"action": "create_image", "count": 1}, timeout=10)
    failing = client.servers.create_image(ctx["server"], description="doomed")
    try:
        failing.action.wait_until_finished()
        raise AssertionError("the injected failure did not happen")
    except ActionFailedException as e:
        assert e.action.error["code"] == "action_failed"
    expect_api_error("not_found", client.images.get_by_id, failing.image.id)
    assert requests.delete(f"{ADMIN}/faults", headers=AUTH, timeout=10).status_code == 204


def step_load_balancers():
    lb11 = client.load_balancer_types.get_by_name("lb11")
    assert lb11.max_services >= 3 and any(p["location"] == "nbg1" for p in lb11.prices)
    lb31 = client.load_balancer_types.get_by_name("lb31")
    assert not any(p["location"] == "sin" for p in lb31.prices)
    expect_api_error(
        "unsupported_location_for_load_balancer_type",
        client.load_balancers.create,
        name="nowhere", load_balancer_type=lb31, location=Location(name="sin"),
    )
    expect_api_error(
        "load_balancer_not_attached_to_network",
        client.load_balancers.create,
        name="closed", load_balancer_type=lb11, location=Location(name="nbg1"),
        public_interface=False,
    )
    created = client.load_balancers.create(
        name="fidelity-api",
        load_balancer_type=LoadBalancerType(name="lb11"),
        location=Location(name="nbg1"),
        algorithm=LoadBalancerAlgorithm(type="round_robin"),
        labels={"suite": "fidelity", "role": "api-endpoint"},
    )
    assert created.action.command == "create_load_balancer"
    created.action.wait_until_finished()
    lb = client.load_balancers.get_by_id(created.load_balancer.id)
    assert lb.public_net.enabled and lb.public_net.ipv4.ip and lb.private_net == []
    assert lb.load_balancer_type.name == "lb11" and lb.location.name == "nbg1"
    assert lb.algorithm.type == "round_robin"
    expect_api_error("uniqueness_error", client.load_balancers.create,
                     name="fidelity-api", load_balancer_type=lb11, location=Location(name="nbg1"))
    # The server's address is taken; the gateway is reserved.
    expect_api_error("ip_not_available", client.load_balancers.attach_to_network,
                     lb, ctx["network"], ip="10.1.1.10")
    expect_api_error("ip_not_available", client.load_balancers.attach_to_network,
                     lb, ctx["network"], ip="10.1.0.1")
    expect_api_error("no_subnet_available", client.load_balancers.attach_to_network,
                     lb, ctx["network"], ip="10.1.2.7")
    expect_api_error("load_balancer_not_attached_to_network",
                     client.load_balancers.disable_public_interface, lb)
    client.load_balancers.attach_to_network(lb, ctx["network"], ip="10.1.1.254").wait_until_finished()
    expect_api_error("load_balancer_already_attached", client.load_balancers.attach_to_network,
                     lb, ctx["network"], ip="10.1.1.253")
    # A server cannot take the load balancer's address.
    attached = next(
        s for s in client.servers.get_all(label_selector="suite=fidelity")
        if s.private_net_for(ctx["network"]) is not None
    )
    expect_api_error("ip_not_available", client.servers.change_alias_ips,
                     attached, ctx["network"], ["10.1.1.254"])
    client.load_balancers.disable_public_interface(lb).wait_until_finished()
    selector = LoadBalancerTarget(
        type="label_selector",
        label_selector=LoadBalancerTargetLabelSelector(selector="suite=fidelity,role=worker"),
        use_private_ip=True,
    )
    client.load_balancers.add_target(lb, selector).wait_until_finished()
    expect_api_error("target_already_defined", client.load_balancers.add_target, lb, selector)
    for port in (6443, 50000):
        service = LoadBalancerService(
            protocol="tcp", listen_port=port, destination_port=port, proxyprotocol=False,
            health_check=LoadBalancerHealthCheck(protocol="tcp", port=port, interval=5, timeout=3, retries=2),
        )
        client.load_balancers.add_service(lb, service).wait_until_finished()
    expect_api_error("source_port_already_used", client.load_balancers.add_service, lb, service)
    lb = client.load_balancers.get_by_id(lb.id)
    assert lb.public_net.enabled is False and lb.public_net.ipv4.ip is None
    assert [(p.network.id, p.ip) for p in lb.private_net] == [(ctx["network"].id, "10.1.1.254")]
    assert sorted(s.listen_port for s in lb.services) == [6443, 50000]
    assert all(s.health_check.protocol == "tcp" for s in lb.services)
    (target,) = lb.targets
    assert target.type == "label_selector" and target.use_private_ip
    assert target.label_selector.selector == "suite=fidelity,role=worker"
    members = {t.server.id for t in target.targets}
    workers = {w.id for w in client.servers.get_all(label_selector="suite=fidelity,role=worker")}
    assert members and members <= workers, (members, workers)
    # Debian servers answer on neither port: unhealthy for both services.
    for member in target.targets:
        assert sorted(h.listen_port for h in member.health_status) == [6443, 50000]
        assert all(h.status == "unhealthy" for h in member.health_status), member.health_status
    found = client.load_balancers.get_all(label_selector="role=api-endpoint")
    assert [f.id for f in found] == [lb.id]
    assert client.load_balancers.get_by_name("fidelity-api").id == lb.id
    client.load_balancers.delete(lb)
    expect_api_error("not_found", client.load_balancers.get_by_id, lb.id)


def step_cleanup():
    servers = client.servers.get_all(label_selector="suite=fidelity")
    actions = [client.servers.delete(s) for s in servers]
    for action in actions:
        action.wait_until_finished()
    assert client.servers.get_all(label_selector="suite=fidelity") == []
    client.images.delete(ctx["snapshot"])
    expect_api_error("not_found", client.images.get_by_id, ctx["snapshot"].id)
    client.networks.delete(ctx["network"])
    client.placement_groups.delete(ctx["group"])
    client.ssh_keys.delete(ctx["ssh_key"])
    assert client.networks.get_all(label_selector="suite=fidelity") == []
    assert client.ssh_keys.get_all() == []
    assert client.placement_groups.get_all() == []


STEPS = [
    step_catalog,
    step_seed,
    step_network,
    step_ssh_key_and_placement_group,
    step_private_server,
    step_workers_and_placement_limit,
    step_label_selectors_and_paging,
    step_errors,
    step_shutdown_and_resize,
    step_rescue_and_snapshot,
    step_faults,
    step_load_balancers,
    step_cleanup,
]


def main() -> int:
    passed = 0
    for step in STEPS:
        started = time.monotonic()
        try:
            step()
        except Exception:  # noqa: BLE001 - report any failure with its traceback
            print(f"FAIL {step.__name__}", flush=True)
            traceback.print_exc(file=sys.stdout)
            print(f"{passed} passed, 1 failed", flush=True)
            return 1
        passed += 1
        print(f"ok   {step.__name__} ({time.monotonic() - started:.2f}s)", flush=True)
    print(f"{passed} passed, 0 failed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
