# The reference layout: a private-only Talos cluster with 3 control planes
# and two worker pools, on an existing Hetzner network that has a cloud
# subnet 10.0.128.0/24 and a route 0.0.0.0/0 to a NAT gateway.
#
# Run it against hct-sim with `scripts/demo` (see the README); against
# Hetzner, set HCLOUD_TOKEN, HCT_TALOS_PROXY (a SOCKS5 proxy into the private
# network, e.g. Tailscale's) and network_id, and cni_manifest to a real CNI.

terraform {
  required_providers {
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

provider "hct" {}

variable "network_id" {
  description = "The Hetzner network the nodes join (ip_range 10.0.0.0/16)."
  type        = number
}

variable "cluster_name" {
  type    = string
  default = "noreturn"
}

variable "talos_version" {
  type    = string
  default = "v1.14.0"
}

variable "location" {
  type    = string
  default = "nbg1"
}

variable "control_plane_nodes" {
  description = "Control planes (etcd members): 3 for high availability, 1 for a test cluster; odd counts make the most of etcd's quorum. A lower count removes the highest-numbered ones one at a time, each leaving etcd first."
  type        = number
  default     = 3
}

variable "control_plane_server_type" {
  description = "Server type of the control-plane nodes (a change resizes them one at a time)."
  type        = string
  default     = "cx23"
}

variable "create_timeout" {
  description = "How long creating the control plane (and each pool) may take."
  type        = string
  default     = "30m"
}

variable "update_timeout" {
  description = "How long an update of the control plane or a pool (a Talos upgrade goes node by node) may take."
  type        = string
  default     = "30m"
}

variable "config_delivery" {
  description = "null for hct's default, \"apply\" (configs applied over the Talos API in maintenance mode; user data stays empty), or \"user_data\" (opt-in: configs, secrets included, in the servers' user data, which every pod can read from Hetzner's metadata service)."
  type        = string
  default     = null
}

variable "machine_secrets" {
  description = "A talosctl secrets.yaml to adopt (e.g. to import an existing cluster); default: generated."
  type        = string
  default     = null
  sensitive   = true
}

variable "max_unavailable" {
  description = "How many nodes of each pool may be out of service at once during upgrades, reboots and resizes: a count or a percentage such as \"20%\"."
  type        = string
  default     = "1"
}

# The CNI Talos installs at bootstrap, before any node is Ready: e.g. Cilium
# rendered by the helm provider's helm_template with the plan's
# cilium_values (docs/guides/add-ons.md). Without one the nodes stay
# NotReady and hct does not wait for Ready. scripts/demo sets a stand-in
# that only hct-sim takes for a CNI.
variable "cni_manifest" {
  description = "The CNI, as a manifest Talos installs at bootstrap (e.g. Cilium rendered by helm_template from the plan's cilium_values); null: none."
  type        = string
  default     = null
}

variable "ccm_token" {
  description = "The Hetzner token for the hcloud Secret of the CCM and CSI driver; default: the provider's."
  type        = string
  default     = null
  sensitive   = true
}

variable "api_endpoint" {
  description = "Where nodes and clients reach the Kubernetes API: \"load_balancer\" (a private Hetzner Load Balancer lb11 at 10.0.128.254 in front of every control plane: the API survives losing any one of them; billed monthly) or \"first_control_plane\" (free, but every kubeconfig and node points at a dead host when that server dies)."
  type        = string
  default     = "load_balancer"
}

# Before an upgrade, a new control-plane config, a scale-down or a resize,
# hct writes an etcd snapshot, age-encrypted to these recipients, into
# ./etcd-snapshots (docs/guides/backup-and-restore.md). Without them such a
# change is refused at plan, unless skip_pre_change_snapshot is set.
variable "etcd_snapshot_recipients" {
  description = "age recipients (age1…, from age-keygen) the etcd snapshots before risky changes are encrypted to; null: none (risky changes are refused)."
  type        = list(string)
  default     = null
}

# Instead of ./etcd-snapshots, an S3-compatible bucket (Hetzner Object
# Storage unless endpoint is set), with its keys apart: they are
# write-only in hct_cluster, never in plan or state.
variable "etcd_snapshot_bucket" {
  description = "{ name, location (fsn1), endpoint (Hetzner's), prefix (<cluster>/) } of the bucket for the etcd snapshots (its keys: etcd_snapshot_bucket_keys); null: ./etcd-snapshots."
  type = object({
    name     = string
    location = optional(string)
    endpoint = optional(string)
    prefix   = optional(string)
  })
  default = null
}

variable "etcd_snapshot_bucket_keys" {
  description = "{ access_key, secret_key } of etcd_snapshot_bucket."
  type = object({
    access_key = string
    secret_key = string
  })
  default   = null
  sensitive = true
}

# A snapshot hct wrote, to start etcd from where the cluster's etcd is lost
# (every control-plane server gone) or on a new cluster of the old
# machine_secrets; refused at plan while control planes exist.
variable "etcd_restore_from" {
  description = "{ snapshot = <path of a .etcd.age file, or s3://<bucket>/<key> in etcd_snapshot_bucket>, age_identity_file = <path of an age-keygen identity> }; null: none."
  type = object({
    snapshot          = string
    age_identity_file = string
  })
  default = null
}

variable "worker_pools" {
  description = "Pools by name: where they live in the node subnet, how many nodes, which server type."
  type = map(object({
    cidr   = string
    nodes  = number
    sku    = string
    labels = map(string)
  }))
  default = {
    platform = { cidr = "10.0.128.32/27", nodes = 3, sku = "cx33", labels = { purpose = "platform" } }
    general  = { cidr = "10.0.128.64/27", nodes = 3, sku = "cx23", labels = { purpose = "general" } }
  }
}

data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = "10.0.128.16/28", nodes = var.control_plane_nodes }
  worker_pools  = { for name, pool in var.worker_pools : name => { cidr = pool.cidr, nodes = pool.nodes } }
  service_cidr  = "10.0.192.0/21"
  # A /19 holds 32 nodes at one /24 each. (10.0.200.0/19 would not be a
  # network address: hct rejects it and says why.)
  pod_cidr = "10.0.224.0/19"

  api_endpoint = var.api_endpoint
}

