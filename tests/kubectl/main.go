// kubectl for hct's tests: the stock kubectl command of the k8s.io/kubectl
// module, which publishes the command but no main package.
//
// scripts/ensure-peers builds this file in a module generated from
// go.mod.tmpl (in its per-machine cache), with the Kubernetes version
// set by -ldflags so that `kubectl version` reports it. It is the same as
// Kubernetes' cmd/kubectl/kubectl.go.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// The client auth plugins (OIDC; the stubs that explain azure and gcp's removal).
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
