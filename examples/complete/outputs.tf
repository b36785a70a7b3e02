output "network_id" {
  value = hcloud_network.this.id
}

output "nat_public_ipv4" {
  description = "The NAT box's public address: the source address of the cluster's egress (allow it where the cluster pulls from or pushes to)."
  value       = hcloud_primary_ip.nat.ip_address
}

output "nat_private_ip" {
  value = local.nat_ip
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

output "cilium_values" {
  description = "Helm values for Cilium that match the plan (install it next)."
  value       = data.hct_network_plan.this.cilium_values
}

output "kubeconfig" {
  value     = hct_cluster.this.kubeconfig
  sensitive = true
}

output "talosconfig" {
  value     = hct_cluster.this.talosconfig
  sensitive = true
}
