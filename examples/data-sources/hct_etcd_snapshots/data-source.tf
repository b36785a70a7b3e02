# The etcd snapshots of cluster "demo" in its Hetzner Object Storage
# bucket, newest first (hct_cluster's etcd_backup.bucket puts them there).
variable "etcd_backup_bucket_keys" {
  description = "A key pair that may read the bucket."
  type = object({
    access_key = string
    secret_key = string
  })
  sensitive = true
}

data "hct_etcd_snapshots" "demo" {
  cluster = "demo"
  bucket = {
    name       = "demo-etcd-backups"
    location   = "fsn1"
    access_key = var.etcd_backup_bucket_keys.access_key
    secret_key = var.etcd_backup_bucket_keys.secret_key
  }
}

# What restore_from.snapshot takes, for the newest one.
output "newest_etcd_snapshot" {
  value = try(data.hct_etcd_snapshots.demo.snapshots[0].location, null)
}
