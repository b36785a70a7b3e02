# Terraform >= 1.10 or OpenTofu >= 1.11. Minted at each plan and apply once
# the cluster exists; nothing of it is stored in plan or state.
ephemeral "hct_kubeconfig" "admin" {
  worker_join     = hct_cluster.this.worker_join # after the control plane is up
  machine_secrets = hct_cluster.this.machine_secrets
  validity        = "1h"
}

provider "helm" {
  kubernetes = {
    host                   = ephemeral.hct_kubeconfig.admin.host
    cluster_ca_certificate = ephemeral.hct_kubeconfig.admin.cluster_ca_certificate
    client_certificate     = ephemeral.hct_kubeconfig.admin.client_certificate
    client_key             = ephemeral.hct_kubeconfig.admin.client_key
    proxy_url              = ephemeral.hct_kubeconfig.admin.proxy_url # hct's talos_proxy, or null
  }
}

provider "kubernetes" {
  host                   = ephemeral.hct_kubeconfig.admin.host
  cluster_ca_certificate = ephemeral.hct_kubeconfig.admin.cluster_ca_certificate
  client_certificate     = ephemeral.hct_kubeconfig.admin.client_certificate
  client_key             = ephemeral.hct_kubeconfig.admin.client_key
  proxy_url              = ephemeral.hct_kubeconfig.admin.proxy_url
}
