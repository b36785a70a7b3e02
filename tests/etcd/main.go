// etcd for hct's tests (hct-sim's Kubernetes control plane): etcd's own
// main, which lives in the go.etcd.io/etcd/server/v3 module's etcdmain
// package (the module publishes no main package).
//
// scripts/ensure-peers builds this file in a module generated from
// go.mod.tmpl (in its per-machine cache). It is the same as etcd's
// server/main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
