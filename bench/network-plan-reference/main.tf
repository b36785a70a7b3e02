# Yardstick for bench/network-plan.sh: one data source of the smallest
# provider HashiCorp's protocol library makes (bench/reference-provider), so
# that a plan of it costs what starting a provider costs and nothing more.

terraform {
  required_providers {
    reference = {
      source = "registry.hct.internal/hct/reference"
    }
  }
}

provider "reference" {}

data "reference_echo" "this" {
  input = "10.0.0.0/16"
}

output "echo" {
  value = data.reference_echo.this.output
}
