# The cluster-wide settings, once, for the cluster and all its pools.
resource "hct_cluster_secrets" "this" {
  name          = "noreturn"
  network_id    = hcloud_network.this.id # with a cloud subnet 10.0.128.0/24 and a route 0.0.0.0/0 → NAT
  network_plan  = data.hct_network_plan.this.json
  talos_version = "v1.14.0"
  image_id      = hct_talos_image.this.id
  schematic_id  = hct_talos_image.this.schematic_id
}

resource "hct_cluster" "this" {
  worker_join     = hct_cluster_secrets.this.worker_join
  machine_secrets = hct_cluster_secrets.this.machine_secrets
  control_plane   = { server_type = "cx23", location = "nbg1" }
}

# Created, booted and configured while the control plane comes up.
resource "hct_worker_pool" "this" {
  for_each    = { platform = "cx33", general = "cx23" }
  worker_join = hct_cluster_secrets.this.worker_join
  name        = each.key
  server_type = each.value
  location    = "nbg1"
}
