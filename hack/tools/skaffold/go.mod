// Wrapper module pinning skaffold. skaffold's own go.mod carries replace
// directives, which `go install ...@version` refuses and which do not apply
// to a module that requires it: they are repeated here. The Go module proxy
// these machines use does not serve github.com/GoogleContainerTools/skaffold/v2
// (403), so this module has no go.sum yet: on a machine with the proxy, run
//   cd hack/tools/skaffold && GOWORK=off go mod tidy
//   GOWORK=off go build -o ../../../.bin/skaffold github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold
// (hack/kind-up.sh does it when skaffold is not on PATH), or install the
// release binary of the same version.
module github.com/tokendata/tokendata/hack/tools/skaffold

go 1.26.0

tool github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold

require github.com/GoogleContainerTools/skaffold/v2 v2.19.0

// From skaffold's go.mod (the versions its build is known to work with).
exclude github.com/karrick/godirwalk v1.17.0

replace (
	github.com/alessio/shellescape => github.com/alessio/shellescape v1.4.2
	github.com/buildpacks/lifecycle => github.com/buildpacks/lifecycle v0.20.5
	github.com/docker/cli => github.com/docker/cli v28.5.2+incompatible
	github.com/dprotaso/go-yit => github.com/dprotaso/go-yit v0.0.0-20240618133044-5a0af90af097
	github.com/imdario/mergo => github.com/imdario/mergo v0.3.16
	k8s.io/api => k8s.io/api v0.33.4
	k8s.io/apimachinery => k8s.io/apimachinery v0.33.4
	k8s.io/client-go => k8s.io/client-go v0.33.4
	k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250628140032-d90c4fd18f59
	k8s.io/kubectl => k8s.io/kubectl v0.33.4
)
