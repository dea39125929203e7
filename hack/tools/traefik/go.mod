// The pin of Traefik, the local cluster's Ingress controller and Gateway
// API implementation (hack/build-node-tools.sh builds its cmd/traefik into
// .bin/, hack/imagebuild makes its image, make cluster-up runs it:
// hack/cluster/traefik.yaml), and of the Gateway API whose CRDs it serves.
// Not built from here: Traefik's go.mod has replace directives, which a
// wrapper's build ignores, and two of its modules are not served by the Go
// module proxy. build-node-tools.sh builds it as the main module of a copy
// of its own module, with three changes (docs/decisions.md, "The local
// cluster"): its go-http-auth fork at the version the proxy serves, lego's
// registry of DNS providers written with none, and ext/ (this folder) for
// the nested module dynamic/ext its zip lacks. Nothing imports these
// modules, so `go mod tidy` would drop them: to move a pin, edit the
// version here and run `GOWORK=off go mod download -json <module>@<version>`
// for the go.sum lines (the build reads the versions from this file).
module github.com/tokendata/tokendata/hack/tools/traefik

go 1.26.2

require (
	github.com/traefik/traefik/v3 v3.7.13
	sigs.k8s.io/gateway-api v1.6.3
)
