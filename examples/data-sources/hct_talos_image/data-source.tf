# The newest Talos v1.14.0 snapshot for x86 servers that hct built in this
# project (fails when there is none).
data "hct_talos_image" "this" {
  talos_version = "v1.14.0"
  architecture  = "amd64"
}

output "talos_image_id" {
  value = data.hct_talos_image.this.id
}
