# Baseline for bench/network-plan.sh: the address plan that `hct_network_plan`
# computes for examples/network-plan, done instead with Terraform's own
# functions (cidrhost, cidrsubnet, jsonencode, sha256, ...) into the built-in
# `terraform_data` resource, with the rules as preconditions, so that
# `terraform plan` does comparable work without starting any provider.
# Keep the inputs and outputs in step with examples/network-plan/main.tf.

variable "general_nodes" {
  description = "Nodes in the general pool."
  type        = number
  default     = 3
}

locals {
  network_cidr = "10.0.0.0/16"
  node_subnet  = "10.0.128.0/24"
  control_plane = {
    cidr  = "10.0.128.16/28"
    nodes = 3
  }
  worker_pools = {
    platform = { cidr = "10.0.128.32/27", nodes = 3 }
    general  = { cidr = "10.0.128.64/27", nodes = var.general_nodes }
  }
  service_cidr        = "10.0.192.0/21"
  pod_cidr            = "10.0.224.0/19"
  pod_cidr_mask_size  = 24
  native_routing_cidr = local.pod_cidr
  multi_datacenter    = false

  named_cidrs = merge(
    {
      network       = local.network_cidr
      node_subnet   = local.node_subnet
      control_plane = local.control_plane.cidr
      service       = local.service_cidr
      pod           = local.pod_cidr
    },
    { for name, pool in local.worker_pools : "pool_${name}" => pool.cidr },
  )
  prefix = { for k, c in local.named_cidrs : k => tonumber(split("/", c)[1]) }
  # Each CIDR as an integer range [first, last], starting at the address as written.
  first = {
    for k, c in local.named_cidrs : k => sum([
      for i, octet in split(".", split("/", c)[0]) : tonumber(octet) * pow(256, 3 - i)
    ])
  }
  last = { for k, c in local.named_cidrs : k => local.first[k] + pow(2, 32 - local.prefix[k]) - 1 }
  inside = {
    for a in keys(local.named_cidrs) : a => {
      for b in keys(local.named_cidrs) : b => local.first[a] >= local.first[b] && local.last[a] <= local.last[b]
    }
  }
  names = sort(keys(local.named_cidrs))
  overlaps = [
    for ij in setproduct(range(length(local.names)), range(length(local.names))) :
    [local.names[ij[0]], local.names[ij[1]]]
    if ij[0] < ij[1] && local.first[local.names[ij[0]]] <= local.last[local.names[ij[1]]] && local.first[local.names[ij[1]]] <= local.last[local.names[ij[0]]]
  ]
  node_groups = merge(
    { control_plane = local.control_plane },
    { for name, pool in local.worker_pools : "pool_${name}" => pool },
  )
  # Node n = 1..nodes takes host n; a slice's first and last addresses stay free.
  group_capacity = { for k, g in local.node_groups : k => pow(2, 32 - local.prefix[k]) - 2 }
  node_count     = sum([for g in values(local.node_groups) : g.nodes])

  gateway           = cidrhost(local.network_cidr, 1)
  pool_names        = sort(keys(local.worker_pools))
  node_cidrs        = concat([local.control_plane.cidr], [for name in local.pool_names : local.worker_pools[name].cidr])
  control_plane_ips = [for n in range(1, local.control_plane.nodes + 1) : cidrhost(local.control_plane.cidr, n)]
  worker_ips = {
    for name, pool in local.worker_pools : name => [for n in range(1, pool.nodes + 1) : cidrhost(pool.cidr, n)]
  }
  cluster_endpoint = "https://${local.control_plane_ips[0]}:6443"
  max_nodes        = pow(2, local.pod_cidr_mask_size - local.prefix["pod"])
  # Each node's pod range, as the controller manager hands them out.
  pod_ranges = [
    for i in range(min(local.node_count, local.max_nodes)) :
    cidrsubnet(local.pod_cidr, local.pod_cidr_mask_size - local.prefix["pod"], i)
  ]
  placement_groups = merge(
    { cp = ceil(local.control_plane.nodes / 10) },
    { for name, pool in local.worker_pools : name => ceil(pool.nodes / 10) },
  )
  cilium_values = jsonencode({
    routingMode                  = "native"
    ipv4NativeRoutingCIDR        = local.native_routing_cidr
    autoDirectNodeRoutes         = true
    directRoutingSkipUnreachable = local.multi_datacenter
    kubeProxyReplacement         = true
    k8sServiceHost               = "localhost"
    k8sServicePort               = 7445
    ipam                         = { mode = "kubernetes" }
  })
  hccm_values = jsonencode({
    networking = { enabled = true, clusterCIDR = local.pod_cidr }
  })
  inputs = {
    network_cidr        = local.network_cidr
    node_subnet         = local.node_subnet
    control_plane       = local.control_plane
    worker_pools        = local.worker_pools
    service_cidr        = local.service_cidr
    pod_cidr            = local.pod_cidr
    pod_cidr_mask_size  = local.pod_cidr_mask_size
    native_routing_cidr = local.native_routing_cidr
    multi_datacenter    = local.multi_datacenter
  }
  plan = {
    id                      = substr(sha256(jsonencode(local.inputs)), 0, 16)
    gateway                 = local.gateway
    node_cidrs              = local.node_cidrs
    control_plane_ips       = local.control_plane_ips
    worker_ips              = local.worker_ips
    cluster_endpoint        = local.cluster_endpoint
    etcd_advertised_subnets = [local.control_plane.cidr]
    max_nodes               = local.max_nodes
    placement_groups        = local.placement_groups
    pod_ranges              = local.pod_ranges
    cilium_values           = local.cilium_values
    hccm_values             = local.hccm_values
  }
}

