// Package buildinfo holds the build version and commit, set at link time:
//
//	go build -ldflags "-X github.com/tokendata/tokendata/shared/buildinfo.Version=v1.2.3
//	  -X github.com/tokendata/tokendata/shared/buildinfo.Commit=abc1234"
package buildinfo

import "runtime"

// Set by -ldflags -X.
var (
	Version = "dev"
	Commit  = "unknown"
)

// GoVersion is the toolchain the binary was built with.
func GoVersion() string { return runtime.Version() }
