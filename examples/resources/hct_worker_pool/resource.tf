resource "hct_worker_pool" "general" {
  worker_join = hct_cluster_secrets.this.worker_join # or hct_cluster.this.worker_join (serial)
  name        = "general" # a key of the network plan's worker_pools: CIDR and node count come from there
  server_type = "cx23"
  location    = "nbg1"
  node_labels = { purpose = "general" }
  node_taints = [{ key = "dedicated", value = "batch", effect = "NoSchedule" }]

  # Upgrades, reboots and resizes: two nodes at a time (or "20%").
  update_strategy {
    max_unavailable = 2
  }
}

output "general_nodes" {
  value = hct_worker_pool.general.nodes
}
