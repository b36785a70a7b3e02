# A private-only Talos cluster and everything it needs, in one configuration:
# Hetzner's own provider makes the network, the node subnet, a NAT box (a
# small Debian server with a public IPv4 that forwards and masquerades the
# network's egress) and the route 0.0.0.0/0 to it; hct then finds or builds
# the Talos snapshot and makes the control plane and the worker pools, none
# of which gets a public IP.
#
# Against Hetzner: set HCLOUD_TOKEN and HCT_TALOS_PROXY (a SOCKS5 proxy into
# the network, e.g. Tailscale's on a machine attached to it), then
# `terraform init && terraform apply`. tests/e2e/complete_e2e.rs applies this
# very configuration to hct-sim.

terraform {
  required_version = ">= 1.6"
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = "~> 1.68"
    }
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

# Both read HCLOUD_TOKEN (and HCLOUD_ENDPOINT, if set) from the environment.
provider "hcloud" {}
provider "hct" {}

# The address plan: every CIDR and fixed IP below comes from it.
data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = "10.0.128.16/28", nodes = var.control_plane_nodes }
  worker_pools  = { for name, pool in var.worker_pools : name => { cidr = pool.cidr, nodes = pool.nodes } }
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}

locals {
  plan = data.hct_network_plan.this
  # The NAT box takes host 2 of the node subnet, below the control plane's
  # and the pools' slices: the plan puts nodes in those slices only, so the
  # hosts beneath them stay free for boxes like this one.
  nat_ip = cidrhost(local.plan.node_subnet, 2)
  labels = { cluster = var.cluster_name }
  # Hetzner's network zone of each cloud location.
  network_zone = {
    fsn1 = "eu-central"
    nbg1 = "eu-central"
    hel1 = "eu-central"
    ash  = "us-east"
    hil  = "us-west"
    sin  = "ap-southeast"
  }[var.location]
}

resource "hcloud_network" "this" {
  name     = var.cluster_name
  ip_range = local.plan.network_cidr
  labels   = local.labels
}

resource "hcloud_network_subnet" "nodes" {
  network_id   = hcloud_network.this.id
  type         = "cloud"
  network_zone = local.network_zone
  ip_range     = local.plan.node_subnet
}

# The NAT box. Hetzner's firewalls filter public interfaces only, so the
# network's traffic reaches it whatever this one says; from the internet
# it lets in ICMP and, if ssh_source_ips is set, SSH.
resource "hcloud_firewall" "nat" {
  name   = "${var.cluster_name}-nat"
  labels = local.labels

  rule {
    direction  = "in"
    protocol   = "icmp"
    source_ips = ["0.0.0.0/0", "::/0"]
  }

  dynamic "rule" {
    for_each = length(var.ssh_source_ips) > 0 ? [1] : []
    content {
      direction  = "in"
      protocol   = "tcp"
      port       = "22"
      source_ips = var.ssh_source_ips
    }
  }
}

# The cluster's egress address, kept when the NAT box is replaced (a new
# user_data replaces it): allowlists elsewhere stay valid.
resource "hcloud_primary_ip" "nat" {
  name        = "${var.cluster_name}-nat"
  type        = "ipv4"
  location    = var.location
  auto_delete = false
  labels      = local.labels
}

resource "hcloud_server" "nat" {
  name         = "${var.cluster_name}-nat"
  server_type  = var.nat_server_type
  image        = var.nat_image
  location     = var.location
  ssh_keys     = var.ssh_keys
  firewall_ids = [hcloud_firewall.nat.id]
  labels       = merge(local.labels, { role = "nat" })

  public_net {
    ipv4_enabled = true
    ipv4         = hcloud_primary_ip.nat.id
    # The network is IPv4 only; nothing needs the box's IPv6.
    ipv6_enabled = false
  }

  network {
    network_id = hcloud_network.this.id
    ip         = local.nat_ip
  }

  # Forward and masquerade what the network sends out. On Hetzner's Debian
  # images eth0 is the public interface; the private one is configured by
  # Hetzner's cloud-init data.
  user_data = <<-EOT
    #cloud-config
    packages:
      - nftables
    write_files:
      - path: /etc/sysctl.d/90-nat.conf
        content: |
          net.ipv4.ip_forward = 1
      - path: /etc/nftables.conf
        permissions: "0755"
        content: |
          #!/usr/sbin/nft -f
          flush ruleset
          table ip nat {
            chain postrouting {
              type nat hook postrouting priority srcnat; policy accept;
              ip saddr ${local.plan.network_cidr} oifname "eth0" masquerade
            }
          }
    runcmd:
      - sysctl --system
      - systemctl enable --now nftables
  EOT

  # Attaching with a fixed IP needs the subnet first.
  depends_on = [hcloud_network_subnet.nodes]

  lifecycle {
    precondition {
      condition     = !contains(concat(local.plan.control_plane_ips, flatten(values(local.plan.worker_ips))), local.nat_ip)
      error_message = "The NAT box's address ${local.nat_ip} is a node address of the plan: move the node slices."
    }
  }
}

# The nodes' only way out. Its gateway must be inside a subnet, which the
# NAT box's attachment guarantees.
resource "hcloud_network_route" "egress" {
  network_id  = hcloud_network.this.id
  destination = "0.0.0.0/0"
  gateway     = one(hcloud_server.nat.network).ip
}

# Finds the Talos snapshot of this release, or builds it on a temporary
# server from the Image Factory's image.
resource "hct_talos_image" "this" {
  talos_version = var.talos_version
  architecture  = "amd64"
  location      = var.location
  # Building takes minutes: keep the snapshot when the cluster goes.
  keep_on_destroy = true
}

# The cluster-wide settings and secrets (made at apply, instantly): the
# cluster and its pools both read them, so the pools boot beside the
# control plane.
resource "hct_cluster_secrets" "this" {
  name          = var.cluster_name
  network_id    = hcloud_network.this.id
  network_plan  = local.plan.json
  talos_version = var.talos_version
  image_id      = hct_talos_image.this.id
  schematic_id  = hct_talos_image.this.schematic_id

  # Nodes pull their images at boot, and hct checks the network's route
  # 0.0.0.0/0 when it plans these settings: the route (and so the NAT box)
  # and the subnet must be there first. The cluster and the pools read
  # worker_join, so they wait for them too.
  depends_on = [hcloud_network_subnet.nodes, hcloud_network_route.egress]
}

resource "hct_cluster" "this" {
  worker_join     = hct_cluster_secrets.this.worker_join
  machine_secrets = hct_cluster_secrets.this.machine_secrets
  control_plane   = { server_type = var.control_plane_server_type, location = var.location }
}

resource "hct_worker_pool" "this" {
  for_each    = var.worker_pools
  worker_join = hct_cluster_secrets.this.worker_join
  name        = each.key
  server_type = each.value.sku
  location    = var.location
  node_labels = each.value.labels
}
