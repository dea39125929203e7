// Stand-in for Traefik's nested module github.com/traefik/traefik/dynamic/ext
// (its go.mod replaces it by ./pkg/config/dynamic/ext, a folder that is not in
// the module's zip): hack/build-node-tools.sh copies this folder there.
module github.com/traefik/traefik/dynamic/ext

go 1.26
