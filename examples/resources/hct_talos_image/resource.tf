# Finds the Talos v1.14.0 snapshot with the QEMU guest agent, or builds it
# from the Image Factory on a temporary server in nbg1 (a few minutes).
resource "hct_talos_image" "amd64" {
  talos_version = "v1.14.0"
  architecture  = "amd64"
  extensions    = ["siderolabs/qemu-guest-agent"]
  location      = "nbg1"
  labels        = { team = "platform" }

  timeouts {
    create = "30m"
  }
}

# Arm servers need an arm64 image; the builder defaults to a cax11.
resource "hct_talos_image" "arm64" {
  talos_version = "v1.14.0"
  architecture  = "arm64"
  extensions    = ["siderolabs/qemu-guest-agent"]
  location      = "fsn1"
}

output "image_id" {
  value = hct_talos_image.amd64.id # boot servers from this snapshot
}

output "installer_image" {
  value = hct_talos_image.amd64.installer_image # known at plan time
}
