//go:build unix

package edge

import "syscall"

// fileLimit is the process's soft RLIMIT_NOFILE: the most descriptors it
// can hold open (Go raises the soft limit to the hard one at start). An
// unlimited one (RLIM_INFINITY) counts as unknown.
func fileLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	cur := uint64(r.Cur) //nolint:unconvert // Rlimit.Cur is int64 on some platforms
	if cur >= 1<<62 {
		return 0, false
	}
	return cur, true
}
