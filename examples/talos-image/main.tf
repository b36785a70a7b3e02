# Looks up the Talos snapshots of a Hetzner project: the ones hct built, found
# by their labels. `scripts/demo talos-image` runs it against hct-sim, which
# seeds snapshots for v1.11.3, v1.12.6, v1.13.9 and v1.14.0 on both architectures.

terraform {
  required_providers {
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

# HCLOUD_TOKEN and HCLOUD_ENDPOINT come from the environment.
provider "hct" {}

variable "talos_version" {
  description = "Try v1.11.3 to see the warning about its containerd."
  type        = string
  default     = "v1.14.0"
}

data "hct_talos_image" "x86" {
  talos_version = var.talos_version
  architecture  = "amd64"
}

data "hct_talos_image" "arm" {
  talos_version = var.talos_version
  architecture  = "arm64"
}

output "snapshots" {
  value = {
    amd64 = data.hct_talos_image.x86.id
    arm64 = data.hct_talos_image.arm.id
  }
}

output "installer_image" {
  value = data.hct_talos_image.x86.installer_image
}
