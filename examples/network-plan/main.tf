# Plans the addresses of the reference cluster and checks them at plan time.
# Run it with `scripts/demo network-plan` (see the README), or with any
# Terraform that can install hct.

terraform {
  required_providers {
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

provider "hct" {}

variable "general_nodes" {
  description = "Nodes in the general pool; try 30 to see the pod-CIDR check."
  type        = number
  default     = 3
}

data "hct_network_plan" "this" {
  network_cidr = "10.0.0.0/16"
  node_subnet  = "10.0.128.0/24"

  control_plane = { cidr = "10.0.128.16/28", nodes = 3 }
  worker_pools = {
    platform = { cidr = "10.0.128.32/27", nodes = 3 }
    general  = { cidr = "10.0.128.64/27", nodes = var.general_nodes }
  }

  service_cidr = "10.0.192.0/21"
  pod_cidr     = "10.0.224.0/19"
}

output "gateway" {
  value = data.hct_network_plan.this.gateway
}

output "node_cidrs" {
  value = data.hct_network_plan.this.node_cidrs
}

output "control_plane_ips" {
  value = data.hct_network_plan.this.control_plane_ips
}

output "worker_ips" {
  value = data.hct_network_plan.this.worker_ips
}

output "cluster_endpoint" {
  value = data.hct_network_plan.this.cluster_endpoint
}

output "etcd_advertised_subnets" {
  value = data.hct_network_plan.this.etcd_advertised_subnets
}

output "max_nodes" {
  value = data.hct_network_plan.this.max_nodes
}

output "placement_groups" {
  value = data.hct_network_plan.this.placement_groups
}

output "cilium_values" {
  value = jsondecode(data.hct_network_plan.this.cilium_values)
}

# Keeps pods away from Hetzner's metadata service; apply it after Cilium
# (see docs/guides/security.md).
output "cilium_metadata_policy" {
  value = jsondecode(data.hct_network_plan.this.cilium_metadata_policy)
}

output "hccm_values" {
  value = jsondecode(data.hct_network_plan.this.hccm_values)
}
