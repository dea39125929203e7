//go:build !unix

package edge

// fileLimit reports no limit where the platform has no RLIMIT_NOFILE.
func fileLimit() (uint64, bool) { return 0, false }
