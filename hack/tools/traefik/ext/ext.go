// Package ext is the extension point of Traefik's dynamic configuration
// that its open-source build leaves empty: an HTTP section and a router
// field with nothing in them. Written here for the local cluster's build of
// Traefik (hack/tools/traefik/go.mod says why).
package ext

// HTTP holds the extensions of the dynamic HTTP configuration: none.
type HTTP struct{}

// Router holds the extensions of an HTTP router: none.
type Router struct{}
