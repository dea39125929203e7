// Command coredns is CoreDNS (the pinned module) with the plugins the
// local cluster's DNS uses only (hack/cluster/coredns.yaml's Corefile):
// building CoreDNS's own command compiles every plugin it ships, the
// clouds' SDKs among them, for minutes on a fresh machine. A plugin is in
// by its import (each registers itself); the Corefile can name no other.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() { coremain.Run() }
