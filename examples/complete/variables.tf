variable "cluster_name" {
  description = "Prefix of every server name; also the name of the network."
  type        = string
  default     = "complete"
}

variable "location" {
  description = "Hetzner location of the NAT box and every node; the node subnet is made in its network zone."
  type        = string
  default     = "nbg1"

  validation {
    condition     = contains(["fsn1", "nbg1", "hel1", "ash", "hil", "sin"], var.location)
    error_message = "Use one of Hetzner's cloud locations: fsn1, nbg1, hel1, ash, hil, sin."
  }
}

variable "talos_version" {
  type    = string
  default = "v1.14.0"
}

variable "nat_server_type" {
  description = "Server type of the NAT box. Forwarding a cluster's egress needs little CPU; the smallest x86 type will do."
  type        = string
  default     = "cx23"
}

variable "nat_image" {
  description = "Hetzner system image of the NAT box (its cloud-init uses nftables, which Debian ships)."
  type        = string
  default     = "debian-12"
}

variable "ssh_keys" {
  description = "Names or IDs of Hetzner SSH keys for root on the NAT box. Without any, Hetzner mails a root password."
  type        = list(string)
  default     = []
}

variable "ssh_source_ips" {
  description = "Where SSH to the NAT box may come from (CIDRs). Empty: the firewall lets no SSH in."
  type        = list(string)
  default     = []
}

variable "control_plane_server_type" {
  type    = string
  default = "cx23"
}

variable "control_plane_nodes" {
  description = "Control-plane nodes (odd: etcd needs a majority)."
  type        = number
  default     = 3
}

variable "worker_pools" {
  description = "Worker pools by name: their slice of the node subnet, node count, server type and Kubernetes node labels."
  type = map(object({
    cidr   = string
    nodes  = number
    sku    = string
    labels = map(string)
  }))
  default = {
    general = { cidr = "10.0.128.32/27", nodes = 2, sku = "cx33", labels = { purpose = "general" } }
  }
}
