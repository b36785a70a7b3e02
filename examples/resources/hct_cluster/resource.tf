data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = "10.0.128.16/28", nodes = 3 }
  worker_pools  = { general = { cidr = "10.0.128.64/27", nodes = 3 } }
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}

resource "hct_talos_image" "this" {
  talos_version = "v1.14.0"
  architecture  = "amd64"
  location      = "nbg1"
}

# The parallel form: the settings live in hct_cluster_secrets, which the
# cluster and its pools read (see hct_cluster_secrets).
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

  config_patches = [yamlencode({
    machine = { time = { servers = ["ntp1.hetzner.de"] } }
  })]

  # An etcd snapshot, age-encrypted, before every upgrade or other risky
  # change of the control plane.
  etcd_backup = {
    local_directory = "${path.root}/etcd-snapshots"
    age_recipients  = var.etcd_snapshot_recipients # your own `age1…`, from age-keygen
  }

  timeouts {
    create = "30m"
  }
}

# The serial form (pools take hct_cluster.<name>.worker_join and start once
# the control plane is up) sets the settings here instead:
#
# resource "hct_cluster" "this" {
#   name          = "noreturn"
#   network_id    = hcloud_network.this.id
#   network_plan  = data.hct_network_plan.this.json
#   talos_version = "v1.14.0"
#   image_id      = hct_talos_image.this.id
#   control_plane = { server_type = "cx23", location = "nbg1" }
# }

output "kubeconfig" {
  value     = hct_cluster.this.kubeconfig
  sensitive = true
}
