terraform {
  required_providers {
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

# Every attribute may be left out and come from the environment instead:
# HCLOUD_TOKEN, HCLOUD_ENDPOINT and HCT_TALOS_PROXY (or ALL_PROXY).
provider "hct" {
  hcloud_token = var.hcloud_token
  # Reach the nodes' private IPs through Tailscale's userspace SOCKS5 proxy.
  talos_proxy = "socks5://127.0.0.1:1055"
}

variable "hcloud_token" {
  type      = string
  sensitive = true
}