resource "terraform_data" "network_plan" {
  input = merge(local.plan, { json = jsonencode(merge(local.inputs, local.plan)) })

  lifecycle {
    precondition {
      condition     = alltrue([for k in keys(local.named_cidrs) : local.inside[k]["network"]])
      error_message = "Every CIDR must lie inside network_cidr."
    }
    precondition {
      condition     = alltrue([for k in keys(local.node_groups) : local.inside[k]["node_subnet"]])
      error_message = "The control plane and every worker pool must lie inside node_subnet."
    }
    precondition {
      # Allowed: everything inside `network`, node groups inside `node_subnet`.
      condition = length([
        for pair in local.overlaps : pair
        if !contains(pair, "network") && !(contains(pair, "node_subnet") && length(setintersection(pair, keys(local.node_groups))) > 0)
      ]) == 0
      error_message = "Node groups, the service CIDR and the pod CIDR must not overlap."
    }
    precondition {
      condition     = alltrue([for k, g in local.node_groups : g.nodes >= 1 && g.nodes <= local.group_capacity[k]])
      error_message = "A node group has more nodes than its CIDR holds."
    }
    precondition {
      condition     = local.control_plane.nodes % 2 == 1
      error_message = "Use an odd number of control-plane nodes."
    }
    precondition {
      condition     = local.node_count <= local.max_nodes
      error_message = "Pod CIDR too small for the nodes."
    }
  }
}

output "gateway" {
  value = terraform_data.network_plan.input.gateway
}

output "node_cidrs" {
  value = terraform_data.network_plan.input.node_cidrs
}

output "control_plane_ips" {
  value = terraform_data.network_plan.input.control_plane_ips
}

output "worker_ips" {
  value = terraform_data.network_plan.input.worker_ips
}

output "cluster_endpoint" {
  value = terraform_data.network_plan.input.cluster_endpoint
}

output "etcd_advertised_subnets" {
  value = terraform_data.network_plan.input.etcd_advertised_subnets
}

output "max_nodes" {
  value = terraform_data.network_plan.input.max_nodes
}

output "placement_groups" {
  value = terraform_data.network_plan.input.placement_groups
}

output "cilium_values" {
  value = jsondecode(terraform_data.network_plan.input.cilium_values)
}

output "hccm_values" {
  value = jsondecode(terraform_data.network_plan.input.hccm_values)
}
