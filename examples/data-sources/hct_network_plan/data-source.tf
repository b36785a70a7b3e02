# The reference layout: a /16 network with one cloud subnet for the nodes,
# three control planes and two worker pools in fixed slices of it, and pod
# and service ranges outside every node range.
data "hct_network_plan" "this" {
  network_cidr = "10.0.0.0/16"
  node_subnet  = "10.0.128.0/24"

  control_plane = { cidr = "10.0.128.16/28", nodes = 3 }
  worker_pools = {
    platform = { cidr = "10.0.128.32/27", nodes = 3 }
    general  = { cidr = "10.0.128.64/27", nodes = 3 }
  }

  service_cidr = "10.0.192.0/21"
  pod_cidr     = "10.0.224.0/19"
}

# Install Cilium with values that agree with the plan.
output "cilium_values" {
  value = jsondecode(data.hct_network_plan.this.cilium_values)
}
