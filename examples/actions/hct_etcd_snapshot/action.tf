# An etcd snapshot when you ask for one (Terraform 1.14 or later):
#   terraform apply -invoke=action.hct_etcd_snapshot.now
action "hct_etcd_snapshot" "now" {
  config {
    talosconfig = hct_cluster.this.talosconfig
    etcd_backup = {
      local_directory = "${path.root}/etcd-snapshots"
      age_recipients  = ["age1sxfzqgu7k66rpk87eccfvmg2dx8dzd774y8wk64rsahxteudn4zqr8vpz8"]
    }
  }
}