# Finds the Talos snapshot of this release (hct-sim has one), or builds it
# on a temporary server from the Image Factory's image.
resource "hct_talos_image" "this" {
  talos_version = var.talos_version
  architecture  = "amd64"
  location      = var.location
  # Building takes minutes: keep the snapshot when the cluster goes.
  keep_on_destroy = true
}

# The cluster-wide settings and secrets, made at apply in an instant. The
# cluster and the pools both read its worker_join, so Terraform starts the
# pools beside the control plane: their servers boot while it comes up.
resource "hct_cluster_secrets" "this" {
  name            = var.cluster_name
  network_id      = var.network_id
  network_plan    = data.hct_network_plan.this.json
  talos_version   = var.talos_version
  image_id        = hct_talos_image.this.id
  schematic_id    = hct_talos_image.this.schematic_id
  machine_secrets = var.machine_secrets
  config_delivery = var.config_delivery
}

resource "hct_cluster" "this" {
  worker_join     = hct_cluster_secrets.this.worker_join
  machine_secrets = hct_cluster_secrets.this.machine_secrets
  control_plane   = { server_type = var.control_plane_server_type, location = var.location }
  bootstrap_manifests = var.cni_manifest == null ? null : [
    { name = "cni", contents = var.cni_manifest },
  ]
  # On by default (kubelet_serving_cert_approval, hcloud_secret): the
  # approver of kubelet serving certificates and the hcloud Secret (token
  # and network id) for the Hetzner CCM and CSI driver.
  ccm_token = var.ccm_token

  etcd_backup = var.etcd_snapshot_recipients == null ? null : {
    local_directory = var.etcd_snapshot_bucket == null ? "${path.root}/etcd-snapshots" : null
    bucket = var.etcd_snapshot_bucket == null ? null : merge(var.etcd_snapshot_bucket, {
      access_key = var.etcd_snapshot_bucket_keys.access_key
      secret_key = var.etcd_snapshot_bucket_keys.secret_key
    })
    age_recipients = var.etcd_snapshot_recipients
  }
  restore_from = var.etcd_restore_from

  timeouts {
    create = var.create_timeout
    update = var.update_timeout
  }
}

resource "hct_worker_pool" "this" {
  for_each    = var.worker_pools
  worker_join = hct_cluster_secrets.this.worker_join
  name        = each.key
  server_type = each.value.sku
  location    = var.location
  node_labels = each.value.labels

  update_strategy {
    max_unavailable = var.max_unavailable
  }

  timeouts {
    create = var.create_timeout
    update = var.update_timeout
  }
}

output "endpoint" {
  value = hct_cluster.this.endpoint
}

output "control_plane_nodes" {
  value = hct_cluster.this.control_plane_nodes
}

output "worker_nodes" {
  value = { for name, pool in hct_worker_pool.this : name => pool.nodes }
}

output "pre_change_snapshot" {
  description = "The last etcd snapshot written before a risky change."
  value       = hct_cluster.this.pre_change_snapshot
}

output "cilium_values" {
  description = "Helm values for Cilium that match the plan (install it next)."
  value       = data.hct_network_plan.this.cilium_values
}

output "network_diagram" {
  description = "The plan as a Mermaid flowchart (paste it into Markdown, or render it with mmdc)."
  value       = data.hct_network_plan.this.mermaid
}

output "kubeconfig" {
  value     = hct_cluster.this.kubeconfig
  sensitive = true
}

output "talosconfig" {
  value     = hct_cluster.this.talosconfig
  sensitive = true
}
